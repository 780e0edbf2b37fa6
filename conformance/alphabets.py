"""Open alphabets: names a host must refuse, drawn from a seeded generator, never a fixed list.

This module owns :func:`unknown_fields`, the field names a reference may not carry (decisions
R1.2: exactly ``password``, ``username`` and ``notes``, in lower case). A host that accepts one
more plausible field than the contract has, ``.token`` or ``.Password`` or ``.passwd``, must be
caught whatever that field is called, so the names come from three sources: a vocabulary of the
words credential stores use for their fields, every small edit of the three real names (a
letter's case, a letter dropped, doubled or added, a plural, a separator), and random words. The
generator is seeded, so every run draws the same names and a failure can be replayed; the seed
and the count are parameters, for a longer search. Nothing here reads a value.
"""

from __future__ import annotations

import random
import string
from typing import Final

#: The seed every run of the suite draws with.
SEED: Final = 17_2026

#: The fields the contract has (decisions R1.2).
FIELDS: Final = ("password", "username", "notes")

#: Words credential stores and secret managers use for their fields.
_VOCABULARY: Final = (
    "token",
    "secret",
    "key",
    "apikey",
    "api_key",
    "api-key",
    "otp",
    "totp",
    "pin",
    "passphrase",
    "passwd",
    "pass",
    "pwd",
    "user",
    "login",
    "email",
    "name",
    "note",
    "url",
    "website",
    "uri",
    "value",
    "id",
    "title",
    "tags",
    "card",
    "cvv",
    "privatekey",
    "certificate",
    "hash",
    "fields",
    "custom",
)


def _edits(field_name: str) -> set[str]:
    """Every small edit of ``field_name``: case, one letter dropped, doubled or added, plurals and
    separators."""
    edits = {field_name.upper(), field_name.capitalize(), field_name + "s", field_name + "1"}
    edits.add(field_name.swapcase()[0] + field_name[1:])
    for index in range(len(field_name)):
        edits.add(field_name[:index] + field_name[index + 1 :])
        edits.add(field_name[:index] + field_name[index] * 2 + field_name[index + 1 :])
        edits.add(field_name[:index] + field_name[index].upper() + field_name[index + 1 :])
    for separator in ("_", "-", " "):
        middle = len(field_name) // 2
        edits.add(field_name[:middle] + separator + field_name[middle:])
    edits.add(" " + field_name)
    edits.add(field_name + " ")
    edits.add(field_name + ".x")
    return edits


def unknown_fields(count: int = 64, seed: int = SEED) -> tuple[str, ...]:
    """Return ``count`` distinct field names the contract does not have, in a fixed order.

    The whole vocabulary comes first, then edits of the real fields and random lower-case
    words, drawn in turn, so that a small ``count`` still holds the most plausible names.

    Args:
        count: How many names; at least the vocabulary's size.
        seed: The generator's seed.

    Returns:
        The names, none of them a field of the contract, none holding a brace.
    """
    rng = random.Random(seed)
    chosen: dict[str, None] = dict.fromkeys(_VOCABULARY)
    edits = sorted(set().union(*(_edits(name) for name in FIELDS)) - set(FIELDS))
    rng.shuffle(edits)
    while len(chosen) < count:
        if edits and len(chosen) % 2 == 0:
            chosen.setdefault(edits.pop(), None)
            continue
        size = rng.randint(2, 12)
        chosen.setdefault("".join(rng.choice(string.ascii_lowercase) for _ in range(size)), None)
    names = [name for name in chosen if name not in FIELDS and "{" not in name and "}" not in name]
    return tuple(names[:count])


#: The kinds of vault failure the driver protocol names as examples (docs/driver-protocol.md).
KNOWN_VAULT_FAILURES: Final = ("offline", "signed out", "rpc failure")

