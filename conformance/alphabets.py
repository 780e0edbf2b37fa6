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
