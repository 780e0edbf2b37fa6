"""Checks of the MCP wire (decisions R9): what an agent reads from a host over MCP.

They run only via MCP (``--via mcp``); on any other path each is skipped as not applicable.
References live in ``params.arguments`` only; the handler gets the agent's value; every surface
of every message is scrubbed (the ``rich`` handler fills them all, and the MCP sweep searches
them after each check); the log notifications never carry a value; the text items are capped
together; a refusal reads as the refusal message; the elicitation is the approval request and
only an approving accept runs the call, once; a client that cannot elicit is never elicited
from nor approved for; ``tools/list`` carries no value.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import pytest

from conformance.canary import Kind, Mint
from conformance.host import Answer, HandlerKind
from conformance.outcomes import accept, require
from conformance.scenario import (
    RECORDER,
    SHA256,
    RecordingHost,
    answering,
    config,
    make_secret,
    ref,
    substitute_oracle,
    tool,
)
from conformance.via import elicitations, final_message, mcp_call, mcp_host

RICH = tool("rich", HandlerKind.RICH)
OVERCAP = tool("overcap", HandlerKind.OVERCAP)

#: Filler the rich handler adds to each text item, so that its items pass the cap together.
RICH_PAD = 60_000
PADDED = tool("rich-padded", HandlerKind.RICH, pad=RICH_PAD)

#: The refusal a host with the feature off gives (decisions R2; the ordering vectors' prefix).
DISABLED_MESSAGE = "Secret references are disabled on this host"

#: The contract's result cap in characters (decisions R6.1, R9.4).
RESULT_CAP_CHARS = 150_000

#: The shortest run of a value that counts as readable (decisions R5.1).
READABLE_RUN = 8

#: A risk shown at HIGH or above, in any case: a secret-bearing call's risk is at least HIGH
#: (decisions R3.2), so CRITICAL shows it as well, and how the form spells it is the host's.
_AT_LEAST_HIGH: Final = re.compile(r"\b(?:high|critical)\b", re.IGNORECASE)


@pytest.mark.req("MCP-001", "INV1")
def test_references_only_in_arguments(host: RecordingHost, mint: Mint) -> None:
    """A marker in params._meta or in the tool name is literal: nothing is resolved."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    marker = ref(secret.id)
    mcp.call(mcp_call(RECORDER.name, {"plain": "x"}, meta={"note": marker}))
    seen = host.observe()
    require(seen.vault_reads == (), "MCP-001", "a reference in params._meta read the vault")
    require(len(seen.receipts) == 1, "MCP-001", "the reference-free call did not run once")
    require(
        json.loads(seen.receipts[0].raw) == {"plain": "x"},
        "MCP-001",
        "the handler's arguments changed because of a marker in params._meta",
    )
    named, _ = mcp.call(mcp_call(marker, {"plain": "x"}))
    kind, payload = final_message(named)
    refused = kind == "error" or payload.get("isError") is True
    require(refused, "MCP-001", "a tool named by a marker was found")
    require(host.observe().vault_reads == (), "MCP-001", "a marker as tool name read the vault")


@pytest.mark.req("MCP-002", "SUBST-005")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_handler_gets_the_agents_value(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """Over MCP the handler receives a JSON value equal to the agent's, references replaced."""
    mcp = mcp_host(host)
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    arguments = {"n": 1.5, "deep": {"list": [True, None, ref(secret.id, "username")]}, "k": "x"}
    mcp.call(mcp_call(RECORDER.name, arguments), answering(Answer.APPROVE))
    receipts = host.observe().receipts
    require(len(receipts) == 1, "MCP-002", "the handler did not run once")
    expected = substitute_oracle(arguments, {secret.id: secret})
    require(
        json.loads(receipts[0].raw) == expected,
        ("MCP-002", "SUBST-005"),
        "the handler's arguments are not the agent's value with the reference replaced",
    )


@pytest.mark.req("MCP-003", "MCP-004", "INV1")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_rich_result_is_scrubbed_on_every_surface(
    host: RecordingHost, mint: Mint, kind: Kind
) -> None:
    """The rich handler's forms on every surface reach the agent scrubbed (the sweep judges)."""
    mcp = mcp_host(host)
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret], tools=(RICH,)))
    call, _ = mcp.call(
        mcp_call(RICH.name, {"a": ref(secret.id), "b": ref(secret.id, "notes")}),
        answering(Answer.APPROVE),
    )
    kind_seen, payload = final_message(call)
    require(kind_seen == "result", "MCP-003", "the rich call did not return a result")
    require(payload.get("isError") is not True, "MCP-003", "the rich call failed")
    if not any(kind == "progress" for kind, _ in call.messages) or (
        "structuredContent" not in payload
    ):
        pytest.skip("the host's rich handler filled no progress or structuredContent surface")