#: The kinds backends and secret managers report when a read fails.
_FAILURE_VOCABULARY: Final = (
    "timeout",
    "timed out",
    "locked",
    "rate limited",
    "unauthorized",
    "forbidden",
    "tls error",
    "dns failure",
    "connection refused",
    "connection reset",
    "service unavailable",
    "session expired",
    "token expired",
    "mfa required",
    "quota exceeded",
    "decryption failed",
    "http 503",
    "http 429",
    "io error",
    "internal error",
)

#: What may join the words of a generated kind.
_FAILURE_JOINS: Final = (" ", " ", "-", ".")


def vault_failure_kinds(count: int = 32, seed: int = SEED) -> tuple[str, ...]:
    """Return ``count`` distinct kinds of vault failure other than the protocol's examples.

    A kind is a short plain phrase: lower-case words and digits joined by a space, a dash or a
    dot, as a refusal's parentheses may hold it. The vocabulary comes first, then small edits of
    the known kinds (a separator swapped, a digit added) and random phrases, drawn in turn.

    Args:
        count: How many kinds.
        seed: The generator's seed.

    Returns:
        The kinds, none of them ``offline``, ``signed out`` or ``rpc failure``, none longer
        than 40 characters.
    """
    rng = random.Random(seed)
    chosen: dict[str, None] = dict.fromkeys(_FAILURE_VOCABULARY)
    edits = sorted(
        {
            kind.replace(" ", join) + suffix
            for kind in KNOWN_VAULT_FAILURES
            for join in _FAILURE_JOINS
            for suffix in ("", "2", " 0", ".1")
        }
        - set(KNOWN_VAULT_FAILURES)
    )
    rng.shuffle(edits)
    while len(chosen) < count + len(KNOWN_VAULT_FAILURES):
        if edits and len(chosen) % 2 == 0:
            chosen.setdefault(edits.pop(), None)
            continue
        words = [
            "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(size))
            for size in (rng.randint(2, 9) for _ in range(rng.randint(1, 3)))
        ]
        phrase = words[0]
        for word in words[1:]:
            phrase += rng.choice(_FAILURE_JOINS) + word
        chosen.setdefault(phrase, None)
    kinds = [kind for kind in chosen if kind not in KNOWN_VAULT_FAILURES and len(kind) <= 40]
    return tuple(kinds[:count])


#: The longest tool name :func:`near_names` draws: the function-name limit of several model
#: APIs, well inside the 128 characters the MCP specification suggests.
TOOL_NAME_MAX: Final = 64

#: The characters of a tool name the MCP specification suggests: letters, digits, ``_``,
#: ``-`` and ``.``.
_TOOL_NAME_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_-.")

#: Separators a tool name's words are joined by.
_TOOL_SEPARATORS: Final = ("_", "-", ".")


def _name_edits(name: str) -> tuple[list[str], set[str]]:
    """The edits of ``name`` a loose lookup confuses with it first (case, plural, a prefix or
    suffix, separators), then every small edit of one letter."""
    middle = len(name) // 2
    first = [
        name.upper(),
        name.capitalize(),
        name + "s",
        name[:-1],
        "my_" + name,
        name + "_v2",
        name.swapcase()[0] + name[1:],
        "".join(char for char in name if char not in _TOOL_SEPARATORS),
        name[:middle] + "_" + name[middle:],
        name + ".",
        "mcp." + name,
        name + "-2",
    ]
    for old in _TOOL_SEPARATORS:
        if old in name:
            first += [name.replace(old, new) for new in _TOOL_SEPARATORS if new != old]
    small: set[str] = set()
    for index in range(len(name)):
        small.add(name[:index] + name[index + 1 :])
        small.add(name[:index] + name[index] * 2 + name[index + 1 :])
        small.add(name[:index] + name[index].swapcase() + name[index + 1 :])
    return first, small


