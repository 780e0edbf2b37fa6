"""Checks of the grammar, substitution, the scrubber and the refusal messages at sizes and in
shapes no ordinary call reaches (decisions R1.5, R1.8, R2, R4, R5.1).

A host may keep what it reads or writes in something with room for a few: a scrubber table
bounded to the first values of a call, a value skipped as too long to be a password, a marker
scan that reads a window of the arguments, a string scanned for its first few references, a
refusal message cut to a size. It may also read arguments more leniently than RFC 8259 does:
white space that C's ``isspace`` or JavaScript's ``trim`` skip, or JSON unwrapped from a
Markdown code fence or from prose. This module runs past each such limit and sends each such
text, with a real reference to a secret the vault holds and an approving operator, so that a
host that stops early leaves a value readable, a marker in front of a tool or a list short,
and one that reads too much delivers a value where the rulings refuse the call. The counts and
characters are fixed, never drawn. Details name counts, positions and code points, never a
value.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import pytest

from conformance.canary import Kind, Mint, required_forms
from conformance.host import Answer, HandlerKind, SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    ECHO,
    RECORDER,
    THROWER,
    RecordingHost,
    answering,
    args_json,
    config,
    ids_out_of_order,
    make_secret,
    placeholder,
    ref,
    substitute_oracle,
    tool,
    value_of,
)

#: The fields of a secret; the references of a call cycle through them.
_FIELDS: Final = ("password", "username", "notes")

# --- many distinct values in one result -------------------------------------------------------

#: Distinct (secret, field) references whose values one result holds.
DISTINCT_VALUES: Final = (16, 64, 256)


@pytest.mark.req("SCRUB-001", "SCRUB-010")
@pytest.mark.parametrize("handler", ["echo", "thrower"])
@pytest.mark.parametrize("count", DISTINCT_VALUES, ids=[f"values-{n}" for n in DISTINCT_VALUES])
def test_every_value_of_many_scrubbed(
    host: RecordingHost, mint: Mint, count: int, handler: str
) -> None:
    """``count`` distinct values resolved for one call, all echoed in its result or quoted in
    its failure text: every one of them is scrubbed, the last as well as the first."""
    secrets = [make_secret(mint) for _ in range(-(-count // len(_FIELDS)))]
    pairs = [(secret.id, name) for secret in secrets for name in _FIELDS][:count]
    members = {f"r{index:03d}": ref(sid, name) for index, (sid, name) in enumerate(pairs)}
    host.reset(config(secrets, tools=(ECHO, THROWER)))
    outcome = host.invoke(ECHO.name if handler == "echo" else THROWER.name, args_json(members))
    by_id = {secret.id: secret for secret in secrets}
    left = [
        index
        for index, (sid, name) in enumerate(pairs)
        if any(form in outcome.text for form in required_forms(value_of(by_id[sid], name)).values())
    ]
    require(
        not left,
        ("SCRUB-001", "SCRUB-010"),
        f"{len(left)} of {count} values resolved for one call were not scrubbed from its "
        f"{handler} text (the first at reference {left[0] if left else '-'})",
    )


# --- long values ------------------------------------------------------------------------------

#: Code points of a long value: past 1 KiB, 4 KiB, 16 KiB and 32 KiB, and with its four forms
#: still within the 150,000-character cap.
LONG_VALUES: Final = (1_100, 4_200, 17_000, 33_000)

#: Characters of each line of a long value (a key file's width), before its line break.
_LINE: Final = 64


def _long_value(mint: Mint, size: int) -> str:
    """Return a multi-line value of ``size`` code points that never repeats a line: a canary
    with every kind of character the forms change, then lines of a hash chain seeded by it."""
    head = mint.canary(Kind.SPECIAL, "long-notes").value
    lines = [head]
    length = len(head)
    digest = hashlib.sha256(head.encode("utf-8")).hexdigest()
    while length < size:
        digest = hashlib.sha256(digest.encode("ascii")).hexdigest()
        line = (digest + digest)[:_LINE]
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)[:size]


@pytest.mark.req("SCRUB-001", "SCRUB-009")
@pytest.mark.parametrize("size", LONG_VALUES, ids=[f"chars-{n}" for n in LONG_VALUES])
def test_long_value_scrubbed(host: RecordingHost, mint: Mint, size: int) -> None:
    """A value of ``size`` code points (a key file kept in a secret's notes) is scrubbed in
    each of its four forms: the floor of 8 code points has no ceiling."""
    base = make_secret(mint)
    secret = SecretSpec(
        base.id, base.website, base.username, base.password, _long_value(mint, size)
    )
    forms = required_forms(secret.notes)
    text = "\n".join(f"{name}={form}" for name, form in forms.items())
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"key": ref(secret.id, "notes")}))
    require(not outcome.is_error, "SCRUB-001", f"the call ended {outcome.disposition}")
    kept = sorted(name for name, form in forms.items() if form in outcome.text)
    require(
        not kept,
        ("SCRUB-001", "SCRUB-009"),
        f"form(s) {', '.join(kept)} of a value of {size} code points survived scrubbing",
    )
    found = outcome.text.count(placeholder(secret.id, "notes"))
    require(
        found == len(forms),
        "SCRUB-001",
        f"{len(forms)} forms of a value of {size} code points should each be one placeholder; "
        f"the result holds {found}",
    )


# --- references far into the arguments --------------------------------------------------------

#: Characters of filler: past 64 KiB, and past 1 MiB.
_KIB_64: Final = 64 * 1024 + 512
_MIB: Final = 1024 * 1024 + 512

#: Where the reference stands: after a member of a megabyte, in the middle of a string past
#: 64 KiB, and at the end of a string past a megabyte.
FAR: Final = ("after-long-member", "inside-long-string", "end-of-huge-string")


def _far_members(where: str, reference: str) -> dict[str, str]:
    if where == "after-long-member":
        return {"content": "z" * _MIB, "key": reference}
    if where == "inside-long-string":
        return {"content": "z" * _KIB_64 + " " + reference + " " + "z" * _KIB_64}
    return {"content": "z" * _MIB + " " + reference}


@pytest.mark.req("GRAM-011", "SUBST-005")
@pytest.mark.parametrize("where", FAR)
def test_reference_far_into_the_arguments_resolved(
    host: RecordingHost, mint: Mint, where: str
) -> None:
    """A reference that stands past a megabyte of arguments, or inside a string of more than
    64 KiB, is found and replaced like any other: the tool never sees its marker."""
    secret = make_secret(mint)
    members = _far_members(where, ref(secret.id))
    host.reset(config([secret], tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        not outcome.is_error,
        "GRAM-011",
        f"a call with its reference {where} ended {outcome.disposition}",
    )
    receipts = host.observe().receipts
    require(len(receipts) == 1, "GRAM-011", f"the handler ran {len(receipts)} times, not once")
    delivered = json.loads(receipts[0].raw)
    require(
        "{{secret:" not in receipts[0].raw.lower(),
        "GRAM-011",
        f"the marker of a reference {where} reached the tool as text",
    )
    expected = substitute_oracle(members, {secret.id: secret})
    require(
        delivered == expected,
        "SUBST-005",
        f"the reference {where} was not replaced by its value",
    )


# --- many references in one string ------------------------------------------------------------

#: References in one string value.
IN_ONE_STRING: Final = (65, 256, 1_024)


@pytest.mark.req("SUBST-005", "GRAM-011")
@pytest.mark.parametrize("count", IN_ONE_STRING, ids=[f"refs-{n}" for n in IN_ONE_STRING])
def test_many_references_in_one_string_delivered(
    host: RecordingHost, mint: Mint, count: int
) -> None:
    """One string holding ``count`` references, to three fields of three secrets in turn:
    every one is replaced, the last as well as the first."""
    secrets = [make_secret(mint) for _ in range(3)]
    pairs = [(secret.id, name) for secret in secrets for name in _FIELDS]
    text = " ".join(f"{index}={ref(*pairs[index % len(pairs)])}" for index in range(count))
    members = {"line": text, "tail": ref(secrets[0].id)}
    host.reset(config(secrets, tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        not outcome.is_error,
        "SUBST-005",
        f"a string of {count} references ended {outcome.disposition}",
    )
    receipts = host.observe().receipts
    require(len(receipts) == 1, "SUBST-005", f"the handler ran {len(receipts)} times, not once")
    delivered: Any = json.loads(receipts[0].raw)
    expected = substitute_oracle(members, {secret.id: secret for secret in secrets})
    line = delivered.get("line") if isinstance(delivered, dict) else None
    if isinstance(line, str):
        markers = line.lower().count("{{secret:")
        require(
            markers == 0,
            ("SUBST-005", "GRAM-011"),
            f"{markers} of {count} references in one string reached the tool as text",
        )
    require(
        delivered == expected,
        "SUBST-005",
        f"the {count} references of one string were not each replaced by their value",
    )


# --- unknown ids past any message size --------------------------------------------------------

#: Unknown ids in one call: a refusal of some ten and forty thousand characters.
MANY_UNKNOWN: Final = (256, 1_024)


@pytest.mark.req("MSG-007", "INV2")
@pytest.mark.parametrize("count", MANY_UNKNOWN, ids=[f"unknown-{n}" for n in MANY_UNKNOWN])
def test_refusal_lists_every_unknown_id(host: RecordingHost, mint: Mint, count: int) -> None:
    """``count`` unknown ids in one call, a known one among them: the refusal names every
    unknown id, once, lower-cased, in order of first use; no size cuts the list short."""
    known = make_secret(mint)
    unknown = ids_out_of_order(count)
    members = {"known": ref(known.id)}
    for index, secret_id in enumerate(unknown):
        members[f"u{index:04d}"] = ref(secret_id.upper() if index % 2 else secret_id)
    host.reset(config([known], tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "MSG-007",
        f"a call with {count} unknown ids ended {outcome.disposition}",
    )
    expected = "no secret with id " + ", ".join(unknown)
    listed = sum(secret_id in outcome.text for secret_id in unknown)
    require(
        outcome.text.startswith(expected),
        "MSG-007",
        f"the refusal of {count} unknown ids does not begin with all of them in order "
        f"({listed} appear in its {len(outcome.text)} characters)",
    )
    require(known.id not in outcome.text, "MSG-007", "the refusal names a known id as missing")
    require(host.observe().receipts == (), "INV2", "the tool ran for a refused call")


# --- arguments that RFC 8259 does not read ----------------------------------------------------

#: Characters some parsers skip as white space that RFC 8259 does not: C's ``isspace`` (form
#: feed, vertical tab), the information separators and the Unicode spaces that Python's
#: ``str.strip``, Java's ``trim`` and JSON5 skip, and a byte-order mark inside the text (only a
#: leading one is an extension the rulings list).
NOT_WHITESPACE: Final = (
    "\f",
    "\v",
    "\x1c",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u3000",
    "\ufeff",
    "\u200b",
)

#: Where such a character goes, between the tokens of ``{"a":"R","b":[1,"x"]}``: (name, index
#: of the text before it). A leading one is included for all but the byte-order mark.
_GAPS: Final = (
    ("leading", 0),
    ("after-open", 1),
    ("after-colon", 5),
    ("before-comma", -13),
    ("before-array", -8),
    ("before-close", -1),
    ("trailing", None),
)


def _spaced(text: str, at: int | None, char: str) -> str:
    if at is None:
        return text + char
    cut = at if at >= 0 else len(text) + at
    return text[:cut] + char + text[cut:]


@pytest.mark.req("GRAM-020", "GRAM-016")
def test_whitespace_outside_rfc_8259_refused(host: RecordingHost, mint: Mint) -> None:
    """A character that a lenient parser skips as white space, where RFC 8259 allows none,
    makes the arguments invalid JSON: a real, approved reference in them is refused as
    SECRET_UNRESOLVED and no tool runs."""
    secret = make_secret(mint)
    text = '{"a":"' + ref(secret.id) + '","b":[1,"x"]}'
    host.reset(config([secret], tools=(RECORDER,)))
    for char in NOT_WHITESPACE:
        for gap, at in _GAPS:
            if char == "\ufeff" and gap == "leading":
                continue  # a leading byte-order mark is an extension: refused or resolved
            outcome = host.invoke(RECORDER.name, _spaced(text, at, char), answering(Answer.APPROVE))
            require(
                outcome.disposition == "SECRET_UNRESOLVED",
                ("GRAM-020", "GRAM-016"),
                f"U+{ord(char):04X} {gap} in arguments carrying a reference ended "
                f"{outcome.disposition}, not SECRET_UNRESOLVED",
            )
    require(
        host.observe().receipts == (),
        ("GRAM-020", "GRAM-016"),
        "arguments with white space RFC 8259 does not allow reached a tool",
    )


#: Arguments wrapped the ways a model writes them: ``{J}`` is a valid JSON object carrying a
#: reference.
WRAPPED: Final = {
    "fence-json": "```json\n{J}\n```",
    "fence-bare": "```\n{J}\n```",
    "fence-inline": "`{J}`",
    "prose-before": "Arguments: {J}",
    "stray-before": "x{J}",
    "quoted": "'{J}'",
    "angle": "<{J}>",
}


@pytest.mark.req("GRAM-016")
@pytest.mark.parametrize("wrapping", list(WRAPPED))
def test_wrapped_arguments_refused(host: RecordingHost, mint: Mint, wrapping: str) -> None:
    """A JSON object inside a Markdown code fence, after prose or a stray character, or in
    quotes, is not a JSON object: a real, approved reference in it is refused as
    SECRET_UNRESOLVED and no tool runs."""
    secret = make_secret(mint)
    inner = args_json({"a": ref(secret.id), "b": [1, "x"]})
    text = WRAPPED[wrapping].replace("{J}", inner)
    host.reset(config([secret], tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, text, answering(Answer.APPROVE))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "GRAM-016",
        f"arguments wrapped as {wrapping} ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    require(
        host.observe().receipts == (),
        "GRAM-016",
        f"arguments wrapped as {wrapping} reached a tool",
    )
