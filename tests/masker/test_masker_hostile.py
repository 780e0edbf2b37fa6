"""The masker path survives hostile adapters (decisions S1.5 and S1.10): bounded time, no orphans.

Each test drives an attack of ``hostile_maskers.py``, either through ``SubprocessMasker`` or
through the console script in a process of its own, and pins one bound: a request the adapter
never reads, a ``setsid`` child that holds the adapter's standard output, and an adapter that
crashes on every request, which is abandoned after three.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest

from conformance.masker.checks import Canaries, run_checks
from conformance.masker.protocol import (
    MAX_CONSECUTIVE_FAILURES,
    MaskerAbandonedError,
    MaskerError,
    SubprocessMasker,
)

HOSTILE: Final = Path(__file__).parent / "hostile_maskers.py"

#: Seconds one hostile run may take with ``--timeout 1``: three failures of about a second each,
#: three adapter starts and the interpreter's own start, far below the ten minutes the attacks
#: sleep, and generous because the test machine is shared.
MAX_RUN_SECONDS: Final = 30.0


def _command(mode: str, log: Path) -> str:
    return f"{sys.executable} {HOSTILE} {mode} {log}"


def _logged(log: Path, kind: str) -> list[int]:
    """Return the process ids of one kind (``adapter`` or ``child``) the attack logged."""
    if not log.exists():
        return []
    return [
        int(pid)
        for what, pid in (line.split() for line in log.read_text().splitlines())
        if what == kind
    ]


def _alive(pid: int) -> bool:
    """Return whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _run_cli(tmp_path: Path, command: str) -> tuple[int, float, str]:
    """Run ``secref-conformance masker`` on ``command`` with ``--timeout 1``; return its exit
    code, wall time and output. A run past twice the bound is killed and fails the test."""
    argv = [
        sys.executable,
        "-m",
        "conformance.cli",
        "masker",
        "--masker",
        command,
        "--timeout",
        "1",
        "--start-timeout",
        "20",
        "--report-json",
        str(tmp_path / "masker.json"),
        "--report-md",
        str(tmp_path / "masker.md"),
    ]
    started = time.monotonic()
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=MAX_RUN_SECONDS * 2)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.communicate()
            pytest.fail("the run did not end")
    return process.returncode, time.monotonic() - started, output.decode("utf-8", "replace")


def _gone(pids: list[int]) -> list[int]:
    """Return the processes of ``pids`` still alive after a short grace for the kernel."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    alive = [pid for pid in pids if _alive(pid)]
    for pid in alive:  # never leave them behind, whatever the result
        os.kill(pid, 9)
    return alive


def test_a_request_the_masker_never_reads_is_an_error_within_the_call_timeout(
    tmp_path: Path,
) -> None:
    """A request larger than the pipe to an adapter that never reads fails at the timeout."""
    log = tmp_path / "pids"
    masker = SubprocessMasker(_command("never-reads", log), call_timeout=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(MaskerError, match="did not read its request within 1 s"):
            masker.mask_text([Canaries.mint().plain], "x" * (1024 * 1024))
    finally:
        masker.close()
    assert time.monotonic() - started < 10.0
    assert _gone(_logged(log, "adapter")) == []


def test_a_masker_that_never_reads_ends_the_run_as_a_harness_error(tmp_path: Path) -> None:
    """The console script ends a never-reading masker's run with exit 2, naming the cause."""
    log = tmp_path / "pids"
    code, seconds, output = _run_cli(tmp_path, _command("never-reads", log))
    assert code == 2, output
    assert seconds < MAX_RUN_SECONDS, f"the run took {seconds:.1f} s"
    assert "harness error" in output
    assert f"abandoned after {MAX_CONSECUTIVE_FAILURES} requests in a row" in output
    assert "no answer within 1 s" in output or "did not read its request" in output
    assert _gone(_logged(log, "adapter")) == []


def test_a_setsid_child_holding_stdout_neither_hangs_nor_outlives_the_run(tmp_path: Path) -> None:
    """A ``setsid sleep 600`` that inherited the adapter's stdout is ended with the run."""
    log = tmp_path / "pids"
    code, seconds, output = _run_cli(tmp_path, _command("setsid-child", log))
    # The attack answers with the text unchanged: measured, and non-conformant.
    assert code == 1, output
    assert seconds < MAX_RUN_SECONDS, f"the run took {seconds:.1f} s"
    children = _logged(log, "child")
    assert children, "the attack started no child"
    assert _gone(children + _logged(log, "adapter")) == []


def test_a_setsid_child_is_ended_when_the_masker_closes(tmp_path: Path) -> None:
    """Closing a masker in a process that lives on still ends the child that left its session."""
    log = tmp_path / "pids"
    masker = SubprocessMasker(_command("setsid-child", log), call_timeout=5.0)
    started = time.monotonic()
    try:
        assert masker.mask_text([Canaries.mint().plain], "hello\n") == "hello\n"
    finally:
        masker.close()
    assert time.monotonic() - started < 15.0
    assert _gone(_logged(log, "child") + _logged(log, "adapter")) == []


def test_a_masker_that_crashes_on_every_request_is_abandoned_after_three(tmp_path: Path) -> None:
    """Three crashes in a row abandon the masker: no fourth start, every later request refused."""
    log = tmp_path / "pids"
    masker = SubprocessMasker(_command("crash", log), call_timeout=5.0)
    started = time.monotonic()
    try:
        run_checks(masker)
        assert masker.abandoned is not None
        assert "ended before its answer" in masker.abandoned
        with pytest.raises(MaskerAbandonedError, match="abandoned"):
            masker.mask_text([Canaries.mint().plain], "x")
    finally:
        masker.close()
    assert time.monotonic() - started < MAX_RUN_SECONDS
    # The first start, then a start for each of the second and third requests.
    assert len(_logged(log, "adapter")) == MAX_CONSECUTIVE_FAILURES
    assert _gone(_logged(log, "adapter")) == []


def test_a_crashing_masker_ends_the_console_run_with_exit_2(tmp_path: Path) -> None:
    """Through the console script, the abandoned masker is a harness error in bounded time."""
    code, seconds, output = _run_cli(tmp_path, _command("crash", tmp_path / "pids"))
    assert code == 2, output
    assert seconds < MAX_RUN_SECONDS, f"the run took {seconds:.1f} s"
    assert "MaskerAbandonedError" in output
    assert "ended before its answer" in output
