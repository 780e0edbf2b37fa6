"""The MCP sweep and the MCP host's helpers, on hand-made messages (no server needed)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from conformance.canary import Detector, Guarded, Surface, required_forms
from conformance.host import Answer
from conformance.hosts.mcp import (
    McpCall,
    elicit_content,
    error_message,
    parse_arguments,
    read_final,
)
from conformance.mcp_sweep import (
    RunForms,
    SessionIndex,
    SessionLate,
    SessionSweep,
    late_search,
    sweep_mcp,
    sweep_session,
)
from conformance.mcp_tap import SessionTap, Tapped
from conformance.outcomes import UnlearnedDisposition

VALUE = 'canary "mcp" sweep/value+1'
USERNAME = "canary-username-42"
#: VALUE as it stands inside a JSON string, to put it where the username stood.
VALUE_IN_JSON = json.dumps(VALUE)[1:-1]


def _detector() -> Detector:
    return Detector((Guarded("s.password", VALUE), Guarded("s.username", USERNAME, True)))


def _result(**members: Any) -> dict[str, Any]:
    return {"content": [], "isError": False, **members}


SURFACES: dict[str, tuple[str, dict[str, Any]]] = {
    "text": ("result", _result(content=[{"type": "text", "text": VALUE}])),
    "embedded": (
        "result",
        _result(content=[{"type": "resource", "resource": {"uri": "x:y", "text": VALUE}}]),
    ),
    "link-uri": (
        "result",
        _result(content=[{"type": "resource_link", "uri": "x:" + VALUE, "name": "n"}]),
    ),
    "link-title": (
        "result",
        _result(content=[{"type": "resource_link", "uri": "x:y", "name": "n", "title": VALUE}]),
    ),
    "structured-deep": ("result", _result(structuredContent={"a": [{"b": VALUE}]})),
    "structured-key": ("result", _result(structuredContent={VALUE: 1})),
    "meta": ("result", _result(_meta={"k": VALUE})),
    "error-message": ("error", {"code": -1, "message": "failed: " + VALUE}),
    "error-data": ("error", {"code": -1, "message": "failed", "data": {"v": [VALUE]}}),
    "progress": ("progress", {"progress": 1, "message": VALUE}),
}


@pytest.mark.req("MCP-003")
@pytest.mark.parametrize("name", list(SURFACES))
def test_each_agent_surface_is_searched(name: str) -> None:
    kind, payload = SURFACES[name]
    call = McpCall("t", {}, [(kind, payload)])
    found = sweep_mcp(_detector(), [call], [], [])
    assert found.leaks, name
    assert all("MCP-003" in leak.requirements for leak in found.leaks)
    assert {leak.label for leak in found.leaks} == {"s.password"}


@pytest.mark.req("MCP-003")
def test_every_required_form_is_found_in_a_text_item() -> None:
    for form_name, form in required_forms(VALUE).items():
        call = McpCall("t", {}, [("result", _result(content=[{"type": "text", "text": form}]))])
        found = sweep_mcp(_detector(), [call], [], [])
        assert form_name in {leak.form for leak in found.leaks}


@pytest.mark.req("MCP-003")
def test_scrubbed_result_and_blob_only_hardening() -> None:
    blob = base64.b64encode(VALUE.encode()).decode()
    payload = _result(
        content=[
            {"type": "text", "text": "[secret:s.password]"},
            {"type": "resource", "resource": {"uri": "x:y", "blob": blob}},
            {"type": "image", "data": blob, "mimeType": "image/png"},
        ]
    )
    found = sweep_mcp(_detector(), [McpCall("t", {}, [("result", payload)])], [], [])
    assert found.leaks == []
    assert {finding.form for finding in found.hardening} == {"base64@0"}
    assert Surface.MCP_RESULT.value in found.searched


@pytest.mark.req("MCP-004", "SCRUB-014")
def test_scrubbing_off_allows_results_but_never_logs() -> None:
    call = McpCall("t", {}, [("result", _result(content=[{"type": "text", "text": VALUE}]))])
    logs = [{"level": "info", "data": {"line": VALUE}}]
    found = sweep_mcp(_detector(), [call], logs, [], scrubbing=False)
    assert [leak.surface for leak in found.leaks] == [Surface.MCP_LOG]
    assert "SCRUB-014" in found.leaks[0].requirements
    assert "MCP-004" in found.leaks[0].requirements


@pytest.mark.req("MCP-007", "MCP-010")
def test_elicitation_allows_the_username_in_its_message_only() -> None:
    asked = {"message": f"Secret: site ({USERNAME}) - password", "requestedSchema": {}}
    call = McpCall("t", {}, [("elicitation", asked)])
    assert sweep_mcp(_detector(), [call], [], []).leaks == []
    listing = {"tools": [{"name": "t", "description": VALUE}]}
    found = sweep_mcp(_detector(), [], [], [listing])
    assert "MCP-010" in found.leaks[0].requirements


#: Where a host may put a descriptor, and so a username, in the requested schema.
SCHEMA_PLACES: dict[str, Any] = {
    "title": {"title": f"Secret: site ({USERNAME}) - password"},
    "property-description": {
        "properties": {"d": {"type": "string", "description": f"site ({USERNAME}) - password"}}
    },
    "enum-option": {"properties": {"d": {"type": "string", "enum": [f"approve {USERNAME}"]}}},
    "property-name": {"properties": {f"site ({USERNAME})": {"type": "boolean"}}},
}


@pytest.mark.req("MCP-007", "APPR-005")
@pytest.mark.parametrize("place", list(SCHEMA_PLACES))
def test_elicitation_allows_the_username_in_its_requested_schema(place: str) -> None:
    """A username may stand anywhere in the requested schema, as in the message (R3.2, R9.6)."""
    asked = {"message": "Approve?", "requestedSchema": {"type": "object", **SCHEMA_PLACES[place]}}
    found = sweep_mcp(_detector(), [McpCall("t", {}, [("elicitation", asked)])], [], [])
    assert found.leaks == []
    assert Surface.MCP_ELICITATION.value in found.searched


@pytest.mark.req("MCP-007", "APPR-005")
@pytest.mark.parametrize("place", list(SCHEMA_PLACES))
def test_a_password_in_the_requested_schema_is_a_leak(place: str) -> None:
    """Any other value in the requested schema, where a username would pass, is a leak."""
    schema = json.loads(json.dumps(SCHEMA_PLACES[place]).replace(USERNAME, VALUE_IN_JSON))
    asked = {"message": "Approve?", "requestedSchema": {"type": "object", **schema}}
    found = sweep_mcp(_detector(), [McpCall("t", {}, [("elicitation", asked)])], [], [])
    assert {leak.label for leak in found.leaks} == {"s.password"}
    assert all(leak.requirements == ("INV1", "MCP-007") for leak in found.leaks)


@pytest.mark.req("MCP-007", "APPR-005")
@pytest.mark.parametrize("member", ["_meta", "mode", "requestedSchemaCopy"])
def test_a_username_outside_the_descriptors_is_a_leak(member: str) -> None:
    """Outside the message and the requested schema, a username is a leak like any value."""
    asked = {"message": "Approve?", "requestedSchema": {}, member: {"note": USERNAME}}
    found = sweep_mcp(_detector(), [McpCall("t", {}, [("elicitation", asked)])], [], [])
    assert [leak.label for leak in found.leaks] == ["s.username"]
    assert found.leaks[0].requirements == ("INV1", "MCP-007")


@pytest.mark.req("MCP-002")
@pytest.mark.parametrize(
    ("text", "carried"),
    [
        ('{"a": 1}', True),
        ("[1]", False),
        ('{"a": 1, "a": 2}', False),
        ('{"n": NaN}', False),
        ('{"n": 1E400}', False),
        ('{"s": "\\ud800"}', False),
        ("{bad", False),
    ],
)
def test_arguments_mcp_can_carry(text: str, carried: bool) -> None:
    assert (parse_arguments(text) is not None) is carried


@pytest.mark.req("MCP-008")
def test_answers_map_onto_the_form() -> None:
    form = {"properties": {"decision": {"type": "string", "enum": ["approve", "deny"]}}}
    assert elicit_content(form, Answer.APPROVE) == {"decision": "approve"}
    assert elicit_content(form, Answer.DENY) is None
    assert elicit_content(form, Answer.TRUST_SESSION) is None
    boolean = {"properties": {"ok": {"type": "boolean"}}}
    assert elicit_content(boolean, Answer.APPROVE) == {"ok": True}


#: A refusal message of decisions R2, as a JSON-RPC error may carry it.
REFUSAL = "Secret references are disabled on this host"


@pytest.mark.req("MCP-006", "MSG-003")
@pytest.mark.parametrize(
    "prefix", ["", "MCP error -32600: ", "MCP error 1: ", "JSON-RPC error -32603: ", "-32000: "]
)
def test_an_error_code_prefix_is_taken_off_the_refusal(prefix: str) -> None:
    """A JSON-RPC error's message reads as the refusal message after one accepted prefix."""
    assert error_message(prefix + REFUSAL) == REFUSAL
    read = read_final({"code": -32600, "message": prefix + REFUSAL}, "io.secref/disposition")
    assert (read.text, read.is_error, read.disposition) == (REFUSAL, True, "")


