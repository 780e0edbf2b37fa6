"""The model check's attribution role and its comparison of a refusal's ruled words.

A call's members are drawn in roles (``conformance.model.world.members``); one of them puts one
or two unknown ids among known references, first, between them or last, and in either order.
The comparison (``conformance.model.compare.ruled_words``) holds a refusal made before any
prompt to the words the rulings fix (decisions R2): the host's message begins as the model's,
and for unknown ids with the model's whole message. What follows the ruled words is the host's
own. The mutants the role was added for are found by the CI budget, unaided.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import find, settings

from conformance.host import CallResult
from conformance.model import world
from conformance.model.compare import Call, ruled_words
from conformance.outcomes import RequirementError, recording
from tests.conformance.suite_runs import run_suite

_FIRST, _SECOND = world.UNKNOWN_IDS
_ENOUGH = settings(max_examples=5_000, database=None)


def _unknown_at(members: tuple[world.Item, ...]) -> list[int]:
    return [index for index, item in enumerate(members) if item.kind == "unknown"]


def test_the_two_unknown_ids_sort_against_the_order_they_are_listed_in() -> None:
    """A host that sorts the ids it names lists them otherwise than in order of first use."""
    assert sorted(world.UNKNOWN_IDS) != list(world.UNKNOWN_IDS)


@pytest.mark.req("MSG-007", "SUBST-004")
def test_unknown_ids_are_drawn_first_between_and_last() -> None:
    def between(members: tuple[world.Item, ...]) -> bool:
        known = [i for i, item in enumerate(members) if item.kind == "ref"]
        return len(known) >= 2 and any(known[0] < i < known[-1] for i in _unknown_at(members))

    def first(members: tuple[world.Item, ...]) -> bool:
        return len(members) >= 3 and _unknown_at(members)[:1] == [0]

    def last(members: tuple[world.Item, ...]) -> bool:
        return len(members) >= 3 and _unknown_at(members)[-1:] == [len(members) - 1]

    for shape in (between, first, last):
        assert shape(find(world.members(), shape, settings=_ENOUGH))


@pytest.mark.req("MSG-007")
def test_two_unknown_ids_are_drawn_in_either_order_and_in_upper_case() -> None:
    def ids(members: tuple[world.Item, ...]) -> list[str]:
        return [world.UNKNOWN_IDS[item.secret % 2] for item in members if item.kind == "unknown"]

    unsorted = find(world.members(), lambda m: ids(m)[:2] == [_FIRST, _SECOND], settings=_ENOUGH)
    ordered = find(world.members(), lambda m: ids(m)[:2] == [_SECOND, _FIRST], settings=_ENOUGH)
    upper = find(
        world.members(),
        lambda m: any(item.kind == "unknown" and item.upper for item in m),
        settings=_ENOUGH,
    )
    assert ids(unsorted)[:2] == [_FIRST, _SECOND]
    assert ids(ordered)[:2] == [_SECOND, _FIRST]
    assert _FIRST.upper() in world.arguments(upper) or _SECOND.upper() in world.arguments(upper)


def _refused(text: str) -> CallResult:
    return CallResult("SECRET_UNRESOLVED", text, True)


_NAMED = f"no secret with id {_FIRST}, {_SECOND}"


@pytest.mark.req("MSG-007")
@pytest.mark.parametrize(
    "host_text",
    [_NAMED, _NAMED + " (ask the vault's owner)", f"{_NAMED}; nothing was run"],
    ids=["exact", "own-text-after", "own-text-after-semicolon"],
)
def test_a_refusal_naming_the_ids_as_ruled_passes(host_text: str) -> None:
    ruled_words(Call(1, "echo", True), _refused(host_text), _refused(_NAMED))


@pytest.mark.req("MSG-007")
@pytest.mark.parametrize(
    "host_text",
    [
        f"no secret with id {_SECOND}, {_FIRST}",
        f"no secret with id {_FIRST.upper()}, {_SECOND}",
        f"no secret with id {_FIRST}",
        f"no secret with id {_FIRST}; {_SECOND}",
        f"Unknown secret ids: {_FIRST}, {_SECOND}",
    ],
    ids=["sorted", "upper-case", "one-missing", "semicolon", "other-words"],
)
def test_a_refusal_naming_the_ids_otherwise_fails(host_text: str) -> None:
    with pytest.raises(RequirementError) as caught:
        ruled_words(Call(1, "echo", True), _refused(host_text), _refused(_NAMED))
    assert caught.value.requirements == ("MSG-007",)


@pytest.mark.req("MSG-001", "MSG-003", "MSG-009")
@pytest.mark.parametrize(
    ("model_text", "words", "requirement"),
    [
        (
            "Malformed secret reference {{secret:...}}: the id is not a secret id",
            "Malformed secret reference",
            "MSG-001",
        ),
        (
            "Secret references are disabled on this host",
            "Secret references are disabled on this host",
            "MSG-003",
        ),
        ("the vault could not be read (offline)", "the vault could not be read (", "MSG-009"),
    ],
)
def test_other_ruled_words_are_held_and_the_rest_is_the_hosts(
    model_text: str, words: str, requirement: str
) -> None:
    call = Call(2, "echo", True)
    # After a vault failure's words only a kind may follow; any kind is the host's own.
    own = "keychain locked)" if requirement == "MSG-009" else "the host's own words"
    ruled_words(call, _refused(words + own), _refused(model_text))
    with pytest.raises(RequirementError) as caught:
        ruled_words(call, _refused("refused: " + words), _refused(model_text))
    assert caught.value.requirements == (requirement,)


@pytest.mark.req("MSG-009")
@pytest.mark.parametrize(
    "host_text",
    [
        "the vault could not be read (connection reset by peer: 7f3a)",
        "the vault could not be read (VaultError('timed out'))",
        "the vault could not be read (offline); sign in and retry",
    ],
)
def test_a_vault_failure_is_named_by_a_kind_alone(host_text: str) -> None:
    """The words of a vault failure are followed by a kind in parentheses and nothing else,
    whatever kind it is: a failure's own text (a colon, quotes) or words after it fail."""
    model = _refused("the vault could not be read (offline)")
    ruled_words(Call(6, "echo", True), _refused("the vault could not be read (quota-spent)"), model)
    with pytest.raises(RequirementError) as caught:
        ruled_words(Call(6, "echo", True), _refused(host_text), model)
    assert caught.value.requirements == ("MSG-009",)


