"""Steps [8] and [9]: the approval request, timeout, the pending limit and the revocation fence."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from reference_impl import (
    APPROVAL_TIMEOUT_SECONDS,
    PENDING_APPROVAL_LIMIT,
    SECRET_READ,
    Answer,
    ApprovalRequest,
    CallOutcome,
    Disposition,
    QueueOperator,
    Registry,
    Risk,
    Rule,
    ScriptedOperator,
    Tool,
    User,
)
from reference_impl._ledger import decode_record
from reference_impl._operator import NoOperatorError
from reference_impl._registry import NO_OPERATOR_MESSAGE
from tests.reference_impl.support import (
    ID_A,
    ID_B,
    USERNAME_A,
    USERNAME_B,
    Host,
    Recorder,
    args,
    build,
    ref,
)

# --- R3.2 the request -------------------------------------------------------------------------


@pytest.mark.req("APPR-002", "APPR-004", "APPR-011")
def test_the_request_names_each_secret_and_carries_the_written_arguments() -> None:
    """Descriptors `website (username) - field` in order of first use; arguments as written."""
    h = build()
    raw = args(b=ref(ID_B, "username"), a=[ref(ID_A), ref(ID_A, "notes"), ref(ID_B, "username")])
    h.invoke("recorder", raw)
    (request,) = h.operator.requests
    descriptors_as_expected = request.descriptors == (
        f"second.example ({USERNAME_B}) - username",
        f"example.com ({USERNAME_A}) - password",
        f"example.com ({USERNAME_A}) - notes",
    )
    assert descriptors_as_expected  # computed first: a failure must not print a username
    assert request.arguments == raw
    assert request.secret_refs == (f"{ID_B}.username", f"{ID_A}.password", f"{ID_A}.notes")
    assert (request.tool_name, request.provider_id) == ("recorder", "demo")
    assert request.stamp == h.registry.rules.stamp("recorder", "demo")
    assert request.secret_bearing


@pytest.mark.req("APPR-003")
@pytest.mark.parametrize(
    ("risk", "bearing", "expected"),
    [
        pytest.param(Risk.LOW, True, Risk.HIGH, id="low-raised"),
        pytest.param(Risk.MEDIUM, True, Risk.HIGH, id="medium-raised"),
        pytest.param(Risk.CRITICAL, True, Risk.CRITICAL, id="critical-kept"),
        pytest.param(Risk.LOW, False, Risk.LOW, id="reference-free-unchanged"),
    ],
)
def test_risk_is_at_least_high_for_a_secret_call(risk: Risk, bearing: bool, expected: Risk) -> None:
    """A secret-bearing request shows HIGH or above; other requests keep the tool's risk."""
    h = build(extra_tools=[Tool("risky", "demo", Recorder(), risk=risk)])
    h.invoke("risky", args(a=ref(ID_A) if bearing else "x"))
    assert h.operator.requests[0].risk is expected


@pytest.mark.req("APPR-004", "LEDG-007")
def test_the_request_shows_sanitized_arguments() -> None:
    """A request never shows more than the ledger would; malformed text is redacted."""
    h = build()
    h.invoke("recorder", args(a="x", note="{{secret:hunter2"))
    assert h.operator.requests == []  # refused before any prompt
    raw = args(a=ref(ID_A), b="{{\u017fecret:literal}}")
    h.invoke("recorder", raw)
    assert h.operator.requests[0].arguments == raw


# --- R3.5 timeout and queue -------------------------------------------------------------------


@pytest.mark.req("APPR-008", "APPR-009")
def test_the_defaults_are_45_seconds_and_4_prompts() -> None:
    """The registry's defaults are the rulings' figures."""
    assert APPROVAL_TIMEOUT_SECONDS == 45.0
    assert PENDING_APPROVAL_LIMIT == 4
    registry = Registry()
    assert registry.gate.timeout == 45.0
    assert registry.gate.limit == 4


@pytest.mark.req("APPR-008")
@pytest.mark.parametrize("bearing", [True, False])
def test_an_unanswered_prompt_times_out(bearing: bool) -> None:
    """An unanswered prompt ends as TIMEOUT after the configured time; the tool never runs."""
    h = build(operator=QueueOperator(), approval_timeout=0.05)
    out = h.invoke("recorder", args(a=ref(ID_A) if bearing else "x"))
    assert out.disposition is Disposition.TIMEOUT
    assert h.recorder.raws == []
    assert h.records[-1].approval_disposition is Disposition.TIMEOUT


