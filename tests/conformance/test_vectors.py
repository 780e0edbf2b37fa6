"""Tests of the vector corpus: its schema, its loaders, its coverage, and an oracle.

The oracle runs every grammar vector through the reference host's scan and parse, and every
scrub vector through its form functions and scrubber. A disagreement means the vector or the
reference host is wrong; the design and its rulings decide which.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import re
import uuid
from collections import defaultdict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import reference_impl as ri
from conformance import catalog, vectors
from conformance.vectors import GrammarVector, OrderingVector, ScrubVector

GRAMMAR = vectors.load_grammar()
GENERATED = vectors.load_generated()
SCRUB = vectors.load_scrub()
ORDERING = vectors.load_ordering()

_LOCATED = re.compile(
    r"Malformed secret reference at (?P<pointer>.*) offset (?P<offset>[0-9]+) "
    r"length (?P<length>[0-9]+): (?P<reason>.*)",
    re.DOTALL,
)


def _params(corpus: Sequence[Any]) -> list[Any]:
    return [pytest.param(v, id=v.id, marks=pytest.mark.req(*v.requirements)) for v in corpus]


def _raw_file(name: str) -> dict[str, Any]:
    text = resources.files("conformance").joinpath("vectors", name).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


# --- format and loaders ------------------------------------------------------------------------


@pytest.mark.parametrize("name", vectors.VECTOR_FILES)
def test_files_match_the_schema(name: str) -> None:
    """Each vector file validates against vectors.schema.json on its own."""
    schema = json.loads(
        resources.files("conformance").joinpath("schemas", "vectors.schema.json").read_text("utf-8")
    )
    jsonschema.Draft202012Validator.check_schema(schema)
    document = _raw_file(name)
    jsonschema.Draft202012Validator(schema).validate(document)
    assert document["schema"] == vectors.FORMAT
    assert document["kind"] == name.removesuffix(".json")


def test_loaders_return_frozen_slotted_values_with_tuples() -> None:
    """Every loaded value is a frozen, slotted dataclass whose sequences are tuples."""
    values: tuple[Any, ...] = (*vectors.VECTOR_SECRETS, GRAMMAR[0], SCRUB[0], ORDERING[0])
    for value in values:
        assert dataclasses.is_dataclass(type(value))
        assert not hasattr(value, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.id = "x"
    every: tuple[GrammarVector | ScrubVector | OrderingVector, ...] = (*GRAMMAR, *SCRUB, *ORDERING)
    for vector in every:
        for name in ("requirements", "flags"):
            assert isinstance(getattr(vector, name), tuple)
    for grammar in GRAMMAR:
        for name in ("refs", "canaries", "alternatives"):
            assert isinstance(getattr(grammar, name), tuple)
    for ordering in ORDERING:
        assert isinstance(ordering.conditions, tuple)
    assert isinstance(vectors.VECTOR_SECRETS, tuple)


def test_vector_secrets_come_from_the_grammar_header() -> None:
    """VECTOR_SECRETS mirrors the grammar header, with one entry without notes for MSG-008."""
    header = _raw_file(vectors.GRAMMAR_FILE)["secrets"]
    assert [s.id for s in vectors.VECTOR_SECRETS] == [h["id"] for h in header]
    assert all(s.username_kind == "canary" for s in vectors.VECTOR_SECRETS)
    assert any(not s.has_notes for s in vectors.VECTOR_SECRETS)
    assert all(s.id == s.id.lower() for s in vectors.VECTOR_SECRETS)


def test_vector_ids_are_unique_and_in_order() -> None:
    """IDs are unique across files, and each file's IDs only grow: new vectors are appended."""
    every = vectors.all_vector_ids()
    assert len(every) == len(set(every))
    for corpus in (GRAMMAR, SCRUB, ORDERING):
        numbers = [int(v.id.rsplit("-", 1)[1]) for v in corpus]
        assert numbers == sorted(numbers)
        assert len(set(numbers)) == len(numbers)


