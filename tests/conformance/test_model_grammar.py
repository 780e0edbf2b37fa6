"""The model check walks the generated grammar: every spelling of a reference, every string that
only looks like one, and the malformed candidates, written on the model's vault
(``world.SPELLED``). These tests pin what those calls are made of and that one example finds the
grammar faults the model check once left to the vector checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import vectorgen
from conformance.model import world
from conformance.selftest import reach
from tests.conformance.suite_runs import run_suite


def test_every_feature_but_an_escaped_id_is_written_on_the_models_vault() -> None:
    """Each feature of the generated grammar is there, with its outcome, except those whose id
    is spelled with escapes, which would name an id the model's vault does not hold; no string
    names either id of the generated grammar, and a reference names a wide entry, whose fields
    are never empty."""
    names = {feature.name for feature in vectorgen.features()}
    kept = {each.name for each in world.SPELLED}
    assert kept <= names
    assert names - kept == {"u-id-escaped"}
    by_name = {feature.name: feature for feature in vectorgen.features()}
    wide = {world.VAULT_IDS.index(sid) for sid in world.WIDE_IDS}
    for each in world.SPELLED:
        decoded = json.loads(f'"{each.token}"').casefold()
        assert vectorgen.ID_A not in decoded
        assert vectorgen.ID_B not in decoded
        assert each.outcome == by_name[each.name].outcome
        if each.outcome == vectorgen.REF:
            assert each.member is not None
            assert each.member.secret in wide
            assert world.VAULT_IDS[each.member.secret] in decoded
        else:
            assert each.member is None
        assert each.requirements


def test_the_spelled_calls_hold_every_outcome_and_meet_each_malformed_group_at_once() -> None:
    """The call of every reference spelling and the call of every look-alike are valid JSON
    objects holding each string once, as a value, a nested value and an array item; the first
    malformed candidates the first example calls are of different groups."""
    for spelled in (world.SPELLED_REFS, world.SPELLED_LITERALS):
        assert spelled
        decoded = json.loads(world.spelled_arguments(spelled))
        assert len(decoded) == len(spelled)
        assert decoded["k1"].keys() == {"inner"}
        assert decoded["k2"][0] == "x"
    groups = {each.group for each in world.SPELLED_MALFORMED}
    first = world.SPELLED_MALFORMED[: len(groups)]
    assert len(groups) <= world.MALFORMED_PER_EXAMPLE
    assert {each.group for each in first} == groups


def _keys(node: object) -> list[str]:
    """Every key of a JSON tree, at any depth."""
    if isinstance(node, dict):
        return [*node, *(key for child in node.values() for key in _keys(child))]
    if isinstance(node, list):
        return [key for child in node for key in _keys(child)]
    return []


def test_every_marker_spelling_stands_as_a_key_at_every_place() -> None:
    """Each spelling of a reference or of a malformed candidate is a key of one call, once, the
    call a valid JSON object whose only string holding a marker is that key; each place (a
    member's object, one level further down, inside an array, the top level) is taken by
    spellings of both outcomes, and each names GRAM-014 first. The look-alikes stand as keys
    in one call, each in an object of its own below the top level (so no object holds two
    keys that unescaping could make equal), and the call holds no marker."""
    keyed = world.SPELLED_KEYED
    markers = [each for each in world.SPELLED if each.outcome != vectorgen.LITERAL]
    assert sorted(each.name for each in keyed) == sorted(each.name for each in markers)
    for each in keyed:
        decoded = json.loads(world.spelled_arguments((each,)))
        keys = _keys(decoded)
        assert json.loads(f'"{each.token}"') in keys
        assert each.requirements[0] == "GRAM-014"
        assert world.spelled_bearing((each,))
    for place in range(len(world.KEY_PLACES)):
        outcomes = {each.outcome for each in keyed if each.place == place}
        assert outcomes == {vectorgen.REF, vectorgen.MALFORMED}, world.KEY_PLACES[place]
    literal = world.SPELLED_LITERAL_KEYS
    decoded = json.loads(world.spelled_arguments(literal))
    assert list(decoded) == [f"k{number}" for number in range(len(literal))]
    inner = [key for key in _keys(decoded) if key not in decoded and key != "inner"]
    assert sorted(inner) == sorted(json.loads(f'"{each.token}"') for each in literal)
    assert not world.spelled_bearing(literal)
    # The walk's start moves with the probe, three spellings a call each: every spelling is
    # met by some example's first three.
    starts = range(len(world.UNKNOWN_FIELDS))
    met = {
        (fields * world.KEYED_PER_EXAMPLE + number) % len(keyed)
        for fields in starts
        for number in range(world.KEYED_PER_EXAMPLE)
    }
    assert met == set(range(len(keyed)))


@pytest.mark.req("GRAM-001", "GRAM-002", "GRAM-009", "GRAM-012", "GRAM-014", "GRAM-040")
@pytest.mark.parametrize(
    ("mutant", "requirement"),
    [
        ("case-sensitive-prefix", "GRAM-001"),
        ("escaped-marker-passes", "GRAM-012"),
        ("surplus-braces-swallowed", "GRAM-002"),
        ("unterminated-marker-skipped", "GRAM-009"),
        ("percent-encoded-marker", "GRAM-040"),
        ("keys-pass-through", "GRAM-014"),
    ],
)
def test_the_first_example_finds_a_grammar_fault_of_each_kind(
    tmp_path: Path, mutant: str, requirement: str
) -> None:
    """One example is enough (the unit tests' budget): its probe calls every spelling of a
    reference, every look-alike and one malformed candidate of each group, as values, and
    three spellings of a marker as keys. The model check once missed each of these mutants,
    which only the vector checks caught."""
    run = run_suite(tmp_path, *reach.model_arguments(mutant))
    assert run.status == 1, f"the model check let {mutant} through"
    assert requirement in run.failed_requirements()


def test_a_difference_is_traced_to_the_strings_whose_members_differ() -> None:
    """The members two handlers received otherwise name the strings that stood there; texts
    that are no JSON object, or not one with exactly the call's members, name none."""
    spelled = world.SPELLED_REFS[:4]
    model = {"k0": "a", "k1": {"inner": "b"}, "k2": ["x", "c"], "k3": "d"}
    host = {**model, "k1": {"inner": "{{SECRET:x}}"}, "k3": "e"}
    chosen = world.spelled_at(spelled, json.dumps(host), json.dumps(model))
    assert chosen == [spelled[1], spelled[3]]
    assert world.spelled_at(spelled, json.dumps(model), json.dumps(model)) == []
    assert world.spelled_at(spelled, "not json", json.dumps(model)) == []
    assert world.spelled_at(spelled, "[]", json.dumps(model)) == []
    # Texts of another call, with other members, name none.
    other = {"k0": "a", "k1": "b"}
    assert world.spelled_at(spelled, json.dumps(other), json.dumps(model)) == []
    assert world.spelled_at(spelled, json.dumps({**host, "k4": 1}), json.dumps(model)) == []
