"""The mutation runner's children are bounded in time and own their process tree (S1.10).

A scratch copy whose interpreter start-up hangs (a ``sitecustomize`` that sleeps, after
starting a grandchild that would outlive it) must not hang the judge: the import probe ends at
its bound, with the cause, and no process it started is left.
"""

from __future__ import annotations

import os
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
