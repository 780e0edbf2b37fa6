"""The canary leak detector: unique values, the suite's own form oracles, and the surface sweep.

This module owns three things. It mints canaries: unique, high-entropy secret values, one set
per check, that never look like a placeholder. It computes, with its own code, the four forms a
host must scrub (decisions R5.2) and the hardening forms it may scrub (R5.6); it deliberately
imports nothing from the reference host, because mutant hosts patch the reference host and the
suite must not share their bugs. And it sweeps every surface of an :class:`Observation` and
every call's result for every guarded value in every form, returning findings that name the
surface, the form and the requirement IDs, never the value. Nothing here may print a canary.
"""

from __future__ import annotations

import base64
import enum
import functools
import itertools
import json
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

#: Values shorter than this many code points are not scrubbed (decisions R5.1); the detector
#: guards only values at least this long.
MIN_GUARDED_CODE_POINTS: Final = 8

#: The characters a canary's random core is drawn from. No brace, bracket or colon, so a canary
#: can never look like a marker or a placeholder (decisions R5.3).
_CORE_ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

#: Random characters in a canary's core: 22 characters of a 57-letter alphabet, about 128 bits.
_CORE_LENGTH: Final = 22

_URL_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-*_")

SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


class Kind(enum.Enum):
    """The shapes of canary a check can ask for; each exercises different forms."""

    PLAIN = "plain"
    """Letters and digits only: all four forms coincide."""
    SPACED = "spaced"
    """With spaces: forms c and d differ."""
    SPECIAL = "special"
    """Quote, backslash, slash, controls, plus, percent, star, tilde, a space and non-ASCII:
    every form differs, and form c differs where a quote_plus-style encoder would."""
    UNICODE = "unicode"
    """Non-ASCII letters, an astral symbol included: forms c and d percent-encode UTF-8."""
    CLASSES = "classes"
    """One character drawn at random from each of :data:`CHARACTER_CLASSES`, in random order."""


_DECORATIONS: Final = {
    Kind.PLAIN: ("", ""),
    Kind.SPACED: (" ", "  "),
    Kind.SPECIAL: ('"\\/\n\t\x01+%&=*~ ', "é"),
    Kind.UNICODE: ("Ωé", "\U0001f511ß"),
}

#: The characters that only some forms change (decisions R5.2), by class: a space (forms c and
#: d differ), ``*`` (kept by form c, which a quote_plus-style encoder would not), ``~`` (encoded
#: by form c, which quote_plus would keep), ``+`` and ``%`` (form c), the quote and the
#: backslash (form b), ``/`` (kept by form b, encoded by form c), ``<`` ``>`` ``&`` ``'`` and
#: ``=`` (kept by form b, which a script-safe JSON writer such as Go's or Gson's would write as
#: ``\u003c`` and so on; encoded by form c), controls (form b's short and ``\u00xx`` escapes,
#: form c), and non-ASCII and astral characters (form c's UTF-8 bytes).
#: A ``CLASSES`` canary holds one of each, so every form differs from every other.
CHARACTER_CLASSES: Final = {
    "space": " ",
    "star": "*",
    "tilde": "~",
    "plus": "+",
    "percent": "%",
    "quote": '"',
    "backslash": "\\",
    "slash": "/",
    "script": "<>&'=",
    "control": "\x01\x07\x08\x0b\x0c\x1b\x1f\x7f\n\r\t",
    "non-ascii": "éßΩжñ€\u00a0\u2028",
    "non-bmp": "\U0001f511\U0001f600\U00010348\U0001d11e",
}

#: Where lone surrogates live: U+D800 to U+DFFF.
_SURROGATES: Final = range(0xD800, 0xE000)


def _decorations(kind: Kind) -> tuple[str, str]:
    """Return the text a canary of ``kind`` holds inside and after its random core."""
    if kind is Kind.CLASSES:
        drawn = [secrets.choice(chars) for chars in CHARACTER_CLASSES.values()]
        secrets.SystemRandom().shuffle(drawn)
        return "".join(drawn), ""
    return _DECORATIONS[kind]


