"""More hostile adapters: text no UTF-8 file can hold, numbers past a float, values quoted a check
late, MCP endpoints that give no session, a signal to the suite, on every path the suite drives.

Each test runs one attack of ``hostile_adapters.py`` (decisions S1.5, S1.10, S1.11) through the
console script, the masker command or the differential fuzzer, in a process of its own, and
asserts what the rulings ask of that run: it ends in bounded time, leaves no process behind,
prints no traceback, writes reports that parse and agree with the exit code, holds no run of 8
characters of a value it handed out, and errors (never fails) a check the host broke under.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Final

import pytest

from tests.conformance.test_hostile import (
    ADAPTERS,
    MAX_RUN_SECONDS,
    HostileRun,
    assert_survived,
    assert_survived_except_verdict,
    errored_details,
    run_hostile,
)

#: Two quick checks, each with a vault of its own: the second meets what the first handed out.
TWO_CHECKS: Final = "test_reference_free_reads_nothing or test_placeholder_names_lower"


def outcomes(report: dict[str, Any]) -> list[str]:
    """Return every check's outcome."""
    return [check["outcome"] for check in report["checks"]]


def handed_out(run: HostileRun) -> list[str]:
    """Return every value of 12 characters or more the adapter was configured with."""
    lines = (run.tmp / "values.jsonl").read_text(encoding="utf-8").splitlines()
    return [value for line in lines for value in json.loads(line) if len(value) >= 12]


def leaked_runs(text: str, values: list[str]) -> int:
    """Return how many of ``values`` have a run of 8 characters in ``text``."""
    return sum(
        1 for value in values if any(value[i : i + 8] in text for i in range(len(value) - 7))
    )


def assert_no_value_anywhere(run: HostileRun, values: list[str]) -> None:
    """Assert that no report and no terminal line holds a run of 8 characters of ``values``."""
    texts = {
        "json": json.dumps(run.report(), ensure_ascii=False),
        "markdown": run.markdown(),
        "junit": run.junit(),
        "terminal": run.output,
    }
    for medium, text in texts.items():
        leaked = leaked_runs(text, values)
        assert not leaked, f"runs of {leaked} values reached the {medium} report"


# --- the driver path ----------------------------------------------------------------------------