@pytest.mark.req("MSG-012")
@pytest.mark.parametrize("shape", [0, 1])
@pytest.mark.parametrize("upper", [False, True], ids=["as-written", "upper-case"])
def test_a_malformed_refusal_quotes_no_candidate(shape: int, upper: bool) -> None:
    """A malformed-reference refusal gives a location and a reason: the id a malformed candidate
    names, or its body where it names none, in any case, fails it; a field name does not (a
    short one stands in the ruled reasons' own words)."""
    fields = ("totp", world.UNKNOWN_FIELDS[0])
    members = (
        world.Item("malformed", 1, shape=shape),
        world.Item("malformed", 2, fields[shape]),
    )
    call = Call(7, "echo", True, quoted=world.quoted_texts(members))
    assert len(call.quoted) == 2
    model = _refused("Malformed secret reference at /k0 offset 0 length 21: the id is not a UUID")
    kept = "Malformed secret reference at /k1 offset 0 length 48: unknown field (password, notes)"
    ruled_words(call, _refused(kept), model)
    for quoted in sorted(call.quoted):
        text = quoted.upper() if upper else quoted
        with pytest.raises(RequirementError) as caught:
            ruled_words(call, _refused(f"Malformed secret reference in {text}"), model)
        assert caught.value.requirements == ("MSG-012",)


def test_refusals_after_a_prompt_and_calls_that_ran_are_not_held_here() -> None:
    """After a prompt the fence checks judge the message; a call that ran has none to hold."""
    prompted = Call(3, "echo", True, prompted=True)
    ruled_words(prompted, _refused("anything"), _refused(_NAMED))
    ran = CallResult("APPROVED_ONCE", "ok", False)
    ruled_words(Call(4, "echo", True), ran, CallResult("APPROVED_ONCE", "other", False))


@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.req("MSG-007", "VAULT-002")
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    # The unresolved middle reference is first seen as a second walk of the vault.
    [("unknown-ids-sorted", "MSG-007"), ("ends-only-resolved", "VAULT-002")],
)
def test_the_ci_budget_finds_the_attribution_mutants_unaided(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """The model check alone, with its CI budget, fails both mutants the role was added for."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", "test_model")
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


_VAULT_FAILED = "the vault could not be read (offline)"
_EMPTY = f"secret {_FIRST} has no notes"


@pytest.mark.req("ORD-002")
@pytest.mark.parametrize(
    ("model_text", "host_text"),
    [(_NAMED, _VAULT_FAILED), (_VAULT_FAILED, _NAMED), (_NAMED, _EMPTY)],
    ids=["vault-failure-first", "unknown-id-first", "empty-field-first"],
)
def test_another_order_within_resolution_is_reported_not_failed(
    model_text: str, host_text: str
) -> None:
    """The order among the refusals of resolution is a SHOULD (ORD-002): a host that names
    another of them first is reported non-strict, and its message is not held to the model's."""
    with recording("model") as record:
        ruled_words(Call(5, "echo", True), _refused(host_text), _refused(model_text))
    assert [requirement for requirement, _ in record.non_strict] == ["ORD-002"]


@pytest.mark.req("ORD-001", "MSG-001")
def test_another_order_across_steps_fails() -> None:
    """A malformed candidate is refused before resolution (a MUST): naming an unknown id instead
    fails the malformed refusal's rule and the order."""
    with recording("model") as record, pytest.raises(RequirementError) as caught:
        ruled_words(
            Call(6, "echo", True),
            _refused(_NAMED),
            _refused("Malformed secret reference {{secret:...}}: the id is not a secret id"),
        )
    assert caught.value.requirements == ("MSG-001", "ORD-001")
    assert record.non_strict == []