#: Random bytes below this bound are taken, each for the letter its remainder by the alphabet's
#: length numbers; the rest are dropped, so that every letter is equally likely.
_BYTE_BOUND: Final = 256 - 256 % len(_CORE_ALPHABET)


def _core() -> str:
    # One draw of random bytes per canary, not one per letter: a run mints tens of thousands.
    while True:
        drawn = secrets.token_bytes(2 * _CORE_LENGTH)
        letters = [
            _CORE_ALPHABET[byte % len(_CORE_ALPHABET)] for byte in drawn if byte < _BYTE_BOUND
        ]
        if len(letters) < _CORE_LENGTH:
            continue
        core = "".join(letters[:_CORE_LENGTH])
        if "secret" not in core.lower():
            return core


class Canary:
    """One secret value minted for one check.

    Its ``repr`` and ``str`` show only its label; :attr:`value` is the text, and nothing that
    formats a canary ever prints it.

    Attributes:
        label: A printable name such as ``c7.password``, unique in the process.
        kind: Its shape.
        value: The text. Never print it, never put it in a message or a test id.
    """

    __slots__ = ("kind", "label", "value")

    def __init__(self, label: str, kind: Kind, value: str) -> None:
        self.label = label
        self.kind = kind
        self.value = value

    def __repr__(self) -> str:
        return f"Canary({self.label})"

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a canary is never pickled")


class Mint:
    """Issues canaries, remembering every one so reports can be checked against them."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._issued: list[Canary] = []

    def canary(self, kind: Kind = Kind.PLAIN, role: str = "value") -> Canary:
        """Return a fresh canary of ``kind``.

        Args:
            kind: The canary's shape.
            role: A printable hint for its label, such as ``password``.

        Returns:
            A canary no other call of any mint in this process has returned.
        """
        head, tail = _decorations(kind)
        core = _core()
        value = core[:11] + head + core[11:] + tail
        canary = Canary(f"c{next(self._counter)}.{role}", kind, value)
        self._issued.append(canary)
        _ISSUED.append(canary)
        return canary

    def issued(self) -> tuple[Canary, ...]:
        """Return every canary this mint issued."""
        return tuple(self._issued)


#: Every canary issued in this process, so a test of the reports can grep for all of them.
_ISSUED: list[Canary] = []


def issued_canaries(since: int = 0) -> tuple[Canary, ...]:
    """Return every canary minted in this process so far, by any mint, from number ``since``
    on (a run or a check asks for its own, without copying every earlier one)."""
    return tuple(_ISSUED[since:])


def issued_count() -> int:
    """Return how many canaries this process has minted: where the next one's number starts."""
    return len(_ISSUED)


def adopt_canaries(minted: Iterable[tuple[str, str, str]]) -> tuple[Canary, ...]:
    """Count canaries another process minted as issued here, so this process redacts them too.

    A parallel run's checks mint their canaries in worker processes, while its report is
    written by the controlling one; the worker hands its canaries over in memory and the
    controller adopts them, so that every report it writes is redacted of all of them.

    Args:
        minted: (label, kind, value) for each canary, as the minting process issued it.

    Returns:
        The adopted canaries, in the order given.

    Raises:
        ValueError: A kind is not one of :class:`Kind`.
    """
    adopted = tuple(Canary(label, Kind(kind), value) for label, kind, value in minted)
    _ISSUED.extend(adopted)
    return adopted


# --- the required forms (decisions R5.2), written independently of any host ----------------


def _json_table() -> dict[int, str]:
    table = {ord(char): escape for char, escape in SHORT_ESCAPES.items()}
    for code in (*range(0x20), *_SURROGATES):
        table.setdefault(code, f"\\u{code:04x}")
    return table


#: What :func:`json_escape` writes for each character it escapes; every other stays.
_JSON_TABLE: Final = _json_table()