def start(h: Host, raw: str) -> tuple[threading.Thread, list[CallOutcome]]:
    outcomes: list[CallOutcome] = []
    thread = threading.Thread(target=lambda: outcomes.append(h.invoke("recorder", raw)))
    thread.start()
    return thread, outcomes


@pytest.mark.req("APPR-009")
def test_a_prompt_beyond_the_pending_limit_is_queue_full() -> None:
    """With the limit reached the next call ends QUEUE_FULL at once; the tool never runs."""
    operator = QueueOperator()
    h = build(operator=operator, pending_limit=2, approval_timeout=10.0)
    first = start(h, args(a=ref(ID_A)))
    second = start(h, args(a="x"))
    for _ in range(200):
        if len(operator.pending()) == 2:
            break
        threading.Event().wait(0.01)
    assert len(operator.pending()) == 2
    out = h.invoke("recorder", args(a=ref(ID_B)))
    assert out.disposition is Disposition.QUEUE_FULL
    assert h.recorder.raws == []
    for request in operator.pending():
        assert operator.answer(request.id, Answer.APPROVE)
    for thread, outcomes in (first, second):
        thread.join(5)
        assert [o.disposition for o in outcomes] == [Disposition.APPROVED_ONCE]
    assert len(h.recorder.raws) == 2
    # A slot freed is a slot usable again.
    answering = threading.Thread(target=answer_next, args=(operator,))
    answering.start()
    assert h.invoke("recorder", args(a=ref(ID_B))).disposition is Disposition.APPROVED_ONCE
    answering.join(5)


def answer_next(operator: QueueOperator) -> None:
    request = operator.wait_for_request(5)
    assert request is not None
    operator.answer(request.id, Answer.APPROVE)


@pytest.mark.req("APPR-010")
@pytest.mark.parametrize("bearing", [True, False])
def test_a_denial_ends_the_call(bearing: bool) -> None:
    """DENIED, and the tool is not called."""
    h = build(operator=ScriptedOperator(Answer.DENY))
    out = h.invoke("recorder", args(a=ref(ID_A) if bearing else "x"))
    assert out.disposition is Disposition.DENIED
    assert h.recorder.raws == []


@pytest.mark.req("APPR-010")
def test_an_operator_that_fails_has_not_approved() -> None:
    """An operator that raises counts as a denial."""

    def broken(request: ApprovalRequest) -> Answer:
        raise RuntimeError("dialog crashed")

    h = build(operator=ScriptedOperator(broken))
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.DENIED
    assert h.recorder.raws == []


@pytest.mark.req("MCP-009", "APPR-010")
@pytest.mark.parametrize("bearing", [True, False])
def test_a_call_no_operator_could_be_asked_about_is_denied_and_says_so(bearing: bool) -> None:
    """No operator to ask: DENIED, a message that says nobody was asked, and a record that says
    so; the tool is not called. A call an operator denied keeps the record without the field."""

    def unreachable(request: ApprovalRequest) -> Answer:
        raise NoOperatorError("the client did not declare elicitation")

    h = build(operator=ScriptedOperator(unreachable))
    out = h.invoke("recorder", args(a=ref(ID_A) if bearing else "x"))
    assert out.disposition is Disposition.DENIED
    assert out.text == NO_OPERATOR_MESSAGE
    assert out.text.startswith("Denied without asking the operator")
    assert h.recorder.raws == []
    (record,) = h.records
    assert record.approval_disposition is Disposition.DENIED
    assert record.operator_asked is False
    assert record.to_json_dict()["operatorAsked"] is False
    assert decode_record(record.to_json_dict()) == record

    asked = build(operator=ScriptedOperator(Answer.DENY))
    assert asked.invoke("recorder", args(a=ref(ID_A))).text == "The operator denied the call"
    assert "operatorAsked" not in asked.records[0].to_json_dict()


@pytest.mark.req("LEDG-014")
def test_a_record_whose_operator_asked_is_not_a_boolean_is_not_a_record() -> None:
    """A reader takes ``operatorAsked`` only as a boolean."""
    h = build(operator=ScriptedOperator(Answer.DENY))
    h.invoke("recorder", args(a="x"))
    data = h.records[0].to_json_dict()
    with pytest.raises(TypeError):
        decode_record({**data, "operatorAsked": "no"})


