"""The model check reaches the classes it once could not: counts past any fixed limit, texts
past the cap, and names from open alphabets (fields, vault failure kinds, tool names).

Each example of the model check starts with a probe (``world.Probe``): four calls naming fields
the contract does not have, three calls to tools registered under near names of one that holds a
DENY, a call of many references to the echo and the same to the thrower (with 256 references, a
filler past the cap after them), and an attribution call with both unknown ids among known
references. These tests pin what the probe's calls are made of, that the reference host judges
them as the rulings say, and that the CI budget alone fails the mutants of those classes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from conformance.canary import Mint
from conformance.host import CallResult
from conformance.hosts.inprocess import InProcessHost
from conformance.model import budget as model_budget
from conformance.model import compare, world
from conformance.model.compare import Held
from conformance.outcomes import RequirementError
from conformance.scenario import RecordingHost
from conformance.selftest import pool, reach
from tests.conformance.suite_runs import run_suite


def _named(item: world.Item) -> tuple[str, str]:
    """The value a reference names: its secret id and field, the password however spelt."""
    return (world.ALL_IDS[item.secret], item.field or "password")


@pytest.mark.req("SUBST-005")
@pytest.mark.parametrize("count", world.MANY_COUNTS)
@pytest.mark.parametrize("offset", range(len(world.ALL_IDS)))
def test_a_call_of_many_names_more_than_sixteen_values(count: int, offset: int) -> None:
    """From any offset, a call of many names more than sixteen different values, and its first
    reference and its seventeenth name different ones: a host that keeps sixteen is told from
    one that keeps them all on the first such call."""
    members = world.many(count, offset, filler=False)
    assert len(members) == count
    assert all(item.kind == "ref" for item in members)
    assert len({_named(item) for item in members}) > 16
    assert _named(members[0]) != _named(members[16])


@pytest.mark.req("SCRUB-009")
@pytest.mark.parametrize("offset", range(len(world.ALL_IDS)))
def test_the_echoed_call_holds_the_passwords_more_than_500_times(offset: int) -> None:
    """The echo prints the raw arguments and four forms of each value: with 256 references the
    passwords alone stand there more than 500 times, past a scrubber that stops at 500."""
    members = world.many(world.MANY_COUNTS[0], offset, filler=False)
    passwords = sum(1 for item in members if item.field in ("", "password"))
    assert passwords * 5 > 500


@pytest.mark.req("CAP-001")
def test_the_filler_follows_the_references_and_passes_the_cap() -> None:
    members = world.many(17, 0, filler=True)
    assert members[-1].kind == "filler"
    assert len(world.item_text(members[-1])) > world.RESULT_CAP
    assert len(world.arguments(members)) > world.RESULT_CAP


@pytest.mark.req("POL-004", "ORD-006")
def test_near_named_tools_are_registered_beside_the_ruled_one() -> None:
    """Every configuration registers the ruled tool and its near names, four of them differing
    from it in case only and others by a separator; none is the name of another tool, nor the
    one name calls use unregistered."""
    ruled = world.RULED.name
    assert len([name for name in world.TWIN_NAMES if name.casefold() == ruled]) == 4
    assert {"send-mail", "send.mail", "sendmail"} <= set(world.TWIN_NAMES)
    assert ruled not in world.TWIN_NAMES
    others = {*world.TOOL_NAMES, world.UNREGISTERED}
    assert not others & {ruled, *world.TWIN_NAMES}
    setup = world.Setup(((False, False),) * 3, "present", None, False, (), False, 1, False)
    registered = [spec.name for spec in setup.config(Mint()).tools]
    assert registered == [*world.TOOL_NAMES, ruled, *world.TWIN_NAMES]


@pytest.mark.req("MSG-009")
def test_vault_failures_come_in_kinds_no_host_was_told_of() -> None:
    assert world.FAILURE_KINDS[:3] == ("offline", "signed out", "rpc failure")
    assert len(set(world.FAILURE_KINDS)) == len(world.FAILURE_KINDS) > 3


@pytest.mark.req("MSG-009")
@given(setup=world.setups(absent=True, failing=True, store_failing=True, failure_message=True))
def test_a_failing_vaults_own_message_is_a_fresh_canary(setup: world.Setup) -> None:
    """Only a failing vault of a host that lets the suite choose the message has one, and it is
    a fresh canary each time: the sweep's evidence that the message reached a surface."""
    mint = Mint()
    message = setup.failure_text(mint)
    if not setup.vault.startswith("failing:"):
        assert message is None
        return
    assert setup.vault.removeprefix("failing:") in world.FAILURE_KINDS
    assert message is not None
    assert message != setup.failure_text(Mint())
    assert setup.config(mint, message).vault_failure_message == message