def test_lone_surrogates_are_inert_in_every_report(tmp_path: Path) -> None:
    """A host name and error texts holding lone surrogates: no encoding error, every report
    written, the surrogate shown as its escape."""
    run = run_hostile(tmp_path, "surrogate", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert report["verdict"] == "harness-error"
    assert "\\ud800" in report["host"]["name"]
    assert "\\ud800" in run.markdown()
    assert "\\ud800" in run.output


def test_an_observation_past_a_float_errors_the_check(tmp_path: Path) -> None:
    """A vault read on page 1e999 (infinity) is the host's protocol failure: an error with the
    cause named, never a failed check and a non-conformant verdict."""
    run = run_hostile(tmp_path, "overflow-observe", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert "fail" not in outcomes(report)
    assert report["verdict"] == "harness-error"
    details = errored_details(report)
    assert any("observe result is malformed (OverflowError)" in d for d in details), details


def test_values_of_an_earlier_check_never_reach_a_report(tmp_path: Path) -> None:
    """Values a host was given in an earlier check, quoted whole and in runs in an error and on
    standard error, reach neither the terminal nor any report."""
    run = run_hostile(
        tmp_path, "earlier-values", "--requirements", "VAULT-003,SCRUB-007", check=TWO_CHECKS
    )
    report = assert_survived(run)
    assert any("earlier" in detail for detail in errored_details(report)), report
    assert_no_value_anywhere(run, handed_out(run))


def test_a_restart_named_with_a_value_names_no_value(tmp_path: Path) -> None:
    """An adapter started again under a name that holds a value it was given: a harness error
    that quotes no run of the value, in the terminal or any report."""
    run = run_hostile(
        tmp_path, "renamed-with-value", "--requirements", "VAULT-003,SCRUB-007", check=TWO_CHECKS
    )
    report = assert_survived(run)
    assert report["verdict"] == "harness-error"
    assert "restarted as another host" in run.output
    assert_no_value_anywhere(run, handed_out(run))


def test_an_orphans_own_child_is_ended_with_the_run(tmp_path: Path) -> None:
    """A grandchild that left the adapter's group, session and environment and lost its parent,
    with a child of its own: both are ended with the run, the child included, which is the
    suite's only once its parent is killed."""
    run = run_hostile(tmp_path, "escape-family", "--requirements", "VAULT-003")
    assert run.orphans == (), f"{len(run.orphans)} processes outlived the run"
    assert_survived_except_verdict(run)


def test_sigterm_from_the_adapter_ends_the_run_with_reports(tmp_path: Path) -> None:
    """An adapter that signals the suite to terminate: the run still ends its hosts and their
    children, writes its reports and exits 2, a harness error. The check it cut short is an
    error in the report, never a pass, and no requirement of it reads as held."""
    run = run_hostile(tmp_path, "sigterm-parent", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert run.status == 2
    assert report["verdict"] == "harness-error"
    cut = [check for check in report["checks"] if check["id"].startswith("conformance/checks/")]
    assert cut, report["checks"]
    assert all(check["outcome"] != "pass" for check in cut), cut
    assert any("interrupted" in (check["detail"] or "") for check in cut), cut
    held = [row["id"] for row in report["requirements"] if row["outcome"] == "pass"]
    assert "VAULT-003" not in held, held


# --- over MCP ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("mcp-refused", "gave no usable session (ConnectError)"),
        ("mcp-silent", "did not answer initialize within 2 s"),
    ],
)
def test_an_mcp_endpoint_without_a_session_errors_in_bounded_time(
    tmp_path: Path, mode: str, cause: str
) -> None:
    """An announced MCP endpoint where nothing listens, or that never answers: each check errors
    with the cause named within the request timeout, none fails, and the run is a harness
    error, not non-conformant."""
    pytest.importorskip("mcp")
    run = run_hostile(tmp_path, mode, "--requirements", "VAULT-003", "--via", "mcp")
    report = assert_survived(run)
    assert "fail" not in outcomes(report)
    assert report["verdict"] == "harness-error"
    assert any(cause in detail for detail in errored_details(report)), report


class _SilentSession:
    """An MCP client session whose server never answers ``tools/call``: with a read timeout the
    SDK gives up with a JSON-RPC error of its own (``REQUEST_TIMEOUT``), as a host might send."""

    async def call_tool(
        self, *args: Any, read_timeout_seconds: float | None = None, **_: Any
    ) -> Any:
        import anyio
        from mcp.shared.exceptions import MCPError
        from mcp_types import REQUEST_TIMEOUT

        if read_timeout_seconds is None:
            await anyio.sleep(3600)
        await anyio.sleep(read_timeout_seconds or 0)
        raise MCPError(code=REQUEST_TIMEOUT, message="Request 'tools/call' timed out")


def test_a_call_the_host_never_answers_over_mcp_is_a_hang_not_an_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``tools/call`` the host never answers is a hang, as on the driver path, never a JSON-RPC
    error the host sent: the client's own timeout must not become an answer to judge."""
    pytest.importorskip("mcp")
    import anyio

    from conformance.host import HostConfig
    from conformance.hosts.mcp import McpCall, McpHost

    host = object.__new__(McpHost)
    host._config = HostConfig()
    host._lock = threading.Lock()
    host._session = None
    monkeypatch.setattr(McpHost, "_call_limit", lambda self: 0.2)
    call = McpCall("echo", {})
    anyio.run(host._call, call, _SilentSession())
    assert call.messages == [], "the suite's own timeout was kept as the host's answer"
    assert call.hung is not None
    assert "did not answer tools/call within 0.2 s" in call.hung


# --- maskers and the differential fuzzer -------------------------------------------------------


def _tool(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PY_COLORS="0", SECREF_HOSTILE_VALUES=str(tmp_path / "values.jsonl")),
        timeout=MAX_RUN_SECONDS,
        check=False,
    )


def test_a_masker_named_with_lone_surrogates_gets_its_reports(tmp_path: Path) -> None:
    """A masker's hello and refusals holding lone surrogates, its refusals quoting the values of
    earlier requests: no encoding error, reports written (not refused for a value they would
    hold), the JSON report reads back, the Markdown report shows the escape, no run of a value
    anywhere."""
    done = _tool(
        tmp_path,
        "-m",
        "conformance.cli",
        "masker",
        "--masker",
        f"{sys.executable} {ADAPTERS} masker-surrogate",
        "--report-json",
        "masker.json",
        "--report-md",
        "masker.md",
        "--timeout",
        "5",
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-2000:]
    assert done.returncode in (1, 2), output[-2000:]
    report = json.loads((tmp_path / "masker.json").read_text(encoding="utf-8"))
    assert "\ud800" in report["masker"]["name"]
    markdown = (tmp_path / "masker.md").read_text(encoding="utf-8")
    assert "\\ud800" in markdown
    lines = (tmp_path / "values.jsonl").read_text(encoding="utf-8").splitlines()
    values = [value for line in lines for value in json.loads(line) if len(value) >= 8]
    assert values, "the masker was sent no values"
    for text in (output, markdown, json.dumps(report, ensure_ascii=False)):
        assert not leaked_runs(text, values)


@pytest.mark.parametrize("mode", ["protocol-true", "canary-garbage"])
def test_the_differential_fuzzer_ends_a_broken_host_with_exit_2(tmp_path: Path, mode: str) -> None:
    """A host refused at the handshake, or one that quotes runs of the fuzzer's values in its
    errors: one line, exit 2 (not 1, a disagreement), no traceback, no run of a value."""
    from fuzz.rig import CANARIES

    done = _tool(
        tmp_path,
        "-m",
        "fuzz.differential",
        "--host",
        f"{sys.executable} {ADAPTERS} {mode}",
        "--examples",
        "5",
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-2000:]
    assert "Traceback" not in output, output[-2000:]
    values = [value for entry in CANARIES.values() for value in entry if len(value) >= 8]
    assert not leaked_runs(output, values)