def test_every_cited_requirement_exists() -> None:
    """Every requirement ID a vector cites is in the catalog."""
    corpus: tuple[GrammarVector | ScrubVector | OrderingVector, ...] = (
        *GRAMMAR,
        *GENERATED,
        *SCRUB,
        *ORDERING,
    )
    cited = {rid for v in corpus for rid in v.requirements}
    assert catalog.unknown_ids(cited) == set()


def test_digest_covers_every_file_in_name_order() -> None:
    """vectors_digest is the SHA-256 of the files' bytes, concatenated in sorted name order."""
    digest = hashlib.sha256()
    for name in sorted(vectors.VECTOR_FILES):
        digest.update(resources.files("conformance").joinpath("vectors", name).read_bytes())
    assert vectors.vectors_digest() == digest.hexdigest()
    assert re.fullmatch("[0-9a-f]{64}", vectors.vectors_digest())


def test_the_validated_digests_are_those_of_the_packaged_files() -> None:
    """validated.json records each packaged file's current bytes, and only after validating
    them in full: a file edited without regenerating is validated again at every load."""
    directory = Path(str(resources.files("conformance").joinpath("vectors")))
    stamp = (directory / vectors.VALIDATED_FILE).read_text("utf-8")
    assert stamp == vectors.validated_stamp(directory), "run python -m conformance.vectorgen"


