"""Checks of the MCP wire that the first R9 checks left open (decisions R9.3, R9.6).

They run only via MCP (``--via mcp``); on any other path each is skipped as not applicable. An
elicitation answer is a deny unless it is an ``accept`` whose content the form allows and that
says approve: a decline or cancel that still carries approving content, and an approving option
spelled in another case, with a trailing space or as text where the form wants a boolean, run
nothing; a decline or a cancel ends the call DENIED at once, never TIMEOUT. The elicitation
names every reference by its full descriptor and shows the arguments whole, a reference after a
long member included. A call that needs approval from a client that cannot elicit is refused
even when it carries no reference. A client that asks for debug logging (``logging/setLevel``)
gets no value in a log notification, even with result scrubbing off. Nothing here prints a
value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint, strings
from conformance.host import Answer, SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    ECHO,
    RECORDER,
    SHA256,
    RecordingHost,
    answering,
    config,
    make_secret,
    ref,
)
from conformance.via import elicitations, mcp_call, mcp_host

#: Filler before the last reference of a long argument object: well past what a dialog shows at
#: a glance, well within the argument bound of decisions R4.
LONG_MEMBER_CHARS: Final = 3_000

#: The approval timeout of the checks whose calls may be left to time out (decisions R9.6
#: allows a deny or TIMEOUT for a client that cannot elicit).
SHORT_APPROVAL_S: Final = 2.0


def _request_texts(elicitation: Mapping[str, Any]) -> list[str]:
    """The texts of an elicitation that R9.6 takes together as the approval request."""
    schema = elicitation.get("requestedSchema")
    return [str(elicitation.get("message", "")), *(text for _, text in strings(schema, ""))]


def _shown(texts: list[str], wanted: str) -> bool:
    return any(wanted in text for text in texts)


# --- MCP-008: only an approving accept the form allows runs the call ----------------------------


def _misspelled(option: str, options: set[object]) -> dict[str, str]:
    """Spellings of an approving option that the form does not allow."""
    spellings = {"other-case": option.upper() if option.upper() != option else option.lower()}
    spellings["trailing-space"] = option + " "
    return {name: text for name, text in spellings.items() if text not in options}


def _unallowed_replies(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Replies that say approve in content the form does not allow, or with another action."""
    from conformance.hosts.mcp import elicit_content, form_choices

    content = elicit_content(schema, Answer.APPROVE)
    if content is None:
        return {}
    replies: dict[str, dict[str, Any]] = {
        "decline-with-approval": {"action": "decline", "content": content},
        "cancel-with-approval": {"action": "cancel", "content": content},
    }
    ((field, option),) = content.items()
    spec = schema.get("properties", {}).get(field, {})
    if isinstance(option, bool):
        replies["boolean-as-text"] = {"action": "accept", "content": {field: "true"}}
    elif isinstance(option, str):
        choices = form_choices(spec) if isinstance(spec, Mapping) else None
        allowed = {choice for choice, _words in choices or ()}
        for name, text in _misspelled(option, allowed).items():
            replies[name] = {"action": "accept", "content": {field: text}}
    return replies


_REPLY_KINDS: Final = (
    "decline-with-approval",
    "cancel-with-approval",
    "other-case",
    "trailing-space",
    "boolean-as-text",
)


@pytest.mark.req("MCP-008", "INV3")
@pytest.mark.parametrize("reply", _REPLY_KINDS)
def test_elicited_approval_outside_the_form_denies(
    host: RecordingHost, mint: Mint, reply: str
) -> None:
    """A decline or cancel carrying approving content, and an approving option the form's enum
    does not list (another case, a trailing space, a boolean sent as text), run nothing."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    arguments = {"text": ref(secret.id)}
    probe, _ = mcp.call(mcp_call(SHA256.name, arguments), answering(Answer.DENY))
    asked = elicitations(probe)
    if not asked:
        pytest.skip("the host asked its operator another way than MCP elicitation")
    replies = _unallowed_replies(asked[0].get("requestedSchema") or {})
    if reply not in replies:
        pytest.skip(f"not applicable: the host's form has no field a {reply} reply can fill")
    host.reset(config([secret]))
    call, before = mcp.call(mcp_call(SHA256.name, arguments, reply=replies[reply]))
    if not elicitations(call):
        pytest.skip("the host did not elicit the second time")
    outcome = mcp.result_of(call, before)
    require(outcome.is_error, "MCP-008", f"the call ran after the reply {reply}")
    require(host.observe().receipts == (), "MCP-008", f"the tool ran after the reply {reply}")


_DENIALS: Final = {
    "decline": {"action": "decline"},
    "cancel": {"action": "cancel"},
}


@pytest.mark.req("MCP-008", "APPR-010")
@pytest.mark.parametrize("reply", list(_DENIALS))
def test_denying_reply_ends_denied(host: RecordingHost, mint: Mint, reply: str) -> None:
    """Decline and cancel are the operator's deny, given at once: the call ends DENIED, never
    TIMEOUT (no answer) nor another disposition."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    call, before = mcp.call(mcp_call(SHA256.name, {"text": ref(secret.id)}, reply=_DENIALS[reply]))
    if not elicitations(call):
        pytest.skip("the host asked its operator another way than MCP elicitation")
    outcome = mcp.result_of(call, before)
    require(
        outcome.disposition == "DENIED",
        ("MCP-008", "APPR-010"),
        f"the reply {reply} ended the call {outcome.disposition}, not DENIED",
    )


