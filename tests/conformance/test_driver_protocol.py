"""Driver protocol v1: its schemas, its document's example, and the reference driver's replies.

The reference driver is checked twice: directly, with in-memory streams, for the error replies
an adapter owes; and through the subprocess host with every message validated, for a session
that uses each request and a prompt answered while a control request runs.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conformance.host import Answer, Control, HandlerKind, HostConfig, SecretSpec, ToolSpec
from conformance.hosts.inprocess import InProcessHost
from conformance.hosts.subprocess import (
    ProtocolSchemas,
    ProtocolViolationError,
    SubprocessHost,
)
from conformance.hosts.wire import config_to_wire
from reference_impl.driver import Driver
from reference_impl.harness import CAPABILITIES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "driver-protocol.md"
SCHEMAS = ROOT / "conformance" / "schemas" / "protocol"
DRIVER = [sys.executable, "-m", "reference_impl.driver"]

SECRET_ID = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
SECRET = SecretSpec(SECRET_ID, "example.org", "operator-name-1", "pw-canary-not-real-0001")
CONFIG = HostConfig(
    secrets=(SECRET,),
    tools=(
        ToolSpec("echo", "plugin.test", HandlerKind.ECHO),
        ToolSpec("recorder", "plugin.test", HandlerKind.RECORDER),
    ),
    approval_timeout_s=0.3,
    pending_limit=2,
    execution_timeout_s=2.0,
)
WITH_REF = json.dumps({"k": "{{secret:" + SECRET_ID + "}}"})


def test_every_schema_is_a_valid_2020_12_schema() -> None:
    """Each protocol schema is itself valid, and names itself by its file."""
    names = sorted(SCHEMAS.glob("*.schema.json"))
    assert len(names) >= 15
    for path in names:
        document = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(document)
        assert document["$id"].endswith("/" + path.name)


def test_every_method_has_a_request_and_a_response_schema() -> None:
    """The suite can validate both halves of every exchange the document describes."""
    names = ProtocolSchemas().names()
    for method in ("start", "configure", "invoke", "control", "observe", "shutdown", "prompt"):
        assert f"{method}.request" in names
        assert f"{method}.response" in names
    assert {"error.response", "message"} <= names


def _transcript() -> Iterator[tuple[str, dict[str, Any]]]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## A session, line by line", 1)[1].split("```text", 1)[1].split("```")[0]
    for line in block.strip().splitlines():
        direction, _, body = line.partition(" ")
        yield direction, json.loads(body)


def test_the_documents_example_session_matches_the_schemas() -> None:
    """Every line of the document's example session that holds no elision is valid protocol."""
    schemas = ProtocolSchemas()
    methods: dict[tuple[str, object], str] = {}
    checked = 0
    for direction, message in _transcript():
        sender = "suite" if direction == ">" else "host"
        if "method" in message:
            methods[(sender, message["id"])] = message["method"]
            name = f"{message['method']}.request"
        else:
            asker = "host" if sender == "suite" else "suite"
            name = f"{methods[(asker, message['id'])]}.response"
        if "…" in json.dumps(message, ensure_ascii=False):
            continue
        schemas.check("message", message, sender)
        schemas.check(name, message, sender)
        checked += 1
    assert checked >= 10


def test_the_document_names_every_capability_of_the_reference_host() -> None:
    """Each capability the reference host announces is documented, with what it promises."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## Capabilities", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z.\-]+)` \|", table, re.MULTILINE))
    # The driver adds ``mcp`` where the MCP SDK is installed (docs/mcp.md).
    assert {*CAPABILITIES, "mcp"} == documented


def test_schemas_reject_a_malformed_suite_message() -> None:
    """Validation applies to the suite's own messages too, naming the failing path only."""
    schemas = ProtocolSchemas()
    params = config_to_wire(CONFIG)
    message = {"id": 1, "method": "configure", "params": params}
    schemas.check("configure.request", message, "suite")
    params["vault"] = "sometimes"
    with pytest.raises(ProtocolViolationError, match="/params/vault") as caught:
        schemas.check("configure.request", message, "suite")
    assert "sometimes" not in str(caught.value)


