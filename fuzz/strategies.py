"""The one strategy module every property, target and differential run draws from.

This module owns building argument text together with its ground truth: which references were
planted and their identity, which malformed candidate comes first in document order and the
static reason it must be refused with, and which canary bodies must never reach a message or a
sanitized argument. Every piece of text is built by construction, never judged by the reference
host, so a property that compares the host with this truth is a real check. Values generated
here are canaries; a case's ``repr`` names references and lengths, never a value, so a failing
example can be printed safely.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from hypothesis import assume
from hypothesis import strategies as st

from conformance.canary import SHORT_ESCAPES as _SHORT_ESCAPES
from fuzz.oracles import own_forms
from reference_impl import (
    REASON_BAD_FIELD,
    REASON_BAD_ID,
    REASON_KEY,
    REASON_UNTERMINATED,
    Field,
    Reference,
)

# --- the grammar's tokens, shared with the atheris dictionaries -------------------------------

#: The marker word in the case variants the design's examples use, and a few more.
MARKER_WORDS: Final = ("secret", "SECRET", "Secret", "sEcReT", "SeCrEt")

#: Secret ids every generated case draws from, so references repeat and share identities. They
#: are also the pipeline target's vault and appear in the atheris dictionaries.
POOL_IDS: Final = (
    "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5",
    "0a1b2c3d-0000-4fff-8aaa-abcdefabcdef",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
)

#: Non-ASCII and near-miss spellings that are not markers for the reference host (decisions
#: R1.3 lets a host read the first two either way; the reference host keeps them literal).
LOOKALIKES: Final = (
    "{{\u017fecret:",  # LATIN SMALL LETTER LONG S folds to "s"
    "{{\u212aey}}",  # KELVIN SIGN, a case-folding look-alike in a non-marker
    "{{\u0455ecret:",  # CYRILLIC SMALL LETTER DZE
    "{{secret\uff1a",  # FULLWIDTH COLON
    "\uff5b\uff5bsecret:",  # FULLWIDTH CURLY BRACKETS
    "{secret:",
    "{ {secret:",
    "{{ secret:",
    "{{secret :",
    "{{secre:",
    "{{s3cret:",
    "{{secret;",
    "{{secret",
    "secret:",
    "}}",
    "{{",
    "}}{{",
    "{{}}",
    "[secret:",
    "\\u007b",
)

#: A case-insensitive ASCII marker, written out here so the ground truth never leans on the
#: reference host's own pattern (decisions R1.1).
OWN_MARKER_RE: Final = re.compile(r"\{\{[sS][eE][cC][rR][eE][tT]:")


# --- ground truth ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """The malformed candidate a host must report first, and how (decisions R2.2).

    Attributes:
        pointer: The JSON Pointer of the string, or of the object holding the key.
        offset: Code-point offset of the candidate inside the decoded string.
        length: Its length in code points.
        reason: The static reason, one of ``reference_impl.REASON_*``.
    """

    pointer: str
    offset: int
    length: int
    reason: str


@dataclass(frozen=True, slots=True)
class Num:
    """A JSON number with the text it was written with (decisions R4.1)."""

    text: str


#: A string value of the template: literal pieces and planted references, in order.
Pieces: TypeAlias = tuple["str | Reference", ...]
#: A node of the template tree; objects are lists of (key, node) pairs, in written order.
Node: TypeAlias = "dict[str, object] | list[object] | Pieces | Num | bool | None"


@dataclass(frozen=True, slots=True)
class Template:
    """A JSON value before serialisation: strings are pieces, objects keep member order."""

    kind: str  # "object", "array", "string", "number", "literal"
    members: tuple[tuple[str, Template], ...] = ()
    items: tuple[Template, ...] = ()
    pieces: tuple[str | Reference, ...] = ()
    text: str = ""  # a number's or a literal's written text


@dataclass(frozen=True, slots=True)
class ArgCase:
    """Argument text and everything it was built to contain.

    Attributes:
        raw: The argument text, exactly as an agent would send it.
        template: The value it encodes, with planted references as ``Reference`` pieces.
        references: Each distinct planted reference, in order of first use (before any problem).
        problem: The first malformed candidate in document order, or ``None``.
        shape: ``"object"``, ``"other-json"`` (valid JSON of another type) or ``"invalid"``.
        marker: Whether any marker, valid or not, was planted anywhere (keys included).
        canaries: The bodies of planted malformed candidates, which no output may contain.
        spellings: The written text of every planted valid reference.
    """

    raw: str
    template: Template
    references: tuple[Reference, ...]
    problem: Problem | None
    shape: str
    marker: bool
    canaries: tuple[str, ...] = ()
    spellings: tuple[str, ...] = ()

    def __repr__(self) -> str:
        names = [reference.name for reference in self.references]
        return (
            f"ArgCase(<{len(self.raw)} characters>, shape={self.shape}, references={names}, "
            f"problem={self.problem}, marker={self.marker})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints falsifying examples with its own pretty-printer: keep it to repr.
        printer.text(repr(self))

    def to_json(self) -> dict[str, object]:
        """Return the case as data, for a regression file (canaries are test data)."""
        return {"raw": self.raw}


def pointer_of(path: Sequence[str | int]) -> str:
    """Return the RFC 6901 JSON Pointer of ``path``."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


