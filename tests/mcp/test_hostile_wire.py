"""Values where no earlier list named a surface, on the MCP wire: each is a leak (decisions R9.3
v1.2, S1.9), and an unlearned disposition leaves its judgment unchecked (decisions S1.12).

Each test runs the suite, narrowed to one check, against the reference driver with one attack of
:mod:`tests.mcp.hostile_wire` on its MCP layer; the unmodified reference driver, narrowed the
same way, stays conformant. No value is printed: findings name labels only.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Final

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

from conformance.outcomes import UNLEARNED_REASON
from tests.conformance.suite_runs import run_suite

PYTHON: Final = shlex.quote(sys.executable)
HOSTILE: Final = f"{PYTHON} {shlex.quote(str(Path(__file__).with_name('hostile_wire.py')))}"
REFERENCE: Final = f"{PYTHON} -m reference_impl.driver"

#: One plain check over MCP whose calls carry a vault of one secret.
ONE_CHECK: Final = ("-k", "test_references_only_in_arguments")

#: Each attack, and the requirement its leak names beside invariant 1.
ATTACKS: Final = {
    "content-meta": "MCP-003",
    "content-annotations": "MCP-003",
    "resource-uri": "MCP-003",
    "resource-mime": "MCP-003",
    "unknown-member": "MCP-003",
    "resource-updated": "MCP-003",
    "sampling": "MCP-003",
    "roots": "MCP-003",
    "progress-elsewhere": "MCP-003",
    "late-log": "MCP-004",
}


def _run(tmp_path: Path, host: str, *narrowing: str) -> dict[str, Any]:
    run = run_suite(tmp_path, "--host", host, "--via", "mcp", *narrowing)
    report: dict[str, Any] = run.report()
    text = "\n".join(
        path.read_text(encoding="utf-8") for path in (run.json_path, run.md_path, run.junit_path)
    )
    # A leak's report names the value's label, never the value.
    assert not any(canary.value in text for canary in run.canaries)
    return report


@pytest.mark.req("MCP-003", "MCP-004", "INV1")
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_value_anywhere_on_the_session_is_non_conformant(tmp_path: Path, attack: str) -> None:
    report = _run(tmp_path, f"{HOSTILE} {attack}", *ONE_CHECK)
    named = {rid for check in report["checks"] for rid in check["failedRequirements"]}
    assert {"INV1", ATTACKS[attack]} <= named, attack
    assert report["exitCode"] == 1
    assert report["verdict"] == "not-conformant", report["verdict"]


@pytest.mark.req("MCP-003", "MCP-004", "INV1")
def test_the_reference_driver_stays_conformant(tmp_path: Path) -> None:
    report = _run(tmp_path, REFERENCE, *ONE_CHECK)
    assert [c["id"] for c in report["checks"] if c["outcome"] != "pass"] == []
    assert report["exitCode"] == 0


@pytest.mark.req("APPR-010")
def test_an_unlearned_disposition_is_unchecked_never_failed(tmp_path: Path) -> None:
    """No _meta key, no error data, no ledger: the denial check is unchecked, not failed."""
    stripped = f"{PYTHON} -m conformance.strip observe.ledger -- {HOSTILE} no-disposition"
    report = _run(tmp_path, stripped, "--requirements", "APPR-010", "-k", "test_denial_is_denied")
    checks = [check for check in report["checks"] if check["id"].endswith("test_denial_is_denied")]
    assert checks
    assert all(check["failedRequirements"] == [] for check in checks)
    reasons = {entry["reason"] for check in checks for entry in check["unchecked"]}
    assert UNLEARNED_REASON in reasons
    outcomes = {entry["id"]: entry["outcome"] for entry in report["requirements"]}
    assert outcomes["APPR-010"] == "unchecked"
