"""The model check reaches the classes it once could not: counts past any fixed limit, texts
past the cap, names from open alphabets (fields, vault failure kinds, tool names), and values
of every class of character, at the floor and past 1,024 code points.

Each example of the model check starts with a probe (``world.Probe``): four calls naming fields
the contract does not have, three calls to tools registered under near names of one that holds a
DENY, a call of many references to the echo, the same to the thrower (with 256 references, a
filler past the cap after them), to the forms tool (the suite's own forms of every value the
call names) and to the tool of forms far apart (one form of each, in ASCII alone), and an
attribution call with both unknown ids among known references. These
tests pin what the probe's calls are made of, that the reference host judges them as the
rulings say, and that the CI budget alone fails the mutants of those classes.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given

from conformance.canary import (
    CHARACTER_CLASSES,
    MIN_GUARDED_CODE_POINTS,
    Mint,
    hardening_forms,
    required_forms,
)
from conformance.host import CallResult, HandlerKind, HostConfig
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


@pytest.mark.req("SCRUB-001")
@pytest.mark.parametrize("offset", range(len(world.ALL_IDS)))
def test_a_call_of_256_names_more_values_than_a_table_of_32_holds(offset: int) -> None:
    """The password, the username and (for the thirteen wide entries) the notes of each of the
    sixteen secrets: 45 values, past a scrub table that keeps the first 32."""
    members = world.many(world.MANY_COUNTS[0], offset, filler=False)
    assert len({_named(item) for item in members}) == 45


@pytest.mark.req("SCRUB-004", "SCRUB-005", "SCRUB-001")
def test_the_wide_values_hold_every_class_of_character_and_the_floor() -> None:
    """Every character of every class stands in some wide password, with a character beside it
    that form c encodes, so that form c differs from the value; the corner text holds U+0000, a
    text that reads like an escape, U+3000, U+2029, CRLF and a character of plane 2. The first
    wide entry's notes pass 1,024 code points, and the last's username is the floor itself."""
    mint = Mint()
    specs = [world.wide(mint, index) for index in range(len(world.WIDE_IDS))]
    passwords = "".join(spec.password for spec in specs)
    for chars in (*CHARACTER_CLASSES.values(), "\x00", "\\u0041", "\u3000\u2029\r\n"):
        assert all(char in passwords for char in chars), chars
    assert "\U0002000b" in specs[-1].password
    for spec in specs:
        assert "c" in required_forms(spec.password), spec.id
    assert len(specs[0].notes) == world.LONG_NOTES > 1_024
    assert len(specs[-1].username) == world.FLOOR_LENGTH == MIN_GUARDED_CODE_POINTS
    # Each is fresh: the values of two configurations share nothing.
    again = world.wide(Mint(), 0)
    assert again.password != specs[0].password
    assert again.notes != specs[0].notes


def _static_text(count: int, name: str) -> tuple[str, list[str], HostConfig]:
    """The fixed text of the static tool ``name`` in a configuration built for the probe's
    call of ``count`` references, the values that call names in order of first use, and the
    configuration."""
    setup = world.Setup(((False, False),) * 3, "present", None, False, (), False, 1, False)
    members = world.many(count, 5, filler=False)
    config = world.with_forms(setup.config(Mint()), members)
    (spec,) = (each for each in config.tools if each.name == name)
    assert spec.handler is HandlerKind.STATIC
    by_id = {secret.id.lower(): secret for secret in config.secrets}
    named = dict.fromkeys(getattr(by_id[secret], field) for secret, field in map(_named, members))
    return str(spec.options["text"]), list(named), config


@pytest.mark.req("SCRUB-004", "SCRUB-005")
@pytest.mark.parametrize("count", world.MANY_COUNTS)
def test_the_forms_tool_holds_the_forms_of_the_named_values_only(count: int) -> None:
    """The forms tool's fixed text holds forms a to d, as the suite writes them, of each value
    the call of many names, and nothing of a value it does not name: a host that scrubs that
    call leaves nothing of the text in clear."""
    text, named, config = _static_text(count, world.FORMS_NAME)
    expected = [form for value in named for form in required_forms(value).values()]
    assert text.startswith(world.FORMS_HEAD)
    assert text.endswith(world.FORMS_TAIL)
    body = text.removeprefix(world.FORMS_HEAD).removesuffix(world.FORMS_TAIL)
    assert body == "\n".join(expected)
    for spec in config.secrets:
        for value in (spec.password, spec.username, spec.notes):
            if len(value) >= MIN_GUARDED_CODE_POINTS and value not in named:
                assert value not in text, spec.id


@pytest.mark.req("SCRUB-020", "SCRUB-005")
@pytest.mark.parametrize("count", world.MANY_COUNTS)
def test_the_apart_text_holds_one_form_of_each_value_far_from_the_next(count: int) -> None:
    """The apart tool's text is ASCII alone and holds at most one occurrence of a form of each
    value the call of many names, every non-ASCII value among them; no two occurrences
    overlap, and each is followed by more plain text than the longest form, so a scrubber's
    path for text without overlaps meets it whole. No form a host may scrub beyond the design
    stands in it, so no ruling leaves its scrubbing open."""
    text, named, _config = _static_text(count, world.APART_FORMS_NAME)
    assert text.isascii()
    owner: dict[str, str] = {}
    for value in named:
        for form in required_forms(value).values():
            owner.setdefault(form, value)
        for form in hardening_forms(value).values():
            assert form not in text or form in required_forms(value).values()
    found = []
    for form, value in owner.items():
        at = text.find(form)
        while at >= 0:
            found.append((at, at + len(form), value))
            at = text.find(form, at + 1)
    found.sort()
    longest = max(map(len, owner))
    for (_start, end, _value), (start, _end, _next) in pairwise(found):
        assert start > end + longest
    seen = [value for _start, _end, value in found]
    assert len(seen) == len(set(seen)) >= len(named) // 2
    assert {value for value in named if not value.isascii()} <= set(seen)
    assert text.rstrip(world.GAP_CHAR).endswith("\n")


@pytest.mark.req("SCRUB-020", "SCRUB-007", "CAP-003", "SCRUB-012")
def test_the_forms_result_must_be_the_models_text_exactly() -> None:
    """A forms call that ran on both hosts is judged on its whole text: one character more,
    less or other fails, naming where by place only; a refusal or a failure on either host is
    left to the comparison of dispositions."""
    call = compare.Call(4, world.FORMS_NAME, True, prompted=True, answer="approve")
    model = CallResult("APPROVED_ONCE", "\ufeff\n[secret:5ec4e7b0.password]\n\x00 \t\n", False)
    compare.scrubbed_text(
        call, CallResult("APPROVED_ONCE", model.text, False), model, scrubbing=True
    )
    for text in (model.text.rstrip(), model.text[1:], model.text.replace(".password", "")):
        got = CallResult("APPROVED_ONCE", text, False)
        with pytest.raises(RequirementError) as raised:
            compare.scrubbed_text(call, got, model, scrubbing=True)
        assert raised.value.requirements == ("SCRUB-020", "SCRUB-007", "CAP-003")
        assert "[secret:" not in str(raised.value)
        # With scrubbing off the text must arrive as the tool wrote it.
        with pytest.raises(RequirementError) as raised:
            compare.scrubbed_text(call, got, model, scrubbing=False)
        assert raised.value.requirements == ("SCRUB-012", "CAP-003")
    refused = CallResult("SECRET_UNRESOLVED", "Secret reference unresolved", True)
    compare.scrubbed_text(call, refused, model, scrubbing=True)
    compare.scrubbed_text(call, CallResult("APPROVED_ONCE", "boom", True), model, scrubbing=True)


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
@pytest.mark.req(
    "SUBST-005",
    "SCRUB-009",
    "CAP-001",
    "GRAM-008",
    "POL-004",
    "SCRUB-001",
    "SCRUB-004",
    "SCRUB-005",
    "SCRUB-020",
    "CAP-003",
    "LEDG-001",
)
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("sixteen-reference-slots", "SUBST-005"),
        ("scrub-stops-after-500", "INV1"),
        ("failure-text-uncapped", "CAP-001"),
        ("token-field-accepted", "GRAM-008"),
        ("tool-rules-case-folded", "POL-004"),
        ("scrub-table-first-values", "INV1"),
        ("floor-nine", "INV1"),
        ("long-values-unscrubbed", "INV1"),
        ("json-escape-keeps-nul", "SCRUB-004"),
        ("form-c-astral-planes-folded", "SCRUB-005"),
        ("placeholder-swallows-next-char", "SCRUB-020"),
        ("result-ends-at-nul", "CAP-003"),
        ("snippet-on-every-call", "LEDG-001"),
    ],
)
def test_the_ci_budget_finds_the_class_mutants_it_once_could_not_reach(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """The model check alone, with its CI budget, fails each mutant that needs a count past
    sixteen, 32 or five hundred, a text past the cap, a name from an open alphabet, a value at
    the floor or past 1,024 code points, a character a writer of form b or c meets, a result
    text compared whole, or a snippet on a record that says the call succeeded, in the first
    example, whose first step is the probe. (``unknown-vault-kinds-echoed`` is held to the first
    example in test_model_world.py.)"""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", "test_model")
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


@pytest.mark.req(
    "SCRUB-020", "SCRUB-005", "SCRUB-012", "CAP-003", "CAP-001", "SCRUB-014", "MCP-003", "MCP-004"
)
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("one-placeholder-per-pass", "SCRUB-020"),
        ("ascii-text-skips-non-ascii-values", "SCRUB-005"),
        ("scrubbing-switch-ignored", "SCRUB-012"),
        ("cap-off-with-scrubbing-off", "CAP-001"),
        ("scrubbing-off-request-substituted", "SCRUB-014"),
        ("mcp-client-requests-when-scrubbing-off", "SCRUB-014"),
        ("wire-debug-log-holds-result", "MCP-004"),
    ],
)
def test_the_first_example_finds_a_scrubber_wrong_on_apart_forms_or_with_scrubbing_off(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """One example is enough (the unit tests' budget): its probe calls the apart tool, whose
    text neither the scrubber that writes the longest form's placeholder over every occurrence
    where none overlap nor the one that scrubs an ASCII text of ASCII values alone gets right;
    and, with scrubbing off, the forms tool, whose text the scrubber that ignores the switch
    changes and whose prompt must not show the value, the echo past the cap, which must still
    cut, and over MCP the rich call, whose requests to the client must hold no value, and the
    host's log of the three calls once the client asked for debug logging. The model check
    once missed all seven."""
    if mutant.startswith(("mcp-", "wire-")):
        pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    run = run_suite(tmp_path, *reach.model_arguments(mutant))
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


@pytest.mark.req("MCP-003")
def test_the_rich_call_names_values_of_every_awkward_class() -> None:
    """Over MCP the probe calls the rich handler, which fills every MCP surface (requests to
    the client and members no client shows included), with three references to the wide
    entries whose passwords hold controls, non-ASCII letters and the corner text."""
    assert world.RICH.handler is HandlerKind.RICH
    assert world.RICH.options == {"members": True, "requests": True}
    assert world.RICH.name not in {
        *world.TOOL_NAMES,
        world.FORMS_NAME,
        world.APART_FORMS_NAME,
        *world.TWIN_NAMES,
    }
    texts = [world.WIDE_TEXTS[index - len(world.SECRET_IDS)] for index in world.RICH_SECRETS]
    assert texts[0].startswith(CHARACTER_CLASSES["control"])
    assert texts[1].startswith(CHARACTER_CLASSES["non-ascii"])
    assert texts[2] == world.WIDE_TEXTS[-1]


@pytest.mark.req("MCP-003")
def test_over_mcp_the_first_example_finds_a_surface_left_unscrubbed(tmp_path: Path) -> None:
    """One example is enough: the rich call of its probe puts the values on the structured
    content, which ``mcp-structured-unscrubbed`` leaves unscrubbed. The MCP messages are
    searched after each step, so the failure names the step that left the value and where it
    was first seen (the reproducer is shrunk from there), not only the session's sweep as the
    check ends; each requirement is named once, though the check's end finds the leak again
    (the unit tests' budget is one example)."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    run = run_suite(tmp_path, *reach.model_arguments("mcp-structured-unscrubbed"))
    assert run.status == 1, "the model check let mcp-structured-unscrubbed through"
    (check,) = (check for check in run.report()["checks"] if check["outcome"] == "fail")
    assert "MCP-003" in check["failedRequirements"]
    assert len(check["failedRequirements"]) == len(set(check["failedRequirements"]))
    assert check["detail"].startswith("step ")
    assert "on the MCP result" in check["detail"]
    assert "first seen at step 1 of example 1" in check["detail"]


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


@pytest.mark.req("LEDG-001")
def test_a_record_carries_a_snippet_only_when_its_handler_failed() -> None:
    """Every record the model compares: a call that did not fail carries no errorSnippet, a
    thrower's failure carries one, as text; a refusal may carry one or not."""
    thrown = compare.Call(7, world.THROWER_NAME, True, prompted=True, answer="approve")
    failed = {"approvalDisposition": "APPROVED_ONCE", "isError": True, "errorSnippet": "boom"}
    ran = {"approvalDisposition": "APPROVED_ONCE", "isError": False, "errorSnippet": None}
    refused = {"approvalDisposition": "SECRET_UNRESOLVED", "isError": True, "errorSnippet": None}
    echoed = compare.Call(8, world.ECHO_NAME, True, prompted=True, answer="approve")
    compare.ledger(thrown, [failed], [failed], Held())
    compare.ledger(echoed, [ran], [ran], Held())
    compare.ledger(echoed, [{**ran, "errorSnippet": ""}], [ran], Held())
    compare.ledger(echoed, [{**refused, "errorSnippet": "Secret"}], [refused], Held())
    compare.ledger(echoed, [refused], [refused], Held())
    for call, mine, model in (
        (echoed, {**ran, "errorSnippet": "ok"}, ran),
        (thrown, {**failed, "errorSnippet": None}, failed),
        (thrown, {**failed, "errorSnippet": ""}, failed),
        (thrown, {**failed, "errorSnippet": 3}, failed),
    ):
        with pytest.raises(RequirementError) as raised:
            compare.ledger(call, [mine], [model], Held())
        assert raised.value.requirements == ("LEDG-001",)


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


@pytest.mark.req("APPR-010", "LEDG-009")
def test_the_reach_command_tells_a_mutant_the_model_finds_from_one_it_leaves() -> None:
    """``denial-approves`` is found at the model's first step; ``ledger-mode-0644`` (a ledger
    file others may read) is no fault the model's calls can see, and is left to its named
    check. Unknown names are refused before any run."""
    lines: list[str] = []
    assert reach.reach(["denial-approves", "ledger-mode-0644"], out=lines.append) == 0
    assert lines[0].startswith("found     denial-approves")
    assert "named APPR-010" in lines[0]
    assert lines[1].startswith("missed    ledger-mode-0644")
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