@pytest.mark.req("GRAM-005", "GRAM-008")
def test_every_unknown_field_is_malformed_to_the_reference_host() -> None:
    """The model's judge refuses each field of the alphabet as malformed before any prompt, so
    a host that accepts one of them parts from the model, and no other host is failed for it."""
    host = RecordingHost(InProcessHost(), "driver")
    setup = world.Setup(
        ((False, False),) * 3, "present", None, False, ("secret.read",), False, 1, False
    )
    host.reset(setup.config(Mint()))
    assert world.UNKNOWN_FIELDS[0] == "token"
    for name in world.UNKNOWN_FIELDS:
        member = world.Item("malformed", 0, name)
        outcome = host.invoke(world.RECORDER_NAME, world.arguments((member,)))
        assert outcome.disposition == "SECRET_UNRESOLVED", name
        assert outcome.text.startswith("Malformed secret reference"), name


@pytest.mark.req("INV2", "MSG-007")
@pytest.mark.parametrize("unknown_at", range(3))
def test_the_attribution_call_lists_the_unknown_ids_against_their_sorted_order(
    unknown_at: int,
) -> None:
    members = world.attribution(unknown_at, 0)
    kinds = [item.kind for item in members]
    assert kinds.count("ref") == 3
    unknown = [index for index, kind in enumerate(kinds) if kind == "unknown"]
    assert unknown[0] == unknown_at
    # One of them stands between two known references, whatever unknown_at is.
    assert any(0 < index < len(members) - 1 for index in unknown)
    listed = [world.UNKNOWN_IDS[members[index].secret] for index in unknown]
    assert listed != sorted(listed)


@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.req("SUBST-005", "SCRUB-009", "CAP-001", "GRAM-008", "POL-004")
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("sixteen-reference-slots", "SUBST-005"),
        ("scrub-stops-after-500", "INV1"),
        ("failure-text-uncapped", "CAP-001"),
        ("token-field-accepted", "GRAM-008"),
        ("tool-rules-case-folded", "POL-004"),
    ],
)
def test_the_ci_budget_finds_the_class_mutants_it_once_could_not_reach(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """The model check alone, with its CI budget, fails each mutant that needs a count past
    sixteen or five hundred, a text past the cap, or a name from an open alphabet, in the first
    example, whose first step is the probe. (``unknown-vault-kinds-echoed`` is held to the first
    example in test_model_world.py.)"""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", "test_model")
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


@pytest.mark.req("POL-004")
@pytest.mark.parametrize("bearing", [False, True], ids=["reference-free", "secret-bearing"])
def test_a_deny_the_model_does_not_have_fails_the_rule_order(bearing: bool) -> None:
    """A call the model ran and the host refused as POLICY_DENIED met a DENY saved for another
    tool or provider: a MUST (POL-004), never a reference-free call's usual meaning alone."""
    call = compare.Call(9, "SEND_MAIL", bearing, prompted=True, answer="approve")
    refused = CallResult("POLICY_DENIED", "Tool SEND_MAIL is denied by host policy", True)
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, refused, CallResult("APPROVED_ONCE", "ok", False), Held())
    assert raised.value.requirements == ("POL-004",)


# --- the reach command: the model check alone against the catalog ------------------------------