def test_bytes_not_validated_before_are_validated_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A vector file whose digest is not the one recorded goes through the schema again, and
    one whose digest matches does not."""
    seen: list[bool] = []

    def check(document: Any, name: str, kind: str, schema: bool = True) -> None:
        seen.append(schema)

    def load() -> None:
        vectors._document.cache_clear()
        try:
            vectors._document(vectors.SCRUB_FILE, "scrub")
        finally:
            vectors._document.cache_clear()

    monkeypatch.setattr(vectors, "_check_document", check)
    load()
    monkeypatch.setattr(vectors, "_validated", lambda: {vectors.SCRUB_FILE: "0" * 64})
    load()
    assert seen == [False, True]


def test_a_broken_file_is_refused() -> None:
    """The loader refuses a file that breaks the schema or the corpus rules, naming the fault."""
    good = _raw_file(vectors.GRAMMAR_FILE)
    broken = copy.deepcopy(good)
    broken["vectors"][0]["expected"] = "maybe"
    with pytest.raises(vectors.VectorError, match="schema violation"):
        vectors._check_document(broken, "grammar.json", "grammar")
    repeated = copy.deepcopy(good)
    repeated["vectors"].append(copy.deepcopy(repeated["vectors"][0]))
    with pytest.raises(vectors.VectorError, match="repeats"):
        vectors._check_document(repeated, "grammar.json", "grammar")
    with pytest.raises(vectors.VectorError, match="kind"):
        vectors._check_document(good, "grammar.json", "scrub")
    unknown = copy.deepcopy(good)
    unknown["vectors"][0]["refs"] = ["00000000-0000-4000-8000-000000000000.password"]
    with pytest.raises(vectors.VectorError, match="does not resolve"):
        vectors._build_grammar(unknown, vectors.VECTOR_SECRETS)
    stray = copy.deepcopy(_raw_file(vectors.ORDERING_FILE))
    stray["vectors"][0]["winner"] = "empty-field"
    stray["vectors"][0]["conditions"] = ["malformed"]
    with pytest.raises(vectors.VectorError, match="winner"):
        vectors._build_ordering(stray)


def test_result_text_fills_slots_in_one_pass() -> None:
    """A form that contains slot text is never filled again."""
    vector = dataclasses.replace(
        SCRUB[0],
        value="x{b}yzzzzz",
        forms={"a": "{b}", "b": "B", "c": "C", "d": "D"},
        template="<{a}|{raw}|{d}>",
    )
    assert vector.result_text() == "<{b}|x{b}yzzzzz|D>"


# --- coverage --------------------------------------------------------------------------------

_GRAMMAR_FLAGS = (
    "top-level", "nested", "array", "several", "duplicate", "case-id", "case-prefix", "field",
    "escaped-marker", "extra-braces", "look-alike", "malformed", "bad-id", "bad-field",
    "unterminated", "canary", "document-order", "key", "not-object", "invalid-json",
    "no-marker", "extension", "duplicate-key", "non-ascii", "surrogate-pair", "lone-surrogate",
    "control", "fold-look-alike", "scalar", "location", "pointer-escape",
)  # fmt: skip


def test_grammar_corpus_covers_every_kind() -> None:
    """At least 200 grammar vectors, every verdict, and every kind of case the issue lists."""
    assert len(GRAMMAR) >= 200
    assert {v.expected for v in GRAMMAR} == {vectors.VALID, vectors.INVALID, vectors.ACCEPTABLE}
    present = {flag for v in GRAMMAR for flag in v.flags}
    assert set(_GRAMMAR_FLAGS) <= present
    reasons = {v.reason for v in GRAMMAR if v.reason is not None}
    assert reasons == {ri.REASON_BAD_ID, ri.REASON_BAD_FIELD, ri.REASON_UNTERMINATED, ri.REASON_KEY}
    fields = {ref.rsplit(".", 1)[1] for v in GRAMMAR for ref in v.refs}
    assert fields == {"password", "username", "notes"}
    assert any(v.pointer == "" for v in GRAMMAR)
    assert any(v.expected == vectors.VALID and not v.refs and "invalid-json" in v.flags
               for v in GRAMMAR)  # fmt: skip


def test_scrub_corpus_covers_every_form_and_the_floor() -> None:
    """Every form differs from the one before it somewhere, and the floor is 7 against 8."""
    assert any(v.forms["b"] != v.forms["a"] for v in SCRUB)
    assert any(v.forms["c"] != v.forms["b"] for v in SCRUB)
    assert any(v.forms["d"] != v.forms["c"] for v in SCRUB)
    lengths = {len(v.value): v.scrubbed for v in SCRUB if "either-utf16" not in v.flags}
    assert lengths[7] is False
    assert lengths[8] is True
    either = [v for v in SCRUB if "either-utf16" in v.flags]
    assert either
    assert all("SCRUB-002" in v.requirements for v in either)
    for vector in either:
        units = len(vector.value.encode("utf-16-le")) // 2
        assert len(vector.value) < ri.SCRUB_MIN_CODE_POINTS <= units
    groups = {f for v in SCRUB for f in v.flags if f.startswith("group-")}
    assert {"group-shared", "group-prefix", "group-overlap"} <= groups


_TOP = ("malformed", "feature-off", "no-secret-read", "tool-deny", "provider-deny", "bearing-deny")
_RESOLUTION = ("vault-failure", "ai-provider", "unknown-id", "empty-field")


def test_ordering_corpus_covers_every_pair() -> None:
    """Every pair of R2.3 refusals has a vector: top-level classes, top against resolution
    (no vault included), and every pair within resolution."""
    pairs = {frozenset(v.conditions) for v in ORDERING if len(v.conditions) == 2}
    wanted = {
        frozenset(pair)
        for pair in itertools.combinations(_TOP, 2)
        if set(pair) != {"tool-deny", "provider-deny"}
    }
    wanted |= {frozenset((a, b)) for a in _TOP for b in ("no-vault", *_RESOLUTION)}
    wanted |= {frozenset(pair) for pair in itertools.combinations(_RESOLUTION, 2)}
    assert wanted <= pairs


_WINNERS = {
    "malformed": ("SECRET_UNRESOLVED", ri.MALFORMED_PREFIX),
    "feature-off": ("SECRET_FORBIDDEN", ri.DISABLED_MESSAGE),
    "no-secret-read": ("SECRET_FORBIDDEN", ri.NO_PERMISSION_MESSAGE),
    "tool-deny": ("POLICY_DENIED", ""),
    "provider-deny": ("POLICY_DENIED", ""),
    "bearing-deny": ("SECRET_FORBIDDEN", ri.BEARING_DENIED_MESSAGE),
    "no-vault": ("SECRET_UNRESOLVED", ri.NO_VAULT_MESSAGE),
    "vault-failure": ("SECRET_UNRESOLVED", "the vault could not be read ("),
    "ai-provider": ("SECRET_FORBIDDEN", "secret "),
    "unknown-id": ("SECRET_UNRESOLVED", "no secret with id "),
    "empty-field": ("SECRET_UNRESOLVED", "secret "),
}


@pytest.mark.parametrize("vector", _params(ORDERING))
def test_ordering_vector_follows_r2_3(vector: OrderingVector) -> None:
    """The winner is the first condition in R2.3's order, with its disposition and prefix;
    the level is SHOULD only when every condition is decided within resolution."""
    assert vector.winner == min(vector.conditions, key=vectors.CONDITIONS.index)
    assert (vector.disposition, vector.message_prefix) == _WINNERS[vector.winner]
    within = all(c in _RESOLUTION for c in vector.conditions)
    assert vector.level == ("SHOULD" if within else "MUST")
    assert ("ORD-002" if within else "ORD-001") in vector.requirements


# --- the grammar oracle --------------------------------------------------------------------------


def _behaviour(args: str) -> tuple[str, ri.Refusal | tuple[str, ...]]:
    """What the reference host's scan and parse make of argument text."""
    if not ri.has_marker(args):
        return "pass", ()
    parsed = ri.parse_arguments(args)
    if isinstance(parsed, ri.Refusal):
        return "refuse", parsed
    return "parse", tuple(reference.name for reference in parsed.references)


