"""The grammar vector generator: every grammar feature crossed with every position.

This module owns ``conformance/vectors/generated.json`` and the coverage matrix in
``docs/vectors.md``. It builds each vector from two named parts, a *feature* (one spelling of a
string that holds, or seems to hold, a secret reference) and a *position* (where that string
sits in the argument text), and names the vector ``gen-<feature>--<position>``, so an ID never
depends on how many vectors come before it. A few standalone cases (truncated input, stray
characters, redaction extents) carry names of their own. ``python -m conformance.vectorgen``
rewrites both files; ``--check`` only says whether they are current. The output is a pure
function of this module: no clock, no randomness, no environment. It must never write a
secret: every reference names one of the fixed entries of the grammar header, whose values the
checks fill with fresh canaries.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance import vectors

#: Where the generated corpus and the page with its matrix live, relative to the repository.
_PACKAGE: Final = Path(__file__).resolve().parent
OUTPUT: Final = _PACKAGE / "vectors" / "generated.json"
DOC: Final = _PACKAGE.parent / "docs" / "vectors.md"
REGENERATE: Final = "python -m conformance.vectorgen"

#: The markers around the generated matrix in docs/vectors.md; the rest of the page is prose.
MATRIX_BEGIN: Final = "<!-- generated matrix: begin -->"
MATRIX_END: Final = "<!-- generated matrix: end -->"

#: Entries of the grammar header (conformance/vectors/grammar.json) the vectors refer to: the
#: first two have notes and no tags, so every field of theirs resolves.
ID_A: Final = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
ID_B: Final = "0b7e9a52-3c1d-4f8e-9a6b-2d4c8e1f3a5b"
#: A well-formed id that no vault entry holds, for bodies whose field is what is wrong.
ID_UNKNOWN: Final = "cafef00d-0bad-4bee-8fed-00c0ffee0001"

#: The static reasons of decisions R2.2 and the two message beginnings of R2 and R1.8.
BAD_ID: Final = "the id is not a secret id (expected a UUID)"
BAD_FIELD: Final = "unknown field (expected one of password, username, notes)"
UNTERMINATED: Final = "the reference is not terminated with }}"
KEY: Final = "a secret reference cannot be a JSON key"
MALFORMED_PREFIX: Final = "Malformed secret reference"
NOT_OBJECT_PREFIX: Final = "Arguments carry a secret reference but are not a JSON object"

#: How far the padded truncation cases push the cut: past 256 characters, the longest window
#: any scan of the reference host reads at once (its scrubber's and sanitizer's chunking).
PAD_CHARS: Final = 300

_MARKER_RE: Final = re.compile(r"\{\{secret:", re.IGNORECASE | re.ASCII)

#: Text no generated message or reason contains, so a canary of it can only come from the args.
_FIXED_TEXTS: Final = (BAD_ID, BAD_FIELD, UNTERMINATED, KEY, MALFORMED_PREFIX, NOT_OBJECT_PREFIX)

# --- features ---------------------------------------------------------------------------------

REF: Final = "ref"
MALFORMED: Final = "malformed"
LITERAL: Final = "literal"


@dataclass(frozen=True, slots=True)
class Feature:
    """One spelling of a string, and what the grammar must make of it.

    Attributes:
        name: Stable name, part of every vector ID built from it.
        group: The matrix row group (spelling, case, field, bad-field, ...).
        token: The string's content as written between its JSON quotes (escapes and all).
        outcome: ``ref`` (one valid reference), ``malformed`` (a refusal with ``reason``) or
            ``literal`` (no marker at all: plain text the host must pass on untouched).
        ref: For ``ref``: the reference name.
        reason: For ``malformed``: the static reason of decisions R2.2 in a value.
        canaries: Fragments of ``token`` that no refusal message or ``sanitizedArgs`` may hold.
        requirements: Requirement IDs the feature adds to the position's own.
        comment: What the spelling is, in words.
    """

    name: str
    group: str
    token: str
    outcome: str
    ref: str | None
    reason: str | None
    canaries: tuple[str, ...]
    requirements: tuple[str, ...]
    comment: str

    def decoded(self) -> str:
        """Return the string as JSON decodes it."""
        value: str = json.loads('"' + self.token + '"')
        return value


def _ref(name: str, group: str, token: str, ref: str, reqs: Sequence[str], comment: str) -> Feature:
    return Feature(name, group, token, REF, ref, None, (), tuple(reqs), comment)


def _bad(
    name: str,
    group: str,
    token: str,
    reason: str,
    reqs: Sequence[str],
    comment: str,
    canaries: Sequence[str] = (),
) -> Feature:
    for canary in canaries:
        if canary not in token or any(canary in text for text in _FIXED_TEXTS):
            raise ValueError(f"{name}: canary {canary!r} cannot be told from fixed text")
    return Feature(
        name, group, token, MALFORMED, None, reason, tuple(canaries), tuple(reqs), comment
    )


def _lit(name: str, group: str, token: str, comment: str) -> Feature:
    return Feature(name, group, token, LITERAL, None, None, (), ("GRAM-040",), comment)


def _u(char: str, upper: bool) -> str:
    """Return ``char`` as a JSON ``\\uXXXX`` escape with upper- or lower-case hex digits."""
    digits = f"{ord(char):04x}"
    return "\\u" + (digits.upper() if upper else digits)


def _escape_at(text: str, index: int, upper: bool) -> str:
    return text[:index] + _u(text[index], upper) + text[index + 1 :]


_OPEN: Final = "{{secret:"
_PASSWORD_A: Final = f"{ID_A}.password"

#: Which character of ``{{secret:`` each single-escape feature escapes, by name; the braces and
#: the colon have hex letters in their code, so they come in both cases.
_SINGLE_ESCAPES: Final = (
    ("brace1", 0, (False, True)),
    ("brace2", 1, (False, True)),
    ("s", 2, (False,)),
    ("e", 3, (False,)),
    ("c", 4, (False,)),
    ("r", 5, (False,)),
    ("e2", 6, (False,)),
    ("t", 7, (False,)),
    ("colon", 8, (False, True)),
)

#: Member names a vault record has, or that password managers commonly give a record, that are
#: not fields of a reference (issue class 5): each must be refused as an unknown field.
_RECORD_MEMBERS: Final = (
    "id",
    "website",
    "tags",
    "totp",
    "url",
    "uri",
    "login",
    "name",
    "title",
    "folder",
    "fields",
    "value",
    "secret",
    "Password",
    "PASSWORD",
    "Username",
    "Notes",
    "pass",
    "user",
)


def _spelling_features() -> Iterator[Feature]:
    reqs = ("GRAM-012",)
    yield _ref(
        "literal",
        "spelling",
        "{{secret:" + ID_A + "}}",
        _PASSWORD_A,
        (),
        "A marker spelled literally.",
    )
    for upper in (False, True):
        case = "upper" if upper else "lower"
        every = "".join(_u(char, upper) for char in _OPEN)
        yield _ref(
            f"u-all-{case}",
            "spelling",
            every + ID_A + "}}",
            _PASSWORD_A,
            reqs,
            f"Every character of the marker written as a \\u escape with {case}-case hex.",
        )
        closing = _u("}", upper) * 2
        yield _ref(
            f"u-close-{case}",
            "spelling",
            _OPEN + ID_A + closing,
            _PASSWORD_A,
            reqs,
            f"The closing braces written as \\u escapes with {case}-case hex.",
        )
    for label, index, cases in _SINGLE_ESCAPES:
        for upper in cases:
            suffix = ("-upper" if upper else "-lower") if len(cases) == 2 else ""
            yield _ref(
                f"u-{label}{suffix}",
                "spelling",
                _escape_at(_OPEN, index, upper) + ID_A + "}}",
                _PASSWORD_A,
                reqs,
                f"Only character {index + 1} of the marker written as a \\u escape.",
            )
    mixed = "\\u007B{\\u0053e\\u0063RET\\u003a" + ID_A + "\\u007d}"
    yield _ref(
        "u-mixed",
        "spelling",
        mixed,
        _PASSWORD_A,
        (*reqs, "GRAM-001"),
        "Escaped and plain characters, hex and letter case mixed.",
    )
    yield _ref(
        "u-id-escaped",
        "spelling",
        _OPEN + _escape_at(_escape_at(ID_A, 8, False), 0, True) + "}}",
        _PASSWORD_A,
        reqs,
        "A digit and a dash of the id written as \\u escapes.",
    )
    yield _ref(
        "extra-braces",
        "spelling",
        "{{{{secret:" + ID_A + "}}}}",
        _PASSWORD_A,
        ("GRAM-002",),
        "Surplus braces around a reference are plain text.",
    )


def _case_features() -> Iterator[Feature]:
    for word in ("SECRET", "Secret", "sEcReT", "secreT"):
        yield _ref(
            f"case-{_case_name(word)}",
            "case",
            "{{" + word + ":" + ID_A + "}}",
            _PASSWORD_A,
            ("GRAM-001",),
            f"The word spelled {word}.",
        )
    yield _ref(
        "case-escaped-upper",
        "case",
        "{{\\u0053ECRET:" + ID_A + "}}",
        _PASSWORD_A,
        ("GRAM-001", "GRAM-012"),
        "An upper-case word whose first letter is a \\u escape.",
    )
    yield _ref(
        "case-id-upper",
        "case",
        "{{secret:" + ID_B.upper() + "}}",
        f"{ID_B}.password",
        ("GRAM-003", "GRAM-004"),
        "An upper-case id names the lower-case reference.",
    )


def _case_name(word: str) -> str:
    """Name a word so that its spellings differ: ``Password`` gives ``password-ulllllll``."""
    if word == word.lower():
        return word
    return word.lower() + "-" + "".join("u" if char.isupper() else "l" for char in word)


def _field_features() -> Iterator[Feature]:
    for field in ("password", "username", "notes"):
        yield _ref(
            f"field-{field}",
            "field",
            "{{secret:" + ID_B + "." + field + "}}",
            f"{ID_B}.{field}",
            ("GRAM-005",),
            f"The {field} field, written out.",
        )
    for member in _RECORD_MEMBERS:
        told_apart = len(member) >= 4 and not any(member in text for text in _FIXED_TEXTS)
        canaries = (member,) if told_apart and member not in ("secret", "pass", "user") else ()
        yield _bad(
            f"bad-field-{_case_name(member)}",
            "bad-field",
            "{{secret:" + ID_UNKNOWN + "." + member + "}}",
            BAD_FIELD,
            ("GRAM-005", "GRAM-008"),
            f"A record member or a near field name, {member!r}, is not a field.",
            canaries,
        )


def _bad_id_features() -> Iterator[Feature]:
    cases = (
        ("canary", "hunter2-canary", ("hunter2-canary",), "A body that is no id at all."),
        ("empty", "", (), "An empty body."),
        ("short", ID_A[:-1], (), "A last group one digit short."),
        ("long", ID_A + "0", (), "A last group one digit long."),
        ("no-dashes", ID_A.replace("-", ""), (), "An id without its dashes."),
        ("non-hex", "g" + ID_A[1:], (), "A letter that is not a hex digit."),
        ("urn", "urn:uuid:" + ID_A, (), "An id with a URN prefix."),
        ("space", " " + ID_A, (), "A space before the id."),
        ("dot-first", ".password", (), "A field with no id before it."),
    )
    for name, body, canaries, comment in cases:
        yield _bad(
            f"bad-id-{name}",
            "bad-id",
            "{{secret:" + body + "}}",
            BAD_ID,
            ("GRAM-003", "GRAM-008"),
            comment,
            canaries,
        )


def _termination_features() -> Iterator[Feature]:
    reqs = ("GRAM-009",)
    yield _ref(
        "terminated",
        "termination",
        "x{{secret:" + ID_B + "}}y",
        f"{ID_B}.password",
        ("GRAM-001",),
        "A terminated reference between plain text.",
    )
    yield _bad(
        "unterminated-end",
        "termination",
        "{{secret:" + ID_A,
        UNTERMINATED,
        reqs,
        "A marker the string ends in.",
    )
    yield _bad(
        "unterminated-one-brace",
        "termination",
        "{{secret:" + ID_A + "}x",
        UNTERMINATED,
        reqs,
        "A marker closed by one brace.",
    )
    yield _bad(
        "unterminated-brace-in-body",
        "termination",
        "{{secret:{" + ID_A + "}}}",
        UNTERMINATED,
        reqs,
        "A brace inside the body.",
    )
    yield _bad(
        "unterminated-bare", "termination", "{{secret:", UNTERMINATED, reqs, "The marker alone."
    )
    yield _bad(
        "unterminated-canary",
        "termination",
        "key={{secret:hunter2-canary and more",
        UNTERMINATED,
        reqs,
        "An unterminated marker with text after it.",
        ("hunter2-canary",),
    )
    yield _bad(
        "unterminated-escaped",
        "termination",
        "\\u007b\\u007Bsecret:" + ID_A,
        UNTERMINATED,
        (*reqs, "GRAM-012"),
        "An escaped marker the string ends in.",
    )


def _literal_features() -> Iterator[Feature]:
    body = "secret:" + ID_A
    spellings = (
        ("pct-upper", "%7B%7B" + body + "%7D%7D", "Percent-encoded braces, upper-case hex."),
        ("pct-lower", "%7b%7b" + body + "%7d%7d", "Percent-encoded braces, lower-case hex."),
        ("pct-double", "%257B%257B" + body + "%257D%257D", "Braces percent-encoded twice."),
        ("pct-plus-form", "%7B%7Bsecret%3A" + ID_A + "%7D%7D", "The whole marker form-encoded."),
        (
            "html-decimal",
            "&#123;&#123;" + body + "&#125;&#125;",
            "HTML decimal character references.",
        ),
        (
            "html-hex",
            "&#x7b;&#x7B;" + body + "&#x7d;&#x7D;",
            "HTML hexadecimal character references.",
        ),
        (
            "html-named",
            "&lbrace;&lcub;" + body + "&rbrace;&rcub;",
            "HTML named character references.",
        ),
        (
            "fullwidth",
            "\uff5b\uff5b" + body + "\uff5d\uff5d",
            "Full-width braces, U+FF5B and U+FF5D.",
        ),
        (
            "small-braces",
            "\ufe5b\ufe5b" + body + "\ufe5c\ufe5c",
            "Small braces, U+FE5B and U+FE5C.",
        ),
        (
            "double-escaped",
            "\\\\u007b\\\\u007b" + body + "}}",
            "A \\u escape escaped again: its backslash is text.",
        ),
        (
            "base64",
            "e3tzZWNyZXQ6NmYxZDJjM2UtNGI1YS00YzZkLThlN2YtOTBhMWIyYzNkNGU1fX0=",
            "The whole reference in base64.",
        ),
        ("single-brace", "{" + body + "}", "One brace on each side."),
        ("spaced", "{{ " + body + "}}", "A space after the opening braces."),
        ("plural", "{{secrets:" + ID_A + "}}", "The word secrets."),
        ("fullwidth-colon", "{{secret\uff1a" + ID_A + "}}", "A full-width colon."),
        ("split-by-escape", "{\\u0020{" + body + "}}", "An escaped space between the braces."),
    )
    for name, token, comment in spellings:
        yield _lit(
            f"lit-{name}",
            "literal-encoding",
            token,
            comment + " Only JSON unescaping makes a marker.",
        )


def _company_features() -> Iterator[Feature]:
    reqs = ("GRAM-012",)
    yield _ref(
        "after-backslash-run",
        "odd-company",
        "\\\\\\\\\\u007b\\u007bsecret:" + ID_A + "}}",
        _PASSWORD_A,
        reqs,
        "An escaped marker after two escaped backslashes.",
    )
    yield _ref(
        "after-one-backslash",
        "odd-company",
        "\\\\\\u007b{secret:" + ID_A + "}}",
        _PASSWORD_A,
        reqs,
        "An escaped marker after one escaped backslash.",
    )
    yield _ref(
        "after-letter",
        "odd-company",
        "x\\u007b\\u007bsecret:" + ID_A + "}}",
        _PASSWORD_A,
        reqs,
        "An escaped marker right after a letter.",
    )
    yield _ref(
        "after-u-text",
        "odd-company",
        "u007b\\u007b\\u007bsecret:" + ID_A + "}}",
        _PASSWORD_A,
        reqs,
        "An escaped marker after the text u007b.",
    )
    yield _bad(
        "after-letter-malformed",
        "odd-company",
        "x\\u007b\\u007bsecret:hunter2-canary}}",
        BAD_ID,
        (*reqs, "GRAM-008"),
        "An escaped malformed candidate right after a letter.",
        ("hunter2-canary",),
    )
    yield _bad(
        "after-backslash-run-malformed",
        "odd-company",
        "\\\\\\\\\\u007b\\u007bsecret:" + ID_UNKNOWN + ".website}}",
        BAD_FIELD,
        (*reqs, "GRAM-008"),
        "An escaped malformed candidate after escaped backslashes.",
        ("website",),
    )
    yield _ref(
        "lookalike-pct-beside-ref",
        "look-alike",
        "%7B%7Bsecret:" + ID_B + "%7D%7D then {{secret:" + ID_A + "}}",
        _PASSWORD_A,
        ("GRAM-040",),
        "A percent-encoded look-alike beside a real reference.",
    )
    yield _ref(
        "lookalike-html-beside-ref",
        "look-alike",
        "{{secret:" + ID_A + "}} &#123;&#123;secret:" + ID_B + "}}",
        _PASSWORD_A,
        ("GRAM-040",),
        "A real reference, then an HTML-encoded look-alike.",
    )
    yield _ref(
        "lookalike-plural-beside-ref",
        "look-alike",
        "{{secrets:" + ID_B + "}}{{secret:" + ID_A + "}}",
        _PASSWORD_A,
        ("GRAM-001",),
        "A look-alike word right before a real reference.",
    )


def features() -> tuple[Feature, ...]:
    """Return every feature, in the order the corpus and the matrix list them.

    Returns:
        The features, their names unique.

    Raises:
        ValueError: Two features share a name.
    """
    every = (
        *_spelling_features(),
        *_case_features(),
        *_field_features(),
        *_bad_id_features(),
        *_termination_features(),
        *_literal_features(),
        *_company_features(),
    )
    names = [feature.name for feature in every]
    if len(names) != len(set(names)):
        raise ValueError("two features share a name")
    return every


# --- positions --------------------------------------------------------------------------------

VALUE: Final = "value"
KEY_PLACE: Final = "key"
ROOT: Final = "root"


@dataclass(frozen=True, slots=True)
class Position:
    """Where the feature's string sits in the argument text.

    Attributes:
        name: Stable name, part of every vector ID built from it.
        place: ``value``, ``key`` or ``root`` (a root that is not an object).
        template: The argument text with ``@`` where the quoted string goes.
        pointer: For a value, the string's JSON Pointer; for a key, that of the object holding
            it; ``None`` for a root that is not an object.
        flags: Labels the vectors at this position carry.
        comment: Where the string is, in words.
    """

    name: str
    place: str
    template: str
    pointer: str | None
    flags: tuple[str, ...]
    comment: str

    def args(self, token: str) -> str:
        """Return the argument text with ``token`` quoted in its place."""
        return self.template.replace("@", '"' + token + '"')


POSITIONS: Final = (
    Position("top-value", VALUE, '{"k": @}', "/k", ("top-level",), "a top-level value"),
    Position(
        "nested-value", VALUE, '{"a": {"k": @}}', "/a/k", ("nested",), "a nested object's value"
    ),
    Position(
        "array-item", VALUE, '{"a": ["x", @]}', "/a/1", ("array",), "an array item at depth 1"
    ),
    Position(
        "deep-array-item",
        VALUE,
        '{"a": [["x", @]]}',
        "/a/0/1",
        ("array", "deep"),
        "an array item at depth 2",
    ),
    Position(
        "array-in-object-item",
        VALUE,
        '{"a": {"b": [0, @]}}',
        "/a/b/1",
        ("array", "nested"),
        "an array item inside a nested object",
    ),
    Position(
        "object-in-array-value",
        VALUE,
        '{"a": [{"k": @}]}',
        "/a/0/k",
        ("array", "nested"),
        "a value of an object inside an array",
    ),
    Position("top-key", KEY_PLACE, "{@: 0}", "", ("key",), "a top-level key"),
    Position(
        "nested-key", KEY_PLACE, '{"a": {@: 0}}', "/a", ("key", "nested"), "a nested object's key"
    ),
    Position(
        "object-in-array-key",
        KEY_PLACE,
        '{"a": ["x", {@: 0}]}',
        "/a/1",
        ("key", "array"),
        "a key of an object inside an array",
    ),
    Position(
        "deep-object-in-array-key",
        KEY_PLACE,
        '{"a": [[{@: 0}]]}',
        "/a/0/0",
        ("key", "array", "deep"),
        "a key of an object in an array at depth 2",
    ),
    Position("root-string", ROOT, "@", None, ("not-object",), "a root that is a string"),
    Position(
        "root-array",
        ROOT,
        '[1, {"k": @}]',
        None,
        ("not-object", "array"),
        "a root that is an array",
    ),
)


def _span(text: str, start: int) -> int:
    """Return the length of the candidate or bare marker at ``start`` (docs/vectors.md).

    The body runs to the first brace; two closing braces end a candidate, one closing brace is
    part of the marker it ends, and any other brace ends the marker before it.
    """
    end = start + len(_OPEN)
    while end < len(text) and text[end] not in "{}":
        end += 1
    if text.startswith("}}", end):
        return end + 2 - start
    if text.startswith("}", end):
        return end + 1 - start
    return end - start


def _first_marker(text: str) -> int:
    match = _MARKER_RE.search(text)
    if match is None:
        raise ValueError("a feature with a marker holds none once decoded")
    return match.start()


def vector_id(feature: str, position: str) -> str:
    """Return the stable ID of the vector that puts ``feature`` at ``position``."""
    return f"gen-{feature}--{position}"


def _unique(*ids: str) -> list[str]:
    return list(dict.fromkeys(ids))


def _cross(feature: Feature, position: Position) -> dict[str, Any]:
    args = position.args(feature.token)
    flags = [f"feature-{feature.group}", *position.flags]
    base = {
        "id": vector_id(feature.name, position.name),
        "comment": f"{feature.comment} Placed as {position.comment}.",
        "args": args,
    }
    if feature.outcome == LITERAL:
        reqs = ["GRAM-040", "SUBST-003", "INV5"] + (["GRAM-017"] if position.place == ROOT else [])
        return {
            **base,
            "requirements": reqs,
            "flags": [*flags, "no-marker"],
            "expected": "valid",
            "refs": [],
        }
    if position.place == ROOT:
        vector: dict[str, Any] = {
            **base,
            "requirements": _unique("GRAM-016", "GRAM-018", *feature.requirements),
            "flags": flags,
            "expected": "invalid",
            "disposition": "SECRET_UNRESOLVED",
            "message_prefix": NOT_OBJECT_PREFIX,
        }
        if feature.canaries:
            vector["canaries"] = list(feature.canaries)
        return vector
    decoded = feature.decoded()
    offset = _first_marker(decoded)
    reason: str | None
    if position.place == KEY_PLACE:
        reqs = ["GRAM-014", "MSG-002", "MSG-013", "MSG-014", *feature.requirements]
        reason = KEY
    elif feature.outcome == REF:
        return {
            **base,
            "requirements": _unique(
                "GRAM-001", "GRAM-011", "GRAM-004", "LEDG-002", *feature.requirements
            ),
            "flags": flags,
            "expected": "valid",
            "refs": [feature.ref],
        }
    else:
        reqs = ["MSG-001", "MSG-012", "MSG-013", "LEDG-007", "GRAM-011", *feature.requirements]
        reason = feature.reason
    vector = {
        **base,
        "requirements": _unique(*reqs),
        "flags": [*flags, "location"],
        "expected": "invalid",
        "disposition": "SECRET_UNRESOLVED",
        "message_prefix": MALFORMED_PREFIX,
        "reason": reason,
        "pointer": position.pointer,
        "offset": offset,
        "length": _span(decoded, offset),
    }
    if feature.canaries:
        vector["canaries"] = list(feature.canaries)
    return vector


# --- standalone cases -------------------------------------------------------------------------


def _not_object(name: str, args: str, flags: Sequence[str], comment: str) -> dict[str, Any]:
    return {
        "id": f"gen-{name}",
        "requirements": ["GRAM-016", "GRAM-018", "GRAM-020"],
        "flags": ["invalid-json", "not-object", *flags],
        "comment": comment,
        "args": args,
        "expected": "invalid",
        "disposition": "SECRET_UNRESOLVED",
        "message_prefix": NOT_OBJECT_PREFIX,
    }


def _untouched(name: str, args: str, flags: Sequence[str], comment: str) -> dict[str, Any]:
    return {
        "id": f"gen-{name}",
        "requirements": ["GRAM-017", "SUBST-003", "INV5"],
        "flags": ["invalid-json", "no-marker", *flags],
        "comment": comment,
        "args": args,
        "expected": "valid",
        "refs": [],
    }


#: Where truncated argument text ends: right after each of these characters.
_CUTS: Final = (
    ("open-brace", '"a": {'),
    ("open-bracket", '"a": ['),
    ("comma", '"a": [1,'),
    ("colon", '"a":'),
)
_MARKERS: Final = (
    ("literal", "{{secret:" + ID_A + "}}"),
    ("escaped", "\\u007b\\u007bsecret:" + ID_A + "}}"),
)


def _truncated() -> Iterator[dict[str, Any]]:
    pad = "p" * PAD_CHARS
    for cut, ending in _CUTS:
        for spelling, marker in _MARKERS:
            for padding, head, tail in (
                ("short", "", ""),
                ("padded-before", f'"p": "{pad}", ', ""),
                ("padded-after", "", f'"p": "{pad}", '),
            ):
                args = "{" + head + f'"k": "{marker}", ' + tail + ending
                yield _not_object(
                    f"truncated-after-{cut}-{spelling}-{padding}",
                    args,
                    ["truncated"],
                    f"Marker-bearing text that ends right after {ending[-1]!r} ({padding}).",
                )
        yield _untouched(
            f"truncated-after-{cut}-no-marker",
            '{"k": "{{plain}}", ' + ending,
            ["truncated"],
            f"Text without a marker that ends right after {ending[-1]!r} passes untouched.",
        )


#: Stray characters where a value or a separator belongs, each around a literal marker.
_STRAYS: Final = (
    ("value-at", '{"k": "@M", "a": @}'),
    ("value-letter", '{"a": x, "k": "@M"}'),
    ("value-before-string", '{"k": x"@M"}'),
    ("value-in-array", '{"k": ["@M", #]}'),
    ("separator-hash", '{"k" # "@M"}'),
    ("separator-semicolon", '{"k": "@M"; "a": 1}'),
    ("separator-missing-in-array", '{"k": ["@M" "x"]}'),
    ("separator-equals", '{"k"="@M"}'),
    ("separator-doubled-comma", '{"k": "@M",, "a": 1}'),
    ("separator-after-string", '{"k": "@M"x}'),
)


def _strays() -> Iterator[dict[str, Any]]:
    for name, template in _STRAYS:
        for spelling, marker in _MARKERS:
            yield _not_object(
                f"stray-{name}-{spelling}",
                template.replace("@M", marker),
                ["stray"],
                "Invalid JSON: a stray character where a value or a separator belongs.",
            )
        yield _untouched(
            f"stray-{name}-no-marker",
            template.replace("@M", "plain"),
            ["stray"],
            "The same stray character without a marker: the text passes untouched.",
        )


#: Spellings of a marker whose first brace is a ``\\u`` escape, the form a pre-scan must judge
#: by the backslashes before it.
_ESCAPED_FIRST: Final = (
    ("brace1", "\\u007b{secret:" + ID_A + "}}"),
    ("both", "\\u007b\\u007bsecret:" + ID_A + "}}"),
    ("upper", "\\u007B\\u007bSECRET:" + ID_A + "}}"),
)


def _raw_text() -> Iterator[dict[str, Any]]:
    """Text that is not JSON, starts with a backslash, and holds an escaped marker further on.

    The marker's escape is preceded by an even run of backslashes (none, or an escaped pair),
    so unescaping reveals it whatever the text's first character; it sits at an odd and at an
    even offset, so a pre-scan that counts backslashes from the wrong place shows. It also
    opens the text, followed by none, one or two backslashes at the text's end. An odd run
    before it is left out: whether unescaping text that is not JSON pairs its backslashes is
    for the host to say.
    """
    for spelling, marker in _ESCAPED_FIRST:
        for gap in range(1, 5):
            for run in (0, 2):
                text = "\\" + "q" * gap + "\\" * run + marker
                yield _not_object(
                    f"raw-text-backslash-first-{spelling}-gap{gap}-run{run}",
                    text,
                    ["raw-text", "escaped-marker"],
                    f"Text that is not JSON starts with a backslash; {gap} letters and "
                    f"{run} backslashes later, an escaped marker.",
                )
        # The escape is the text's first character: nothing precedes it, so every reading
        # unescapes it. A pre-scan that looks before a match at the text's start wraps around
        # to its end; trailing backslashes show whether it counts them.
        for tail in range(3):
            yield _not_object(
                f"raw-text-escape-first-{spelling}-tail{tail}",
                marker + "\\" * tail,
                ["raw-text", "escaped-marker"],
                f"Text that is not JSON begins with an escaped marker and ends with {tail} "
                "backslashes.",
            )


def _redaction() -> Iterator[dict[str, Any]]:
    """Candidates whose redaction extent tells the first ``}`` from the first unbalanced one."""
    cases = (
        (
            "balanced-inner",
            "{{secret:{a}hunter2-canary}}tail",
            ("hunter2-canary",),
            "An inner pair of braces: a redaction that stops at the first } leaves the body.",
        ),
        (
            "two-inner",
            "pre {{secret:{x}{y}canary-two}} post",
            ("canary-two",),
            "Two inner pairs before the body's text.",
        ),
        (
            "nested-inner",
            "{{secret:{{hunter3-canary}}}}",
            ("hunter3-canary",),
            "A nested candidate as the body.",
        ),
        (
            "deep-inner",
            "{{secret:{{{x}}}deep-canary}}",
            ("deep-canary",),
            "Braces nested three deep before the body's text.",
        ),
    )
    for name, text, canaries, comment in cases:
        decoded = text
        offset = _first_marker(decoded)
        yield {
            "id": f"gen-redaction-{name}",
            "requirements": ["GRAM-009", "MSG-001", "MSG-012", "MSG-013", "LEDG-007"],
            "flags": ["malformed", "unterminated", "redaction", "location", "canary"],
            "comment": comment,
            "args": json.dumps({"k": text}, ensure_ascii=False),
            "expected": "invalid",
            "disposition": "SECRET_UNRESOLVED",
            "message_prefix": MALFORMED_PREFIX,
            "reason": UNTERMINATED,
            "pointer": "/k",
            "offset": offset,
            "length": _span(decoded, offset),
            "canaries": list(canaries),
        }


def _lookalikes_beside() -> Iterator[dict[str, Any]]:
    """A look-alike marker in one place and a real reference in another of the same call."""
    real = "{{secret:" + ID_A + "}}"
    cases = (
        ("members", {"a": "%7B%7Bsecret:" + ID_B + "%7D%7D", "b": real}, "two members"),
        ("key", {"\uff5b\uff5bsecret:" + ID_B + "\uff5d\uff5d": real}, "a key and its value"),
        (
            "array",
            {"a": ["&#123;&#123;secret:" + ID_B + "}}", {"b": [real]}]},
            "an array item and a deeper item",
        ),
        (
            "plural",
            {"a": {"b": "{{secrets:" + ID_B + "}}"}, "c": real},
            "a nested member and a top one",
        ),
    )
    for name, tree, where in cases:
        yield {
            "id": f"gen-lookalike-beside-{name}",
            "requirements": ["GRAM-040", "GRAM-001", "GRAM-011", "GRAM-004", "LEDG-002"],
            "flags": ["look-alike"],
            "comment": f"A look-alike marker and a real reference in {where} of one call: "
            "only the real one resolves.",
            "args": json.dumps(tree, ensure_ascii=False),
            "expected": "valid",
            "refs": [_PASSWORD_A],
        }


# --- the document, the matrix, the command -----------------------------------------------------

DESCRIPTION: Final = (
    "Generated grammar vectors: each feature (a spelling of a string that holds, or seems to "
    "hold, a secret reference) at each position in the argument text, and standalone cases "
    "for truncated input, stray characters and redaction extents. Written by "
    f"`{REGENERATE}`; never edit by hand. IDs are gen-<feature>--<position>, or gen-<case>, "
    "and name the case, not its place in the file. References name the entries of "
    "grammar.json's header."
)


def build() -> dict[str, Any]:
    """Return the generated vector document.

    Returns:
        The document, ready for ``json.dumps``; the same on every call.
    """
    vectors = [_cross(feature, position) for feature in features() for position in POSITIONS]
    vectors += [*_truncated(), *_strays(), *_raw_text(), *_redaction(), *_lookalikes_beside()]
    return {
        "schema": "secref-vectors/1",
        "kind": "generated",
        "description": DESCRIPTION,
        "vectors": vectors,
    }


def render_json(document: dict[str, Any]) -> str:
    """Return the document as the checked-in file holds it."""
    return json.dumps(document, indent=1, ensure_ascii=True) + "\n"


def feature_of(vector_id_text: str) -> tuple[str, str] | None:
    """Split a crossed vector's ID into its feature and position names.

    Returns:
        ``(feature, position)``, or ``None`` for a standalone case.
    """
    name = vector_id_text.removeprefix("gen-")
    feature, sep, position = name.rpartition("--")
    return (feature, position) if sep else None


def matrix(vector_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Count, for each feature group and position, the crossed vectors of the corpus.

    Args:
        vector_ids: The IDs of the generated corpus.

    Returns:
        ``{group: {position: count}}`` over every group and position, zeros included.
    """
    group_of = {feature.name: feature.group for feature in features()}
    groups = list(dict.fromkeys(group_of.values()))
    cells = {group: {position.name: 0 for position in POSITIONS} for group in groups}
    for text in vector_ids:
        split = feature_of(text)
        if split is None:
            continue
        feature, position = split
        if feature in group_of and position in cells[group_of[feature]]:
            cells[group_of[feature]][position] += 1
    return cells


