"""The model check's wider world: what its configurations hold, how its probe's new calls are
made, and how the comparison judges what they meet.

Every configuration holds an AI provider's key, an entry with empty notes and an entry whose
password spells another reference, and the first three secrets' values take awkward shapes
(``conformance.alphabets.AWKWARD_SHAPES``). The probe names them in calls refused at
resolution and in a call that delivers them; in the first example it also holds prompts open
to a full queue, runs calls past the execution timeout and lets prompts time out. These tests
pin what those calls are made of, that the comparison accepts every alternative the rulings
allow and fails the rest, and that the CI budget alone finds a mutant of each class.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import find
from hypothesis.errors import InvalidArgument

from conformance.alphabets import AWKWARD_SHAPES
from conformance.canary import Mint
from conformance.host import CallResult
from conformance.model import compare, machine, world
from conformance.model.compare import Call, Held
from conformance.outcomes import RequirementError, SuiteError, recording
from conformance.scenario import CONTROL_CAPABILITIES
from tests.conformance.suite_runs import run_suite

_SETUP = world.Setup(
    ((False, False),) * 3, "present", None, False, ("secret.read",), False, 2, False
)


def _ids(members: tuple[world.Item, ...], kind: str) -> list[str]:
    table = world.ALL_UNKNOWN_IDS if kind == "unknown" else world.VAULT_IDS
    return [table[item.secret] for item in members if item.kind == kind]


def test_every_configuration_holds_the_entries_the_probe_names() -> None:
    """The AI provider's key is tagged exactly ai-provider, the bare entry's notes are empty,
    and the holding entry's password spells the first secret's reference; no configuration
    registers another tool for them."""
    config = _SETUP.config(Mint())
    by_id = {secret.id: secret for secret in config.secrets}
    assert by_id[world.AI_ID].tags == (world.AI_TAG,)
    assert by_id[world.BARE_ID].notes == ""
    assert "{{secret:" + world.SECRET_IDS[0] + "}}" in by_id[world.HOLD_ID].password
    assert len(config.secrets) == len(world.VAULT_IDS)
    assert [spec.name for spec in config.tools][: len(world.TOOLS)] == list(world.TOOL_NAMES)


def test_the_simplest_configuration_tidies_badly_in_two_ways() -> None:
    """Drawn from the first shape, the first secret's values end with a line break and the
    second's hold a decomposed letter, in the password and the notes alike."""
    shapes = _SETUP.shapes()
    assert shapes[:2] == (None, None)
    shaped = _shaped(0)
    assert shaped.shapes()[:2] == ("trailing-lf", "nfd-latin")
    secrets = shaped.config(Mint()).secrets
    _head, inner, tail = AWKWARD_SHAPES["nfd-latin"]
    assert secrets[0].password.endswith("\n")
    assert secrets[0].notes.endswith("\n")
    assert inner in secrets[1].password
    assert secrets[1].password.endswith(tail)


def _shaped(shape: int) -> world.Setup:
    return world.Setup(
        ((False, False),) * 3,
        "present",
        None,
        False,
        ("secret.read",),
        False,
        2,
        False,
        shape=shape,
    )


def test_the_first_example_draws_the_probe_that_meets_every_new_class() -> None:
    """Hypothesis's first example is its simplest draw: a probe that makes the full calls and
    names the AI key by a field other than its password, and a configuration with awkward
    values and a pending limit of two."""
    probe = find(world.probes(), lambda _probe: True)
    assert probe.full
    assert world.AI_FIELDS[probe.ai_field] != "password"
    setup = find(world.setups(absent=True, failing=True, store_failing=True), lambda _s: True)
    assert setup.shape == 0
    assert setup.pending_limit == world.PENDING_LIMITS[0] == 2


@pytest.mark.parametrize("at", range(3))
@pytest.mark.parametrize("field", range(len(world.AI_FIELDS)))
def test_the_ai_key_never_stands_first(at: int, field: int) -> None:
    members = world.ai_call(at, field, 0)
    assert members[0].secret != world.AI
    assert [item.secret for item in members].count(world.AI) == 1
    assert members[1 + at].field == world.AI_FIELDS[field]


def test_the_unknown_call_names_six_ids_against_their_sorted_order() -> None:
    named = list(dict.fromkeys(_ids(world.unknown_call(0), "unknown")))
    assert named == list(world.ALL_UNKNOWN_IDS)
    assert len(named) > 3
    assert named != sorted(named)


