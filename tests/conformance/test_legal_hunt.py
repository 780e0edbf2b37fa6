"""A legal host that shows less than the suite needs is left unchecked, never failed (S1.1).

The variants of :data:`conformance.selftest.variants.PARTLY_OBSERVED` combine alternatives the
rulings allow so that some fact about a call is observable nowhere: over MCP, a withheld call
refused as a JSON-RPC error without a disposition, and left out of the ledger, says its
disposition to no one (decisions R6.3, R9.5, R9.8). The suite must then leave what rests on it
unchecked: no check fails, and no record of an earlier call is read as the withheld call's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.selftest.base import Variant
from conformance.selftest.hosts import driver_command
from conformance.selftest.runner import path_arguments
from conformance.selftest.variants import PARTLY_OBSERVED
from tests.conformance.suite_runs import console

#: The outcomes a requirement of such a variant may show: held, the alternative it took, or
#: unchecked for what the variant leaves unobservable.
ALLOWED = ("pass", "accepted-alternative", "unchecked")


@pytest.mark.req("ORD-004", "LEDG-006", "MCP-011")
# The model check cites these requirements and holds the alternatives a run takes: with one
# example it never met a call the kill switch refuses at the fence, which must be recorded,
# beside one it withholds at step [0], which this variant leaves unrecorded.
@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.parametrize("variant", PARTLY_OBSERVED, ids=lambda variant: variant.name)
def test_partly_observed_variant_fails_nothing(tmp_path: Path, variant: Variant) -> None:
    """No check of the variant's requirements fails or errors, each requirement is held or
    unchecked, the alternatives it takes are reported, and the verdict is never non-conformant."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    # As a user's gate runs it: the command line, in a process of its own.
    reported_to = tmp_path / "report.json"
    done, _ = console(
        tmp_path,
        "--host",
        driver_command(variant.name),
        *path_arguments(variant.via),
        "--requirements",
        ",".join(variant.requirements),
        "--report-json",
        str(reported_to),
        "--report-md",
        str(tmp_path / "report.md"),
        timeout=600.0,
    )
    report = json.loads(reported_to.read_text(encoding="utf-8"))
    # The report says what the exit code says (decisions S1).
    assert done.returncode == report["exitCode"]
    failing = [check["id"] for check in report["checks"] if check["outcome"] in ("fail", "error")]
    assert failing == [], failing[:5]
    outcomes = {entry["id"]: entry["outcome"] for entry in report["requirements"]}
    seen = {rid: outcomes[rid] for rid in variant.requirements}
    assert {rid: outcome for rid, outcome in seen.items() if outcome not in ALLOWED} == {}
    reported = {entry["id"]: entry["alternatives"] for entry in report["requirements"]}
    assert [pair for pair in variant.takes if pair[1] not in reported[pair[0]]] == []
    assert report["exitCode"] in (0, 1)
    assert report["verdict"] != "not-conformant"