def grammar_disagreements(vector: GrammarVector) -> list[str]:
    """Return how the reference host's grammar disagrees with a vector; empty if it agrees."""
    kind, found = _behaviour(vector.args)
    problems: list[str] = []
    if vector.expected == vectors.VALID:
        if isinstance(found, ri.Refusal):
            problems.append(f"refused ({found.reason})")
        elif found != vector.refs:
            problems.append(f"references {found} instead of {vector.refs}")
        return problems
    if vector.expected == vectors.ACCEPTABLE:
        if isinstance(found, ri.Refusal):
            chosen = "refuse" if "refuse" in vector.alternatives else "marker"
        elif "resolve" in vector.alternatives:
            chosen = "resolve" if found == vector.refs and found else "neither"
        else:
            chosen = "marker" if found and found == vector.refs else "literal" if not found else ""
        if chosen not in vector.alternatives:
            problems.append(f"behaviour {chosen or found} is not one of {vector.alternatives}")
        if isinstance(found, ri.Refusal):
            problems += [f"canary in message: {c}" for c in vector.canaries if c in found.message]
        return problems
    if not isinstance(found, ri.Refusal):
        return [f"not refused ({kind})"]
    if found.disposition.value != vector.disposition:
        problems.append(f"disposition {found.disposition.value}")
    if vector.message_prefix is not None and not found.message.startswith(vector.message_prefix):
        problems.append("message prefix")
    if vector.reason is not None:
        located = _LOCATED.fullmatch(found.message)
        got = (
            (located["pointer"], int(located["offset"]), int(located["length"]), located["reason"])
            if located
            else None
        )
        want = (vector.pointer, vector.offset, vector.length, vector.reason)
        if got != want:
            problems.append(f"location {got} instead of {want}")
    sanitized = ri.sanitize_arguments(vector.args)
    for canary in vector.canaries:
        if canary in found.message:
            problems.append(f"canary in message: {canary}")
        if canary in sanitized:
            problems.append(f"canary in sanitized arguments: {canary}")
    return problems


@pytest.mark.parametrize("vector", _params(GRAMMAR + GENERATED))
def test_grammar_vector_agrees_with_the_reference_host(vector: GrammarVector) -> None:
    """The reference host's scan and parse give the vector's verdict, references and refusal."""
    assert grammar_disagreements(vector) == []


@pytest.mark.parametrize(
    "change",
    [
        {"expected": "invalid", "disposition": "SECRET_UNRESOLVED", "refs": ()},
        {"refs": ("6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5.username",)},
    ],
)
def test_the_grammar_oracle_can_fail_on_a_valid_vector(change: dict[str, Any]) -> None:
    """A valid vector given a wrong verdict or wrong references is caught."""
    vector = next(v for v in GRAMMAR if v.expected == vectors.VALID and v.refs)
    assert grammar_disagreements(dataclasses.replace(vector, **change))