def feature_matrix(vector_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Count, for each single feature and position, the crossed vectors of the corpus.

    Args:
        vector_ids: The IDs of the generated corpus.

    Returns:
        ``{feature: {position: count}}`` over every feature and position, zeros included.
    """
    cells = {f.name: {position.name: 0 for position in POSITIONS} for f in features()}
    for text in vector_ids:
        split = feature_of(text)
        if split is not None and split[0] in cells and split[1] in cells[split[0]]:
            cells[split[0]][split[1]] += 1
    return cells


def render_matrix(vector_ids: Sequence[str]) -> str:
    """Return the coverage matrix as a Markdown table, between its begin and end markers.

    Args:
        vector_ids: The IDs of the generated corpus.

    Returns:
        The table, one row per feature group and one column per position.
    """
    cells = matrix(vector_ids)
    header = "| Feature group | " + " | ".join(f"`{p.name}`" for p in POSITIONS) + " |"
    rule = "|---|" + "---|" * len(POSITIONS)
    rows = [
        f"| {group} | " + " | ".join(str(counts[p.name]) for p in POSITIONS) + " |"
        for group, counts in cells.items()
    ]
    standalone = [text for text in vector_ids if feature_of(text) is None]
    kinds: dict[str, int] = {}
    for text in standalone:
        kind = text.removeprefix("gen-").split("-", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    summary = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
    total = f"{len(vector_ids)} generated vectors; standalone cases: {summary}."
    return "\n".join([MATRIX_BEGIN, header, rule, *rows, "", total, MATRIX_END])


def render_doc(page: str, vector_ids: Sequence[str]) -> str:
    """Return ``page`` with the text between the matrix markers replaced by a fresh matrix.

    Raises:
        ValueError: The page lacks the markers.
    """
    begin, end = page.find(MATRIX_BEGIN), page.find(MATRIX_END)
    if begin < 0 or end < begin:
        raise ValueError("docs/vectors.md lacks the generated-matrix markers")
    return page[:begin] + render_matrix(vector_ids) + page[end + len(MATRIX_END) :]


def _stamp() -> str:
    """The digests of the corpus as validated in full, the generated file read from OUTPUT."""
    return vectors.validated_stamp(_PACKAGE / "vectors", {vectors.GENERATED_FILE: OUTPUT})


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.vectorgen [--check]``: write, or check, the corpus and matrix.

    Returns:
        0 when the files were written or are current, 1 when ``--check`` finds one stale, 2 when
        the page is missing (an installed wheel carries no docs).
    """
    from conformance.arguments import OneLineParser

    parser = OneLineParser(
        prog=REGENERATE,
        description="Write the generated vector corpus and its matrix page, or check that they "
        "are current.",
    )
    parser.add_argument("--check", action="store_true", help="only say whether files are current")
    options = parser.parse_args(argv)
    if not DOC.is_file():
        print(
            f"{REGENERATE}: {DOC.name} not found beside the package; run it from a source checkout",
            file=sys.stderr,
        )
        return 2
    document = build()
    text = render_json(document)
    ids = [vector["id"] for vector in document["vectors"]]
    page = DOC.read_text(encoding="utf-8")
    doc = render_doc(page, ids)
    outputs: list[tuple[Path, str]] = [(OUTPUT, text), (DOC, doc)]
    stale = [path for path, want in outputs if not path.exists() or path.read_text("utf-8") != want]
    if options.check:
        stamp = OUTPUT.parent / vectors.VALIDATED_FILE
        if not stale and (not stamp.exists() or stamp.read_text("utf-8") != _stamp()):
            stale.append(stamp)
        for path in stale:
            print(f"{path.name} is stale: run {REGENERATE}")
        return 1 if stale else 0
    for path, want in outputs:
        path.write_text(want, encoding="utf-8")
    # Every file is validated in full here, so that a run can trust these bytes.
    (OUTPUT.parent / vectors.VALIDATED_FILE).write_text(_stamp(), encoding="utf-8")
    print(
        f"wrote {len(ids)} vectors to {OUTPUT.name}, the matrix to {DOC.name} and the "
        f"digests validated to {vectors.VALIDATED_FILE}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