def span_length(text: str, start: int) -> int:
    """Return the length of the candidate or unterminated marker at ``start`` (R1.1, R1.4).

    The body runs to the first brace. Two closing braces make a candidate; one closing brace is
    part of the unterminated marker it ends; anything else ends the marker before the brace.
    """
    end = start + len("{{secret:")
    while end < len(text) and text[end] not in "{}":
        end += 1
    if text.startswith("}}", end):
        return end + 2 - start
    if text.startswith("}", end):
        return end + 1 - start
    return end - start


def own_unescape(raw: str) -> str:
    """Decode ``\\uXXXX`` escapes the way JSON would, pairing every other backslash escape."""
    out: list[str] = []
    last = 0
    index = raw.find("\\")
    while 0 <= index < len(raw) - 1:
        hex_digits = raw[index + 2 : index + 6]
        out.append(raw[last:index])
        if (
            raw[index + 1] == "u"
            and len(hex_digits) == 4
            and all(c in "0123456789abcdefABCDEF" for c in hex_digits)
        ):
            out.append(chr(int(hex_digits, 16)))
            last = index + 6
        else:
            out.append(raw[index : index + 2])
            last = index + 2
        index = raw.find("\\", last)
    out.append(raw[last:])
    return "".join(out)


def carries_marker(raw: str) -> bool:
    """Return whether ``raw`` holds a marker, literally or once ``\\u`` escapes are decoded."""
    return (
        OWN_MARKER_RE.search(raw) is not None or OWN_MARKER_RE.search(own_unescape(raw)) is not None
    )


# --- text pieces ----------------------------------------------------------------------------

#: Characters that are never braces: ordinary text cannot begin, end or extend a candidate.
_TEXT_CHARS: Final = st.characters(exclude_characters="{}", exclude_categories=())

#: Short words that sit next to references in real arguments and in near misses.
_WORDS: Final = st.sampled_from(
    ["secret", "secret:", ":", ".", "password", "KEY=", " ", "\\", '"', "/", "\x00", "\u2603"]
)

filler: st.SearchStrategy[str] = st.lists(
    st.one_of(st.text(_TEXT_CHARS, max_size=6), _WORDS), max_size=4
).map("".join)
"""Text with no brace, so it can neither make nor break a candidate."""


def _case_variant(draw: st.DrawFn, text: str) -> str:
    mode = draw(st.sampled_from(["lower", "upper", "mixed"]))
    if mode == "lower":
        return text.lower()
    if mode == "upper":
        return text.upper()
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if f else c.lower() for c, f in zip(text, flips, strict=True))


secret_ids: st.SearchStrategy[str] = st.one_of(st.sampled_from(POOL_IDS), st.uuids().map(str))
"""Secret ids: mostly from the shared pool, sometimes fresh."""


@st.composite
def valid_reference(draw: st.DrawFn) -> tuple[str, Reference, int]:
    """Draw a valid reference's written text, its identity and the marker's offset in it."""
    secret_id = draw(secret_ids)
    word = draw(st.sampled_from(MARKER_WORDS))
    written_id = _case_variant(draw, secret_id)
    which = draw(st.sampled_from([None, Field.PASSWORD, Field.USERNAME, Field.NOTES]))
    body = written_id if which is None else f"{written_id}.{which.value}"
    text = f"{{{{{word}:{body}}}}}"
    lead, trail = draw(
        st.sampled_from([("", ""), ("{", ""), ("{{", "}}"), ("", "}"), ("{{", "secret:x")])
    )
    reference = Reference(secret_id.lower(), which or Field.PASSWORD)
    return lead + text + trail, reference, len(lead)