# --- R3.4 the revocation fence -----------------------------------------------------------------

Action = Callable[[Host], None]
FENCED: list[tuple[str, Action, Disposition]] = [
    ("revoke-tool", lambda h: h.registry.rules.revoke_tool("recorder"), Disposition.POLICY_DENIED),
    (
        "revoke-provider",
        lambda h: h.registry.rules.revoke_provider("demo"),
        Disposition.POLICY_DENIED,
    ),
    ("reset", lambda h: h.registry.rules.reset(), Disposition.POLICY_DENIED),
    (
        "deny-tool",
        lambda h: h.registry.rules.save_tool_rule("recorder", Rule.DENY),
        Disposition.POLICY_DENIED,
    ),
    (
        "deny-provider",
        lambda h: h.registry.rules.save_provider_rule("demo", Rule.DENY),
        Disposition.POLICY_DENIED,
    ),
    (
        "lose-secret-read",
        lambda h: h.registry.set_user(User(name="dev")),
        Disposition.SECRET_FORBIDDEN,
    ),
    ("kill-switch", lambda h: h.registry.rules.kill("recorder"), Disposition.KILL_SWITCHED),
]


def fenced_host(action: Action) -> Host:
    hosts: list[Host] = []

    def answer(request: ApprovalRequest) -> Answer:
        action(hosts[0])
        return Answer.APPROVE

    hosts.append(build(operator=ScriptedOperator(answer)))
    return hosts[0]


@pytest.mark.req("FENCE-001", "FENCE-002", "FENCE-003", "FENCE-004", "INV4")
@pytest.mark.parametrize(
    ("action", "expected"), [pytest.param(a, d, id=name) for name, a, d in FENCED]
)
def test_a_change_while_the_prompt_is_open_refuses_the_approved_call(
    action: Action, expected: Disposition
) -> None:
    """The operator approves, but a change made meanwhile refuses the call; no tool call."""
    h = fenced_host(action)
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is expected
    assert h.recorder.raws == []
    assert h.records[-1].approval_disposition is expected
    assert h.records[-1].secret_refs == (f"{ID_A}.password",)


@pytest.mark.req("FENCE-001")
def test_an_unrelated_change_does_not_fence() -> None:
    """Changes to other tools and providers leave the approval standing."""

    def other_changes(h: Host) -> None:
        h.registry.rules.save_tool_rule("echo", Rule.DENY)
        h.registry.rules.revoke_provider("elsewhere")

    h = fenced_host(other_changes)
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.APPROVED_ONCE
    assert len(h.recorder.raws) == 1


@pytest.mark.req("FENCE-001", "FENCE-002")
@pytest.mark.parametrize(
    "action",
    [pytest.param(a, id=name) for name, a, _ in FENCED if name != "lose-secret-read"],
)
def test_the_fence_also_guards_prompted_calls_without_references(action: Action) -> None:
    """A prompted reference-free call is fenced by rule changes too."""
    h = fenced_host(action)
    assert h.invoke("recorder", args(a="x")).disposition is not Disposition.APPROVED_ONCE
    assert h.recorder.raws == []


@pytest.mark.req("FENCE-003")
def test_losing_secret_read_does_not_fence_a_reference_free_call() -> None:
    """secret.read matters only to calls that carry references."""
    h = fenced_host(lambda h: h.registry.set_user(User(name="dev")))
    assert h.invoke("recorder", args(a="x")).disposition is Disposition.APPROVED_ONCE


@pytest.mark.req("FENCE-001", "INV4")
def test_revocation_through_the_queue_operator() -> None:
    """With a real pending prompt, a revocation made from another thread refuses the call."""
    operator = QueueOperator()
    h = build(operator=operator, approval_timeout=10.0)
    thread, outcomes = start(h, args(a=ref(ID_A)))
    request = operator.wait_for_request(5)
    assert request is not None
    h.registry.rules.revoke_tool("recorder")
    assert operator.answer(request.id, Answer.APPROVE)
    thread.join(5)
    assert [o.disposition for o in outcomes] == [Disposition.POLICY_DENIED]
    assert h.recorder.raws == []


@pytest.mark.req("FENCE-003")
def test_permission_regained_before_the_call_is_needed() -> None:
    """The fence reads the user at approval time, not at the start of the call."""
    h = build(user=User(name="dev", permissions=frozenset({SECRET_READ})))
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.APPROVED_ONCE
