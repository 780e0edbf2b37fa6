"""The suite passes every legal variant of the reference host, and still catches the faults
next to them (decisions S1.12).

Each variant of :mod:`conformance.selftest.variants` takes an alternative the rulings allow; the
suite, narrowed to the variant's requirements and reaching it by the variant's path, must fail
none of its checks. The fault beside each variant is a mutant of the self-test's catalog
(``secref-conformance selftest`` proves it caught); the one whose catch reaches beyond its
mutant's requirement is run here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.selftest.hosts import driver_command
from conformance.selftest.runner import path_arguments
from conformance.selftest.strip import stripped_command
from conformance.selftest.variants import BY_NAME, VARIANTS
from tests.conformance.suite_runs import run_suite

#: The requirement outcomes a variant may show: held, or the alternative it took.
HELD = ("pass", "accepted-alternative")


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


@pytest.mark.usefixtures("full_model_budget")
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
    assert report["exitCode"] == 0


@pytest.mark.req("MCP-006", "MSG-003")
def test_refusal_behind_another_prefix_fails_the_message_checks(tmp_path: Path) -> None:
    """A JSON-RPC error whose message puts a banner before the refusal fails MCP-006 and the
    R2 message checks: only the error-code prefix is accepted."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    report = _run(tmp_path, "mcp-refusal-error-behind-banner", "mcp", ("MCP-006", "MSG-003"))
    named = {rid for check in report["checks"] for rid in check["failedRequirements"]}
    assert {"MCP-006", "MSG-003"} <= named