def _exchange(lines: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Run the reference driver over ``lines`` in memory; return what it wrote."""
    stdin = io.BytesIO(b"".join((json.dumps(line) + "\n").encode() for line in lines))
    stdout, stderr = io.BytesIO(), io.StringIO()
    assert Driver(stdin=stdin, stdout=stdout, stderr=stderr).serve() == 0
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def test_reference_driver_refuses_another_protocol_version() -> None:
    """A start for version 2 is answered unsupported-protocol, with the versions it speaks."""
    (reply,) = _exchange([{"id": 0, "method": "start", "params": {"protocol": 2}}])
    assert reply["error"]["code"] == "unsupported-protocol"
    assert reply["error"]["data"] == {"supported": [1]}


def test_reference_driver_error_replies() -> None:
    """Requests out of order, unknown or malformed get the error codes the document gives."""
    replies = _exchange(
        [
            {"id": 0, "method": "start", "params": {"protocol": 1, "suite": {}}},
            {"id": 1, "method": "observe", "params": {}},
            {"id": 2, "method": "invoke", "params": {"tool": "recorder", "args": "{}"}},
            {"id": 3, "method": "teleport", "params": {}},
            {"id": 4, "method": "configure", "params": config_to_wire(CONFIG)},
            {"id": 5, "method": "control", "params": {"op": "levitate"}},
            {"id": 6, "method": "configure", "params": {"tools": [{"handler": "echo"}]}},
            {"id": 7, "method": "shutdown", "params": {}},
            {"id": 8, "method": "observe", "params": {}},
        ]
    )
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[0]["result"]["protocol"] == 1
    assert by_id[1]["error"]["code"] == "not-configured"
    assert by_id[2]["error"]["code"] == "not-configured"
    assert by_id[3]["error"]["code"] == "unknown-method"
    assert by_id[4]["result"] == {}
    assert by_id[5]["error"]["code"] == "bad-request"
    assert by_id[6]["error"]["code"] == "bad-request"
    assert by_id[7]["result"] == {}
    assert 8 not in by_id  # nothing is served after shutdown


@pytest.mark.parametrize(
    ("vault", "first_failing", "code"),
    [
        ("failing:offline", 2, None),
        ("failing:offline", None, None),
        ("failing:offline", -1, "bad-request"),
        ("failing:offline", True, "bad-request"),
        ("failing:offline", "2", "bad-request"),
        ("present", 1, "bad-request"),
    ],
    ids=["page-2", "null", "negative", "boolean", "string", "present-vault"],
)
def test_reference_driver_takes_a_vault_failing_from_a_page(
    vault: str, first_failing: object, code: str | None
) -> None:
    """``vaultFailingFromPage`` is a whole number of at least 0 beside a failing vault (null
    means every read fails); anything else is a bad request, not a vault that quietly works."""
    params = {**config_to_wire(CONFIG), "vault": vault, "vaultFailingFromPage": first_failing}
    replies = _exchange(
        [
            {"id": 0, "method": "start", "params": {"protocol": 1, "suite": {}}},
            {"id": 1, "method": "configure", "params": params},
        ]
    )
    reply = {entry["id"]: entry for entry in replies}[1]
    if code is None:
        assert reply["result"] == {}, reply
    else:
        assert reply["error"]["code"] == code, reply


def test_a_vault_failing_from_a_page_serves_the_pages_before_it() -> None:
    """The reference host's vault serves pages 0 and 1 and fails from page 2 on, by kind."""
    from reference_impl._types import SecretRecord, SecretValue
    from reference_impl._vault import InMemoryVault, VaultError

    empty = SecretValue("")
    vault = InMemoryVault(
        SecretRecord(f"{index:032x}", "example.org", empty, empty, empty, ())
        for index in range(450)
    )
    vault.fail_with, vault.fail_from_page = "offline", 2
    assert len(vault.read_page(0, 200)) == 200
    assert len(vault.read_page(1, 200)) == 200
    with pytest.raises(VaultError) as failed:
        vault.read_page(2, 200)
    assert failed.value.kind == "offline"
    assert vault.reads == [0, 1, 2]


@pytest.fixture(scope="module")
def validated() -> Iterator[SubprocessHost]:
    host = SubprocessHost(DRIVER, validate=True, call_timeout=10.0)
    yield host
    host.close()


def _revoke_then_approve(_request: Mapping[str, Any], control: Control) -> Answer:
    control.revoke("tool", "echo")
    return Answer.APPROVE


def test_reference_driver_session_is_valid_protocol(validated: SubprocessHost) -> None:
    """A session using every request, a prompt and a mid-prompt control validates throughout."""
    validated.reset(CONFIG)
    approved = validated.invoke("echo", WITH_REF)
    assert approved.disposition == "APPROVED_ONCE"
    fenced = validated.invoke("echo", WITH_REF, _revoke_then_approve)
    assert fenced.disposition == "POLICY_DENIED"
    unanswered = [
        validated.start("recorder", WITH_REF, lambda _r, _c: Answer.NONE) for _ in range(3)
    ]
    dispositions = sorted(call.result(10.0).disposition for call in unanswered)
    assert dispositions == ["QUEUE_FULL", "TIMEOUT", "TIMEOUT"]
    seen = validated.observe()
    assert len(seen.approval_requests) == 4
    assert seen.receipts[0].tool == "echo"
    assert seen.printed == ""


def test_subprocess_and_in_process_paths_agree(validated: SubprocessHost) -> None:
    """The same calls give the same results, receipts and vault reads on both paths."""
    calls = [("echo", WITH_REF), ("recorder", '{"plain": [1, 2.50, "x"]}'), ("echo", "[1]")]
    local = InProcessHost()
    try:
        outcomes = []
        for host in (local, validated):
            host.reset(CONFIG)
            results = [host.invoke(tool, args) for tool, args in calls]
            seen = host.observe()
            outcomes.append((results, seen.receipts, seen.vault_reads, len(seen.approval_requests)))
        assert outcomes[0] == outcomes[1]
    finally:
        local.close()