@pytest.mark.req("MCP-006", "MSG-003")
@pytest.mark.parametrize(
    "prefix",
    [
        "Refused: ",
        "Error: ",
        "MCP error: ",
        "MCP error -32600 ",
        "mcp failure -32600: ",
        "MCP error -32600: MCP error -32600: ",
        " MCP error -32600: ",
        "MCP error 12345678901: ",
    ],
)
def test_other_text_before_the_refusal_stays_in_the_message(prefix: str) -> None:
    """Text of any other shape before the refusal message, or a second prefix, is kept, so the
    message checks see that it does not begin with the refusal's words."""
    text = read_final({"code": -32600, "message": prefix + REFUSAL}, None).text
    assert not text.startswith(REFUSAL)
    assert text.endswith(REFUSAL)


@pytest.mark.req("MCP-006")
def test_a_prefix_is_not_taken_off_a_result() -> None:
    """The prefix is accepted before a JSON-RPC error's message only, not in an isError result."""
    result = {
        "content": [{"type": "text", "text": "MCP error -32600: " + REFUSAL}],
        "isError": True,
    }
    assert read_final(result, None).text == "MCP error -32600: " + REFUSAL


@pytest.mark.req("APPR-010", "MCP-011")
@pytest.mark.parametrize(
    ("data", "key", "disposition"),
    [
        ({"disposition": "DENIED"}, None, "DENIED"),
        ({"disposition": "DENIED"}, "acme/disposition", "DENIED"),
        ({"acme/disposition": "TIMEOUT", "disposition": "x"}, "acme/disposition", "TIMEOUT"),
        (None, "acme/disposition", ""),
        (["DENIED"], None, ""),
        ({"disposition": 3}, None, ""),
        ({"other": "DENIED"}, None, ""),
    ],
)
def test_a_json_rpc_error_names_its_disposition_in_its_data(
    data: Any, key: str | None, disposition: str
) -> None:
    """A disposition in a JSON-RPC error's data (under the adapter's key, or "disposition") is
    read; anything else leaves it to the ledger (empty here)."""
    error: dict[str, Any] = {"code": -32600, "message": "MCP error -32600: " + REFUSAL}
    if data is not None:
        error["data"] = data
    read = read_final(error, key)
    assert (read.disposition, read.text, read.is_error) == (disposition, REFUSAL, True)


