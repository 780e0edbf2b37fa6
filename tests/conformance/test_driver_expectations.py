"""Expectations files: known failures are baselined strictly; a flaky entry forgives nothing.

These pin the rules a host team relies on when it gates its CI on the suite: a listed failure
that still fails no longer fails the run but stays visible; a listed failure that passes fails
the run; a flaky entry only lets a check run again (tests/conformance/test_flaky.py), so a
failure that was not rerun stays a failure (decisions S1.6); an invalid file is a harness error.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from conformance.expectations import (
    BASELINED_REQUIREMENT,
    Entry,
    Expectations,
    ExpectationsError,
    apply,
    load,
    parse,
    requirement_outcome,
)
from conformance.outcomes import Outcome
from conformance.report import (
    NOT_CONFORMANT,
    CheckResult,
    RequirementInfo,
    RunData,
    build_report,
)

NODE = "conformance/checks/test_grammar.py::test_keys_refused[GV-120]"


def check(nodeid: str = NODE, outcome: Outcome = Outcome.FAIL, **fields: object) -> CheckResult:
    """Return one check result; a failure names GRAM-014 unless told otherwise."""
    failed = ("GRAM-014",) if outcome is Outcome.FAIL else ()
    result = CheckResult(nodeid, ("GRAM-014",), ("GV-120",), outcome, failed, detail="boom")
    for name, value in fields.items():
        setattr(result, name, value)
    return result


def test_yaml_and_json_files_load_alike(tmp_path: Path) -> None:
    """The same content reads the same from YAML and from JSON."""
    content = {
        "version": 1,
        "host": "acme",
        "knownFailures": [
            {"vector": "GV-120", "reason": "keys pass", "issue": "https://example.org/i/1"}
        ],
        "flaky": [{"check": "test_queue_full", "reason": "slow runners"}],
    }
    as_json = tmp_path / "expectations.json"
    as_json.write_text(json.dumps(content), encoding="utf-8")
    as_yaml = tmp_path / "expectations.yaml"
    as_yaml.write_text(
        "version: 1\nhost: acme\nknownFailures:\n"
        "  - {vector: GV-120, reason: keys pass, issue: 'https://example.org/i/1'}\n"
        "flaky:\n  - check: test_queue_full\n    reason: slow runners\n",
        encoding="utf-8",
    )
    first, second = load(as_json), load(as_yaml)
    assert (first.known, first.flaky, first.host) == (second.known, second.flaky, second.host)
    assert first.known == (Entry("vector", "GV-120", "keys pass", "https://example.org/i/1"),)


@pytest.mark.parametrize(
    "document",
    [
        {"knownFailures": []},
        {"version": 2},
        {"version": 1, "knownFailures": [{"vector": "GV-1"}]},
        {"version": 1, "knownFailures": [{"vector": "GV-1", "check": "x", "reason": "r"}]},
        {"version": 1, "knownFailures": [{"reason": "which one?"}]},
        {"version": 1, "knownFailures": [{"check": "x", "reason": "r", "issue": "ftp://x"}]},
        {"version": 1, "extra": True},
    ],
)
def test_invalid_files_are_refused(document: object) -> None:
    """A file that breaks the schema is an error, never silently half-applied."""
    with pytest.raises(ExpectationsError, match="does not match its schema"):
        parse(document)


def test_unreadable_file_is_refused(tmp_path: Path) -> None:
    """A missing or undecodable file is an error naming it."""
    with pytest.raises(ExpectationsError, match="cannot be read"):
        load(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ExpectationsError, match="not valid"):
        load(broken)


@pytest.mark.parametrize(
    "entry",
    [
        Entry("check", NODE, "r"),
        Entry("check", "test_keys_refused[GV-120]", "r"),
        Entry("check", "test_keys_refused", "r"),
        Entry("check", "test_grammar.py::test_keys_refused", "r"),
        Entry("vector", "GV-120", "r"),
        Entry("requirement", "GRAM-014", "r"),
    ],
)
def test_a_listed_failure_is_baselined(entry: Entry) -> None:
    """Every way of naming a failing check baselines it and keeps why in its detail."""
    result = check()
    applied = apply(Expectations("f", known=(entry,)), [result])
    assert result.outcome is Outcome.BASELINED
    assert "[baselined: r]" in (result.detail or "")
    assert applied.baselined == [(NODE, entry.label)]
    assert not applied.unexpected


@pytest.mark.parametrize(
    "entry", [Entry("check", "test_other", "r"), Entry("vector", "GV-12", "r")]
)
def test_an_entry_matches_only_its_own_checks(entry: Entry) -> None:
    """A near-miss name neither baselines a failure nor counts as used."""
    result = check()
    applied = apply(Expectations("f", known=(entry,)), [result])
    assert result.outcome is Outcome.FAIL
    assert applied.unused == [entry.label]


def test_a_listed_failure_that_passes_is_an_unexpected_pass() -> None:
    """Strictness: a known failure whose checks all pass fails the run."""
    result = check(outcome=Outcome.PASS)
    applied = apply(Expectations("f", known=(Entry("vector", "GV-120", "r"),)), [result])
    assert result.outcome is Outcome.UNEXPECTED_PASS
    assert applied.unexpected == [("vector GV-120", [NODE])]


def test_a_passing_requirement_entry_fails_the_run_without_blaming_checks() -> None:
    """A requirement listed as failing that passes is reported once, and the run fails."""
    result = check(outcome=Outcome.PASS)
    expected = Expectations("f", known=(Entry("requirement", "GRAM-014", "r"),))
    applied = apply(expected, [result])
    assert result.outcome is Outcome.PASS  # the check itself did nothing wrong
    assert applied.unexpected == [("requirement GRAM-014", [NODE])]
    run = RunData(
        host={},
        vectors_digest=None,
        checks=[result],
        catalog=[],
        hardening=[],
        problems=[],
        started=datetime.datetime.now(datetime.UTC),
        duration_s=0.0,
        expectations=expected,
    )
    assert run.verdict() == NOT_CONFORMANT


def test_a_run_whose_failures_are_all_baselined_passes_visibly() -> None:
    """Only baselined failures: the verdict says non-conformant (baselined), exit code 0."""
    result = check()
    catalog = [RequirementInfo("GRAM-014", "MUST", "R1.6", "keys")]
    run = RunData({}, None, [result], catalog, [], [], datetime.datetime.now(datetime.UTC), 0.0)
    run.expectations = Expectations("f", known=(Entry("vector", "GV-120", "r"),))
    report = build_report(run)
    assert result.outcome is Outcome.FAIL  # the kernel judged a copy
    assert report["checks"][0]["outcome"] == Outcome.BASELINED.value
    assert report["verdict"] == BASELINED_REQUIREMENT
    assert report["exitCode"] == 0
    assert report["requirements"][0]["outcome"] == BASELINED_REQUIREMENT


def test_one_remaining_failure_keeps_the_entry_honest() -> None:
    """An entry over several checks is still expected while any of them fails."""
    failing, passing = check(), check(nodeid=NODE.replace("120", "121"), outcome=Outcome.PASS)
    applied = apply(
        Expectations("f", known=(Entry("check", "test_keys_refused", "r"),)), [failing, passing]
    )
    assert (failing.outcome, passing.outcome) == (Outcome.BASELINED, Outcome.PASS)
    assert not applied.unexpected


def test_an_errored_check_can_be_baselined() -> None:
    """A host that crashes on one vector can list it, and the error is kept visible."""
    errored = check(outcome=Outcome.ERROR)
    apply(Expectations("f", known=(Entry("vector", "GV-120", "host crash"),)), [errored])
    assert errored.outcome is Outcome.BASELINED


def test_flaky_entries_forgive_nothing_and_are_not_strict() -> None:
    """A failure listed flaky stays a failure; a check that passed on a rerun is reported
    flaky; a listed check that passed is no surprise (decisions S1.6)."""
    failing, passing = check(), check(nodeid=NODE + "x", outcome=Outcome.PASS)
    rerun = check(nodeid=NODE + "y", outcome=Outcome.FLAKY)
    entry = Entry("check", "test_keys_refused", "timing")
    applied = apply(Expectations("f", flaky=(entry,)), [failing, passing, rerun])
    assert (failing.outcome, passing.outcome) == (Outcome.FAIL, Outcome.PASS)
    assert applied.flaky == [(NODE + "y", entry.label)]
    assert not applied.unexpected
    run = RunData({}, None, [failing], [], [], [], datetime.datetime.now(datetime.UTC), 0.0)
    run.expectations = Expectations("f", flaky=(entry,))
    assert run.verdict() == NOT_CONFORMANT


def test_requirement_outcome_keeps_baselined_musts_visible() -> None:
    """A MUST failed only by baselined checks is non-conformant (baselined), never a pass; a
    flaky check never forgives a failure that names the MUST (decisions S1.6)."""
    baselined, flaky, failing = (
        check(outcome=Outcome.BASELINED),
        check(outcome=Outcome.FLAKY, failed=("GRAM-014",)),
        check(outcome=Outcome.FAIL),
    )
    assert requirement_outcome("MUST", [baselined]) == BASELINED_REQUIREMENT
    assert requirement_outcome("MUST", [baselined, flaky]) is None
    assert requirement_outcome("MUST", [flaky]) is None
    assert requirement_outcome("SHOULD", [baselined]) == "non-strict"
    assert requirement_outcome("MUST", [baselined, failing]) is None
    assert requirement_outcome("MUST", []) is None


def test_the_documents_example_file_is_valid() -> None:
    """The expectations example in the driver protocol document matches the schema."""
    import yaml

    doc = Path(__file__).resolve().parents[2] / "docs" / "driver-protocol.md"
    text = doc.read_text(encoding="utf-8").split("## Expectations: your host's known failures")[1]
    example = text.split("```yaml", 1)[1].split("```", 1)[0]
    parsed = parse(yaml.safe_load(example), "docs/driver-protocol.md")
    assert [entry.kind for entry in parsed.known] == ["requirement", "vector", "check"]
    assert len(parsed.flaky) == 1