@pytest.mark.parametrize("earlier", range(len(world.EARLIER_FIELDS)))
def test_the_empty_notes_are_asked_after_another_field(earlier: int) -> None:
    members = world.empty_call(earlier, 0)
    bare = [item for item in members if item.secret == world.BARE]
    assert [item.field for item in bare][-1] == "notes"
    assert bare[0].field != "notes"
    assert world.resolution(members, _SETUP) == {"empty"}
    assert world.empty_fields(members, _SETUP) == {(world.BARE_ID, "notes")}


def test_the_pair_names_the_holding_entry_before_the_reference_it_spells() -> None:
    text = world.item_text(world.awkward_call((False, True, False))[-1])
    assert text.index(world.HOLD_ID) < text.index(world.SECRET_IDS[0])


def test_the_deep_member_stands_past_64_levels() -> None:
    raw = world.arguments((world.Item("deep"),))
    # Every container counts, but for the two braces that open the marker in the string.
    assert raw.count("[") + raw.count("{") - 2 == world.DEEP_LEVELS > 64
    assert world.carries_reference((world.Item("deep"),))


# --- the comparison ---------------------------------------------------------------------------

_KEY = world.AI_ID
_AI_TEXT = f"secret {_KEY} is an AI provider key; configure the provider in the host's AI settings"
_UNKNOWN_TEXT = f"no secret with id {world.UNKNOWN_IDS[0]}"


def _refused(disposition: str, text: str) -> CallResult:
    return CallResult(disposition, text, True)


def _call(members: tuple[world.Item, ...]) -> Call:
    return Call(
        4,
        "recorder",
        True,
        resolution=world.resolution(members, _SETUP),
        empty=world.empty_fields(members, _SETUP),
        deep=world.is_deep(members),
    )


@pytest.mark.req("MSG-011")
@pytest.mark.parametrize(
    "host_text",
    [
        _AI_TEXT,
        f"secret {_KEY} is an AI provider key",
        f"secret {_KEY.upper()} is an AI provider key",
    ],
    ids=["model's", "ruled-words-only", "upper-case-id"],
)
def test_an_ai_refusal_naming_the_key_passes(host_text: str) -> None:
    model = _refused("SECRET_FORBIDDEN", _AI_TEXT)
    compare.ruled_words(
        _call(world.ai_call(0, 0, 0)), _refused("SECRET_FORBIDDEN", host_text), model
    )


@pytest.mark.req("MSG-011")
@pytest.mark.parametrize(
    "host_text",
    [
        f"secret {world.SECRET_IDS[0]} is an AI provider key",
        f"secret {_KEY} is reserved for the host's AI provider settings",
        f"Secret {_KEY} is an AI provider key",
    ],
    ids=["first-id", "reworded", "capital"],
)
def test_an_ai_refusal_naming_otherwise_fails(host_text: str) -> None:
    model = _refused("SECRET_FORBIDDEN", _AI_TEXT)
    with pytest.raises(RequirementError) as raised:
        compare.ruled_words(
            _call(world.ai_call(0, 0, 0)), _refused("SECRET_FORBIDDEN", host_text), model
        )
    assert raised.value.requirements == ("MSG-011",)


@pytest.mark.req("MSG-008")
def test_an_empty_field_refusal_may_name_any_empty_field_of_the_call() -> None:
    """With two empty fields named, the rulings say neither comes first: either passes; a
    field with a value fails."""
    members = (*world.empty_call(0, 0), world.Item("ref", 1, "notes"))
    setup = world.Setup(
        ((False, False), (True, False), (False, False)), "present", None, False, (), False, 2, False
    )
    call = Call(5, "recorder", True, empty=world.empty_fields(members, setup))
    model = _refused("SECRET_UNRESOLVED", f"secret {world.BARE_ID} has no notes")
    other = f"secret {world.SECRET_IDS[1]} has no notes (the field is empty)"
    compare.ruled_words(call, _refused("SECRET_UNRESOLVED", other), model)
    wrong = _refused("SECRET_UNRESOLVED", f"secret {world.BARE_ID} has no password")
    with pytest.raises(RequirementError) as raised:
        compare.ruled_words(call, wrong, model)
    assert raised.value.requirements == ("MSG-008",)


@pytest.mark.req("ORD-002")
def test_an_unknown_id_named_before_an_ai_key_is_reported_not_failed() -> None:
    """Both refusals apply to the call: the order is a SHOULD, and the record's disposition is
    the host's own."""
    call = _call(world.both_call())
    host = _refused("SECRET_UNRESOLVED", f"no secret with id {world.ALL_UNKNOWN_IDS[2]}")
    with recording("model") as record:
        compare.dispositions(call, host, _refused("SECRET_FORBIDDEN", _AI_TEXT), Held())
    assert [requirement for requirement, _ in record.non_strict] == ["ORD-002"]
    assert call.swapped
    mine = {"approvalDisposition": "SECRET_UNRESOLVED", "isError": True, "toolName": "recorder"}
    theirs = {**mine, "approvalDisposition": "SECRET_FORBIDDEN"}
    compare.ledger(call, [mine], [theirs], Held())