# --- every message of the session (decisions R9.3 v1.2, S1.3, S1.12) ---------------------------


def _tapped(*messages: tuple[str, dict[str, Any]]) -> list[Tapped]:
    return [
        Tapped(number, 1, direction, 1, {"jsonrpc": "2.0", **value})
        for number, (direction, value) in enumerate(messages, start=1)
    ]


CALL = (
    "client",
    {"id": 7, "method": "tools/call", "params": {"name": "t", "_meta": {"progressToken": 3}}},
)


def _session(*messages: tuple[str, dict[str, Any]], scrubbing: bool = True) -> SessionSweep:
    return sweep_session(_detector(), _tapped(*messages), SessionIndex(), scrubbing=scrubbing)


#: Places no earlier list named, each with the requirement its leak names beside INV1.
UNNAMED: dict[str, tuple[str, dict[str, Any]]] = {
    "content-meta": (
        "server",
        {
            "id": 7,
            "result": _result(content=[{"type": "text", "text": "ok", "_meta": {"n": VALUE}}]),
        },
    ),
    "annotations": (
        "server",
        {
            "id": 7,
            "result": _result(
                content=[{"type": "text", "text": "ok", "annotations": {"lastModified": VALUE}}]
            ),
        },
    ),
    "resource-uri": (
        "server",
        {
            "id": 7,
            "result": _result(
                content=[{"type": "resource", "resource": {"uri": "x:" + VALUE, "text": "ok"}}]
            ),
        },
    ),
    "unknown-member": ("server", {"id": 7, "result": _result(extra={"deep": [VALUE]})}),
    "resources-updated": (
        "server",
        {"method": "notifications/resources/updated", "params": {"uri": VALUE}},
    ),
    "sampling": (
        "server",
        {"id": 1, "method": "sampling/createMessage", "params": {"messages": [VALUE]}},
    ),
    "ping": ("server", {"id": 2, "method": "ping", "params": {"_meta": {VALUE: 1}}}),
    "other-progress": (
        "server",
        {"method": "notifications/progress", "params": {"progressToken": 4, "message": VALUE}},
    ),
}