@pytest.mark.parametrize(
    "change",
    [
        {"offset": 1},
        {"pointer": "/other"},
        {"reason": ri.REASON_UNTERMINATED},
        {"message_prefix": "Something else"},
        {"disposition": "SECRET_FORBIDDEN"},
        {"expected": "valid", "refs": ()},
    ],
)
def test_the_grammar_oracle_can_fail_on_an_invalid_vector(change: dict[str, Any]) -> None:
    """An invalid vector with a wrong location, reason, prefix or verdict is caught."""
    vector = next(
        v for v in GRAMMAR if v.expected == vectors.INVALID and v.reason == ri.REASON_BAD_ID
    )
    assert grammar_disagreements(dataclasses.replace(vector, **change))


def test_the_grammar_oracle_catches_an_echoed_canary() -> None:
    """A canary that the refusal message or the sanitized arguments would show is caught."""
    vector = next(v for v in GRAMMAR if v.expected == vectors.INVALID and v.canaries)
    static = dataclasses.replace(vector, canaries=("Malformed",))
    assert grammar_disagreements(static)


# --- the scrub oracle ----------------------------------------------------------------------------


def _expected_forms(value: str) -> dict[str, str]:
    form_c = ri.form_encode(value)
    return {"a": value, "b": ri.json_escape(value), "c": form_c, "d": form_c.replace("+", "%20")}


@pytest.mark.parametrize("vector", _params(SCRUB))
def test_scrub_forms_agree_with_the_reference_host(vector: ScrubVector) -> None:
    """Forms a to d are those the reference host computes, and it scrubs exactly when due."""
    assert dict(vector.forms) == _expected_forms(vector.value)
    scrubbed = ri.forms(vector.value)
    assert bool(scrubbed) is vector.scrubbed
    if vector.scrubbed:
        assert set(scrubbed) == set(vector.forms.values())


def test_forms_match_hand_written_expectations() -> None:
    """Spot checks of R5.2 written out by hand, independent of any encoder."""
    by_value = {v.value: v.forms for v in SCRUB}
    assert by_value["~tilde~value"]["c"] == "%7Etilde%7Evalue"
    assert by_value["pa ss word 1"]["c"] == "pa+ss+word+1"
    assert by_value["pa ss word 1"]["d"] == "pa%20ss%20word%201"
    assert by_value["ctl\x01\x1fchars"]["b"] == "ctl\\u0001\\u001fchars"
    assert by_value["del\x7fchar99"]["b"] == "del\x7fchar99"
    assert by_value["/slash/value/"]["b"] == "/slash/value/"
    assert by_value["*star*-_.dots"]["c"] == "*star*-_.dots"
    assert by_value["pässwörd-ü"]["c"] == "p%C3%A4ssw%C3%B6rd-%C3%BC"
    assert by_value["100%pure%20x"]["c"] == "100%25pure%2520x"


def _groups() -> list[tuple[ScrubVector, ...]]:
    grouped: dict[str, list[ScrubVector]] = defaultdict(list)
    for vector in SCRUB:
        group = next((f for f in vector.flags if f.startswith("group-")), vector.id)
        grouped[group].append(vector)
    return [tuple(members) for members in grouped.values()]


def scrub_leftovers(members: Sequence[ScrubVector]) -> list[str]:
    """Scrub each member's result text as one call would; return what should not be there."""
    resolved = [
        (ri.Reference(str(uuid.UUID(int=index + 1)), ri.Field(m.field)), ri.SecretValue(m.value))
        for index, m in enumerate(members)
    ]
    scrubber = ri.Scrubber(resolved)
    scrubbed_forms = {form for m in members if m.scrubbed for form in m.forms.values()}
    problems: list[str] = []
    for member in members:
        text = member.result_text()
        out = scrubber.scrub(text)
        problems += [f"{member.id} keeps a form" for form in scrubbed_forms if form in out]
        if not scrubbed_forms and out != text:
            problems.append(f"{member.id} changed although no value is long enough")
        if scrubbed_forms and out == text and member.scrubbed:
            problems.append(f"{member.id} was not scrubbed")
        if member.scrubbed and "[secret:" not in out:
            problems.append(f"{member.id} has no placeholder")
    return problems