# --- MCP-007: the elicitation names every descriptor and shows the arguments whole -------------


def _descriptor(secret: SecretSpec, field: str) -> str:
    return f"{secret.website} ({secret.username}) - {field}"


@pytest.mark.req("MCP-007", "APPR-002")
def test_elicitation_names_every_descriptor(host: RecordingHost, mint: Mint) -> None:
    """Each reference's full descriptor, '<website> (<username>) - <field>', is in the
    elicitation's message or requested schema, for every reference of the call."""
    mcp = mcp_host(host)
    first, second = make_secret(mint), make_secret(mint)
    host.reset(config([first, second]))
    arguments = {
        "a": ref(first.id),
        "b": ref(first.id, "notes"),
        "c": ref(second.id, "username"),
    }
    call, _ = mcp.call(mcp_call(SHA256.name, arguments), answering(Answer.DENY))
    asked = elicitations(call)
    if not asked:
        pytest.skip("the host asked its operator another way than MCP elicitation")
    texts = _request_texts(asked[0])
    wanted = {
        "first secret's password": _descriptor(first, "password"),
        "first secret's notes": _descriptor(first, "notes"),
        "second secret's username": _descriptor(second, "username"),
    }
    missing = [label for label, descriptor in wanted.items() if not _shown(texts, descriptor)]
    require(
        not missing,
        ("MCP-007", "APPR-002"),
        "the elicitation does not name the full descriptor of the reference to the "
        + ", ".join(missing),
    )


@pytest.mark.req("MCP-007", "APPR-004")
def test_elicitation_shows_arguments_whole(host: RecordingHost, mint: Mint) -> None:
    """A reference after a long member is still in the elicitation: the arguments are shown
    as the agent wrote them, not cut to a head."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    early, late = ref(secret.id, "username"), ref(secret.id)
    arguments = {"to": early, "body": "x" * LONG_MEMBER_CHARS, "auth": late}
    call, _ = mcp.call(mcp_call(SHA256.name, arguments), answering(Answer.DENY))
    asked = elicitations(call)
    if not asked:
        pytest.skip("the host asked its operator another way than MCP elicitation")
    texts = _request_texts(asked[0])
    require(
        _shown(texts, early) and _shown(texts, late),
        ("MCP-007", "APPR-004"),
        f"the elicitation does not show the arguments whole: the reference after "
        f"{LONG_MEMBER_CHARS} characters is missing",
    )


# --- MCP-009: a client that cannot elicit is never approved for, references or not -------------


@pytest.mark.req("MCP-009")
def test_plain_ask_call_from_a_client_that_cannot_elicit(host: RecordingHost, mint: Mint) -> None:
    """A reference-free call whose tool rule is ASK, from a client without elicitation, is
    refused (at once or after the timeout): nobody approved it."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            policy={"tools": {RECORDER.name: "ASK"}},
            approval_timeout_s=SHORT_APPROVAL_S,
        )
    )
    call, before = mcp.call(mcp_call(RECORDER.name, {"plain": "x"}), elicit=False)
    require(
        not elicitations(call),
        "MCP-009",
        "the host sent elicitation/create to a client that did not declare elicitation",
    )
    outcome = mcp.result_of(call, before)
    require(
        outcome.is_error,
        "MCP-009",
        f"an ASK call from a client that cannot elicit ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), "MCP-009", "the tool ran without an approval")


# --- MCP-004: debug logging asked for by the client carries no value -----------------------------


@pytest.mark.req("MCP-004", "SCRUB-014", "INV1")
def test_debug_logging_holds_no_value(host: RecordingHost, mint: Mint) -> None:
    """With result scrubbing off and the client asking for debug logging, the log
    notifications still carry no value (the sweep judges)."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(ECHO,), policy={"resultScrubbingEnabled": False}))
    if not mcp.set_log_level("debug"):
        pytest.skip("not applicable: the host does not take logging/setLevel")
    try:
        call, before = mcp.call(
            mcp_call(ECHO.name, {"k": ref(secret.id)}), answering(Answer.APPROVE)
        )
        outcome = mcp.result_of(call, before)
    finally:
        mcp.set_log_level("info")
    require(not outcome.is_error, "MCP-004", f"the echo call ended {outcome.disposition}")
