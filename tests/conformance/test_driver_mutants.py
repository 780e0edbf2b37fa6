"""The mutant catalog: big enough, spread over the contract, and partly run through the driver.

The self-test (``tox -e selftest``) proves each mutant is caught; these pin the catalog's shape:
at least 30 broken hosts, each breaking one MUST (or one SHOULD) of the catalog, every section
R1 to R7 and every invariant covered, and at least a third checked through the subprocess
driver, where the mutant really is applied inside the adapter process.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from conformance.host import HandlerKind, HostConfig, SecretSpec, ToolSpec
from conformance.hosts.subprocess import SubprocessHost
from conformance.selftest import runner
from conformance.selftest.catalog import MUTANTS
from conformance.selftest.hosts import driver_command

#: Which mutants break each invariant of the design (through the requirement they break).
INVARIANT_MUTANTS = {
    "INV1": ("debug-log-holds-value", "json-escape-not-scrubbed", "failure-text-unscrubbed"),
    "INV2": ("partial-substitution",),
    "INV3": ("vault-read-before-deny", "trust-answers-secret-call"),
    "INV4": ("fence-stamp-ignored",),
    "INV5": ("reference-free-reencoded", "reference-free-reads-vault"),
    "INV6": ("views-disagree",),
    "INV7": ("quadratic-scrub",),
}


def _catalog() -> dict[str, dict[str, str]]:
    from importlib import resources

    text = resources.files("conformance").joinpath("requirements.yaml").read_text("utf-8")
    return {str(entry["id"]): entry for entry in yaml.safe_load(text)["requirements"]}


def test_catalog_has_thirty_distinct_mutants_breaking_musts() -> None:
    """At least 30 mutants, uniquely named, each breaking one known MUST, SHOULD or EITHER."""
    catalog = _catalog()
    assert len(MUTANTS) >= 30
    assert len({mutant.name for mutant in MUTANTS}) == len(MUTANTS)
    for mutant in MUTANTS:
        # A SHOULD mutant is caught when the suite reports its requirement non-strict; an
        # EITHER mutant follows none of the alternatives, which fails as a MUST does.
        level = catalog[mutant.requirement]["level"]
        assert level in ("MUST", "SHOULD", "EITHER"), mutant.name
        assert mutant.via in ("inprocess", "driver", "mcp")
        assert mutant.driver or mutant.via == "inprocess"


def test_every_must_has_a_mutant() -> None:
    """Every MUST of the catalog is broken by at least one mutant the self-test must catch."""
    catalog = _catalog()
    musts = {rid for rid, entry in catalog.items() if entry["level"] == "MUST"}
    broken = {mutant.requirement for mutant in MUTANTS}
    assert sorted(musts - broken) == []


def test_eight_mcp_mutants_reached_over_mcp() -> None:
    """At least 8 mutants break the MCP layer and are checked over the MCP wire."""
    over_mcp = [mutant for mutant in MUTANTS if mutant.via == "mcp"]
    assert len([mutant for mutant in over_mcp if mutant.requirement.startswith("MCP-")]) >= 8
    # A broken MCP layer may also break a rule of the governed path as the agent reads it (the
    # disposition a JSON-RPC error names, APPR-010); every one is served behind the driver.
    assert all(mutant.driver for mutant in over_mcp)


def test_every_section_and_invariant_is_covered() -> None:
    """Mutants break requirements of every section R1 to R7 and every invariant."""
    catalog = _catalog()
    sections = {str(catalog[mutant.requirement]["section"])[:2] for mutant in MUTANTS}
    assert {f"R{number}" for number in range(1, 8)} <= sections
    names = {mutant.name for mutant in MUTANTS}
    for invariant, breakers in INVARIANT_MUTANTS.items():
        assert set(breakers) <= names, invariant


def test_a_third_run_through_the_driver() -> None:
    """At least a third of the self-test's mutants go through the subprocess path."""
    through_driver = [mutant for mutant in MUTANTS if mutant.via in ("driver", "mcp")]
    assert 3 * len(through_driver) >= len(MUTANTS)


def test_driver_mutant_is_applied_inside_the_adapter() -> None:
    """Behind the reference driver, a mutant changes what the handler receives."""
    secret_id = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
    config = HostConfig(
        secrets=(SecretSpec(secret_id, "example.org", "someone", "pw-not-a-real-canary-1"),),
        tools=(ToolSpec("recorder", "plugin.test", HandlerKind.RECORDER),),
    )
    args = json.dumps({"k": "{{secret:" + secret_id + "}}"})
    host = SubprocessHost(driver_command("views-disagree"))
    try:
        assert "views-disagree" in host.info().name
        host.reset(config)
        assert host.invoke("recorder", args).disposition == "APPROVED_ONCE"
        (receipt,) = host.observe().receipts
        assert json.loads(receipt.raw) != receipt.view  # the broken host's views disagree
    finally:
        host.close()


