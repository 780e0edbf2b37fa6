"""The suite's test vectors: grammar, scrub and ordering cases kept as data.

This module owns reading ``conformance/vectors/*.json`` through ``importlib.resources``,
checking each file against ``conformance/schemas/vectors.schema.json`` and against the rules a
schema cannot say (vector IDs unique across files, reference names that match the vault entries
of the grammar header), and handing the checks frozen, slotted values. Vector IDs are immutable:
a new case, including a fuzz counterexample, gets a new ID, and an old vector is never edited or
renumbered. docs/vectors.md describes the format.

It must never hold a secret: grammar vectors name vault entries whose values each check fills
with fresh canaries, and scrub vectors carry fixed, designed values that are not secrets.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import jsonschema

#: The format every vector file declares in its ``schema`` field.
FORMAT: Final = "secref-vectors/1"

#: The vector files, by kind.
GRAMMAR_FILE: Final = "grammar.json"
#: Grammar vectors written by ``python -m conformance.vectorgen``: features crossed with positions.
GENERATED_FILE: Final = "generated.json"
SCRUB_FILE: Final = "scrub.json"
ORDERING_FILE: Final = "ordering.json"
VECTOR_FILES: Final = (GENERATED_FILE, GRAMMAR_FILE, ORDERING_FILE, SCRUB_FILE)
#: Each vector file's kind, as its ``kind`` field must say.
VECTOR_KINDS: Final = {
    GENERATED_FILE: "generated",
    GRAMMAR_FILE: "grammar",
    ORDERING_FILE: "ordering",
    SCRUB_FILE: "scrub",
}
#: The SHA-256 of each vector file as it was last checked against the schema in full. A run
#: loads a file whose bytes match without validating it again (validating the whole corpus
#: took about a second of every run's start); any other bytes are validated in full.
VALIDATED_FILE: Final = "validated.json"

#: Expected verdicts of a grammar vector (the Wycheproof convention).
VALID: Final = "valid"
INVALID: Final = "invalid"
ACCEPTABLE: Final = "acceptable"

#: The refusal conditions an ordering vector combines (decisions R2.3), most authoritative
#: first; the last five are decided while resolving.
CONDITIONS: Final = (
    "malformed",
    "feature-off",
    "no-secret-read",
    "tool-deny",
    "provider-deny",
    "bearing-deny",
    "no-vault",
    "vault-failure",
    "ai-provider",
    "unknown-id",
    "empty-field",
)

#: A scrub template's slots: forms a to d of decisions R5.2, and ``raw``, the value as it is.
_SLOT_RE: Final = re.compile(r"\{(a|b|c|d|raw)\}")


class VectorError(ValueError):
    """A vector file breaks its schema or one of the corpus rules."""


@dataclass(frozen=True, slots=True)
class VectorSecret:
    """A fixed vault entry that grammar vectors refer to by id.

    The suite fills its password, username and notes with fresh random canaries per check.

    Attributes:
        id: The entry's id, a lower-case UUID.
        website: The website its descriptor shows.
        username_kind: How the username is filled; ``"canary"``.
        has_notes: ``False`` when the notes field is empty, for the ``secret <id> has no notes``
            case; valid grammar vectors never name such an entry's notes.
        tags: The entry's tags (``ai-provider`` marks an AI provider's key).
    """

    id: str
    website: str
    username_kind: str
    has_notes: bool
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GrammarVector:
    """One argument text and what the grammar must make of it (decisions R1, R2.1, R2.2).

    Attributes:
        id: Immutable vector ID, ``gram-NNNN``, or ``gen-<feature>--<position>`` (or
            ``gen-<case>``) for a generated one.
        requirements: The requirement IDs the vector checks.
        flags: Labels of what the case exercises.
        comment: One sentence on the case.
        args: The raw argument text exactly as the agent sends it.
        expected: ``"valid"``, ``"invalid"`` or ``"acceptable"``.
        refs: For valid (and for acceptable with a ``resolve`` or ``marker`` alternative): the
            reference names in order of first use; ``()`` means the call carries no reference
            and must reach the tool byte for byte.
        disposition: For invalid: the disposition (MUST).
        message_prefix: For invalid: what the message must begin with, or ``None`` when more
            than one beginning is legal. The prefix is MUST except with the ``not-object`` flag,
            where only the disposition is MUST and the prefix is SHOULD (GRAM-018).
        reason: For invalid: one of the four static reasons of R2.2 (SHOULD), or ``None``.
        pointer: For invalid: the JSON Pointer of the string, or of the object holding the
            key; the root object's pointer is the empty string (SHOULD).
        offset: For invalid: the candidate's offset in that string, in code points (SHOULD).
        length: For invalid: the candidate's length, in code points (SHOULD).
        canaries: Fragments of ``args`` that must never appear in a refusal message (R2.1,
            MUST) or in ``sanitizedArgs`` (R6.4, SHOULD).
        alternatives: For acceptable: the behaviours accepted, from ``refuse``/``resolve`` or
            ``marker``/``literal``.
    """

    id: str
    requirements: tuple[str, ...]
    flags: tuple[str, ...]
    comment: str
    args: str
    expected: str
    refs: tuple[str, ...]
    disposition: str | None
    message_prefix: str | None
    reason: str | None
    pointer: str | None
    offset: int | None
    length: int | None
    canaries: tuple[str, ...]
    alternatives: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ScrubVector:
    """One designed value, its scrubbed forms and a result text to scrub (decisions R5).

    Vectors that carry the same ``group-<name>`` flag are resolved in one call, each as its own
    reference in file order (order of first use), so that shared, overlapping and prefix values
    meet in one scrubber.

    Attributes:
        id: Immutable vector ID, ``scrub-NNNN``.
        requirements: The requirement IDs the vector checks.
        flags: Labels of what the case exercises; ``either-utf16`` marks a value whose length is
            8 or more in UTF-16 units but under 8 in code points (SCRUB-002, EITHER).
        comment: One sentence on the case.
        value: The value, fixed and designed (quotes, backslashes, spaces, non-ASCII, ...).
        field: The field that holds it: ``password``, ``username`` or ``notes``.
        forms: Forms ``a`` to ``d`` exactly as R5.2 defines them, all four even where they
            coincide.
        scrubbed: ``False`` for a value under 8 code points, which no form of is scrubbed.
        template: A result text with ``{a}`` ``{b}`` ``{c}`` ``{d}`` ``{raw}`` slots;
            :meth:`result_text` fills them.
    """

    id: str
    requirements: tuple[str, ...]
    flags: tuple[str, ...]
    comment: str
    value: str
    field: str
    forms: Mapping[str, str]
    scrubbed: bool
    template: str

    def result_text(self) -> str:
        """Return the template with each slot replaced by its form (``raw`` is the value).

        Slots are filled in one pass over the template, so a form that itself contains slot
        text is never filled again.

        Returns:
            The result text a handler returns for this vector.
        """
        forms = dict(self.forms, raw=self.value)
        return _SLOT_RE.sub(lambda match: forms[match.group(1)], self.template)


@dataclass(frozen=True, slots=True)
class OrderingVector:
    """Several refusal conditions at once, and the one whose refusal must win (decisions R2.3).

    Attributes:
        id: Immutable vector ID, ``ord-NNNN``.
        requirements: The requirement IDs the vector checks.
        flags: Labels of what the case exercises.
        comment: One sentence on the case.
        conditions: The conditions the check sets up together, from :data:`CONDITIONS`.
        winner: The condition whose refusal must win.
        disposition: The winner's disposition.
        message_prefix: What the winner's message begins with; ids are not part of it, and the
            empty string means the host's own policy refusal text.
        level: ``"MUST"`` for the top-level order, ``"SHOULD"`` within resolution.
    """

    id: str
    requirements: tuple[str, ...]
    flags: tuple[str, ...]
    comment: str
    conditions: tuple[str, ...]
    winner: str
    disposition: str
    message_prefix: str
    level: str


def _vectors_dir() -> Traversable:
    return resources.files("conformance").joinpath("vectors")


@cache
def _schema() -> dict[str, Any]:
    text = (
        resources.files("conformance")
        .joinpath("schemas", "vectors.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def _check_document(document: Any, name: str, kind: str, schema: bool = True) -> None:
    """Check one loaded vector file against the schema and the corpus rules.

    Args:
        document: The decoded file.
        name: Its file name, for messages.
        kind: The kind it must declare.
        schema: Whether to validate it against the schema too (its bytes were not the ones
            last validated in full).

    Raises:
        VectorError: The first violation found.
    """
    if schema:
        validator = jsonschema.Draft202012Validator(_schema())
        errors = sorted(
            validator.iter_errors(document), key=lambda error: list(error.absolute_path)
        )
        if errors:
            first = errors[0]
            where = "/".join(str(step) for step in first.absolute_path)
            raise VectorError(f"{name}: schema violation at /{where}: {first.message}")
    if not isinstance(document, dict) or document.get("kind") != kind:
        raise VectorError(f"{name}: kind is {document['kind']!r}, expected {kind!r}")
    ids = [vector["id"] for vector in document["vectors"]]
    if len(ids) != len(set(ids)):
        raise VectorError(f"{name}: a vector ID repeats")


@cache
def _validated() -> dict[str, str]:
    """Return the digest each vector file had when last validated in full, by file name."""
    try:
        text = _vectors_dir().joinpath(VALIDATED_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    loaded = json.loads(text)
    digests = loaded.get("sha256", {}) if isinstance(loaded, dict) else {}
    return {str(name): str(digest) for name, digest in digests.items()}


@cache
def _document(name: str, kind: str) -> dict[str, Any]:
    """Read one vector file and check it: in full unless its bytes are those last validated."""
    raw = _vectors_dir().joinpath(name).read_bytes()
    document: dict[str, Any] = json.loads(raw.decode("utf-8"))
    known = _validated().get(name) == hashlib.sha256(raw).hexdigest()
    _check_document(document, name, kind, schema=not known)
    return document


def validated_stamp(directory: Path, replaced: Mapping[str, Path] | None = None) -> str:
    """Validate every vector file in ``directory`` in full and return the text of its
    :data:`VALIDATED_FILE`, the digests of the bytes validated.

    Args:
        directory: Where the vector files are.
        replaced: Files to read from elsewhere instead, by name (a corpus being regenerated).

    Raises:
        VectorError: A file breaks its schema or the corpus rules.
    """
    digests: dict[str, str] = {}
    for name in sorted(VECTOR_FILES):
        raw = (replaced or {}).get(name, directory / name).read_bytes()
        _check_document(json.loads(raw.decode("utf-8")), name, VECTOR_KINDS[name])
        digests[name] = hashlib.sha256(raw).hexdigest()
    note = "SHA-256 of each vector file as last validated in full; python -m conformance.vectorgen"
    return json.dumps({"comment": note, "sha256": digests}, indent=2) + "\n"


def _strings(raw: dict[str, Any], key: str) -> tuple[str, ...]:
    return tuple(raw.get(key, ()))


def _secrets() -> tuple[VectorSecret, ...]:
    document = _document(GRAMMAR_FILE, "grammar")
    return tuple(
        VectorSecret(
            id=raw["id"],
            website=raw["website"],
            username_kind=raw["username_kind"],
            has_notes=raw["has_notes"],
            tags=tuple(raw["tags"]),
        )
        for raw in document["secrets"]
    )


#: The fixed vault entries grammar vectors refer to, from the grammar file's header.
VECTOR_SECRETS: Final[tuple[VectorSecret, ...]] = _secrets()


@cache
def load_grammar() -> tuple[GrammarVector, ...]:
    """Load the grammar vectors.

    Returns:
        Every grammar vector, in file order.

    Raises:
        VectorError: The file breaks its schema, or a valid vector names a reference that no
            vault entry of the header can resolve.
    """
    return _build_grammar(_document(GRAMMAR_FILE, "grammar"), VECTOR_SECRETS)


def _build_grammar(
    document: Mapping[str, Any], secrets: tuple[VectorSecret, ...]
) -> tuple[GrammarVector, ...]:
    """Build grammar vectors from a checked document, enforcing the rules about its vault."""
    known = {secret.id: secret for secret in secrets}
    vectors: list[GrammarVector] = []
    for raw in document["vectors"]:
        vector = GrammarVector(
            id=raw["id"],
            requirements=_strings(raw, "requirements"),
            flags=_strings(raw, "flags"),
            comment=raw["comment"],
            args=raw["args"],
            expected=raw["expected"],
            refs=_strings(raw, "refs"),
            disposition=raw.get("disposition"),
            message_prefix=raw.get("message_prefix"),
            reason=raw.get("reason"),
            pointer=raw.get("pointer"),
            offset=raw.get("offset"),
            length=raw.get("length"),
            canaries=_strings(raw, "canaries"),
            alternatives=_strings(raw, "alternatives"),
        )
        for name in vector.refs:
            secret_id, _, field = name.partition(".")
            secret = known.get(secret_id)
            if secret is None or secret.tags or (field == "notes" and not secret.has_notes):
                raise VectorError(f"{vector.id}: {name} does not resolve in the header's vault")
        for canary in vector.canaries:
            if canary not in vector.args:
                raise VectorError(f"{vector.id}: a canary is not a fragment of its args")
        vectors.append(vector)
    return tuple(vectors)


@cache
def load_generated() -> tuple[GrammarVector, ...]:
    """Load the generated grammar vectors (``python -m conformance.vectorgen`` writes them).

    Returns:
        Every generated vector, in file order; they refer to the grammar header's entries.

    Raises:
        VectorError: The file breaks its schema, or a valid vector names a reference that no
            vault entry of the grammar header can resolve.
    """
    return _build_grammar(_document(GENERATED_FILE, "generated"), VECTOR_SECRETS)


def grammar_corpus() -> tuple[GrammarVector, ...]:
    """Return the hand-written grammar vectors, then the generated ones.

    Returns:
        Every vector the grammar checks run.
    """
    return load_grammar() + load_generated()


@cache
def load_scrub() -> tuple[ScrubVector, ...]:
    """Load the scrub vectors.

    Returns:
        Every scrub vector, in file order.

    Raises:
        VectorError: The file breaks its schema.
    """
    document = _document(SCRUB_FILE, "scrub")
    return tuple(
        ScrubVector(
            id=raw["id"],
            requirements=_strings(raw, "requirements"),
            flags=_strings(raw, "flags"),
            comment=raw["comment"],
            value=raw["value"],
            field=raw["field"],
            forms=MappingProxyType(dict(raw["forms"])),
            scrubbed=raw["scrubbed"],
            template=raw["template"],
        )
        for raw in document["vectors"]
    )


@cache
def load_ordering() -> tuple[OrderingVector, ...]:
    """Load the ordering vectors.

    Returns:
        Every ordering vector, in file order.

    Raises:
        VectorError: The file breaks its schema, or a winner is not among its conditions.
    """
    return _build_ordering(_document(ORDERING_FILE, "ordering"))


def _build_ordering(document: Mapping[str, Any]) -> tuple[OrderingVector, ...]:
    """Build ordering vectors from a checked document; each winner must be a condition."""
    vectors: list[OrderingVector] = []
    for raw in document["vectors"]:
        vector = OrderingVector(
            id=raw["id"],
            requirements=_strings(raw, "requirements"),
            flags=_strings(raw, "flags"),
            comment=raw["comment"],
            conditions=_strings(raw, "conditions"),
            winner=raw["winner"],
            disposition=raw["disposition"],
            message_prefix=raw["message_prefix"],
            level=raw["level"],
        )
        if vector.winner not in vector.conditions:
            raise VectorError(f"{vector.id}: the winner is not one of its conditions")
        vectors.append(vector)
    return tuple(vectors)


def vectors_digest() -> str:
    """Return the SHA-256 of the vector files' bytes, concatenated in sorted name order.

    Reports carry it so that a result names the exact corpus it was checked against.

    Returns:
        The digest in lower-case hexadecimal.
    """
    digest = hashlib.sha256()
    for name in sorted(VECTOR_FILES):
        digest.update(_vectors_dir().joinpath(name).read_bytes())
    return digest.hexdigest()


def all_vector_ids() -> tuple[str, ...]:
    """Return every vector ID of the corpus, grammar, generated, scrub, ordering, in file order."""
    return (
        tuple(vector.id for vector in grammar_corpus())
        + tuple(vector.id for vector in load_scrub())
        + tuple(vector.id for vector in load_ordering())
    )