def json_escape(value: str) -> str:
    """Return form b: the JSON string escape of ``value`` without quotes (R5.2b).

    The quote, the backslash and ``\\b \\f \\n \\r \\t`` take their short escapes; any other
    character below U+0020 becomes ``\\u00xx`` in lower-case hex; ``/`` and non-ASCII stay,
    except a lone surrogate, which becomes ``\\udxxx`` in lower-case hex. (One table, applied
    by ``str.translate``: a run forms every value it mints, tens of thousands of them.)
    """
    return value.translate(_JSON_TABLE)


def _utf8(value: str) -> bytes:
    # Lone surrogates have no UTF-8 form; their three-byte encoding gives every string a form.
    return value.encode("utf-8", "surrogatepass")


def _url_table(pattern: str) -> dict[int, str]:
    table = {byte: pattern.format(byte) for byte in range(256) if byte not in _URL_SAFE}
    table[0x20] = "+"
    return table


#: What :func:`url_form` writes for each byte, read as the character of the same number (the
#: bytes decoded as Latin-1), in upper- and in lower-case hex; a safe byte stays.
_URL_TABLES: Final = {False: _url_table("%{:02X}"), True: _url_table("%{:02x}")}


def url_form(value: str, *, lower_hex: bool = False) -> str:
    """Return form c: the URL form encoding of the UTF-8 bytes of ``value`` (R5.2c).

    ``A-Z a-z 0-9 . - * _`` stay, a space becomes ``+``, every other byte ``%HH``.

    Args:
        value: The text.
        lower_hex: Write ``%hh`` in lower case: a hardening form, not a required one.
    """
    return _utf8(value).decode("latin-1").translate(_URL_TABLES[lower_hex])


def _required_forms(value: str) -> dict[str, str]:
    """Return forms a to d of ``value``, each only if it differs from those before it.

    Returns:
        Form name (``"a"`` to ``"d"``) to text, in order.
    """
    form_c = url_form(value)
    candidates = (
        ("a", value),
        ("b", json_escape(value)),
        ("c", form_c),
        ("d", form_c.replace("+", "%20")),
    )
    found: dict[str, str] = {}
    for name, text in candidates:
        if text not in found.values():
            found[name] = text
    return found


#: The requirement each required form comes from.
FORM_REQUIREMENTS: Final = {"a": "SCRUB-003", "b": "SCRUB-004", "c": "SCRUB-005", "d": "SCRUB-006"}


# --- the hardening forms (decisions R5.6): reported, never failures ------------------------


