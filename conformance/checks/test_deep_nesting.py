"""Checks that a host fails closed on arguments nested deeper than it parses (decisions R1.9).

This module owns the depth of the argument tree. A host may stop reading at some depth, but a
call it did not read to the bottom must never run with a reference left in it as plain text:
a marker below the limit either resolves, or refuses the call as SECRET_UNRESOLVED, and a call
with no marker at all reaches its tool byte for byte however deep it goes. A limit below 64
levels is only a SHOULD. The other grammar checks nest a few levels at most, so a host that
skipped strings past some depth passed them. It never prints a value.
"""

from __future__ import annotations

import json
import re
from typing import Final

import pytest

from conformance.canary import Mint
from conformance.host import CallResult, SecretSpec
from conformance.outcomes import require, should
from conformance.scenario import RECORDER, RecordingHost, config, make_secret, ref
from conformance.via import INPROCESS, same_arguments, via_mcp

#: The depths the fail-closed checks nest a string at, counting every array and object around
#: it, the argument object included: past 64 (the ruling's floor for a limit), and far past it.
_DEEP: Final = (65, 100, 256, 1000)

#: The depth a host SHOULD still read to the bottom (decisions R1.9: a limit below 64 levels
#: is non-strict).
_FLOOR: Final = 64

#: A candidate whose body is not a reference: refused wherever it is read.
_MALFORMED: Final = "{{secret:not-a-uuid}}"

#: One JSON string in raw text: its body, escapes undecoded.
_STRING_RE: Final = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)


#: Why a check that reads a deep call's receipt runs in process only.
_RECEIPT_TOO_DEEP: Final = (
    "not applicable: the driver protocol and the MCP wire carry JSON nested at most 64 levels "
    "(docs/driver-protocol.md), so a receipt of this call cannot reach the suite"
)


#: Why the malformed-candidate check does not run over MCP.
_ARGUMENTS_TOO_DEEP: Final = (
    "not applicable: over MCP the arguments travel as a JSON object, and the MCP SDK's "
    "serializer refuses one nested this deep before the host sees it"
)


def _receipts_readable(host: RecordingHost) -> None:
    """Skip unless a receipt nested past 64 levels can reach the suite: in process only."""
    if host.path != INPROCESS:
        pytest.skip(_RECEIPT_TOO_DEEP)


def _nest(depth: int, leaf: str) -> str:
    """Return an argument object holding ``leaf`` as the one string ``depth`` containers deep,
    arrays and objects alternating below the argument object."""
    text = json.dumps(leaf)
    for level in range(depth - 1):
        text = "[" + text + "]" if level % 2 == 0 else '{"k":' + text + "}"
    return '{"x":' + text + "}"


def _leaf(raw: str) -> str | None:
    """Return the one string value in ``raw`` as :func:`_nest` built it, or ``None``.

    Read with a scanner, not a JSON decoder, which would run out of stack a thousand levels
    down: every other string in the tree is a member name, followed by a colon.
    """
    values = [
        match.group(1)
        for match in _STRING_RE.finditer(raw)
        if not raw[match.end() :].lstrip(" \t\n\r").startswith(":")
    ]
    if len(values) != 1:
        return None
    decoded = json.loads('"' + values[0] + '"')
    return decoded if isinstance(decoded, str) else None


def _deep_reference(host: RecordingHost, secret: SecretSpec, depth: int) -> CallResult:
    """Send one valid reference ``depth`` deep; fail unless it resolved or was refused as
    SECRET_UNRESOLVED, and never reached the tool as text. Return the call's outcome."""
    outcome = host.invoke(RECORDER.name, _nest(depth, "p=" + ref(secret.id) + ";"))
    receipts = host.observe().receipts
    if outcome.disposition == "SECRET_UNRESOLVED":
        require(not receipts, "GRAM-041", f"a call refused at depth {depth} reached its tool")
        return outcome
    require(
        len(receipts) == 1,
        "GRAM-041",
        f"a reference {depth} deep ended {outcome.disposition} with {len(receipts)} tool "
        "calls, neither resolved nor refused as SECRET_UNRESOLVED",
    )
    delivered = _leaf(receipts[0].raw)
    require(
        delivered == "p=" + secret.password + ";",
        "GRAM-041",
        f"a reference {depth} deep reached the tool "
        + (
            "as its literal text, unresolved"
            if isinstance(delivered, str) and "{{secret:" in delivered
            else "with other text than its value"
        ),
    )
    return outcome


@pytest.mark.req("GRAM-041", "GRAM-011")
@pytest.mark.parametrize("depth", _DEEP)
def test_deep_reference_never_runs_unread(host: RecordingHost, mint: Mint, depth: int) -> None:
    """A valid reference nested past 64 levels is resolved or refused as SECRET_UNRESOLVED; it
    never reaches the tool as its own text."""
    _receipts_readable(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    _deep_reference(host, secret, depth)


@pytest.mark.req("GRAM-041", "GRAM-008")
@pytest.mark.parametrize("depth", _DEEP)
def test_deep_malformed_candidate_refused(host: RecordingHost, mint: Mint, depth: int) -> None:
    """A malformed candidate nested past 64 levels refuses the call as SECRET_UNRESOLVED,
    whether the host read that deep or stopped short of it, and the tool never runs."""
    if via_mcp(host):
        pytest.skip(_ARGUMENTS_TOO_DEEP)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, _nest(depth, "a " + _MALFORMED + " b"))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "GRAM-041",
        f"a malformed candidate {depth} deep ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    require(
        not host.observe().receipts,
        "GRAM-041",
        f"a call with a malformed candidate {depth} deep reached its tool",
    )


@pytest.mark.req("GRAM-041", "INV5")
@pytest.mark.parametrize("depth", _DEEP)
def test_deep_markerless_call_untouched(host: RecordingHost, mint: Mint, depth: int) -> None:
    """A call with no marker reaches its tool byte for byte however deep it nests."""
    _receipts_readable(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    args = _nest(depth, "secret: {{ not a marker }}")
    outcome = host.invoke(RECORDER.name, args)
    receipts = host.observe().receipts
    require(
        len(receipts) == 1,
        "GRAM-041",
        f"a call without a marker {depth} deep ended {outcome.disposition} without running",
    )
    require(
        same_arguments(host, receipts[0].raw, args),
        ("GRAM-041", "INV5"),
        f"a call without a marker {depth} deep did not reach its tool byte for byte",
    )


@pytest.mark.req("GRAM-042", "GRAM-041")
def test_reference_resolved_at_depth_64(host: RecordingHost, mint: Mint) -> None:
    """A valid reference 64 levels deep resolves: a host's depth limit, if any, is not below
    64 (a SHOULD; refusing it there is reported, never failed)."""
    _receipts_readable(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    outcome = _deep_reference(host, secret, _FLOOR)
    should(
        outcome.disposition != "SECRET_UNRESOLVED",
        "GRAM-042",
        f"a valid reference {_FLOOR} deep was refused: the host's depth limit is below 64",
    )