def near_names(name: str, count: int = 24, seed: int = SEED) -> tuple[str, ...]:
    """Return ``count`` distinct tool names near ``name``, none equal to it, in a fixed order.

    A host must match a rule to a tool by the exact name; one that folds case, matches a prefix
    or a substring, or ignores separators applies the rule to these names too. The names a
    loose lookup confuses first come first (the upper and capitalised name, a plural, a letter
    dropped, a prefix or suffix, separators swapped, removed or added), then single-letter
    edits, random names and one name as long as :data:`TOOL_NAME_MAX`, drawn in turn. Every
    name holds only letters, digits, ``_``, ``-`` and ``.``.

    Args:
        name: The tool name the generated names must differ from.
        count: How many names.
        seed: The generator's seed.

    Returns:
        The names, each of 1 to :data:`TOOL_NAME_MAX` characters.
    """
    rng = random.Random(seed)
    first, small = _name_edits(name)
    chosen: dict[str, None] = dict.fromkeys(first)
    long_name = name + "_" + "x" * TOOL_NAME_MAX
    chosen[long_name[:TOOL_NAME_MAX]] = None
    edits = sorted(small - chosen.keys())
    rng.shuffle(edits)
    alphabet = string.ascii_lowercase + string.digits
    while len(chosen) < count + 1:
        if edits and len(chosen) % 2 == 0:
            chosen.setdefault(edits.pop(), None)
            continue
        words = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 10)))
            for _ in range(rng.randint(1, 3))
        ]
        chosen.setdefault(rng.choice(_TOOL_SEPARATORS).join(words), None)
    names = [
        candidate
        for candidate in chosen
        if candidate != name
        and 0 < len(candidate) <= TOOL_NAME_MAX
        and set(candidate) <= _TOOL_NAME_CHARS
    ]
    return tuple(names[:count])


# --- awkward values -------------------------------------------------------------------------

#: Values a host might be tempted to tidy on their way to the handler (design step [10],
#: decisions R4.1: a value is put in place as it is, code point for code point): each shape is
#: the text before a value's core, inside it, and after it. Line breaks and spaces at either
#: end, decomposed and compatibility characters that Unicode normalisation would change, Hangul
#: jamo, invisible, bidirectional and astral characters. None of them holds a brace, a bracket
#: or a colon, so no value looks like a marker or a placeholder.
AWKWARD_SHAPES: Final[dict[str, tuple[str, str, str]]] = {
    "trailing-lf": ("", "", "\n"),
    "trailing-crlf": ("", "", "\r\n"),
    "trailing-cr": ("", "", "\r"),
    "trailing-lf-lf": ("", "", "\n\n"),
    "leading-lf": ("\n", "", ""),
    "leading-crlf-trailing-lf": ("\r\n", "", "\n"),
    "spaces-around": ("  ", "", " \t"),
    "inner-line-break": ("", "\r\n", ""),
    "nfd-latin": ("", "e\u0301", "A\u030a"),
    "nfd-tail": ("", "", "o\u0308\u0304"),
    "lone-combining-tail": ("", "", "\u0301"),
    "hangul-jamo": ("", "\u1100\u1161\u11a8", "\u1112\u1161\u11ab"),
    "nfc-singletons": ("", "\u2126", "\u212b"),
    "compatibility": ("\ufb01", "\uff21", "\u2460"),
    "zero-width": ("\u200b", "\u200c\u200d", "\u2060"),
    "byte-order-mark": ("\ufeff", "", "\ufeff"),
    "unicode-spaces": ("\u00a0", "\u3000", "\u2028\u2029"),
    "bidi-controls": ("\u202e", "", "\u202c"),
    "non-bmp": ("\U0001f511", "\U0001d11e", "\U0001f600"),
}

#: Where a shape's inner text goes in a value: after this many characters of its core.
AWKWARD_SPLIT: Final = 11


def shaped(core: str, shape: str) -> str:
    """Return ``core`` in the awkward text of ``shape`` (:data:`AWKWARD_SHAPES`): the head
    before it, the inner text after its first :data:`AWKWARD_SPLIT` characters, the tail after
    it."""
    head, inner, tail = AWKWARD_SHAPES[shape]
    return head + core[:AWKWARD_SPLIT] + inner + core[AWKWARD_SPLIT:] + tail
