"""Differential fuzzing through the host interface: two reference hosts agree, and a host with
a planted bug is caught with a minimal input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.hosts.inprocess import InProcessHost
from fuzz.differential import Differ, verdict
from tests.fuzz.planted import CaseSensitiveRegistry


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