def _canary(draw: st.DrawFn) -> str:
    # Canary bodies look like nothing the grammar knows and never like a placeholder.
    return "cnry" + draw(st.text("0123456789qwxz", min_size=4, max_size=10))


@st.composite
def malformed_candidate(draw: st.DrawFn) -> tuple[str, str, str | None, bool]:
    """Draw a malformed candidate: (text, static reason, canary body or None, unterminated)."""
    word = draw(st.sampled_from(MARKER_WORDS))
    marker = f"{{{{{word}:"
    good = draw(secret_ids)
    canary = _canary(draw)
    category = draw(st.sampled_from(["id", "field", "unterminated"]))
    kind = draw(
        st.integers(0, 9)
        if category == "id"
        else st.integers(10, 15)
        if category == "field"
        else st.integers(16, 18)
    )
    # Bad ids (decisions R1.2: the id is judged before the field).
    bad_ids = {
        0: (canary, canary),
        1: (f"{canary}.password", canary),
        2: ("", None),
        3: (".password", None),
        4: (f"{good}:password", None),
        5: (good.replace("-", ""), None),
        6: (good[:-1], None),
        7: ("g" + good[1:], None),
        8: (" " + good, None),
        9: (good[:3] + "\uff10" + good[4:], None),  # FULLWIDTH DIGIT ZERO
    }
    if kind in bad_ids:
        body, body_canary = bad_ids[kind]
        return f"{marker}{body}}}}}", REASON_BAD_ID, body_canary, False
    bad_fields = {
        10: (f"{good}.{canary}", canary),
        11: (f"{good}.PASSWORD", None),
        12: (f"{good}.", None),
        13: (f"{good}..password", None),
        14: (f"{good}.password.x", None),
        15: (f"{good}.totp", None),
    }
    if kind in bad_fields:
        body, body_canary = bad_fields[kind]
        return f"{marker}{body}}}}}", REASON_BAD_FIELD, body_canary, False
    unterminated = {
        16: (f"{marker}{canary}", canary),
        17: (f"{marker}{good}}}", None),
        18: (f"{marker}{{{canary}}}}}}}", canary),
    }
    text, body_canary = unterminated[kind]
    return text, REASON_UNTERMINATED, body_canary, True


_VALID: Final = valid_reference()
_MALFORMED: Final = malformed_candidate()


# --- JSON text ------------------------------------------------------------------------------


def _escape_char(char: str, rnd: random.Random, mode: str) -> str:
    """Encode one character of a JSON string, sometimes as ``\\uXXXX`` (decisions R1.5)."""
    escape = (
        mode == "all"
        or (mode == "markers" and char in "{}secretSECRET:")
        or (mode == "random" and rnd.random() < 0.3)
    )
    if escape:
        code = ord(char)
        units = (
            [code]
            if code < 0x10000
            else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
        )
        digits = "".join(f"\\u{unit:04x}" for unit in units)
        return digits.upper().replace("\\U", "\\u") if rnd.random() < 0.5 else digits
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if char < " ":
        return f"\\u{ord(char):04x}"
    if char == "/" and rnd.random() < 0.2:
        return "\\/"
    return char


def encode_string(text: str, rnd: random.Random, mode: str) -> str:
    """Return ``text`` as a JSON string token, escaped according to ``mode``."""
    return '"' + "".join(_escape_char(char, rnd, mode) for char in text) + '"'


_NUMBERS: Final = st.sampled_from(
    ["0", "-0", "1.50", "42", "-7", "1e3", "2.5E-3", "12345678901234567890"]
)


@dataclass
class _Build:
    """State threaded through one case's construction."""

    rnd: random.Random
    escape: str
    ws: str
    malformed: bool = True
    problem: Problem | None = None
    references: dict[Reference, None] = field(default_factory=dict)
    marker: bool = False
    canaries: list[str] = field(default_factory=list)
    spellings: list[str] = field(default_factory=list)


