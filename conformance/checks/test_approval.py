"""Checks of approval semantics (decisions R3.1, R3.2, R3.3, R3.5; design invariant 3).

Every resolved secret-bearing call prompts, whatever rule, trust or YOLO says; the request
names each reference by descriptor, raises risk to HIGH, carries the arguments as written and
no value; a broad answer runs the call once and grants nothing; an unanswered prompt times out;
a prompt beyond the pending limit is QUEUE_FULL; a denial is DENIED. In none of these refused
cases is the tool called.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from conformance.canary import Kind, Mint
from conformance.host import Answer, Control, HandlerKind
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    HeldOperator,
    RecordingHost,
    acting,
    answering,
    args_json,
    config,
    ids_out_of_order,
    judge_free_call_after_broad_answer,
    ledger_records,
    make_secret,
    name_of,
    ref,
    tool,
)

_ALLOWING_POLICIES: dict[str, Mapping[str, Any]] = {
    "tool-allow": {"tools": {RECORDER.name: "ALLOW"}},
    "provider-allow": {"providers": {PROVIDER: "ALLOW"}},
    "default-allow": {"defaultRule": "ALLOW"},
    "yolo": {"yolo": True},
}


@pytest.mark.req("APPR-001", "INV3")
@pytest.mark.parametrize("policy", list(_ALLOWING_POLICIES))
def test_allowing_policy_never_answers_a_secret_call(
    host: RecordingHost, mint: Mint, policy: str
) -> None:
    """A tool, provider or default ALLOW, or YOLO, never runs a secret-bearing call unasked."""
    secret = make_secret(mint)
    host.reset(config([secret], policy=_ALLOWING_POLICIES[policy]))
    free = host.invoke(RECORDER.name, args_json({"x": "plain"}))
    if free.disposition == "POLICY_DENIED":
        pytest.skip(f"the host does not accept the {policy} policy field")
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    seen = host.observe()
    prompts = [r for r in seen.approval_requests if r.get("secretRefs")]
    require(len(prompts) == 1, ("APPR-001", "INV3"), f"{policy} let a secret call run unasked")
    require(not outcome.is_error, "APPR-001", f"the approved call ended {outcome.disposition}")


_GRANTS: dict[str, Callable[[Control], None]] = {
    "session-trust": lambda control: control.trust_session(RECORDER.name),
    "yolo": lambda control: control.set_yolo(True),
    "saved-allow": lambda control: control.save_rule("tool", RECORDER.name, "ALLOW"),
    "provider-allow": lambda control: control.save_rule("provider", PROVIDER, "ALLOW"),
}


@pytest.mark.req("APPR-001", "INV3")
@pytest.mark.parametrize("grant", list(_GRANTS))
def test_granted_trust_never_answers_a_secret_call(
    host: RecordingHost, mint: Mint, grant: str
) -> None:
    """Trust granted at run time (session, YOLO, saved ALLOW) never skips the secret prompt."""
    host.need("control.trust-session", "control.set-yolo", "control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(RECORDER.name, args_json({"x": "plain"}), acting(_GRANTS[grant]))
    before = len(host.observe().approval_requests)
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    after = host.observe().approval_requests
    require(
        len(after) == before + 1 and bool(after[-1].get("secretRefs")),
        ("APPR-001", "INV3"),
        f"{grant} let a secret-bearing call run without a prompt",
    )
    require(not outcome.is_error, "APPR-001", f"the approved call ended {outcome.disposition}")


@pytest.mark.req("APPR-002", "APPR-011", "APPR-005")
@pytest.mark.parametrize("field_name", ["password", "username", "notes"])
def test_request_descriptors(host: RecordingHost, mint: Mint, field_name: str) -> None:
    """The request has one '<website> (<username>) - <field>' per reference, in order of use."""
    # ``second`` is used first and its id sorts after ``first``'s, so that a host that sorts the
    # descriptors or the names by id is caught on every run.
    high, low = ids_out_of_order(2)
    first, second = (
        make_secret(mint, secret_id=low),
        make_secret(mint, kind=Kind.SPACED, secret_id=high),
    )
    host.reset(config([first, second]))
    args = args_json(
        {"b": ref(second.id, field_name), "a": ref(first.id), "b2": ref(second.id, field_name)}
    )
    host.invoke(RECORDER.name, args)
    requests = host.observe().approval_requests
    require(len(requests) == 1, "APPR-001", f"{len(requests)} prompts for one call")
    request = requests[0]
    expected = [
        f"{second.website} ({second.username}) - {field_name}",
        f"{first.website} ({first.username}) - password",
    ]
    require(
        list(request.get("descriptors", ())) == expected,
        "APPR-002",
        "the descriptors are not one '<website> (<username>) - <field>' per reference",
    )
    require(
        list(request.get("secretRefs", ())) == [name_of(second.id, field_name), name_of(first.id)],
        "APPR-011",
        "the request does not carry the reference names in order of first use",
    )
    require(
        request.get("tool") == RECORDER.name and request.get("provider") == PROVIDER,
        "APPR-011",
        "the request does not carry its tool and provider",
    )
    require("stamp" in request, "APPR-011", "the request carries no revocation stamp")


#: What an approval is bound to beyond its references: the tool's and the provider's rules.
_BOUND_TO = {"tool": RECORDER.name, "provider": PROVIDER}


@pytest.mark.req("APPR-011")
@pytest.mark.parametrize("kind", list(_BOUND_TO))
def test_approval_bound_to_tool_and_provider(host: RecordingHost, mint: Mint, kind: str) -> None:
    """An approval does not hold once the tool's or the provider's rule is revoked under it."""
    host.need("control.save-rule", "control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))

    def change(control: Control) -> None:
        control.save_rule(kind, _BOUND_TO[kind], "ALLOW")
        control.revoke(kind, _BOUND_TO[kind])

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(change))
    require(
        outcome.is_error and host.observe().receipts == (),
        "APPR-011",
        f"the approval held after the {kind}'s rule was revoked while the prompt was open",
    )


@pytest.mark.req("APPR-003")
@pytest.mark.parametrize("risk", ["LOW", "MEDIUM", "HIGH", "CRITICAL"])
def test_request_risk_at_least_high(host: RecordingHost, mint: Mint, risk: str) -> None:
    """A secret-bearing call's request has risk HIGH or above, whatever the tool's own risk."""
    secret = make_secret(mint)
    risky = tool("risky", HandlerKind.RECORDER, risk=risk)
    host.reset(config([secret], tools=(risky,)))
    host.invoke(risky.name, args_json({"x": ref(secret.id)}))
    requests = host.observe().approval_requests
    require(len(requests) == 1, "APPR-001", "the call did not prompt once")
    shown = str(requests[0].get("risk"))
    require(shown in ("HIGH", "CRITICAL"), "APPR-003", f"risk {shown} is below HIGH")
    if risk == "CRITICAL":
        require(shown == "CRITICAL", "APPR-003", "a CRITICAL tool's risk was lowered")


@pytest.mark.req("APPR-004")
def test_request_carries_arguments_as_written(host: RecordingHost, mint: Mint) -> None:
    """The request's arguments are the agent's, references intact, no value substituted."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = '{ "url": "https://x.example/?k=' + ref(secret.id.upper()) + '", "n": 1.50 }'
    host.invoke(RECORDER.name, args)
    requests = host.observe().approval_requests
    require(len(requests) == 1, "APPR-001", "the call did not prompt once")
    shown = requests[0].get("arguments")
    text = shown if isinstance(shown, str) else json.dumps(shown)
    require(
        ref(secret.id.upper()) in text,
        "APPR-004",
        "the request's arguments do not keep the reference as the agent wrote it",
    )
    if isinstance(shown, str):
        require(
            json.loads(shown) == json.loads(args),
            "APPR-004",
            "the request's arguments differ from what the agent wrote",
        )


