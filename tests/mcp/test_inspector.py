"""``secref serve`` driven by a client nobody here wrote: the MCP Inspector's command-line mode.

The Inspector comes from the npm registry (``@modelcontextprotocol/inspector``); ``.ci/run``
installs it under ``.cache/inspector``, beside the jobs, and while it does the file
``.cache/inspector.pending`` holds the installer's process id: the tests wait for that process
to end (at most :data:`INSTALL_WAIT_S`) before they look. They look for it there, then at
the path in ``SECREF_MCP_INSPECTOR``, then on ``PATH``, and skip, saying why, where it or
Node.js is absent. The Inspector declares no elicitation, so a call that needs approval must
come back refused, with a message and a ledger record that say no operator was asked.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

from conformance.hosts._supervise import stat_fields
from reference_impl._registry import NO_OPERATOR_MESSAGE

SECRET_ID = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
REF = "{{secret:" + SECRET_ID + "}}"
REPO = Path(__file__).resolve().parents[2]

#: Seconds one Inspector run may take: it starts Node.js and then the server.
INSPECTOR_TIMEOUT_S = 120.0

#: Seconds a test waits for an install ``.ci/run`` started (its own bound is 300 s).
INSTALL_WAIT_S = 330.0

PENDING = REPO / ".cache" / "inspector.pending"


def wait_for_install(pending: Path = PENDING, limit: float = INSTALL_WAIT_S) -> None:
    """Wait while the install named by ``pending`` runs: the file is there and the process
    whose id it holds is alive. A file left by an install that was killed holds the id of a
    process that is gone, and is not waited on."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            pid = int(pending.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return
        if not _alive(pid):
            return
        time.sleep(0.5)


def _alive(pid: int) -> bool:
    """Return whether process ``pid`` runs: it exists and, where ``/proc`` tells, has not
    exited unreaped (a zombie)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    if not Path("/proc").is_dir():
        return True
    fields = stat_fields(pid)
    return fields is not None and fields[:1] != ["Z"]


def _inspector() -> str:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so the MCP Inspector cannot run")
    wait_for_install()
    candidates = [
        os.environ.get("SECREF_MCP_INSPECTOR", ""),
        str(REPO / ".cache" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"),
        shutil.which("mcp-inspector") or "",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.skip(
        "the MCP Inspector is not installed: npm install --prefix .cache/inspector "
        "@modelcontextprotocol/inspector (or set SECREF_MCP_INSPECTOR)"
    )


def _run(tmp_path: Path, *method: str) -> tuple[dict[str, Any], str]:
    canary = "canary-" + secrets.token_hex(12)
    vault = {"secrets": [{"id": SECRET_ID, "website": "example.org", "password": canary}]}
    policy = {
        "secretReferencesEnabled": True,
        "secretBearingCalls": "ASK",
        "resultScrubbingEnabled": True,
        "defaultRule": "ASK",
        "tools": {"echo": "ALLOW"},
    }
    (tmp_path / "vault.json").write_text(json.dumps(vault), encoding="utf-8")
    (tmp_path / "policy.json").write_text(json.dumps(policy), encoding="utf-8")
    ledger = tmp_path / "ledger.jsonl"
    done = subprocess.run(
        [
            _inspector(),
            "--cli",
            sys.executable,
            "-m",
            "reference_impl",
            "serve",
            "--vault",
            str(tmp_path / "vault.json"),
            "--policy",
            str(tmp_path / "policy.json"),
            "--ledger",
            str(ledger),
            *method,
        ],
        capture_output=True,
        text=True,
        timeout=INSPECTOR_TIMEOUT_S,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:].replace(canary, "<canary>")
    assert canary not in done.stdout + done.stderr, "the Inspector's output holds the canary"
    if ledger.exists():
        assert canary not in ledger.read_text(encoding="utf-8"), "the ledger holds the canary"
    return json.loads(done.stdout), canary


@pytest.mark.req("MCP-010")
def test_inspector_lists_the_governed_tools(tmp_path: Path) -> None:
    listing, _ = _run(tmp_path, "--method", "tools/list")
    assert sorted(tool["name"] for tool in listing["tools"]) == ["echo", "sha256", "write_file"]


@pytest.mark.req("MCP-009", "MCP-006")
def test_inspector_calls_a_tool_and_a_reference_is_refused_without_elicitation(
    tmp_path: Path,
) -> None:
    plain, _ = _run(
        tmp_path, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "k=plain"
    )
    assert plain.get("isError") is not True
    assert "plain" in plain["content"][0]["text"]
    refused, _ = _run(
        tmp_path, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "k=" + REF
    )
    assert refused["isError"] is True
    # The Inspector cannot elicit: the refusal says nobody was asked, and so does the ledger.
    assert refused["content"][0]["text"] == NO_OPERATOR_MESSAGE
    assert refused["_meta"]["io.secref/disposition"] == "DENIED"
    records = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert records[-1]["approvalDisposition"] == "DENIED"
    assert records[-1]["operatorAsked"] is False
    assert "operatorAsked" not in records[0], "the plain call, allowed by policy, asked nobody"


def test_an_install_in_flight_is_waited_for_and_a_dead_one_is_not(tmp_path: Path) -> None:
    """The tests wait for the installer named in the pending file while it lives, and not at
    all for one that is gone (a killed CI run leaves its file behind)."""
    pending = tmp_path / "inspector.pending"
    wait_for_install(pending, 5.0)  # no file: no wait
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    try:
        pending.write_text(str(sleeper.pid), encoding="ascii")
        started = time.monotonic()
        wait_for_install(pending, 30.0)
        waited = time.monotonic() - started
        assert waited >= 1.0, "the test did not wait for a live installer"
        assert waited < 25.0, "the test waited on after the installer ended"
    finally:
        sleeper.wait(10)
    started = time.monotonic()
    wait_for_install(pending, 30.0)  # the process is gone: no wait
    assert time.monotonic() - started < 5.0
