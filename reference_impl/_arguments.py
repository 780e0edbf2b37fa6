"""Step [10], substitution, and the arguments a handler receives.

This module owns the one rewrite of the argument tree: each string value that carries
references is replaced, in the raw text, by the JSON encoding of its substituted text, and every
other byte (key order, white space, the written text of numbers) stays as the agent sent it
(decisions R4.1). The per-key view a handler reads is parsed from that same raw text, so the two
can never disagree (invariant 6). Substitution is all or nothing: it runs only once every value
is in hand (R4.3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from reference_impl._grammar import ParsedArguments, encode_string
from reference_impl._types import Reference, SecretValue


class ArgumentsUnavailableError(ValueError):
    """The arguments have no per-key view: they are not a JSON object this parser can read."""


class ToolArguments:
    """The arguments as a handler sees them: the raw JSON text and a per-key view of it."""

    __slots__ = ("_view", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._view: dict[str, object] | None = None

    def __repr__(self) -> str:
        # Substituted arguments hold values: never print them.
        return f"ToolArguments(<{len(self.raw)} characters>)"

    def view(self) -> dict[str, object]:
        """Return the top-level members, parsed from :attr:`raw`.

        Raises:
            ArgumentsUnavailableError: The raw text is not a JSON object.
        """
        if self._view is None:
            try:
                parsed = json.loads(self.raw)
            except (ValueError, RecursionError) as error:
                raise ArgumentsUnavailableError(
                    "the arguments are not a readable JSON object"
                ) from error
            if not isinstance(parsed, dict):
                raise ArgumentsUnavailableError("the arguments are not a JSON object")
            self._view = parsed
        return self._view

    def get(self, key: str) -> object:
        """Return the value of a top-level member, or ``None``."""
        return self.view().get(key)

    def string(self, key: str) -> str | None:
        """Return a top-level member's value if it is a string, else ``None``."""
        value = self.get(key)
        return value if isinstance(value, str) else None


def substitute(
    parsed: ParsedArguments, resolved: Sequence[tuple[Reference, SecretValue]]
) -> ToolArguments:
    """Rewrite the argument text with every reference replaced by its value, in one pass.

    Args:
        parsed: The arguments and the string values that carry references.
        resolved: A value for every reference of ``parsed``.

    Returns:
        The arguments the handler receives.

    Raises:
        KeyError: A reference has no value; nothing is substituted.
    """
    values: Mapping[Reference, SecretValue] = dict(resolved)
    raw = parsed.raw
    pieces: list[str] = []
    last = 0
    for site in parsed.sites:
        text = site.text
        parts: list[str] = []
        cursor = 0
        for occurrence in site.occurrences:
            parts.append(text[cursor : occurrence.start])
            parts.append(values[occurrence.reference].reveal())
            cursor = occurrence.end
        parts.append(text[cursor:])
        pieces.append(raw[last : site.start])
        pieces.append(encode_string("".join(parts)))
        last = site.end
    pieces.append(raw[last:])
    return ToolArguments("".join(pieces))
