"""The mutation runner's children are bounded in time and memory, and own their process tree
(S1.5, S1.10).

A scratch copy whose interpreter start-up hangs (a ``sitecustomize`` that sleeps, after
starting a grandchild that would outlive it) must not hang the judge: the import probe ends at
its bound, with the cause, and no process it started is left. A suite run whose host grows
without end is ended at the memory bound, long before its timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.hosts import _supervise
from conformance.selftest import mutation_judge
from conformance.selftest.mutation_judge import Scratch, check_imports

HANG = """
import os, subprocess, sys, time
if os.environ.get("SECREF_TEST_HANG_MARK"):
    with open(os.environ["SECREF_TEST_HANG_MARK"], "a") as file:
        child = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(3600)"])
        file.write(f"{child.pid}\\n")
    time.sleep(3600)
"""


def _alive(pid: int) -> bool:
    fields = _supervise.stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _assert_ended(marks: Path) -> None:
    """Every process whose id the run wrote to ``marks`` is gone (there was at least one)."""
    started = [int(line) for line in marks.read_text(encoding="utf-8").split()]
    assert started, "the run started no grandchild, so the test proves nothing"
    time.sleep(0.2)
    assert not [pid for pid in started if _alive(pid)]


def test_a_hanging_import_probe_ends_at_its_bound_with_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe of a copy whose start-up hangs is killed, its grandchild with it."""
    (tmp_path / "sitecustomize.py").write_text(HANG, encoding="utf-8")
    mark = tmp_path / "children.txt"
    monkeypatch.setenv("SECREF_TEST_HANG_MARK", str(mark))
    monkeypatch.setattr(mutation_judge, "PROBE_TIMEOUT", 2.0)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="did not end within 2 s"):
        check_imports(Scratch(tmp_path))
    assert time.monotonic() - started < 10.0
    _assert_ended(mark)


GROW = """
import subprocess, sys, time
# A child in a session of its own, as the suite starts a host adapter: killing the run's group
# alone would leave it running.
child = subprocess.Popen(
    [sys.executable, "-S", "-c", "import time; time.sleep(3600)"], start_new_session=True
)
print(child.pid, flush=True)
held = []
while len(held) < 64:  # 512 MiB at most, whatever becomes of the bound
    held.append(bytearray(8 * 1024 * 1024))
    time.sleep(0.01)
time.sleep(3600)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the bound reads /proc")
def test_a_run_that_grows_without_end_is_ended_at_the_memory_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutant whose host holds ever more memory ends in seconds, not at the timeout."""
    script = tmp_path / "grow.py"
    script.write_text(GROW, encoding="utf-8")
    out = tmp_path / "out.txt"
    command = f"sh -c 'exec {sys.executable} -S {script} > {out}'"
    monkeypatch.setattr(mutation_judge, "MEMORY_LIMIT", 200 * 1024 * 1024)
    started = time.monotonic()
    status, code, seconds = mutation_judge._run_once(Scratch(tmp_path), command, 40.0, None)
    assert (status, code) == ("timeout", None)
    assert seconds < 20.0
    assert time.monotonic() - started < 20.0
    _assert_ended(out)


HOLD = """
import subprocess, sys, time
held = bytearray(64 * 1024 * 1024)
subprocess.Popen(
    [sys.executable, "-S", "-c", "b = bytearray(32 * 1024 * 1024); import time; time.sleep(60)"],
    start_new_session=True,
)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the bound reads /proc")
def test_tree_memory_counts_the_process_and_its_descendants_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's resident memory is its own and its children's, a child in a session of its
    own included (the suite starts its host adapters so); another process holds none of it."""
    script = tmp_path / "hold.py"
    script.write_text(HOLD, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-S", str(script)], start_new_session=True)
    try:
        deadline = time.monotonic() + 20.0
        while mutation_judge.tree_memory(proc.pid) < 96 * 1024 * 1024:
            assert time.monotonic() < deadline, "the 64 + 32 MiB of the tree were never counted"
            time.sleep(0.05)
        assert mutation_judge.tree_memory(proc.pid) < 1024**3
    finally:
        for pid in mutation_judge.process_tree(proc.pid):
            os.kill(pid, 9)
        proc.wait()
    assert mutation_judge.tree_memory(proc.pid) == 0
    monkeypatch.setattr(_supervise, "_PROC", tmp_path / "absent")
    assert mutation_judge.tree_memory(os.getpid()) == 0
