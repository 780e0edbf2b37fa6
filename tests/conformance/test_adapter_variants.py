"""Hosts that differ from the reference host only where the rulings allow are judged as it is.

Hosts in other languages reach the suite through adapters that spell and time their messages
otherwise than the reference driver: a Go or Rust adapter writes a map with its members sorted,
and an adapter on another runtime, or on a loaded machine, answers a few tenths of a second
late. The driver protocol allows both (docs/driver-protocol.md: a line is one JSON object,
unknown members are ignored, and only the call timeout bounds a request). Such a host may also
hand its handler the arguments' members sorted, as a map would: key order is a SHOULD (R4.1).
The variants of :data:`conformance.selftest.variants_legal.NARROWED` take each. The checks that
once failed them (a per-key view or substituted arguments compared in their member order, a
long failure's first value looked for at its head) or left them unchecked (a pending-limit
probe squeezed into a 0.3 s approval timeout, an answer after a control's round trip held to
it) must now pass them, with a clean verdict that the JSON, Markdown and JUnit reports and the
exit status all give alike, and a departure from a SHOULD reported non-strict. One nested run
per variant, narrowed to those checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.latency import LONGEST_S, TRIPS, fitted_timeout
from conformance.selftest.hosts import driver_command
from conformance.selftest.runner import path_arguments
from conformance.selftest.variants import BY_NAME
from conformance.selftest.variants_legal import NARROWED
from tests.conformance.junit_file import assert_agrees
from tests.conformance.suite_runs import run_suite

#: The checks each variant once failed or left unchecked, as a ``-k`` expression.
CHECKS = {
    "driver-map-writer": "test_raw_and_view_agree or test_valid_vector_resolves and gram-0038",
    "substitution-sorts-members": (
        "test_raw_and_view_agree and plain or test_valid_vector_resolves and gram-0038"
        " or test_failure_text_longer_than_the_cap and at-the-cut-plain"
    ),
    "driver-late-writes": (
        "test_limit_exact_after and timeouts"
        " or test_trust_granted_while_prompt_open_answers_nothing and password-yolo-deny"
    ),
}


def test_every_adapter_variant_is_run() -> None:
    """Each adapter variant has its checks here, and the driver serves it by name."""
    assert sorted(CHECKS) == sorted(variant.name for variant in NARROWED)
    assert all(BY_NAME[name].via == "driver" for name in CHECKS)


@pytest.mark.req("SUBST-001", "SUBST-005", "INV6", "SCRUB-010", "APPR-009", "APPR-010")
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_adapter_variant_is_judged_clean(tmp_path: Path, name: str) -> None:
    """No check fails or errors, nothing is left unchecked, a SHOULD the variant departs from is
    non-strict, and every report says conformant with exit status 0."""
    variant = BY_NAME[name]
    run = run_suite(
        tmp_path, "--host", driver_command(name), *path_arguments(variant.via), "-k", CHECKS[name]
    )
    report = run.report()
    outcomes = {check["id"]: check["outcome"] for check in report["checks"]}
    ran = [cid for cid in outcomes if "::test_" in cid]
    assert ran, "no check ran"
    held = ("pass", "non-strict") if variant.differs else ("pass",)
    assert {cid: outcomes[cid] for cid in ran if outcomes[cid] not in held} == {}
    departed = {row["id"] for row in report["requirements"] if row["outcome"] == "non-strict"}
    assert departed == set(variant.differs)
    assert [row["unchecked"] for row in report["checks"] if row["unchecked"]] == []
    assert report["unchecked"]["undeclared"] == []
    assert run.status == 0
    assert report["exitCode"] == 0
    assert report["verdict"].startswith("conformant")
    assert "Verdict: **conformant" in run.md_path.read_text(encoding="utf-8")
    assert_agrees(run.junit_path, report, run.status)


def test_fitted_timeout_keeps_a_fast_host_short() -> None:
    """A fast host keeps the check's own short timeout; a slower one gets room for the round
    trips the probe needs, never more than the longest."""
    assert fitted_timeout(0.3, 0.001) == 0.3
    assert fitted_timeout(0.3, 0.2) == pytest.approx(TRIPS * 0.2)
    assert fitted_timeout(0.3, 60.0) == LONGEST_S
