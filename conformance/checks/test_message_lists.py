"""Checks that a resolution refusal names the right secrets among many (decisions R2).

This module owns the words a refusal gives when a call carries several references: the
AI-provider refusal names the tagged secret wherever it stands among the others and whichever
of its fields was asked for, the unknown-id refusal lists every missing id however many there
are, and the empty-field refusal names the field that is empty, not another field of the same
secret asked for earlier. The other message checks used one or two references, so a host that
named the first secret, cut a long list short, or named the first field asked passed them. It
prints ids and counts, never a value.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import Mint
from conformance.outcomes import require
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ids_out_of_order,
    make_secret,
    ref,
)

#: The tag that makes a secret an AI provider's key (decisions R2: the tag is exactly this).
_AI_TAG: Final = "ai-provider"

#: How many untagged secrets the AI-provider check references around the tagged one.
_PLAIN_SECRETS: Final = 3

#: Where the tagged secret's reference stands among the call's references.
_POSITIONS: Final = (1, 2, 3)

#: How many unknown ids the list check uses: past any short list a host might cut to.
_UNKNOWN_COUNTS: Final = (4, 16, 64)


@pytest.mark.req("MSG-011")
@pytest.mark.parametrize("field_name", ["password", "username", "notes"])
@pytest.mark.parametrize("position", _POSITIONS)
def test_ai_provider_refusal_names_the_tagged_secret(
    host: RecordingHost, mint: Mint, position: int, field_name: str
) -> None:
    """A call whose references include any field of an AI-provider key, not first among
    them, is refused as SECRET_FORBIDDEN with a message that begins with that secret's id."""
    plain = [make_secret(mint) for _ in range(_PLAIN_SECRETS)]
    tagged = make_secret(mint, tags=(_AI_TAG,))
    host.reset(config([*plain, tagged], tools=(RECORDER,)))
    refs = [ref(secret.id) for secret in plain]
    refs.insert(position, ref(tagged.id, field_name))
    outcome = host.invoke(RECORDER.name, args_json({f"a{i}": text for i, text in enumerate(refs)}))
    require(
        outcome.disposition == "SECRET_FORBIDDEN",
        "MSG-011",
        f"a call with the .{field_name} of an AI-provider key at reference {position + 1} ended "
        f"{outcome.disposition}, not SECRET_FORBIDDEN",
    )
    expected = f"secret {tagged.id.lower()} is an AI provider key"
    require(
        outcome.text.startswith(expected),
        "MSG-011",
        f"the AI-provider refusal (key at reference {position + 1} of {len(refs)}) does not "
        f"begin with the words naming the tagged secret {tagged.id}",
    )
    require(not host.observe().receipts, "MSG-011", "a call with an AI-provider key ran")


@pytest.mark.req("MSG-007")
@pytest.mark.parametrize("count", _UNKNOWN_COUNTS)
def test_unknown_id_refusal_lists_every_id(host: RecordingHost, mint: Mint, count: int) -> None:
    """Every unknown id of a call is named, lower-cased, once, in order of first use, however
    many there are: a known secret among them, ids repeated and upper-cased, and the order
    chosen so that a host that sorted them would be seen."""
    known = make_secret(mint)
    host.reset(config([known], tools=(RECORDER,)))
    unknown = ids_out_of_order(count)
    members = {"known": ref(known.id)}
    for index, secret_id in enumerate(unknown):
        # Every other id is spelled in upper case, and every third used twice.
        spelled = secret_id.upper() if index % 2 else secret_id
        members[f"u{index}"] = "v=" + ref(spelled, "notes" if index % 3 == 1 else None)
        if index % 3 == 0:
            members[f"r{index}"] = ref(spelled, "username")
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "MSG-007",
        f"a call with {count} unknown ids ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    expected = "no secret with id " + ", ".join(secret_id.lower() for secret_id in unknown)
    if not outcome.text.startswith(expected):
        listed = sum(secret_id.lower() in outcome.text for secret_id in unknown)
        require(
            False,
            "MSG-007",
            f"the refusal of {count} unknown ids does not begin with all of them in order of "
            f"first use ({listed} of them appear in it)",
        )


@pytest.mark.req("MSG-008")
@pytest.mark.parametrize("earlier", [("password",), ("username",), ("password", "username")])
def test_empty_field_refusal_names_the_empty_field(
    host: RecordingHost, mint: Mint, earlier: tuple[str, ...]
) -> None:
    """A secret asked for its empty notes, after a field of it that has a value, is refused
    naming the notes, not the field asked for first."""
    full = make_secret(mint)
    bare = make_secret(mint, notes=False)
    host.reset(config([full, bare], tools=(RECORDER,)))
    members = {"full": ref(full.id)}
    members.update({f"e{i}": ref(bare.id, name) for i, name in enumerate(earlier)})
    members["empty"] = "n=" + ref(bare.id, "notes")
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "MSG-008",
        f"a call asking for empty notes ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    require(
        outcome.text.startswith(f"secret {bare.id.lower()} has no notes"),
        "MSG-008",
        f"the refusal of empty notes, asked after the {' and '.join(earlier)} of the same "
        "secret, does not begin by naming that secret's notes",
    )