def _string_value(
    draw: st.DrawFn, build: _Build, path: tuple[str | int, ...]
) -> tuple[str, Template]:
    """Draw one string value: its token and its template, recording any marker it plants."""
    pieces: list[str | Reference] = []
    text = ""
    planted: list[int] = []  # offsets of markers planted before any problem
    problem: Problem | None = None
    count = draw(st.integers(0, 5))
    for _ in range(count):
        kinds = ["filler", "valid", "valid", "lookalike"] + (
            ["malformed"] if build.malformed else []
        )
        kind = draw(st.sampled_from(kinds))
        if kind == "filler":
            chunk = draw(filler)
            pieces.append(chunk)
            text += chunk
        elif kind == "lookalike":
            chunk = draw(st.sampled_from(LOOKALIKES))
            pieces.append(chunk)
            text += chunk
        elif kind == "valid":
            written, reference, marker_at = draw(_VALID)
            build.marker = True
            if problem is None:
                planted.append(len(text) + marker_at)
                build.references.setdefault(reference, None)
                build.spellings.append(written[marker_at:].split("}}")[0] + "}}")
            # The piece keeps the braces around the candidate as literal text.
            end = written.index("}}", marker_at) + 2
            pieces.extend([written[:marker_at], reference, written[end:]])
            text += written
        else:
            written, reason, canary, unterminated = draw(_MALFORMED)
            build.marker = True
            if canary is not None:
                build.canaries.append(canary)
            if problem is None:
                problem = Problem(pointer_of(path), len(text), -1, reason)
                planted.append(len(text))
            pieces.append(written)
            text += written
            if unterminated:
                # Only brace-free text may follow, so the marker stays unterminated.
                tail = draw(filler)
                pieces.append(tail)
                text += tail
                break
    # The construction is the truth only if no marker appeared between pieces.
    stop = problem.offset if problem is not None else len(text)
    found = [m.start() for m in OWN_MARKER_RE.finditer(text)]
    assume([offset for offset in found if offset <= stop] == planted)
    if problem is not None:
        problem = Problem(
            problem.pointer, problem.offset, span_length(text, problem.offset), problem.reason
        )
        if build.problem is None:
            build.problem = problem
    return encode_string(text, build.rnd, build.escape), Template("string", pieces=tuple(pieces))


def _key(draw: st.DrawFn, build: _Build, path: tuple[str | int, ...], taken: set[str]) -> str:
    """Draw a member's key; sometimes one that carries a marker (decisions R1.6)."""
    if build.malformed and draw(st.integers(0, 9)) == 0:
        before, after = draw(filler), draw(filler)
        chosen = draw(
            st.one_of(
                _VALID.map(lambda v: v[0][v[2] :]),
                _MALFORMED.map(lambda m: m[0]),
                st.sampled_from(MARKER_WORDS).map(lambda w: "{{" + w + ":"),
            )
        )
        key = before + chosen + after
        offset = len(before)
        build.marker = True
        if build.problem is None:
            build.problem = Problem(pointer_of(path), offset, span_length(key, offset), REASON_KEY)
    else:
        key = draw(filler)
    assume(key not in taken)
    taken.add(key)
    return key


def _value(
    draw: st.DrawFn, build: _Build, path: tuple[str | int, ...], depth: int
) -> tuple[str, Template]:
    """Draw one JSON value as (token text, template)."""
    ws = build.ws
    kinds = ["string", "string", "number", "literal"]
    if depth > 0:
        kinds += ["object", "array"]
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        return _string_value(draw, build, path)
    if kind == "number":
        text = draw(_NUMBERS)
        return text, Template("number", text=text)
    if kind == "literal":
        text = draw(st.sampled_from(["true", "false", "null"]))
        return text, Template("literal", text=text)
    if kind == "array":
        count = draw(st.integers(0, 3))
        items = [_value(draw, build, (*path, index), depth - 1) for index in range(count)]
        body = f"{ws},{ws}".join(token for token, _ in items)
        return f"[{ws}{body}{ws}]", Template("array", items=tuple(t for _, t in items))
    return _object(draw, build, path, depth - 1)


def _object(
    draw: st.DrawFn, build: _Build, path: tuple[str | int, ...], depth: int
) -> tuple[str, Template]:
    ws = build.ws
    count = draw(st.integers(0, 4))
    taken: set[str] = set()
    tokens: list[str] = []
    members: list[tuple[str, Template]] = []
    for _ in range(count):
        key = _key(draw, build, path, taken)
        token, template = _value(draw, build, (*path, key), depth)
        tokens.append(f"{encode_string(key, build.rnd, build.escape)}{ws}:{ws}{token}")
        members.append((key, template))
    return "{" + ws + f"{ws},{ws}".join(tokens) + ws + "}", Template(
        "object", members=tuple(members)
    )