@pytest.mark.req("MSG-011", "MSG-007")
def test_a_refusal_of_resolution_that_does_not_apply_fails() -> None:
    """An unknown-id refusal for a call whose ids the vault all holds is no other order: the
    model's refusal's rule fails."""
    call = _call(world.ai_call(0, 0, 0))
    host = _refused("SECRET_UNRESOLVED", _UNKNOWN_TEXT)
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, host, _refused("SECRET_FORBIDDEN", _AI_TEXT), Held())
    assert raised.value.requirements == ("MSG-011",)


@pytest.mark.req("GRAM-041")
def test_a_deep_call_may_be_refused_in_the_hosts_own_words() -> None:
    """A host that stops reading past some depth refuses the call with words of its own and
    cannot redact what it did not read; a host that ran it fails GRAM-041."""
    call = _call((world.Item("deep"),))
    model = _refused("SECRET_UNRESOLVED", "Malformed secret reference at /k0/0/k offset 2")
    own = _refused("SECRET_UNRESOLVED", "arguments nested too deep to read")
    compare.dispositions(call, own, model, Held())
    record = {"approvalDisposition": "SECRET_UNRESOLVED", "isError": True}
    compare.ledger(call, [{**record, "sanitizedArgs": "as sent"}], [record], Held())
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, CallResult("APPROVED_ONCE", "ok", False), model, Held())
    assert raised.value.requirements[0] == "GRAM-041"


@pytest.mark.req("ORD-003", "APPR-009")
@pytest.mark.parametrize(
    ("model", "prompted", "first"),
    [
        (_refused("SECRET_FORBIDDEN", _AI_TEXT), False, "ORD-003"),
        (CallResult("APPROVED_ONCE", "ok", False), True, "APPR-009"),
    ],
    ids=["refusal-before-queue", "below-the-limit"],
)
def test_a_queue_full_the_model_does_not_have_names_the_queue(
    model: CallResult, prompted: bool, first: str
) -> None:
    call = Call(6, "recorder", True, prompted=prompted, answer="approve")
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, _refused("QUEUE_FULL", "queue full"), model, Held())
    assert raised.value.requirements[0] == first


@pytest.mark.req("APPR-011", "INV4")
@pytest.mark.parametrize("ended", ["DENIED", "TIMEOUT"])
def test_an_approval_of_a_reference_free_call_binds_it(ended: str) -> None:
    """A reference-free call the operator approved once in its own prompt, that the host ended
    otherwise (its answer taken for another prompt), fails binding. Before, the only
    requirement named was APPR-013, a SHOULD, and the run ended as the suite's error."""
    call = Call(4, "recorder", False, prompted=True, answer="approve")
    model = CallResult("APPROVED_ONCE", "ok", False)
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, _refused(ended, "no"), model, Held())
    assert raised.value.requirements == ("APPR-011", "INV4")


def test_records_of_calls_that_timed_out_are_matched_in_no_order() -> None:
    first = {"approvalDisposition": "TIMEOUT", "isError": True, "toolName": "echo"}
    second = {"approvalDisposition": "TIMEOUT", "isError": True, "toolName": "recorder"}
    compare.ledger(None, [first, second], [second, first], Held(), ordered=False)
    with pytest.raises(RequirementError):
        compare.ledger(None, [first, second], [second, first], Held())


# --- the CI budget, unaided -----------------------------------------------------------------


