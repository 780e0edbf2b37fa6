"""The mutation runner's children are bounded in time and memory, and own their process tree
(S1.5, S1.10).

A scratch copy whose interpreter start-up hangs (a ``sitecustomize`` that sleeps, after
starting a grandchild that would outlive it) must not hang the judge: the import probe ends at
its bound, with the cause, and no process it started is left. A suite run whose host grows
without end is ended at the memory bound, long before its timeout.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    return status.rsplit(")", 1)[-1].split()[0] != "Z"


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
    children = [int(line) for line in mark.read_text(encoding="utf-8").split()]
    assert children, "the start-up started no grandchild, so the test proves nothing"
    time.sleep(0.2)
    assert not [pid for pid in children if _alive(pid)]


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
    children = [int(line) for line in out.read_text(encoding="utf-8").split()]
    assert children, "the run started no grandchild, so the test proves nothing"
    time.sleep(0.2)
    assert not [pid for pid in children if _alive(pid)]


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
def test_tree_memory_counts_the_process_and_its_descendants_alone(tmp_path: Path) -> None:
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
        for child in _children(proc.pid):
            os.kill(child, 9)
        proc.kill()
        proc.wait()
    assert mutation_judge.tree_memory(proc.pid) == 0
    assert mutation_judge.tree_memory(os.getpid(), tmp_path / "absent") == 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text("ascii", errors="replace")
                if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
                    found.append(int(entry.name))
    return found