@pytest.mark.req("APPR-005")
def test_username_only_in_its_descriptor(host: RecordingHost, mint: Mint) -> None:
    """A .username value may show in its descriptor and nowhere else in the request."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(RECORDER.name, args_json({"user": ref(secret.id, "username")}))
    request = host.observe().approval_requests[0]
    rest = {key: item for key, item in request.items() if key != "descriptors"}
    require(
        secret.username not in json.dumps(rest, ensure_ascii=False),
        "APPR-005",
        "the username value appears in the request outside its descriptor",
    )


_BROAD = [Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION]


@pytest.mark.req("APPR-006", "APPR-001", "APPR-007")
@pytest.mark.parametrize("answer", _BROAD, ids=[answer.value for answer in _BROAD])
def test_broad_answer_runs_once(host: RecordingHost, mint: Mint, answer: Answer) -> None:
    """A broad answer runs the secret call once as APPROVED_ONCE and grants nothing durable."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json({"x": ref(secret.id)})
    outcome = host.invoke(RECORDER.name, args, answering(answer))
    require(not outcome.is_error, "APPR-006", f"the call ended {outcome.disposition}")
    records = ledger_records(host.observe())
    require(
        records[-1].get("approvalDisposition") == "APPROVED_ONCE",
        "APPR-006",
        f"a broad answer was recorded as {records[-1].get('approvalDisposition')}",
    )
    host.invoke(RECORDER.name, args)
    host.invoke(RECORDER.name, args_json({"x": "plain"}))
    requests = host.observe().approval_requests
    secret_prompts = [r for r in requests if r.get("secretRefs")]
    require(
        len(secret_prompts) == 2, "APPR-006", "the next secret-bearing call did not prompt again"
    )
    judge_free_call_after_broad_answer(answer, len(requests) == 3, "a secret call")