@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.req("SUBST-005", "MSG-008", "MSG-007", "LEDG-005", "APPR-008", "FENCE-003")
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("value-newline-stripped", "SUBST-005"),
        ("empty-field-names-first-field", "MSG-008"),
        ("unknown-ids-capped", "MSG-007"),
        ("queue-full-recorded-as-timeout", "LEDG-005"),
        ("timeout-falls-back-to-rule", "APPR-008"),
        ("secret-read-given-back-forgiven", "FENCE-003"),
    ],
)
def test_the_ci_budget_finds_the_mutants_of_every_moment_and_output(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """The model check alone, with its CI budget, fails a mutant of each class its world now
    holds (an awkward value, a refusal naming the wrong secrets, a full queue's record, a
    timeout, the fence) in the first example, whose first step is the probe."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", "test_model")
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


@pytest.mark.req(
    "ORD-004",
    "MSG-005",
    "MSG-006",
    "MSG-004",
    "FENCE-006",
    "GRAM-004",
    "MSG-011",
    "SCRUB-004",
    "APPR-009",
    "SUBST-005",
    "VAULT-002",
    "MSG-009",
    "MSG-012",
    "SUBST-003",
    "MSG-010",
)
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("trust-outranks-rbac", "ORD-004"),
        ("reset-lifts-fail-closed", "MSG-005"),
        ("reset-restores-secret-switches", "MSG-006"),
        ("trust-skips-secret-read", "MSG-004"),
        ("kill-switch-at-fence-as-policy-deny", "FENCE-006"),
        ("vault-ids-matched-as-stored", "GRAM-004"),
        ("ai-tag-compared-as-one-string", "MSG-011"),
        ("json-escape-script-safe", "SCRUB-004"),
        ("username-prompts-uncounted", "APPR-009"),
        ("blank-values-refused-as-empty", "SUBST-005"),
        ("vault-walk-capped-at-ten-pages", "VAULT-002"),
        ("vault-later-page-failure-ends-walk", "MSG-009"),
        ("unknown-vault-kinds-echoed", "MSG-009"),
        ("refusal-echoes-candidate", "MSG-012"),
        ("reference-free-reencoded", "SUBST-003"),
        ("no-vault-message", "MSG-010"),
    ],
)
def test_the_first_example_finds_the_faults_of_authority_and_values(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """The model check's first example alone (the probe's calls, made in it) fails each mutant of
    the controls and values the probe now meets: relaxing controls against RBAC, a missing
    ``secret.read``, an invalid policy file and the secret switches; the kill switch at the
    fence; an id the vault lists in upper case; a key with two tags; the script characters;
    a username-only prompt in a full queue; values of white space only; a walk past the tenth
    page, and a vault that fails from its second page on, with a kind of the open alphabet and
    a message of its own; a malformed candidate quoted in its refusal; a reference-free call's
    text re-encoded; a host without a vault refusing in words of its own. Each is named by its
    own requirement."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", "test_model")
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


# --- a host that announces no control ----------------------------------------------------------


def test_an_error_of_hypothesis_about_the_machine_is_the_suites_error() -> None:
    """A strategy with nothing to draw, or any other refusal of the machine by Hypothesis, is a
    defect of the suite: the check errors, failing no requirement of the host."""
    unflaked = machine._unflaked(InvalidArgument("no elements can be drawn"))
    assert isinstance(unflaked, SuiteError)


def test_a_host_without_controls_passes_the_model_check(tmp_path: Path) -> None:
    """A host that announces no control at all: the machine draws no control step, no plan that
    acts while a prompt is open and no control before the first call, and the reference
    driver behind such an adapter passes (before, Hypothesis refused the machine and the check
    failed every MUST it cites). The machine's rules are chosen from what the host announced
    when each example begins, so the first example shows it; the whole budget behind two
    adapters took three minutes of the unit-test job on a busy machine."""
    stripped = ",".join(sorted(set(CONTROL_CAPABILITIES.values())))
    driver = f"{sys.executable} -m reference_impl.driver"
    host = f"{sys.executable} -m conformance.strip {stripped} -- {driver}"
    run = run_suite(tmp_path, "--host", host, "-k", "test_model")
    assert run.status == 0, run.failed_requirements()


@pytest.mark.req("FENCE-006", "ORD-004")
def test_a_kill_switch_pulled_while_open_may_let_the_call_run() -> None:
    """A kill switch pulled for the tool while its prompt is open is no event of the fence
    (decisions R3.4): the host that runs the approved call takes FENCE-006's other alternative,
    is held to it, and the example is compared no further. Without that kill, or for another
    tool, running the call the model withheld fails ORD-004."""
    killed = CallResult("KILL_SWITCHED", "Tool recorder is disabled by the kill-switch", True)
    ran = CallResult("APPROVED_ONCE", "ok", False)
    call = Call(3, "recorder", True, prompted=True, events=[("kill", "recorder")])
    held = Held()
    compare.dispositions(call, ran, killed, held)
    assert held.taken == {"FENCE-006": "runs"}
    assert held.off_model
    again = Held()
    compare.dispositions(call, killed, killed, again)
    assert again.taken == {"FENCE-006": "refused"}
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, ran, killed, again)
    assert raised.value.requirements == ("FENCE-006",)
    for events in ([], [("kill", "echo")]):
        elsewhere = Call(4, "recorder", True, prompted=True, events=events)
        with pytest.raises(RequirementError) as raised:
            compare.dispositions(elsewhere, ran, killed, Held())
        assert raised.value.requirements[0] == "ORD-004"


