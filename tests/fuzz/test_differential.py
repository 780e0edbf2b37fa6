"""Differential fuzzing through the host interface: two reference hosts agree, and a host with
a planted bug is caught with a minimal input."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.hosts.inprocess import InProcessHost
from fuzz.differential import Differ, verdict
from tests.fuzz.planted import CaseSensitiveRegistry
from tests.processes import marked


@pytest.fixture
def reference() -> Iterator[InProcessHost]:
    host = InProcessHost()
    yield host
    host.close()


@pytest.mark.req("GRAM-001", "GRAM-016", "GRAM-017", "SUBST-003")
def test_two_reference_hosts_agree(reference: InProcessHost) -> None:
    """The reference host agrees with itself on every generated call."""
    other = InProcessHost()
    try:
        differ = Differ(reference, other)
        assert differ.search(examples=40) is None
        assert differ.calls >= 40
    finally:
        other.close()


@pytest.mark.req("GRAM-001")
def test_a_planted_disagreement_is_reported_with_a_minimal_input(
    reference: InProcessHost,
) -> None:
    """A host whose marker scan is case-sensitive disagrees, and the report is shrunk to a few
    characters that spell the marker in upper case."""
    buggy = InProcessHost(registry_factory=CaseSensitiveRegistry)
    try:
        found = Differ(reference, buggy).search(examples=300)
    finally:
        buggy.close()
    assert found is not None
    assert found.reference != found.other
    assert found.other == "passed"
    assert "{{secret:" not in found.args
    assert len(found.args) <= 40, str(found)


def test_verdicts_name_dispositions_only() -> None:
    """A verdict is resolved, passed, or refused with the disposition; never the text."""
    from conformance.host import CallResult

    assert verdict(CallResult("APPROVED_ONCE", "x", False)) == "resolved"
    assert verdict(CallResult("ALLOWED", "x", False)) == "passed"
    assert verdict(CallResult("SECRET_UNRESOLVED", "x", True)) == "refused:SECRET_UNRESOLVED"


def test_the_differential_fuzzer_leaves_no_process_of_its_adapter_behind(tmp_path: Path) -> None:
    """An adapter that leaves an orphan in a session of its own, with no trace of the suite in
    its environment, is ended with the fuzzer's run (decisions S1.10)."""
    marker = f"secref-differential-{uuid.uuid4().hex}"
    adapter = Path(__file__).parents[1] / "conformance" / "hostile_adapters.py"
    host = f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))} escape-artist"
    done = subprocess.run(
        [sys.executable, "-m", "fuzz.differential", "--host", host, "--examples", "3"],
        env={**os.environ, "SECREF_HOSTILE_MARKER": marker},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    time.sleep(0.2)  # let a process killed at the end leave /proc
    left = marked(marker)
    for pid in left:  # never leave them behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{len(left)} processes of the adapter outlived the fuzzer"