@pytest.mark.req("MCP-003", "INV1")
@pytest.mark.parametrize("name", list(UNNAMED))
def test_a_value_anywhere_in_a_server_message_is_a_leak(name: str) -> None:
    found = _session(CALL, UNNAMED[name])
    assert {leak.requirements for leak in found.leaks} == {("INV1", "MCP-003")}, name
    # Scrubbing off lets the call's result hold its values; nothing else the server sends.
    off = _session(CALL, UNNAMED[name], scrubbing=False)
    in_result = name in ("content-meta", "annotations", "resource-uri", "unknown-member")
    assert (off.leaks == []) is in_result, name


@pytest.mark.req("MCP-003")
def test_a_named_surface_names_its_scrub_rule_once() -> None:
    text = ("server", {"id": 7, "result": _result(content=[{"type": "text", "text": VALUE}])})
    found = _session(CALL, text)
    assert [leak.requirements for leak in found.leaks] == [("INV1", "MCP-003", "SCRUB-003")]
    progress = (
        "server",
        {"method": "notifications/progress", "params": {"progressToken": 3, "message": VALUE}},
    )
    assert _session(CALL, progress, scrubbing=False).leaks == []


@pytest.mark.req("MCP-007", "APPR-005")
def test_a_username_deep_in_the_requested_schema_is_accepted_over_the_session() -> None:
    schema = {
        "type": "object",
        "properties": {"d": {"oneOf": [{"const": "a", "title": f"site ({USERNAME})"}]}},
    }
    asked = (
        "server",
        {
            "id": 5,
            "method": "elicitation/create",
            "params": {"message": "Approve?", "requestedSchema": schema},
        },
    )
    answer = (
        "client",
        {"id": 5, "result": {"action": "accept", "content": {"d": f"approve {USERNAME}"}}},
    )
    found = _session(CALL, asked, answer)
    assert found.leaks == []
    assert found.client == []
    elsewhere = (
        "server",
        {
            "id": 6,
            "method": "elicitation/create",
            "params": {"message": "x", "requestedSchema": {}, "_meta": {"u": USERNAME}},
        },
    )
    assert [leak.label for leak in _session(CALL, elsewhere).leaks] == ["s.username"]


@pytest.mark.req("MCP-003")
def test_a_value_the_client_sends_is_the_suites_defect() -> None:
    sent = (
        "client",
        {"id": 9, "method": "tools/call", "params": {"name": "t", "arguments": {"a": VALUE}}},
    )
    found = _session(sent)
    assert found.leaks == []
    assert [finding.label for finding in found.client] == ["s.password"]


@pytest.mark.req("MCP-004")
def test_a_message_past_the_bounds_is_not_searched() -> None:
    from mcp_types import JSONRPCNotification

    tap = SessionTap(max_message_chars=200, max_pending_messages=2)
    small = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": "x"})
    large = JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"data": "x" * 300}
    )
    for item in (small, large, small, small, ValueError("unreadable")):
        tap.record("server", item)
    drained = tap.drain()
    assert len(drained.messages) == 2
    notes = drained.unsearched()
    assert len(notes) == 3
    assert all("not searched" in note for note in notes)
    assert tap.drain().messages == []