def _base64_core(data: bytes, offset: int) -> str:
    """Return the base64 text ``data`` yields wherever it sits ``offset`` bytes into a group.

    The characters that straddle a neighbour's bytes are dropped at both ends, so the text is
    found whatever precedes or follows the value in the encoded stream.
    """
    encoded = base64.b64encode(bytes(offset) + data).decode("ascii").rstrip("=")
    start = 4 if offset else 0
    whole = ((offset + len(data)) // 3) * 4
    return encoded[start:whole]


def _hardening_forms(value: str) -> dict[str, str]:
    """Return the forms beyond the design that a host may scrub (R5.6).

    Each is kept only when it differs from every required form and from the forms before it.

    Returns:
        Form name to text: ``base64@0``, ``base64@1``, ``base64@2``, ``hex``, ``pct-lower``,
        ``json-u-escape``, ``json-slash``, ``double-pct``.
    """
    data = _utf8(value)
    form_b = json_escape(value)
    form_c = url_form(value)
    candidates = (
        ("base64@0", _base64_core(data, 0)),
        ("base64@1", _base64_core(data, 1)),
        ("base64@2", _base64_core(data, 2)),
        ("hex", data.hex()),
        ("pct-lower", url_form(value, lower_hex=True)),
        ("json-u-escape", json.dumps(value, ensure_ascii=True)[1:-1]),
        ("json-slash", form_b.replace("/", "\\/")),
        ("double-pct", form_c.replace("%", "%25")),
    )
    known = set(required_forms(value).values())
    found: dict[str, str] = {}
    for name, text in candidates:
        if len(text) >= MIN_GUARDED_CODE_POINTS and text not in known:
            known.add(text)
            found[name] = text
    return found


#: How many values' forms are kept: a whole run mints about 17,500 canaries, each swept and
#: redacted by many detectors, and the forms of one value never change. A cache smaller than a
#: run recomputed most forms several times over (about a tenth of a run's time).
FORMS_CACHE: Final = 1 << 16


@functools.lru_cache(maxsize=FORMS_CACHE)
def _cached_forms(value: str, hardening: bool) -> tuple[tuple[str, str], ...]:
    forms = _hardening_forms(value) if hardening else _required_forms(value)
    return tuple(forms.items())


def required_forms(value: str) -> dict[str, str]:
    """Return forms a to d of ``value``, each only if it differs from those before it
    (decisions R5.2); a fresh dict each call, computed once per value."""
    return dict(_cached_forms(value, False))


def hardening_forms(value: str) -> dict[str, str]:
    """Return the forms beyond the design that a host may scrub (decisions R5.6); a fresh dict
    each call, computed once per value."""
    return dict(_cached_forms(value, True))


# --- the sweep ---------------------------------------------------------------------------------


class Surface(enum.Enum):
    """Where a value must never appear, with the requirement that says so."""

    RESULT = "result"
    FAILURE = "failure text"
    LEDGER = "ledger"
    REQUEST = "approval request"
    LOG = "host log"
    PRINTED = "printed output"
    MCP_RESULT = "MCP result"
    MCP_ERROR = "MCP JSON-RPC error"
    MCP_PROGRESS = "MCP progress notification"
    MCP_LOG = "MCP log notification"
    MCP_ELICITATION = "MCP elicitation request"
    MCP_LISTING = "MCP tool listing"
    MCP_SESSION = "MCP session message"
    MCP_CLIENT = "MCP message the client sent"


#: The requirements a leak on each surface violates (design, invariant 1; decisions R3.2,
#: R5.4, R6.2, R6.6).
SURFACE_REQUIREMENTS: Final = {
    Surface.RESULT: ("INV1",),
    Surface.FAILURE: ("INV1", "SCRUB-010"),
    Surface.LEDGER: ("INV1", "LEDG-004"),
    Surface.REQUEST: ("INV1", "APPR-005"),
    Surface.LOG: ("INV1", "LOG-001"),
    Surface.PRINTED: ("INV1",),
}

#: The surfaces every host has, whatever path its calls take; the MCP surfaces exist only on
#: the wire, where the MCP sweep searches each of them in every message (decisions R9.3).
HOST_SURFACES: Final = frozenset(SURFACE_REQUIREMENTS)

#: The capability a host announces for the suite to see each surface (decisions S1.3); ``None``
#: for the surfaces the suite reads itself: what the agent got back, and the adapter's stderr.
SURFACE_CAPABILITIES: Final[dict[Surface, str | None]] = {
    Surface.RESULT: None,
    Surface.FAILURE: None,
    Surface.LEDGER: "observe.ledger",
    Surface.REQUEST: "observe.requests",
    Surface.LOG: "observe.log",
    Surface.PRINTED: None,
}


def surfaces_judged_by(requirement: str) -> frozenset[Surface]:
    """Return the surfaces whose sweep is evidence for ``requirement``.

    The invariant 1 family is about every surface; the others about the one that names them
    in :data:`SURFACE_REQUIREMENTS`, and SCRUB-014 about every surface but the result.
    """
    if requirement.startswith("INV1"):
        return HOST_SURFACES
    if requirement == "SCRUB-014":
        return frozenset((Surface.LEDGER, Surface.REQUEST, Surface.LOG, Surface.PRINTED))
    return frozenset(
        surface
        for surface, requirements in SURFACE_REQUIREMENTS.items()
        if requirement in requirements and surface not in (Surface.RESULT, Surface.FAILURE)
    )


def visible_surfaces(capabilities: Iterable[str]) -> frozenset[Surface]:
    """Return the surfaces a host with ``capabilities`` lets the sweep search."""
    announced = set(capabilities)
    return frozenset(
        surface
        for surface, needed in SURFACE_CAPABILITIES.items()
        if needed is None or needed in announced
    )


@dataclass(frozen=True, slots=True)
class Guarded:
    """One value the sweep looks for.

    Attributes:
        label: Printable name of the value, e.g. ``c3.username``.
        value: The text; never printed.
        is_username: A username may appear inside its own descriptor (decisions R3.2).
    """

    label: str
    value: str = field(repr=False)
    is_username: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    """A form of a guarded value found on a surface; names everything but the value.

    Attributes:
        surface: Where it was found.
        form: Which form: ``a`` to ``d``, or a hardening form's name.
        label: Which value.
        where: A printable location, such as ``line 2 sanitizedArgs``.
        requirements: The requirement IDs the finding violates (empty for hardening).
    """

    surface: Surface
    form: str
    label: str
    where: str
    requirements: tuple[str, ...]

    def describe(self) -> str:
        """Return a one-line description that holds no value."""
        return f"{self.label} in form {self.form} on the {self.surface.value} ({self.where})"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call a check made and what the agent read back."""

    tool: str
    text: str = field(repr=False)
    is_error: bool
    disposition: str


@dataclass(slots=True)
class Sweep:
    """What one sweep found.

    Attributes:
        leaks: Required forms on a surface that must hold none: each fails the check.
        hardening: Hardening forms seen on the agent-facing result: reported only.
        snippet_values: Ledger records whose ``errorSnippet`` held a value while scrubbing was
            off, which decisions R5.5 allows (SCRUB-013).
        calls: For each call swept, its label and the surfaces searched for it, in order.
        unsearched: The surfaces the host did not let the sweep search: never clean, only
            unseen (decisions S1.3).
    """

    leaks: list[Finding] = field(default_factory=list)
    hardening: list[Finding] = field(default_factory=list)
    snippet_values: int = 0
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    unsearched: frozenset[Surface] = frozenset()


def guarded_values(secrets_: Iterable[Any]) -> tuple[Guarded, ...]:
    """Return the values of vault entries that the sweep guards.

    Args:
        secrets_: Objects with ``id``, ``username``, ``password`` and ``notes`` attributes
            (:class:`conformance.host.SecretSpec`).

    Returns:
        Every field value of at least 8 code points, labelled by secret id and field.
    """
    found: list[Guarded] = []
    for secret in secrets_:
        for field_name in ("password", "username", "notes"):
            value = str(getattr(secret, field_name))
            if len(value) >= MIN_GUARDED_CODE_POINTS:
                found.append(Guarded(f"{secret.id}.{field_name}", value, field_name == "username"))
    return tuple(found)


def strings(node: object, path: str) -> Iterator[tuple[str, str]]:
    """Yield (path, text) for every member name and string of a JSON-ready tree, at any depth."""
    stack: list[tuple[object, str]] = [(node, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, Mapping):
            for key, child in item.items():
                yield f"{where}/{key} (key)", str(key)
                stack.append((child, f"{where}/{key}"))
        elif isinstance(item, list | tuple):
            for index, child in enumerate(item):
                stack.append((child, f"{where}/{index}"))


#: The shortest run of a value's characters that no report may hold (decisions S1.5).
MIN_REDACTED_RUN: Final = 8


def window_index(forms: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Return every :data:`MIN_REDACTED_RUN`-character window of every form, mapped to the
    label of the first form (in the order given) that has it."""
    index: dict[str, str] = {}
    width = MIN_REDACTED_RUN
    # Built back to front with plain assignment, so the first form's label is the one kept, as
    # setdefault front to back would keep it, at a fraction of the cost.
    for label, form in reversed(forms):
        windows = [form[start : start + width] for start in range(len(form) - width, -1, -1)]
        index.update(dict.fromkeys(windows, label))
    return index


@functools.lru_cache(maxsize=1)
def run_window_index(guarded: tuple[Guarded, ...]) -> Mapping[str, str]:
    """Return :meth:`Detector.run_index` for ``guarded``, the last one kept: a run's reports
    (JSON, Markdown, the terminal) each redact with the index of the same canaries, which takes
    seconds to build for a whole run and holds millions of windows, so only one is kept."""
    return Detector(guarded).run_index()


def redact_runs(text: str, index: Mapping[str, str]) -> str:
    """Replace every run of text covered by a window of ``index`` with that window's label.

    Args:
        text: The text to clean.
        index: Every :data:`MIN_REDACTED_RUN`-character window of every value, mapped to the
            value's label.

    Returns:
        ``text`` with each maximal stretch of overlapping matching windows replaced by
        ``<label:part>``; ``text`` itself when no window matches.
    """
    width = MIN_REDACTED_RUN
    if not index or len(text) < width:
        return text
    hits = [
        (start, label)
        for start in range(len(text) - width + 1)
        if (label := index.get(text[start : start + width])) is not None
    ]
    if not hits:
        return text
    pieces: list[str] = []
    done = 0
    stretch_start, stretch_end, stretch_label = hits[0][0], hits[0][0] + width, hits[0][1]
    for start, label in hits[1:]:
        if start <= stretch_end:
            stretch_end = start + width
            continue
        pieces += [text[done:stretch_start], f"<{stretch_label}:part>"]
        done = stretch_end
        stretch_start, stretch_end, stretch_label = start, start + width, label
    pieces += [text[done:stretch_start], f"<{stretch_label}:part>", text[stretch_end:]]
    return "".join(pieces)


#: How many forms a text's characters must be outnumbered by before :class:`FormIndex` reads
#: the text a window at a time: looking up a window costs about what testing one form against a
#: short text does, so the window walk pays once the forms are more than twice the characters.
WALK_RATIO: Final = 2


class FormIndex:
    """Finds which of many forms a text holds, in the order the forms were given.

    Testing every form against a text costs a substring search per form; a model run guards a
    thousand forms and searches tens of thousands of short strings (each MCP message's members),
    where that was a tenth of its time. So forms of at least :data:`MIN_GUARDED_CODE_POINTS`
    characters are also indexed by their first that many, and a text of fewer than half as many
    characters as there are forms is read one window at a time instead, each window looked up
    and each form it heads tested where it starts. Both ways give the same answer (a test holds
    them equal); shorter forms are always tested whole.

    Args:
        flat: (value, form name, form) triples, in the order answers are given.
    """

    def __init__(self, flat: Sequence[tuple[Guarded, str, str]]) -> None:
        self._flat = tuple(flat)
        width = MIN_GUARDED_CODE_POINTS
        self._heads: dict[str, list[int]] = {}
        self._short: list[int] = []
        for number, (_, _, form) in enumerate(self._flat):
            if len(form) < width:
                self._short.append(number)
            else:
                self._heads.setdefault(form[:width], []).append(number)

    def find(self, text: str) -> tuple[tuple[Guarded, str], ...]:
        """Return (value, form name) for every form ``text`` holds, in the order given."""
        flat = self._flat
        if len(text) * WALK_RATIO >= len(flat):
            return tuple((item, name) for item, name, form in flat if form in text)
        width = MIN_GUARDED_CODE_POINTS
        heads = self._heads
        hits = {number for number in self._short if flat[number][2] in text}
        for start in range(len(text) - width + 1):
            numbers = heads.get(text[start : start + width])
            if numbers is None:
                continue
            for number in numbers:
                if number not in hits and text.startswith(flat[number][2], start):
                    hits.add(number)
        return tuple((flat[number][0], flat[number][1]) for number in sorted(hits))


class Detector:
    """Sweeps surfaces for guarded values.

    Args:
        guarded: The values to look for.
    """

    def __init__(self, guarded: Sequence[Guarded]) -> None:
        self._guarded = tuple(guarded)
        self._forms = tuple((item, required_forms(item.value)) for item in self._guarded)
        self._hardening = tuple((item, hardening_forms(item.value)) for item in self._guarded)
        self._replacements: list[tuple[str, str]] | None = None
        self._runs: dict[str, str] | None = None
        self._flat = tuple(
            (item, name, form) for item, forms in self._forms for name, form in forms.items()
        )
        self._flat_hardening = tuple(
            (item, name, form) for item, forms in self._hardening for name, form in forms.items()
        )
        self._index: FormIndex | None = None
        self._index_hardening: FormIndex | None = None
        # What ``find`` returned for each text: a sweep reads every surface from the host's last
        # reset, so the same records and lines come back on every sweep of a long run.
        self._found: dict[str, tuple[tuple[Guarded, str], ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._guarded)

    @property
    def guarded(self) -> tuple[Guarded, ...]:
        """The values this detector looks for."""
        return self._guarded

    def find(self, text: str) -> list[tuple[Guarded, str]]:
        """Return (value, form name) for every required form of every value in ``text``."""
        found = self._found.get(text)
        if found is None:
            if self._index is None:
                self._index = FormIndex(self._flat)
            found = self._index.find(text)
            self._found[text] = found
        return list(found)

    def find_hardening(self, text: str) -> list[tuple[Guarded, str]]:
        """Return (value, form name) for every hardening form of every value in ``text``."""
        if self._index_hardening is None:
            self._index_hardening = FormIndex(self._flat_hardening)
        return list(self._index_hardening.find(text))

    def redact(self, text: str) -> str:
        """Return ``text`` with every form of every guarded value replaced by its label.

        A run of :data:`MIN_REDACTED_RUN` or more characters of any form (a prefix, a suffix,
        any part of it) is replaced too, as ``<label:part>``, so cutting or quoting a value
        cannot carry a piece of it past redaction.
        """
        if self._replacements is None:
            pairs = [
                (form, f"<{item.label}>")
                for table in (self._forms, self._hardening)
                for item, forms in table
                for form in forms.values()
            ]
            self._replacements = sorted(pairs, key=lambda pair: -len(pair[0]))
        for form, label in self._replacements:
            if form in text:
                text = text.replace(form, label)
        return redact_runs(text, self.run_index())

    def run_index(self) -> Mapping[str, str]:
        """Return every window of :data:`MIN_REDACTED_RUN` characters of every form, by label."""
        if self._runs is None:
            self._runs = window_index(
                tuple(
                    (item.label, form)
                    for table in (self._forms, self._hardening)
                    for item, forms in table
                    for form in forms.values()
                )
            )
        return self._runs

    def _leaks(
        self,
        surface: Surface,
        text: str,
        where: str,
        *,
        allow_usernames: bool = False,
        extra: tuple[str, ...] = (),
    ) -> list[Finding]:
        findings = []
        for item, form in self.find(text):
            if allow_usernames and item.is_username:
                continue
            requirements = (*SURFACE_REQUIREMENTS[surface], *extra)
            if surface in (Surface.RESULT, Surface.FAILURE):
                requirements = (*requirements, FORM_REQUIREMENTS[form])
            findings.append(
                Finding(surface, form, item.label, where, tuple(dict.fromkeys(requirements)))
            )
        return findings

    def sweep(
        self,
        calls: Sequence[CallRecord],
        observation: Any,
        *,
        scrubbing: bool = True,
        visible: Iterable[Surface] | None = None,
    ) -> Sweep:
        """Search every surface the host lets the suite see for every guarded value.

        Args:
            calls: The calls made since the host was last reset, with what the agent read.
            observation: The host's :class:`conformance.host.Observation` after those calls.
            scrubbing: Whether ``resultScrubbingEnabled`` was on. Off, the result and the
                ledger's ``errorSnippet`` may hold a value (decisions R5.5); every other surface
                still may not, and leaks there also violate SCRUB-014.
            visible: The surfaces the host announced (:func:`visible_surfaces`); every surface
                when omitted. The others are not read at all and are reported unsearched, as
                is the ``printed`` surface when the observation says a bound cut it.

        Returns:
            The leaks, the hardening forms seen, the error snippets that held a value, and
            which surfaces were searched for each call.
        """
        shown = HOST_SURFACES if visible is None else frozenset(visible)
        found = Sweep(unsearched=HOST_SURFACES - shown)
        if Surface.PRINTED in shown and not getattr(observation, "printed_whole", True):
            # A bound cut the host's standard error: what is left is still searched, but the
            # surface is not clean, only not searched whole (decisions S1.3, S1.9).
            found.unsearched |= {Surface.PRINTED}
        off = () if scrubbing else ("SCRUB-014",)
        afterwards = tuple(
            surface.value
            for surface in (Surface.LEDGER, Surface.REQUEST, Surface.LOG, Surface.PRINTED)
            if surface in shown and surface not in found.unsearched
        )
        for number, call in enumerate(calls, start=1):
            surface = Surface.FAILURE if call.is_error else Surface.RESULT
            where = f"call {number} to {call.tool}"
            found.calls.append((where, (surface.value, *afterwards)))
            if scrubbing:
                found.leaks.extend(self._leaks(surface, call.text, where))
            for item, form in self.find_hardening(call.text):
                found.hardening.append(Finding(surface, form, item.label, where, ()))
        if Surface.LEDGER in shown:
            self._sweep_ledger(observation.ledger_bytes, scrubbing, off, found)
        requests = observation.approval_requests if Surface.REQUEST in shown else ()
        for number, request in enumerate(requests, start=1):
            for path, text in strings(request, ""):
                in_descriptor = path.startswith("/descriptors/")
                found.leaks.extend(
                    self._leaks(
                        Surface.REQUEST,
                        text,
                        f"request {number} at {path or '/'}",
                        allow_usernames=in_descriptor,
                        extra=off,
                    )
                )
        records = observation.log_records if Surface.LOG in shown else ()
        for number, record in enumerate(records, start=1):
            found.leaks.extend(
                self._leaks(
                    Surface.LOG, record.message, f"record {number} at {record.level}", extra=off
                )
            )
        if Surface.PRINTED in shown and observation.printed:
            found.leaks.extend(
                self._leaks(Surface.PRINTED, observation.printed, "stderr", extra=off)
            )
        return found

    def _sweep_ledger(
        self, data: bytes, scrubbing: bool, off: tuple[str, ...], found: Sweep
    ) -> None:
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.split("\n"), start=1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict):
                found.leaks.extend(self._leaks(Surface.LEDGER, line, f"line {number}", extra=off))
                continue
            if scrubbing:
                # The raw bytes, and the decoded text of every field.
                found.leaks.extend(
                    self._leaks(Surface.LEDGER, line, f"line {number} bytes", extra=off)
                )
            for path, value in strings(record, ""):
                if not scrubbing and path == "/errorSnippet":
                    if self.find(value):
                        found.snippet_values += 1
                    continue
                found.leaks.extend(
                    self._leaks(Surface.LEDGER, value, f"line {number} {path}", extra=off)
                )
        # The same value may be reported raw and decoded; keep one finding per place and form.
        unique: dict[tuple[str, str, str, str], Finding] = {}
        for finding in found.leaks:
            unique.setdefault(
                (finding.surface.value, finding.form, finding.label, finding.where), finding
            )
        found.leaks[:] = unique.values()
