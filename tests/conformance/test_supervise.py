"""The adapter's process tree is ended and its adapter reaped, every time.

A ``Popen`` collected while its process seems to run warns (``ResourceWarning``), and the
suite's runs make every warning an error: an adapter killed but not reaped turned a later,
unrelated check into an error at its teardown, on a loaded machine only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from conformance.hosts._supervise import Supervised

#: ``PR_GET_CHILD_SUBREAPER`` from ``<linux/prctl.h>``.
_PR_GET_CHILD_SUBREAPER = 37

#: Adapters killed in a row: the race lost about once in forty on a loaded machine.
ROUNDS = 40


def test_a_killed_adapter_is_always_reaped() -> None:
    """After ``kill_tree`` the adapter has an exit status, however soon it died."""
    unreaped = 0
    for _ in range(ROUNDS):
        supervised = Supervised([sys.executable, "-c", "import time; time.sleep(60)"], None, None)
        try:
            assert supervised.kill_tree() == 0
            if supervised.process.returncode is None:
                unreaped += 1
                supervised.process.wait(5)
        finally:
            for stream in (
                supervised.process.stdin,
                supervised.process.stdout,
                supervised.process.stderr,
            ):
                if stream is not None:
                    stream.close()
    assert unreaped == 0, f"{unreaped} of {ROUNDS} killed adapters were left unreaped"


def _closed(supervised: Supervised) -> None:
    supervised.kill_tree()
    for stream in (supervised.process.stdin, supervised.process.stdout, supervised.process.stderr):
        if stream is not None:
            stream.close()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="no /proc: the processor time is unknown")
def test_the_tree_processor_time_counts_a_busy_grandchild_not_a_sleeping_one(
    tmp_path: Path,
) -> None:
    """The work of the adapter's descendants counts; time spent waiting does not."""
    done = tmp_path / "busy-done"
    grandchild = (
        "import pathlib, sys, time\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end: pass\n"
        "pathlib.Path(sys.argv[1]).touch()\n"
        "time.sleep(60)\n"
    )
    adapter = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
        "time.sleep(60)\n"
    )
    supervised = Supervised([sys.executable, "-c", adapter, grandchild, str(done)], None, None)
    try:
        # The grandchild says when its half second of work is over (bounded on a busy machine).
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done.exists(), "the busy grandchild never finished its work"
        seconds = supervised.cpu_seconds()
        assert seconds is not None
        assert seconds >= 0.5
        time.sleep(0.5)
        later = supervised.cpu_seconds()
        # Both processes now sleep: half a second of wall time adds (almost) no processor time.
        assert later is not None
        assert later - seconds < 0.2
    finally:
        _closed(supervised)
    assert supervised.cpu_seconds() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers are Linux's")
def test_a_forked_child_becomes_a_subreaper_of_its_own() -> None:
    """The setting is not inherited across fork: a forked worker (the self-test's) asks again,
    so the tree's orphans are reparented to it and its marker scan can stay narrow."""
    import ctypes

    from conformance.hosts import _supervise

    assert _supervise.become_subreaper()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the kernel's setting before and after asking
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            flag = ctypes.c_int(-1)
            libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
            before = flag.value
            asked = _supervise.become_subreaper()
            libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
            os.write(writer, f"{before} {int(asked)} {flag.value}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    os.waitpid(pid, 0)
    with os.fdopen(reader, "rb") as pipe:
        assert pipe.read().decode().split() == ["0", "1", "1"]
