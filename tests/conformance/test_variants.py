"""The suite passes every legal variant of the reference host, and still catches the faults
next to them (decisions S1.12).

Each variant of :mod:`conformance.selftest.variants` takes an alternative the rulings allow; the
suite, narrowed to the variant's requirements and reaching it by the variant's path, must fail
none of its checks. The fault beside each variant is a mutant of the self-test's catalog
(``secref-conformance selftest`` proves it caught); the one whose catch reaches beyond its
mutant's requirement is run here too. Together, the reference host's own choices and the
alternatives the variants take cover every alternative of every EITHER requirement, and each is
proved reported by a real run.

The variants' runs draw the model check's first example from its CI seed, as every suite run of
these tests does (``tests/conftest.py``): that example holds the queue full, runs past the
execution timeout and lets prompts time out, and the whole budget for every variant took a third
of the unit-test job's time. ``SECREF_MODEL_EXAMPLES=25 pytest tests/conformance/test_variants.py``
runs every variant against a 25-example campaign from a fresh seed instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

import pytest

from conformance import catalog
from conformance.selftest.hosts import driver_command
from conformance.selftest.runner import path_arguments
from conformance.selftest.strip import stripped_command
from conformance.selftest.variants import BY_NAME, VARIANTS
from tests.conformance.suite_runs import run_suite

#: The requirement outcomes a variant may show: held, or the alternative it took.
HELD = ("pass", "accepted-alternative")

#: The EITHER requirements, each with its alternatives, in catalog order.
EITHER: Final = {
    entry.id: entry.alternatives
    for entry in catalog.load_catalog().requirements
    if entry.level == catalog.EITHER
}

#: The alternatives the reference host takes, as the suite reports them on it (pinned here, and
#: proved by :func:`test_reference_choices_are_what_the_suite_reports`); it splits GRAM-019,
#: refusing extension text and resolving duplicate keys (docs/design-choices.md).
REFERENCE_CHOICES: Final = {
    "GRAM-007": ("literal",),
    "GRAM-019": ("refuse", "resolve"),
    "APPR-007": ("does-not-trust",),
    "FENCE-005": ("refused",),
    "FENCE-006": ("refused",),
    "SCRUB-002": ("kept",),
    "SCRUB-008": ("first",),
    "SCRUB-013": ("clean",),
    "SCRUB-018": ("refused",),
    "LEDG-006": ("recorded",),
    "MCP-011": ("result",),
    "MCP-012": ("deny",),
}

#: The EITHER requirements that arise only over MCP (decisions R9), judged on that path alone.
_MCP_EITHER: Final = tuple(
    entry.id
    for entry in catalog.load_catalog().requirements
    if entry.level == catalog.EITHER and entry.scope == catalog.MCP_SCOPE
)


def _run(
    tmp_path: Path,
    name: str,
    via: str,
    requirements: tuple[str, ...],
    hidden: tuple[str, ...] = (),
) -> dict[str, Any]:
    command = driver_command(name)
    run = run_suite(
        tmp_path,
        "--host",
        stripped_command(hidden, command) if hidden else command,
        *path_arguments(via),
        "--requirements",
        ",".join(requirements),
    )
    return run.report()


@pytest.mark.req("MCP-006", "MCP-011", "MCP-007", "FENCE-005", "APPR-010")
@pytest.mark.parametrize("name", [variant.name for variant in VARIANTS])
def test_variant_is_conformant(tmp_path: Path, name: str) -> None:
    """Every check of the variant's requirements passes, each requirement holds, and a SHOULD
    the variant departs from is reported non-strict, never failed nor left stopping a check."""
    variant = BY_NAME[name]
    if variant.via == "mcp":
        pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    report = _run(tmp_path, name, variant.via, variant.requirements, variant.hidden)
    failing = [check["id"] for check in report["checks"] if check["outcome"] in ("fail", "error")]
    assert failing == [], failing[:5]
    outcomes = {entry["id"]: entry["outcome"] for entry in report["requirements"]}
    expected = {
        rid: "non-strict" if rid in variant.differs else "held" for rid in variant.requirements
    }
    seen = {rid: "held" if outcomes[rid] in HELD else outcomes[rid] for rid in variant.requirements}
    assert seen == expected
    reported = {entry["id"]: entry["alternatives"] for entry in report["requirements"]}
    missed = [pair for pair in variant.takes if pair[1] not in reported[pair[0]]]
    assert missed == [], f"alternatives the variant takes that the suite did not report: {missed}"
    assert report["exitCode"] == 0


@pytest.mark.req(*EITHER)
def test_every_either_alternative_is_taken_by_a_conformant_host() -> None:
    """Every alternative of every EITHER requirement is the reference host's choice or taken by
    a legal variant, and each variant takes only catalog alternatives of requirements it runs."""
    for variant in VARIANTS:
        for requirement, alternative in variant.takes:
            assert alternative in EITHER.get(requirement, ()), (variant.name, requirement)
            assert requirement in variant.requirements, (variant.name, requirement)
    assert set(REFERENCE_CHOICES) == set(EITHER)
    taken = {pair for variant in VARIANTS for pair in variant.takes}
    taken |= {(rid, alt) for rid, alternatives in REFERENCE_CHOICES.items() for alt in alternatives}
    every = [(rid, alt) for rid, alternatives in EITHER.items() for alt in alternatives]
    assert [pair for pair in every if pair not in taken] == []


@pytest.mark.req(*EITHER)
@pytest.mark.parametrize("via", ["inprocess", "mcp"])
def test_reference_choices_are_what_the_suite_reports(tmp_path: Path, via: str) -> None:
    """A run of the suite on the reference host, narrowed to the EITHER requirements of a path,
    reports exactly the alternatives pinned as the reference host's choices."""
    if via == "mcp":
        pytest.importorskip("mcp", reason="the MCP SDK is not installed")
        chosen = _MCP_EITHER
        path = ["--host", f"{sys.executable} -m reference_impl.driver", *path_arguments(via)]
    else:
        chosen = tuple(rid for rid in EITHER if rid not in _MCP_EITHER)
        path = []
    report = run_suite(tmp_path, *path, "--requirements", ",".join(chosen)).report()
    reported = {
        entry["id"]: set(entry["alternatives"])
        for entry in report["requirements"]
        if entry["id"] in chosen
    }
    assert reported == {rid: set(REFERENCE_CHOICES[rid]) for rid in chosen}
    assert report["exitCode"] == 0


@pytest.mark.req("MCP-006", "MSG-003")
def test_refusal_behind_another_prefix_fails_the_message_checks(tmp_path: Path) -> None:
    """A JSON-RPC error whose message puts a banner before the refusal fails MCP-006 and the
    R2 message checks: only the error-code prefix is accepted."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    report = _run(tmp_path, "mcp-refusal-error-behind-banner", "mcp", ("MCP-006", "MSG-003"))
    named = {rid for check in report["checks"] for rid in check["failedRequirements"]}
    assert {"MCP-006", "MSG-003"} <= named