def test_the_reach_rows_read_found_missed_unchecked_and_no_verdict() -> None:
    """A model row that failed naming requirements is found, with where it was first seen; one
    that passed (or took an accepted alternative) is missed; one skipped is unchecked; no row,
    or an error that names nothing, is no verdict, never a miss."""
    failed = {
        "id": "conformance/checks/test_model.py::test_model",
        "outcome": "fail",
        "failedRequirements": ["MSG-010", "INV2", "MSG-010"],
        "detail": "call 80: ... (first seen at step 1 of example 1, 1 steps into the run)",
    }
    assert reach.read_row({"checks": [failed]}) == (
        "found",
        ("MSG-010", "INV2"),
        "first seen at step 1 of example 1",
    )
    should = {
        **failed,
        "outcome": "non-strict",
        "failedRequirements": [],
        # The report's own shape: each SHOULD missed with its detail, which is not printed.
        "nonStrict": [
            {"requirement": "LEDG-007", "detail": "call 3 to recorder: redacted otherwise"},
            {"requirement": "LEDG-007", "detail": "call 4 to recorder: redacted otherwise"},
        ],
    }
    assert reach.read_row({"checks": [should]}) == ("should", ("LEDG-007",), "")
    for outcome in ("pass", "accepted-alternative"):
        row = {**failed, "outcome": outcome, "failedRequirements": []}
        assert reach.read_row({"checks": [row]}) == ("missed", (), "")
    skipped = {**failed, "outcome": "skipped", "failedRequirements": []}
    assert reach.read_row({"checks": [skipped]}) == ("unchecked", (), "")
    errored = {**failed, "outcome": "error", "failedRequirements": []}
    assert reach.read_row({"checks": [errored]})[0] == "no-run"
    assert reach.read_row({"checks": []})[0] == "no-run"
    assert reach.read_row(None)[0] == "no-run"


def test_the_reach_command_runs_only_the_model_check_on_each_mutants_path() -> None:
    assert reach.model_arguments("denial-approves")[-2:] == ["-k", "test_model"]
    assert "--via" in reach.model_arguments("mcp-progress-unscrubbed")
    assert reach.model_arguments("floor-nine")[:2] == ["--host", "mutant:floor-nine"]
    assert reach.model_arguments("denial-approves")[1].endswith("driver denial-approves")


@pytest.mark.req("APPR-010", "SCRUB-001")
def test_the_reach_command_tells_a_mutant_the_model_finds_from_one_it_leaves() -> None:
    """``denial-approves`` is found at the model's first step; ``floor-nine`` (an eight-character
    value left in clear) is no fault of the model's world, whose values are longer, and is left
    to its named check. Unknown names are refused before any run."""
    lines: list[str] = []
    assert reach.reach(["denial-approves", "floor-nine"], out=lines.append) == 0
    assert lines[0].startswith("found     denial-approves")
    assert "named APPR-010" in lines[0]
    assert lines[1].startswith("missed    floor-nine")
    assert lines[-1].startswith("model reach: 1/2 mutants found")
    assert "0 reported as a SHOULD missed; 1 left to their named checks" in lines[-1]
    assert reach.reach(["no-such-mutant"], out=lines.append) == 2


@pytest.mark.req("MCP-001")
def test_a_model_check_skipped_as_unchecked_is_counted_apart_and_exits_0() -> None:
    """Over MCP, ``mcp-meta-reference-resolved`` leaves every disposition unlearnable, so the
    model check is skipped: a row of its own, counted apart from the misses and from the runs
    with no report, and no reason for exit 1 (which says a run gave no report)."""
    lines: list[str] = []
    assert reach.reach(["mcp-meta-reference-resolved"], out=lines.append) == 0
    assert lines[0].startswith("unchecked mcp-meta-reference-resolved")
    assert lines[-1].endswith("0 left to their named checks; 1 left the model check unchecked")


def test_a_run_with_no_report_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that gave no report is no verdict: exit 1, and the count says so."""
    monkeypatch.setattr(pool, "run_all", lambda run, runs, workers: [(None, 0.1)] * len(runs))
    lines: list[str] = []
    assert reach.reach(["denial-approves"], out=lines.append) == 1
    assert lines[0].startswith("no-run    denial-approves")
    assert lines[-1].endswith("1 runs gave no verdict")


def test_the_reach_command_reads_the_words_the_model_writes() -> None:
    """The pattern reach reads is the one the model's tally writes."""
    tally = model_budget.Tally()
    tally.first = (3, 7, 47)
    seen = model_budget.FIRST_SEEN.search(tally.found())
    assert seen is not None
    assert seen.group(0) == "first seen at step 7 of example 3"