@pytest.mark.req("MCP-004", "INV1")
def test_the_late_search_finds_every_canary_with_the_same_exceptions() -> None:
    late = ("server", {"method": "notifications/message", "params": {"data": [VALUE, USERNAME]}})
    result = ("server", {"id": 7, "result": _result(content=[{"type": "text", "text": VALUE}])})
    forms = RunForms((Guarded("c1.password", VALUE), Guarded("c2.username", USERNAME, True)))
    found = late_search(
        _tapped(CALL, late, result), SessionIndex(), forms, allowed={1: frozenset({VALUE})}
    )
    assert sorted((f.label, f.requirements) for f in found) == [
        ("c1.password", ("INV1", "MCP-004")),
        ("c2.username", ("INV1", "MCP-004")),
    ]


@pytest.mark.req("MCP-004", "SCRUB-012")
def test_a_result_that_comes_after_the_next_configuration_is_its_calls() -> None:
    """A result, or a progress notification, may hold its call's values when the call ran with
    scrubbing off, even if it arrives after the next configuration opened a window: the
    window of the request decides. A value the configuration holds in an awkward shape (here
    with a line break after it) allows the canary within it. The same value in a log line of
    that later window, or in the result of a call sent in it, is still a leak."""
    progress = {
        "method": "notifications/progress",
        "params": {"progressToken": 3, "message": VALUE},
    }
    text = {"type": "text", "text": VALUE}
    messages = [
        Tapped(1, 1, "client", 1, {"jsonrpc": "2.0", **CALL[1]}),
        # The next configuration opens window 2 before the first call's result is tapped.
        Tapped(2, 1, "server", 2, {"jsonrpc": "2.0", **progress}),
        Tapped(3, 1, "server", 2, {"jsonrpc": "2.0", "id": 7, "result": _result(content=[text])}),
        Tapped(4, 1, "client", 2, {"jsonrpc": "2.0", **CALL[1], "id": 8}),
        Tapped(5, 1, "server", 2, {"jsonrpc": "2.0", "id": 8, "result": _result(content=[text])}),
        Tapped(
            6,
            1,
            "server",
            2,
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": VALUE},
            },
        ),
    ]
    forms = RunForms((Guarded("c1.password", VALUE),))
    shaped = frozenset({VALUE + "\n"})
    found = late_search(messages, SessionIndex(), forms, allowed={1: shaped})
    assert sorted(f.where.split(" at ")[0] for f in found) == [
        "MCP message 5 from the server",
        "MCP message 6 from the server",
    ]


@pytest.mark.req("MCP-004", "INV1")
def test_the_session_late_search_indexes_each_canary_as_issued_and_spares_the_checks_own() -> None:
    from conformance.canary import Kind, Mint
    from conformance.mcp_tap import Drained

    mint = Mint()
    first, own = mint.canary(Kind.PLAIN, "password"), mint.canary(Kind.PLAIN, "password")

    def log(*values: str) -> list[Tapped]:
        params = {"level": "info", "data": list(values)}
        return _tapped(("server", {"method": "notifications/message", "params": params}))

    late = SessionLate()
    late.search(log(first.value, own.value), exclude=frozenset({own.value}))
    # A canary issued after the first search is indexed at the next one.
    later = mint.canary(Kind.PLAIN, "password")
    late.search(log(later.value))
    report = late.report(Drained(), ())
    assert sorted(finding.label for finding in report.findings) == sorted(
        (first.label, later.label)
    )
    assert report.searched == ["MCP session"]
    # What was kept is reported once.
    assert late.report(Drained(), ()).findings == []


@pytest.mark.req("APPR-010")
def test_a_judgment_on_an_unlearned_disposition_is_unchecked_not_failed() -> None:
    from conformance import outcomes

    with outcomes.recording("x") as record:
        with pytest.raises(pytest.skip.Exception):
            outcomes.require(UnlearnedDisposition() == "DENIED", "APPR-010", "not denied")
        outcomes.require(UnlearnedDisposition() != "ALLOWED", "INV3", "ran")
        outcomes.require(True, "MSG-001", "fine")
    assert [rid for rid, _ in record.unchecked] == ["APPR-010", "INV3"]
    # A disposition the suite read is judged as ever: the same comparison fails.
    read = str(UnlearnedDisposition())
    with outcomes.recording("y"), pytest.raises(outcomes.RequirementError):
        outcomes.require(read == "DENIED", "APPR-010", "not denied")