@pytest.mark.req("FENCE-006")
def test_a_kill_switch_pulled_while_open_is_refused_as_killed_or_run() -> None:
    """With only the kill switch pulled while the prompt was open, a refusal of any other
    disposition is neither alternative of FENCE-006 and fails it by name. With a revocation
    too, a host that leaves the kill switch out of its fence refuses for the revocation: that
    is the other alternative, held, and the example is compared no further."""
    killed = CallResult("KILL_SWITCHED", "Tool recorder is disabled by the kill-switch", True)
    denied = CallResult("POLICY_DENIED", "revoked", True)
    alone = Call(3, "recorder", True, prompted=True, events=[("kill", "recorder")])
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(alone, denied, killed, Held())
    assert raised.value.requirements == ("FENCE-006",)
    both = Call(
        3, "recorder", True, prompted=True, events=[("kill", "recorder"), ("revoke", "tool:x")]
    )
    held = Held()
    compare.dispositions(both, denied, killed, held)
    assert held.taken == {"FENCE-006": "runs"}
    assert held.off_model
    timed_out = CallResult("TIMEOUT", "The approval request timed out", True)
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(both, timed_out, killed, Held())
    assert raised.value.requirements == ("FENCE-006",)
    # YOLO is no event of the fence: nothing else there refuses the call.
    relaxed = Call(
        3, "recorder", True, prompted=True, events=[("kill", "recorder"), ("set_yolo", "")]
    )
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(relaxed, denied, killed, Held())
    assert raised.value.requirements == ("FENCE-006",)


def test_a_refusal_that_does_not_apply_is_named_by_what_it_gets_wrong() -> None:
    """A host that refuses a call the model ran, for a refusal of resolution that does not
    apply to it, fails the requirement that refusal gets wrong: an unknown id the vault holds,
    a field of blanks refused as empty. Where the model refused the call earlier, for a missing
    ``secret.read``, the model's own refusal is named instead: the order is at fault."""
    ran = CallResult("APPROVED_ONCE", "ok", False)
    unknown = CallResult("SECRET_UNRESOLVED", f"no secret with id {world.SECRET_IDS[0]}", True)
    empty = CallResult("SECRET_UNRESOLVED", f"secret {world.BLANK_ID} has no password", True)
    call = Call(4, "recorder", True, resolution=frozenset())
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, unknown, ran, Held())
    assert raised.value.requirements == ("GRAM-004", "VAULT-002", "MSG-007")
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, empty, ran, Held())
    assert raised.value.requirements == ("SUBST-005", "MSG-008")
    forbidden = CallResult(
        "SECRET_FORBIDDEN", "Secret references require the secret.read permission", True
    )
    with pytest.raises(RequirementError) as raised:
        compare.dispositions(call, unknown, forbidden, Held())
    assert "MSG-004" in raised.value.requirements
    assert "VAULT-002" not in raised.value.requirements


def test_the_tagged_key_is_an_ai_key_whose_exact_tag_is_not_its_only_one() -> None:
    """The probe's second AI key holds another tag before ``ai-provider``: a host comparing the
    joined tags, or only the first, resolves it; the model expects the AI key's refusal."""
    spec = next(s for s in _SETUP.config(Mint()).secrets if s.id == world.TAGGED_ID)
    assert spec.tags[-1] == world.AI_TAG
    assert len(spec.tags) > 1
    assert world.resolution(world.tagged_call(0), _SETUP) == {"ai"}
    assert _ids(world.tagged_call(0), "ref")[-1] == world.TAGGED_ID


def test_the_upper_entry_is_listed_in_upper_case_and_named_in_both() -> None:
    """The vault lists the probe's upper-case entry under its id in capitals, its password
    holds the characters a script-safe JSON writer escapes, and the probe's call names it in
    lower and in upper case: nothing in the call is refused at resolution."""
    stored = [s for s in _SETUP.config(Mint()).secrets if s.id.lower() == world.UPPER_ID]
    assert [s.id for s in stored] == [world.UPPER_ID.upper()]
    assert world.UPPER_ID.upper() != world.UPPER_ID
    assert world.SCRIPTED in stored[0].password
    texts = [str(world.item_text(item)) for item in world.upper_call(0)]
    assert any(world.UPPER_ID in text for text in texts)
    assert any(world.UPPER_ID.upper() in text for text in texts)
    assert world.resolution(world.upper_call(0), _SETUP) == frozenset()