def test_selftest_closes_with_what_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-test that misses a mutant says so on its last line and exits 1; one that catches
    every mutant does not print that line and exits 0."""
    mutant = MUTANTS[0]
    clean: dict[str, object] = {"checks": [], "problems": []}
    caught: dict[str, object] = {
        "checks": [
            {
                "id": "x",
                "outcome": "fail",
                "failedRequirements": [mutant.requirement],
                "nonStrict": [],
            }
        ],
        "problems": [],
    }
    for report, code in ((clean, 1), (caught, 0)):
        monkeypatch.setattr(runner, "run_suite", lambda _arguments, r=report: r)
        lines: list[str] = []
        assert runner.selftest([mutant.name], out=lines.append) == code
        failed = lines[-1].startswith("self-test FAILED: mutants missed: " + mutant.name)
        assert failed == (code == 1), lines


def test_stripped_runs_take_the_path_of_the_catch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant of the MCP layer is rerun stripped over MCP, as its catch was: a stripped run
    through the driver alone would never meet the mutant, and its conformant verdict would
    read as a stripped capability certifying a broken host."""
    from conformance.selftest import strip

    mcp_mutant = next(mutant for mutant in MUTANTS if mutant.via == "mcp")
    seen: list[list[str]] = []

    def run(arguments: list[str]) -> None:
        seen.append(list(arguments))

    verdicts = [
        runner.Verdict(mcp_mutant, True, (mcp_mutant.requirement,), 1, None, 0.0, ("x.y",), True)
    ]
    monkeypatch.setattr(strip, "capability_table", lambda *_args: [])
    monkeypatch.setattr(runner, "run_suite", run)
    runner._strip_tables(verdicts, lambda _line: None)
    assert len(seen) == 1
    assert seen[0][seen[0].index("--via") + 1] == "mcp", seen[0]


@pytest.mark.parametrize(
    ("core", "modelled", "expected"),
    [
        (True, False, ["-k", "not gen- and not test_model"]),
        (False, False, ["-k", "not test_model"]),
        (True, True, ["-k", "not gen-"]),
        (False, True, []),
    ],
    ids=["named-check", "generated-case", "both", "model-alone"],
)
def test_stripped_reruns_keep_the_model_check_only_where_it_caught(
    monkeypatch: pytest.MonkeyPatch, core: bool, modelled: bool, expected: list[str]
) -> None:
    """A mutant's stripped rerun leaves the model check out unless it was among the checks that
    caught the mutant, and the generated corpus out when a named check caught it."""
    from conformance.selftest import strip

    musts = {rid for rid, entry in _catalog().items() if entry["level"] == "MUST"}
    mutant = next(m for m in MUTANTS if m.via == "driver" and m.requirement in musts)
    seen: list[list[str]] = []
    verdict = runner.Verdict(
        mutant, True, (mutant.requirement,), 1, None, 0.0, ("observe.ledger",), core
    )
    monkeypatch.setattr(strip, "capability_table", lambda *_args: [])
    monkeypatch.setattr(runner, "run_suite", lambda arguments: seen.append(list(arguments)))
    runner._strip_tables([dataclasses.replace(verdict, modelled=modelled)], lambda _line: None)
    assert len(seen) == 1
    keywords = [
        part for index, part in enumerate(seen[0]) if part == "-k" or seen[0][index - 1] == "-k"
    ]
    assert keywords == expected, seen[0]


def test_a_catch_by_the_model_check_is_noted() -> None:
    """The judge notes the model check among the catching checks by its id, and only it."""
    musts = {rid for rid, entry in _catalog().items() if entry["level"] == "MUST"}
    mutant = next(mutant for mutant in MUTANTS if mutant.requirement in musts)

    def report(check_id: str) -> dict[str, object]:
        check = {
            "id": check_id,
            "outcome": "fail",
            "failedRequirements": [mutant.requirement],
            "nonStrict": [],
            "reads": ["observe.ledger"],
            "sweptOnly": [],
        }
        return {"checks": [check], "problems": []}

    by_model = runner.judge(mutant, report("conformance/checks/test_model.py::test_model"), 0.0)
    by_named = runner.judge(mutant, report("test_ledger.py::test_model_of_nothing"), 0.0)
    assert (by_model.caught, by_model.modelled) == (True, True)
    assert (by_named.caught, by_named.modelled) == (True, False)


def test_a_second_mutant_caught_alike_is_not_rerun_stripped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two mutants of one requirement caught by the same checks resting on the same capability
    give one stripped row; a different catching check, capability or path gives its own."""
    from conformance.selftest import strip

    musts = {rid for rid, entry in _catalog().items() if entry["level"] == "MUST"}
    first = next(m for m in MUTANTS if m.via == "driver" and m.requirement in musts)
    second = next(m for m in MUTANTS if m.via == "driver" and m is not first)
    second = dataclasses.replace(second, requirement=first.requirement)
    checks = ("test_a.py::test_one",)
    verdicts = [
        runner.Verdict(
            mutant,
            True,
            (first.requirement,),
            1,
            None,
            0.0,
            ("observe.ledger", "observe.log"),
            True,
            rests=(("observe.ledger", checks), ("observe.log", log_checks)),
        )
        for mutant, log_checks in (
            (first, checks),
            (second, ("test_b.py::test_two",)),
        )
    ]
    seen: list[list[str]] = []
    lines: list[str] = []
    monkeypatch.setattr(strip, "capability_table", lambda *_args: [])
    monkeypatch.setattr(runner, "run_suite", lambda arguments: seen.append(list(arguments)))
    runner._strip_tables(verdicts, lines.append)
    hosts = [arguments[arguments.index("--host") + 1] for arguments in seen]
    # The first mutant twice; the second only where its log's catch is its own.
    assert len(hosts) == 3, hosts
    assert sum(second.name in host and "observe.log" in host for host in hosts) == 1
    assert not any(second.name in host and "observe.ledger" in host for host in hosts)
    assert "1 not rerun: the same checks caught an earlier mutant" in lines[-1], lines[-1]