def _nest(token: str, template: Template, levels: int, ws: str) -> tuple[str, Template]:
    """Wrap a value in ``levels`` arrays: deep nesting without recursion in the builder."""
    return ("[" + ws) * levels + token + (ws + "]") * levels, _wrap(template, levels)


def _wrap(template: Template, levels: int) -> Template:
    for _ in range(levels):
        template = Template("array", items=(template,))
    return template


@st.composite
def argument_cases(
    draw: st.DrawFn, max_depth: int = 3, malformed: bool = True, objects_only: bool = False
) -> ArgCase:
    """Draw argument text with planted references, malformed candidates and look-alikes.

    Args:
        draw: Hypothesis's draw function.
        max_depth: How deep ordinary nesting goes; deep nesting is drawn separately.
        malformed: Whether to plant malformed candidates and markers in keys.
        objects_only: Whether every case is a JSON object.

    Returns:
        The case, with its ground truth.
    """
    build = _Build(
        # Escaping choices come from a seeded generator: drawing each one would cost a draw.
        rnd=random.Random(draw(st.integers(0, 2**32 - 1))),
        escape=draw(st.sampled_from(["none", "none", "markers", "random", "all"])),
        ws=draw(st.sampled_from(["", "", " ", "\n\t "])),
        malformed=malformed,
    )
    levels = draw(st.sampled_from([0, 0, 0, 1, 3, 40, 300]))
    shape = (
        "object"
        if objects_only
        else draw(st.sampled_from(["object"] * 6 + ["other-json", "invalid"]))
    )
    if shape == "other-json":
        token, template = _value(draw, build, (), max_depth)
        assume(template.kind != "object")
        token, template = _nest(token, template, levels, build.ws)
        assume(template.kind != "object")
    else:
        key = draw(filler)
        inner_path: tuple[str | int, ...] = (key, *([0] * levels)) if levels else ()
        token, template = _object(draw, build, inner_path if levels else (), max_depth)
        if levels:
            nested, nested_t = _nest(token, template, levels, build.ws)
            token = "{" + encode_string(key, build.rnd, build.escape) + ":" + nested + "}"
            template = Template("object", members=((key, nested_t),))
        if shape == "invalid":
            token = token + draw(st.sampled_from([",", "]", "x", "}", " {"]))
    references = tuple(build.references) if build.problem is None else ()
    return ArgCase(
        raw=token,
        template=template,
        references=references,
        problem=build.problem,
        shape=shape,
        marker=build.marker,
        canaries=tuple(build.canaries),
        spellings=tuple(build.spellings),
    )


def expected_value(template: Template, values: dict[Reference, str]) -> object:
    """Return the decoded value the handler must see once every reference is substituted.

    Objects come back as lists of (key, value) pairs so that member order is compared too.
    """
    if template.kind == "string":
        return "".join(values[p] if isinstance(p, Reference) else p for p in template.pieces)
    if template.kind in ("number", "literal"):
        return json.loads(template.text)
    if template.kind == "array":
        return [expected_value(item, values) for item in template.items]
    return [(key, expected_value(member, values)) for key, member in template.members]


def ordered(value: object) -> object:
    """Return a decoded JSON value with objects as (key, value) pair lists, in member order."""
    if isinstance(value, dict):
        return [(key, ordered(member)) for key, member in value.items()]
    if isinstance(value, list):
        return [ordered(item) for item in value]
    return value


# --- values and results for scrubbing ----------------------------------------------------------

#: Placeholder characters a value may contain (decisions R5.3 keeps values *inside* a
#: placeholder outside the contract; values that merely share its characters are in it).
_PLACEHOLDER_CHARS: Final = "[]secrt:.0123456789abcdef"

value_text: st.SearchStrategy[str] = st.one_of(
    st.text(st.characters(exclude_categories=()), min_size=1, max_size=14),
    st.text(' +%"\\/\n\u00e9\u2603' + "aZ09.-*_~", min_size=1, max_size=14),
    st.text(_PLACEHOLDER_CHARS + " ", min_size=6, max_size=12),
    st.text("ab ", min_size=7, max_size=10),
)
"""Values: arbitrary Unicode (surrogates included), encodable specials, placeholder letters."""