@pytest.mark.req("MCP-004", "SCRUB-014", "INV1")
def test_log_notifications_hold_no_value_with_scrubbing_off(
    host: RecordingHost, mint: Mint
) -> None:
    """With result scrubbing off, MCP log notifications still carry no value (the sweep judges)."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RICH,), policy={"resultScrubbingEnabled": False}))
    call, _ = mcp.call(mcp_call(RICH.name, {"a": ref(secret.id)}), answering(Answer.APPROVE))
    require(final_message(call)[0] == "result", "MCP-004", "the rich call did not return a result")


def _text_items(payload: dict[str, Any]) -> list[str]:
    return [
        str(item.get("text", ""))
        for item in payload.get("content", ())
        if isinstance(item, dict) and item.get("type") == "text"
    ]


@pytest.mark.req("MCP-005", "CAP-001")
@pytest.mark.parametrize("handler", ["overcap", "rich-padded"])
def test_text_items_capped_together(host: RecordingHost, mint: Mint, handler: str) -> None:
    """The text items together stay within the cap, and no cut leaves a readable run."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(OVERCAP, PADDED)))
    call, _ = mcp.call(mcp_call(handler, {"a": ref(secret.id)}), answering(Answer.APPROVE))
    kind, payload = final_message(call)
    require(kind == "result", "MCP-005", f"the {handler} call did not return a result")
    texts = _text_items(payload)
    total = sum(len(text) for text in texts)
    require(
        total <= RESULT_CAP_CHARS,
        "MCP-005",
        f"the text items hold {total} characters together, over {RESULT_CAP_CHARS}",
    )
    joined = "".join(texts)
    value = secret.password
    runs = {value[i : i + READABLE_RUN] for i in range(len(value) - READABLE_RUN + 1)}
    require(
        not any(run in joined for run in runs),
        "MCP-005",
        f"a cut left {READABLE_RUN} or more characters of {secret.id}.password readable",
    )


@pytest.mark.req("MCP-006", "MCP-011")
def test_refusal_reads_as_the_refusal_message(host: RecordingHost, mint: Mint) -> None:
    """A refusal is an isError result led by the message, or a JSON-RPC error carrying it."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], policy={"secretReferencesEnabled": False}))
    call, _ = mcp.call(mcp_call(SHA256.name, {"text": ref(secret.id)}))
    kind, payload = final_message(call)
    if kind == "error":
        from conformance.hosts.mcp import error_message

        require(
            error_message(str(payload.get("message", ""))).startswith(DISABLED_MESSAGE),
            "MCP-006",
            "the JSON-RPC error's message is not the refusal message, after at most one "
            "error-code prefix",
        )
        accept("MCP-011", "jsonrpc-error")
        return
    require(kind == "result", "MCP-006", "the refused call returned nothing")
    require(payload.get("isError") is True, "MCP-006", "a refusal came back without isError")
    content = payload.get("content", [])
    first = content[0] if content and isinstance(content[0], dict) else {}
    require(
        first.get("type") == "text" and str(first.get("text", "")).startswith(DISABLED_MESSAGE),
        "MCP-006",
        "the refusal's first text item is not the refusal message",
    )
    accept("MCP-011", "result")


@pytest.mark.req("MCP-007", "APPR-005")
def test_elicitation_carries_descriptors_risk_and_arguments(
    host: RecordingHost, mint: Mint
) -> None:
    """The elicitation names the reference's descriptor, the risk and the arguments as written."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    marker = ref(secret.id)
    call, _ = mcp.call(mcp_call(SHA256.name, {"text": marker}), answering(Answer.APPROVE))
    asked = elicitations(call)
    if not asked:
        pytest.skip("the host asked its operator another way than MCP elicitation")
    text = json.dumps(asked[0], ensure_ascii=False)
    message = str(asked[0].get("message", "")) + json.dumps(asked[0].get("requestedSchema"))
    require(secret.website in message, "MCP-007", "the elicitation does not name the website")
    require(
        _AT_LEAST_HIGH.search(message.replace(secret.website, "")) is not None,
        "MCP-007",
        "the elicitation does not show a risk of HIGH or above",
    )
    require(marker in text, "MCP-007", "the elicitation does not carry the arguments as written")


