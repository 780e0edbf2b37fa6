"""Checks of stray characters where JSON puts its separators (decisions R1.8).

This module owns arguments that are a JSON object but for one character at a separator's
place: a member's comma, an item's comma, a colon, a closing bracket or brace, or just after
the last one. Each carries a real reference to a secret the vault holds, and the operator
approves, so a host whose parser takes a stray character for the separator it stands in for
resolves the call and delivers the value to a tool, where R1.8 refuses it as
SECRET_UNRESOLVED. The characters are fixed, not drawn: those next to each separator in code
point order (so that a comparison turned into ``<=`` or ``>=`` is caught on both sides), each
separator at another's place, and a few others. It also cuts arguments longer than 256
characters where JSON expects more. It never prints a value.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer
from conformance.outcomes import require
from conformance.scenario import RECORDER, RecordingHost, answering, config, make_secret, ref

#: The valid template: ``{R}`` is the reference; each position names one separator in it.
_TEMPLATE: Final = '{{"a":"{R}","b":[1,"x"],"c":{{"d":2}}}}'

#: Where a stray character goes: (name, the text before it, the text it replaces).
POSITIONS: Final = (
    ("member-comma", '{"a":"{R}"', ","),
    ("after-member", '{"a":"{R}"', ""),
    ("colon", '{"a"', ":"),
    ("item-comma", '{"a":"{R}","b":[1', ","),
    ("array-close", '{"a":"{R}","b":[1,"x"', "]"),
    ("object-close", '{"a":"{R}","b":[1,"x"],"c":{"d":2', "}"),
    ("after-end", '{"a":"{R}","b":[1,"x"],"c":{"d":2}}', ""),
)

#: The stray characters: each separator's neighbours in code point order, every separator,
#: and a few that a lenient parser might skip. None is JSON whitespace, so every text is
#: invalid JSON.
STRAY: Final = tuple(
    sorted(
        {chr(ord(s) + d) for s in ",:]}" for d in (-1, 1)}
        | set(",:]}[{")
        | set("x#/.'\"\x00\u00a0")
    )
)


def _stray_texts(reference: str, before: str, replaced: str) -> list[tuple[str, str]]:
    """Every text of one position: (the stray character's code point, the arguments)."""
    text = _TEMPLATE.replace("{{", "\0").replace("}}", "\1").replace("{R}", reference)
    text = text.replace("\0", "{").replace("\1", "}")
    head = before.replace("{R}", reference)
    if not text[len(head) :].startswith(replaced) or not text.startswith(head):
        raise ValueError(f"the position {before!r} is not in the template")
    tail = text[len(head) + len(replaced) :]
    return [(f"U+{ord(c):04X}", head + c + tail) for c in STRAY if c != replaced]


@pytest.mark.req("GRAM-016")
@pytest.mark.parametrize(
    ("position", "before", "replaced"), POSITIONS, ids=[p[0] for p in POSITIONS]
)
def test_stray_separator_refused(
    host: RecordingHost, mint: Mint, position: str, before: str, replaced: str
) -> None:
    """A stray character at a separator's place makes the arguments invalid JSON: a real,
    approved reference in them is refused as SECRET_UNRESOLVED and no tool runs."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    for code, text in _stray_texts(ref(secret.id), before, replaced):
        outcome = host.invoke(RECORDER.name, text, answering(Answer.APPROVE))
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            "GRAM-016",
            f"with {code} at the {position} place, invalid JSON carrying a reference ended "
            f"{outcome.disposition}",
        )
    require(
        host.observe().receipts == (),
        "GRAM-016",
        f"invalid JSON with a stray character at the {position} place reached its tool",
    )


#: Filler that puts every place a long text is cut past 256 characters, where a comparison of
#: positions by identity (``is not``) stops agreeing with one by value in CPython.
_PAD: Final = "p" * 300

#: Long arguments cut where JSON expects more: a value, a key, an item, a closing brace.
CUTS: Final = {
    "value": '{"a":"{R}","pad":"' + _PAD + '","b":',
    "key": '{"a":"{R}","pad":"' + _PAD + '",',
    "item": '{"a":"{R}","pad":["' + _PAD + '",',
    "close": '{"a":"{R}","pad":"' + _PAD + '"',
}


@pytest.mark.req("GRAM-016")
@pytest.mark.parametrize("cut", list(CUTS))
def test_long_arguments_cut_short_refused(host: RecordingHost, mint: Mint, cut: str) -> None:
    """Arguments longer than 256 characters that end where JSON expects more are invalid
    JSON: a real, approved reference in them is refused as SECRET_UNRESOLVED, no tool runs."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    text = CUTS[cut].replace("{R}", ref(secret.id))
    outcome = host.invoke(RECORDER.name, text, answering(Answer.APPROVE))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "GRAM-016",
        f"{len(text)} characters of arguments cut at a {cut} ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), "GRAM-016", f"arguments cut at a {cut} reached a tool")