@pytest.mark.req("APPR-010")
def test_denial_is_denied(host: RecordingHost, mint: Mint) -> None:
    """The operator's denial ends the call as DENIED and the tool is not called."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), answering(Answer.DENY))
    require(outcome.disposition == "DENIED", "APPR-010", f"a denial ended {outcome.disposition}")
    require(host.observe().receipts == (), "APPR-010", "the tool ran after a denial")


@pytest.mark.req("APPR-008")
def test_unanswered_prompt_times_out(host: RecordingHost, mint: Mint) -> None:
    """An unanswered prompt ends as TIMEOUT after the configured timeout; the tool never runs."""
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=0.3))
    started = time.monotonic()
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), answering(Answer.NONE))
    took = time.monotonic() - started
    require(outcome.disposition == "TIMEOUT", "APPR-008", f"the call ended {outcome.disposition}")
    require(took < 10.0, "APPR-008", f"the configured 0.3 s timeout took {took:.1f} s")
    require(host.observe().receipts == (), "APPR-008", "the tool ran after a timeout")


@pytest.mark.req("APPR-009")
@pytest.mark.parametrize("limit", [1, 2])
def test_prompt_beyond_limit_is_queue_full(host: RecordingHost, mint: Mint, limit: int) -> None:
    """With the pending limit's prompts open, one more call ends as QUEUE_FULL, tool unused."""
    host.need("start")
    secret = make_secret(mint)
    host.reset(config([secret], pending_limit=limit, approval_timeout_s=30.0))
    held = HeldOperator()
    args = args_json({"x": ref(secret.id)})
    pending = [host.start(RECORDER.name, args, held) for _ in range(limit)]
    try:
        require(held.wait_seen(limit), "APPR-009", "the held prompts never opened")
        extra = host.invoke(RECORDER.name, args)
    finally:
        held.release()
    results = [call.result(20.0) for call in pending]
    require(
        extra.disposition == "QUEUE_FULL",
        "APPR-009",
        f"a prompt beyond the limit of {limit} ended {extra.disposition}",
    )
    require(
        all(result.disposition == "APPROVED_ONCE" for result in results),
        "APPR-009",
        "the held calls did not run once released",
    )
    require(
        len(host.observe().receipts) == limit, "APPR-009", "the QUEUE_FULL call reached its tool"
    )