_REPLIES = {
    "decline": {"action": "decline"},
    "cancel": {"action": "cancel"},
    "accept-empty": {"action": "accept", "content": {}},
    "accept-unknown": {"action": "accept", "content": {"decision": "maybe-later"}},
    "accept-deny-beside-approve": {
        "action": "accept",
        "content": {"decision": "deny", "x": "approve"},
    },
}


@pytest.mark.req("MCP-008", "INV3")
@pytest.mark.parametrize("reply", list(_REPLIES))
def test_only_an_approving_accept_runs_the_call(
    host: RecordingHost, mint: Mint, reply: str
) -> None:
    """Decline, cancel, content the form does not allow, and content whose decision is not an
    approval deny: the tool never runs. An approving decision with another member beside it is
    not sent: an MCP form's schema cannot forbid other members, so a host may read it as the
    approval it says (decisions R9.6)."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret]))
    call, before = mcp.call(mcp_call(SHA256.name, {"text": ref(secret.id)}, reply=_REPLIES[reply]))
    if not elicitations(call):
        pytest.skip("the host asked its operator another way than MCP elicitation")
    outcome = mcp.result_of(call, before)
    require(outcome.is_error, "MCP-008", f"the call ran after the reply {reply}")
    require(host.observe().receipts == (), "MCP-008", f"the tool ran after the reply {reply}")


@pytest.mark.req("MCP-008", "APPR-008")
def test_approve_runs_once_and_silence_times_out(host: RecordingHost, mint: Mint) -> None:
    """An approving accept runs the call once; no answer before the timeout is TIMEOUT."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=1.0))
    call, before = mcp.call(
        mcp_call(SHA256.name, {"text": ref(secret.id)}), answering(Answer.APPROVE)
    )
    if not elicitations(call):
        pytest.skip("the host asked its operator another way than MCP elicitation")
    outcome = mcp.result_of(call, before)
    require(not outcome.is_error, "MCP-008", f"an approved call ended {outcome.disposition}")
    require(len(host.observe().receipts) == 1, "MCP-008", "an approved call did not run once")
    silent, before = mcp.call(
        mcp_call(SHA256.name, {"text": ref(secret.id)}), answering(Answer.NONE)
    )
    ended = mcp.result_of(silent, before)
    require(ended.disposition == "TIMEOUT", "MCP-008", f"silence ended as {ended.disposition}")
    require(len(host.observe().receipts) == 1, "MCP-008", "the unanswered call ran")


#: The pending limit of the check below, and the calls it makes: one more than the limit, so
#: that a host whose refused calls keep their prompts' slots ends the last one QUEUE_FULL.
_NO_ELICIT_LIMIT: Final = 2
_NO_ELICIT_CALLS: Final = _NO_ELICIT_LIMIT + 1


@pytest.mark.req("MCP-009", "MCP-012", "APPR-009")
def test_no_elicitation_to_a_client_that_cannot(host: RecordingHost, mint: Mint) -> None:
    """A client without elicitation is never elicited from, and its call is never approved:
    each of more calls than the pending limit is refused at once or times out, and none of
    them QUEUE_FULL, since no prompt of an earlier one is still open."""
    mcp = mcp_host(host)
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=1.0, pending_limit=_NO_ELICIT_LIMIT))
    for number in range(1, _NO_ELICIT_CALLS + 1):
        call, before = mcp.call(mcp_call(SHA256.name, {"text": ref(secret.id)}), elicit=False)
        require(
            not elicitations(call),
            "MCP-009",
            "the host sent elicitation/create to a client that did not declare elicitation",
        )
        outcome = mcp.result_of(call, before)
        require(outcome.is_error, "MCP-009", f"call {number} from a client that cannot elicit ran")
        require(host.observe().receipts == (), "MCP-009", "the tool ran without an approval")
        require(
            outcome.disposition != "QUEUE_FULL",
            "APPR-009",
            f"call {number} from a client that cannot elicit ended QUEUE_FULL with no prompt "
            "of the earlier calls open",
        )
        accept("MCP-012", "timeout" if outcome.disposition == "TIMEOUT" else "deny")


@pytest.mark.req("MCP-010")
def test_tool_listing_holds_no_value(host: RecordingHost, mint: Mint) -> None:
    """tools/list names the tools and carries no value (the sweep judges the values)."""
    mcp = mcp_host(host)
    secrets_ = [make_secret(mint, kind=kind) for kind in Kind]
    host.reset(config(secrets_))
    listing = mcp.list_tools()
    names = {item.get("name") for item in listing.get("tools", ())}
    require(RECORDER.name in names, "MCP-010", "tools/list does not name the configured tools")