@dataclass(frozen=True, slots=True)
class ScrubCase:
    """Values resolved for one call and a result text built around their forms.

    Attributes:
        resolved: (reference, value) pairs in order of first use.
        text: The result text to scrub.
    """

    resolved: tuple[tuple[Reference, str], ...]
    text: str

    def __repr__(self) -> str:
        shown = [(reference.name, len(value)) for reference, value in self.resolved]
        return f"ScrubCase(values={shown}, <{len(self.text)} characters>)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def to_json(self) -> dict[str, object]:
        """Return the case as data, for a regression file (values are canaries)."""
        return {
            "resolved": [[ref.id, ref.field.value, value] for ref, value in self.resolved],
            "text": self.text,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScrubCase:
        """Rebuild a case written by :meth:`to_json`."""
        resolved = data["resolved"]
        text = data["text"]
        assert isinstance(resolved, list)
        assert isinstance(text, str)
        return cls(tuple((Reference(str(i), Field(str(f))), str(v)) for i, f, v in resolved), text)


_POOL: Final = st.sampled_from(POOL_IDS)
_FIELDS: Final = st.sampled_from(list(Field))
_SCRUB_TEXT: Final = st.text(st.characters(exclude_categories=()), max_size=8)
_SCRUB_NOISE: Final = st.sampled_from(["[secret:", "]", " ", "+", "%20"])


@st.composite
def scrub_cases(draw: st.DrawFn) -> ScrubCase:
    """Draw values (overlapping, prefixes of each other, sharing forms) and a result text.

    The text interleaves arbitrary text with whole forms of the values and with fragments of
    them, so occurrences touch, overlap and nest.
    """
    base = draw(st.lists(value_text, min_size=1, max_size=4))
    values: list[str] = []
    for value in base:
        values.append(value)
        relation = draw(st.sampled_from(["none", "none", "prefix", "extend", "same"]))
        if relation == "prefix" and len(value) > 1:
            values.append(value[: draw(st.integers(1, len(value) - 1))])
        elif relation == "extend":
            values.append(value + draw(value_text))
        elif relation == "same":
            values.append(value)
    ids = [draw(_POOL) for _ in values]
    fields = [draw(_FIELDS) for _ in values]
    resolved: list[tuple[Reference, str]] = []
    seen: set[Reference] = set()
    for secret_id, which, value in zip(ids, fields, values, strict=True):
        reference = Reference(secret_id, which)
        if reference not in seen:
            seen.add(reference)
            resolved.append((reference, value))
    every_form = [form for _, value in resolved for form in own_forms(value)] or [
        value for _, value in resolved
    ]
    # Indices and cuts are drawn as integers: a strategy built per draw (sampled_from over this
    # case's forms, flatmap) would be validated on every draw and cost more than the check.
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            parts.append(draw(_SCRUB_TEXT))
            continue
        if kind == 4:
            parts.append(draw(_SCRUB_NOISE))
            continue
        form = every_form[draw(st.integers(0, len(every_form) - 1))]
        if kind == 1:
            parts.append(form)
        elif kind == 2:
            parts.append(form[: draw(st.integers(0, len(form)))])
        else:
            parts.append(form[draw(st.integers(0, len(form))) :])
    return ScrubCase(tuple(resolved), "".join(parts))


# --- arbitrary text -------------------------------------------------------------------------

#: Tokens the grammar cares about, mixed into arbitrary text.
GRAMMAR_TOKENS: Final = (
    "{{secret:",
    "{{SECRET:",
    "}}",
    "}",
    "{",
    ".password",
    ".username",
    ".notes",
    '"',
    "\\u007b",
    "\\u007B",
    "\\\\",
    ":",
    ",",
    "[",
    "]",
    *POOL_IDS,
)

arbitrary_text: st.SearchStrategy[str] = st.lists(
    st.one_of(
        st.text(st.characters(exclude_categories=()), max_size=6),
        st.sampled_from(GRAMMAR_TOKENS),
    ),
    max_size=16,
).map("".join)
"""Arbitrary Unicode, surrogates included, salted with the grammar's tokens."""


def fresh_id() -> str:
    """Return a random secret id that the shared pool does not hold."""
    return str(uuid.uuid4())