@pytest.mark.parametrize(
    "members",
    [
        pytest.param(
            group,
            id="+".join(v.id for v in group),
            marks=pytest.mark.req(*sorted({r for v in group for r in v.requirements})),
        )
        for group in _groups()
    ],
)
def test_scrubber_leaves_no_form_of_a_vector(members: tuple[ScrubVector, ...]) -> None:
    """The reference scrubber, built as for one call, leaves no form of any long value."""
    assert scrub_leftovers(members) == []


def test_the_scrub_oracle_can_fail() -> None:
    """A template holding a form the scrubber does not know is caught."""
    vector = next(v for v in SCRUB if v.scrubbed and v.forms["c"] != v.value)
    assert scrub_leftovers([dataclasses.replace(vector, value=vector.value + "!")])


# --- the ordering oracle ----------------------------------------------------------------------

_TOOL, _PROVIDER = "write_file", "files-plugin"
_OWN = next(s.id for s in vectors.VECTOR_SECRETS if s.has_notes and not s.tags)
_AI = next(s.id for s in vectors.VECTOR_SECRETS if "ai-provider" in s.tags)
_EMPTY = next(s.id for s in vectors.VECTOR_SECRETS if not s.has_notes)
_UNKNOWN = "00000000-0000-4000-8000-00000000dead"


def _reference_outcome(conditions: Sequence[str]) -> ri.CallOutcome:
    """Set up every condition on a fresh reference registry and make one call."""
    on = set(conditions)
    references = [f"{{{{secret:{_OWN}}}}}"]
    if "ai-provider" in on:
        references.append(f"{{{{secret:{_AI}}}}}")
    if "unknown-id" in on:
        references.append(f"{{{{secret:{_UNKNOWN}}}}}")
    if "empty-field" in on:
        references.append(f"{{{{secret:{_EMPTY}.notes}}}}")
    if "malformed" in on:
        references.append("{{secret:not-a-uuid}}")
    policy = ri.Policy(
        secret_references_enabled="feature-off" not in on,
        secret_bearing_calls=ri.Rule.DENY if "bearing-deny" in on else ri.Rule.ASK,
        tools={_TOOL: ri.Rule.DENY} if "tool-deny" in on else {},
        providers={_PROVIDER: ri.Rule.DENY} if "provider-deny" in on else {},
    )
    vault: ri.InMemoryVault | None = None
    if "no-vault" not in on:
        vault = ri.InMemoryVault(
            ri.SecretRecord(
                secret.id,
                secret.website,
                ri.SecretValue(f"user-{index}-canary"),
                ri.SecretValue(f"password-{index}-canary"),
                ri.SecretValue(f"notes-{index}-canary" if secret.has_notes else ""),
                secret.tags,
            )
            for index, secret in enumerate(vectors.VECTOR_SECRETS)
        )
        if "vault-failure" in on:
            vault.fail_with = "offline"
    permissions = frozenset() if "no-secret-read" in on else frozenset({ri.SECRET_READ})
    registry = ri.Registry(policy=policy, vault=vault, user=ri.User(permissions=permissions))
    registry.register(ri.Tool(_TOOL, _PROVIDER, lambda arguments: "ok"))
    return registry.invoke(_TOOL, json.dumps({"content": " ".join(references)}))


@pytest.mark.parametrize("vector", _params(ORDERING))
def test_ordering_vector_agrees_with_the_reference_host(vector: OrderingVector) -> None:
    """The reference host refuses with the winner's disposition and message prefix."""
    outcome = _reference_outcome(vector.conditions)
    assert outcome.disposition.value == vector.disposition
    assert outcome.text.startswith(vector.message_prefix)
    assert outcome.refusal is not None


def test_the_ordering_oracle_can_fail() -> None:
    """A vector naming the wrong winner is caught by the oracle."""
    vector = next(v for v in ORDERING if set(v.conditions) == {"feature-off", "bearing-deny"})
    outcome = _reference_outcome(vector.conditions)
    assert not outcome.text.startswith(_WINNERS["bearing-deny"][1])
