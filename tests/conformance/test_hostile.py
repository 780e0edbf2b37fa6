"""The harness survives hostile adapters: bounded time and memory, no orphans, inert reports.

Each test runs ``secref-conformance`` as a child process against one attack of
``hostile_adapters.py`` (decisions S1.5) and asserts, for that run: the wall time it took, the
peak resident memory of the suite and everything it waited for (``wait4``), that no process
carrying the run's marker outlived it, that the JSON report validates against its schema, the
Markdown report has exactly one verdict line and no live markup, the JUnit XML parses, the
terminal output holds no escape character, and the exit code matches the verdict.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import uuid
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from jsonschema import Draft202012Validator

from conformance.report import EXIT_CODES, report_schema
from tests.processes import marked

ADAPTERS: Final = Path(__file__).parent / "hostile_adapters.py"

#: The one check each run selects (it cites VAULT-003): a vault of canaries, one call, one
#: observation, so each attack is met at the handshake, at configure, at invoke or at observe.
ONE_CHECK: Final = "test_reference_free_reads_nothing"

#: Seconds one hostile run may take. The suite's own limits in these runs are a 2 s request
#: timeout, a 5 s handshake and one check, plus starting the interpreter and pytest (about 4 s
#: of CPU); the bound is far below the hour the attacking children sleep, and generous because
#: the test machine may be shared.
MAX_RUN_SECONDS: Final = 60.0

#: Peak resident memory, in KiB, of one hostile run: the suite process with pytest and the
#: checks loaded stays under 100 MiB; the 16 MiB line bound may double while it is read.
MAX_RSS_KIB: Final = 256 * 1024

#: What a run may add, in KiB, to the peak a child of this process starts with. Linux carries
#: the parent's peak across fork and exec into a child's ``ru_maxrss``, so a test process that
#: has grown (a worker that ran many suites in process) lends every child its own peak: above
#: :data:`MAX_RSS_KIB`, a run is then held to that inherited peak plus this much, a bound that
#: still catches a blow-up.
HEADROOM_KIB: Final = 128 * 1024

#: A line that would be a second verdict, forged by host text.
VERDICT_LINE: Final = re.compile(r"^\s*(?:[-*+]|\d+\.)?\s*Verdict:", re.MULTILINE)

#: Raw markup that must never reach the Markdown report from host text.
LIVE_MARKUP: Final = ("<script", "<img", "<!--", "\x1b", "\u202e", "**conformant**\n")


@dataclass(frozen=True, slots=True)
class HostileRun:
    """One run of the console script against a hostile adapter."""

    status: int
    seconds: float
    peak_rss_kib: int
    orphans: tuple[int, ...]
    output: str
    tmp: Path
    rss_bound_kib: int = MAX_RSS_KIB
    """The bound on :attr:`peak_rss_kib`: :data:`MAX_RSS_KIB`, or what any child of this
    process starts with plus :data:`HEADROOM_KIB` when that is more."""

    def report(self) -> dict[str, Any]:
        """Return the JSON report, checked against its schema."""
        report: dict[str, Any] = json.loads((self.tmp / "report.json").read_text("utf-8"))
        Draft202012Validator(report_schema()).validate(report)
        return report

    def markdown(self) -> str:
        """Return the Markdown report."""
        return (self.tmp / "report.md").read_text(encoding="utf-8")

    def junit(self) -> str:
        """Return the JUnit XML report, checked to parse."""
        text = (self.tmp / "junit.xml").read_text(encoding="utf-8")
        ElementTree.fromstring(text)  # noqa: S314 (the suite's own report, written just now)
        return text


def run_hostile(tmp_path: Path, mode: str, *options: str, check: str | None = None) -> HostileRun:
    """Run the console script against the adapter in ``mode``; measure and clean up after it."""
    import subprocess

    tmp_path.mkdir(parents=True, exist_ok=True)
    marker = f"secref-hostile-{uuid.uuid4().hex}"
    command = f"{sys.executable} {ADAPTERS} {mode} {marker}"
    env = dict(os.environ)
    env.update(
        SECREF_HOSTILE_MARKER=marker,
        SECREF_HOSTILE_VALUES=str(tmp_path / "values.jsonl"),
        PY_COLORS="0",
    )
    argv = [
        sys.executable,
        "-m",
        "conformance.cli",
        "--host",
        command,
        "--report-json",
        str(tmp_path / "report.json"),
        "--report-md",
        str(tmp_path / "report.md"),
        "--host-timeout",
        "2",
        "--host-start-timeout",
        "5",
        *options,
        "--",
        "--junitxml",
        str(tmp_path / "junit.xml"),
        # One check is enough to meet each attack, and keeps the module fast.
        "-k",
        check or ONE_CHECK,
    ]
    # The peak any child of this process starts with, measured on one that does nothing.
    idle = subprocess.Popen([sys.executable, "-c", "pass"])
    _, _, idle_usage = os.wait4(idle.pid, 0)
    idle.returncode = 0
    bound = max(MAX_RSS_KIB, int(idle_usage.ru_maxrss) + HEADROOM_KIB)
    started = time.monotonic()
    with (tmp_path / "output.txt").open("wb") as output:
        process = subprocess.Popen(
            argv,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
            start_new_session=True,
        )
    # wait4 gives this one child's peak memory, which includes every process it waited for.
    deadline = started + MAX_RUN_SECONDS * 2
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(process.pid, 0)
            break
        time.sleep(0.05)
    seconds = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    time.sleep(0.2)  # let a process that was killed at the end leave /proc
    orphans = tuple(marked(marker))
    for orphan in orphans:  # never leave them behind, whatever the verdict
        os.kill(orphan, signal.SIGKILL)
    return HostileRun(
        status=process.returncode,
        seconds=seconds,
        peak_rss_kib=int(usage.ru_maxrss),
        orphans=orphans,
        output=(tmp_path / "output.txt").read_text(encoding="utf-8", errors="replace"),
        tmp=tmp_path,
        rss_bound_kib=bound,
    )


def assert_survived(run: HostileRun) -> dict[str, Any]:
    """Assert every property a hostile run must keep; return its JSON report."""
    assert run.seconds < MAX_RUN_SECONDS, f"the run took {run.seconds:.1f} s"
    assert run.peak_rss_kib < run.rss_bound_kib, f"peak RSS {run.peak_rss_kib} KiB"
    assert run.orphans == (), f"{len(run.orphans)} processes outlived the run"
    assert "\x1b" not in run.output, "an escape character reached the terminal"
    assert "Traceback" not in run.output, run.output[-2000:]
    assert "INTERNALERROR" not in run.output, run.output[-2000:]
    report = run.report()
    assert run.status == EXIT_CODES[report["verdict"]] == report["exitCode"]
    assert report["verdict"] != "conformant"
    markdown = run.markdown()
    assert len(VERDICT_LINE.findall(markdown)) == 1, "the Markdown report has a forged verdict"
    for raw in LIVE_MARKUP:
        assert raw not in markdown, f"{raw!r} reached the Markdown report"
    run.junit()
    return report


def errored_details(report: dict[str, Any]) -> list[str]:
    """Return the detail of every errored check."""
    return [check["detail"] or "" for check in report["checks"] if check["outcome"] == "error"]


def test_child_inheriting_stdout_cannot_hang_the_run(tmp_path: Path) -> None:
    """A child that keeps the adapter's stdout open for an hour neither hangs nor outlives it."""
    run = run_hostile(tmp_path, "inherit-sleeper", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert any("exited with status 5" in detail for detail in errored_details(report))


def test_children_outside_the_process_group_are_killed(tmp_path: Path) -> None:
    """Children with no shared stdio, one in a session of its own, die with the run."""
    run = run_hostile(tmp_path, "orphans", "--requirements", "VAULT-003")
    assert run.orphans == ()
    assert run.status in (0, 1, 2)
    assert_survived_except_verdict(run)


def test_orphan_without_marker_or_group_is_killed(tmp_path: Path) -> None:
    """A grandchild that cleared its environment, left the group and lost its parent dies too."""
    run = run_hostile(tmp_path, "escape-artist", "--requirements", "VAULT-003")
    assert run.orphans == ()
    assert_survived_except_verdict(run)


def assert_survived_except_verdict(run: HostileRun) -> None:
    """Assert the bounds and well-formed reports of a run whose host may be conformant."""
    assert run.seconds < MAX_RUN_SECONDS
    assert run.peak_rss_kib < run.rss_bound_kib
    report = run.report()
    assert run.status == report["exitCode"]
    assert len(VERDICT_LINE.findall(run.markdown())) == 1
    run.junit()


def test_output_without_newline_is_bounded(tmp_path: Path) -> None:
    """A flood with no newline ends the check as errored at the line limit, memory bounded."""
    run = run_hostile(tmp_path, "flood", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert any("--host-max-line" in detail for detail in errored_details(report)), report
    limited = run_hostile(
        tmp_path / "limited", "flood", "--requirements", "VAULT-003", "--host-max-line", "4096"
    )
    assert any("more than 4096 bytes" in d for d in errored_details(assert_survived(limited)))


def test_deeply_nested_line_is_an_error_that_names_it(tmp_path: Path) -> None:
    """A line of 100,000 ``[`` errors the check at once, naming the nesting, not a timeout."""
    run = run_hostile(tmp_path, "brackets", "--requirements", "VAULT-003")
    report = assert_survived(run)
    details = errored_details(report)
    assert any("nested deeper than" in detail for detail in details), details
    assert not any("did not answer" in detail for detail in details)


def test_prompt_flood_is_bounded(tmp_path: Path) -> None:
    """Thousands of prompts neither cost a thread each without end nor hang the check."""
    run = run_hostile(tmp_path, "prompt-flood", "--requirements", "VAULT-003")
    details = errored_details(assert_survived(run))
    assert any(
        "prompts at once" in detail or "did not read its input" in detail for detail in details
    ), details


def test_protocol_true_is_refused(tmp_path: Path) -> None:
    """``"protocol": true`` is not version 1: a harness error that says so, exit 2."""
    run = run_hostile(tmp_path, "protocol-true", "--requirements", "VAULT-003")
    assert run.status == 2
    assert "speaks driver protocol true" in run.output
    assert run.seconds < MAX_RUN_SECONDS
    assert run.orphans == ()
    assert "Traceback" not in run.output
    assert "INTERNALERROR" not in run.output


def test_host_markup_is_inert_in_every_report(tmp_path: Path) -> None:
    """Newlines, a forged verdict, HTML, an open comment and ANSI escapes stay inert text."""
    run = run_hostile(tmp_path, "markup", "--requirements", "VAULT-003")
    report = assert_survived(run)
    assert "\n" in report["host"]["name"]  # JSON keeps the text, as data
    markdown = run.markdown()
    assert "&lt;script&gt;" in markdown
    assert "&lt;!--" in markdown
    assert "\\\\x1b" in markdown  # shown as an escape
    host_line = next(line for line in markdown.splitlines() if line.startswith("- Host:"))
    assert "Verdict" in host_line  # the forged line stayed inside the host's own line
    assert "\x1b" not in run.junit()


@pytest.mark.parametrize("mode", ["canary-garbage", "canary-line"])
def test_canary_fragments_never_reach_a_report(tmp_path: Path, mode: str) -> None:
    """Pieces of configured values quoted in garbage leave no run of 8 of them in any report."""
    run = run_hostile(
        tmp_path, mode, "--requirements", "SCRUB-007", check="test_placeholder_names_lower"
    )
    report = assert_survived(run)
    assert errored_details(report), "the garbage should have errored a check"
    values = [
        value
        for line in (tmp_path / "values.jsonl").read_text(encoding="utf-8").splitlines()
        for value in json.loads(line)
        if len(value) >= 12
    ]
    assert values, "the adapter was configured with no values"
    texts = {
        "json": json.dumps(report, ensure_ascii=False),
        "markdown": run.markdown(),
        "junit": run.junit(),
        "terminal": run.output,
    }
    for medium, text in texts.items():
        for value in values:
            runs = {value[start : start + 8] for start in range(len(value) - 7)}
            leaked = [piece for piece in runs if piece in text]
            assert not leaked, f"{len(leaked)} runs of a value reached the {medium} report"


def test_nested_alias_expectations_are_a_usage_error(tmp_path: Path) -> None:
    """A 1 KB YAML of nested aliases is refused with exit 2: no traceback, no memory blow-up."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 12):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert bomb.stat().st_size < 1500
    run = run_hostile(
        tmp_path, "orphans", "--requirements", "VAULT-003", "--expectations", str(bomb)
    )
    assert run.status == 2
    assert "anchor or alias" in run.output
    assert "Traceback" not in run.output
    assert "INTERNALERROR" not in run.output
    assert run.seconds < MAX_RUN_SECONDS
    assert run.peak_rss_kib < run.rss_bound_kib
    assert run.orphans == ()


def test_malformed_surfaces_are_a_host_error() -> None:
    """An observe result of the wrong shape errors the check; it is never a verdict."""
    from conformance.host import HostConfig
    from conformance.hosts.subprocess import ProtocolViolationError, SubprocessHost

    host = SubprocessHost([sys.executable, str(ADAPTERS), "bad-observe"], call_timeout=5.0)
    try:
        host.reset(HostConfig())
        with pytest.raises(ProtocolViolationError, match="observe result is malformed"):
            host.observe()
        assert host.failure is not None
    finally:
        host.close()


@pytest.mark.parametrize("payload", ["true", "1.0", '"1"', "2"])
def test_only_the_integer_one_is_protocol_one(payload: str) -> None:
    """The handshake check refuses every stand-in for the integer 1."""
    from conformance.hosts._protocol import is_protocol_version

    assert not is_protocol_version(json.loads(payload))
    assert is_protocol_version(json.loads("1"))
