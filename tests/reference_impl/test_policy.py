"""Policy: the policy file, failing closed, precedence, and trust that never answers a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference_impl import (
    Answer,
    Disposition,
    Policy,
    PolicyError,
    Rule,
    Rules,
    ScriptedOperator,
    load_policy,
    parse_policy,
)
from reference_impl._policy import POLICY_FAULT_MESSAGE
from tests.reference_impl.support import ID_A, args, build, ref

# --- R7.2 the policy file -------------------------------------------------------------------


@pytest.mark.req("POL-001")
def test_every_field_is_optional_with_the_design_defaults() -> None:
    """An empty object is the defaults: enabled, ASK, scrubbing on."""
    policy = parse_policy("{}")
    assert policy == Policy()
    assert policy.secret_references_enabled is True
    assert policy.secret_bearing_calls is Rule.ASK
    assert policy.result_scrubbing_enabled is True
    assert policy.fault is None


@pytest.mark.req("POL-001")
def test_a_full_file_is_read() -> None:
    """The design's three fields sit beside tool and provider rules."""
    text = json.dumps(
        {
            "secretReferencesEnabled": False,
            "secretBearingCalls": "DENY",
            "resultScrubbingEnabled": False,
            "defaultRule": "ALLOW",
            "tools": {"echo": "ASK", "rm": "DENY"},
            "providers": {"demo": "ALLOW"},
            "yolo": True,
        }
    )
    policy = parse_policy(text)
    assert policy == Policy(
        secret_references_enabled=False,
        secret_bearing_calls=Rule.DENY,
        result_scrubbing_enabled=False,
        default_rule=Rule.ALLOW,
        tools={"echo": Rule.ASK, "rm": Rule.DENY},
        providers={"demo": Rule.ALLOW},
        yolo=True,
    )


INVALID = [
    pytest.param('{"secretBearingCalls": "ALLOW"}', id="bearing-allow"),
    pytest.param('{"secretBearingCalls": "ask"}', id="bearing-lower-case"),
    pytest.param('{"secretBearingCalls": null}', id="bearing-null"),
    pytest.param('{"secretReferencesEnabled": "true"}', id="enabled-string"),
    pytest.param('{"resultScrubbingEnabled": 1}', id="scrubbing-number"),
    pytest.param('{"yolo": "no"}', id="yolo-string"),
    pytest.param('{"secretBearingCall": "DENY"}', id="misspelt-field"),
    pytest.param('{"tools": ["echo"]}', id="tools-not-object"),
    pytest.param('{"tools": {"echo": "MAYBE"}}', id="bad-tool-rule"),
    pytest.param('{"providers": {"demo": "allow"}}', id="bad-provider-rule"),
    pytest.param('{"defaultRule": "YES"}', id="bad-default"),
    pytest.param("[]", id="array"),
    pytest.param('{"secretBearingCalls": "ASK",}', id="trailing-comma"),
    pytest.param("", id="empty"),
    pytest.param("[" * 100_000, id="deep"),
]


@pytest.mark.req("POL-002")
@pytest.mark.parametrize("text", INVALID)
def test_invalid_text_is_an_error(text: str) -> None:
    """Any other value, ALLOW included, or text that is not a policy object, is invalid."""
    with pytest.raises(PolicyError):
        parse_policy(text)


@pytest.mark.req("POL-002")
@pytest.mark.parametrize("text", INVALID)
def test_an_invalid_file_fails_closed(tmp_path: Path, text: str) -> None:
    """load_policy turns an invalid file into a policy that denies every tool."""
    path = tmp_path / "policy.json"
    path.write_text(text, encoding="utf-8")
    policy = load_policy(path)
    assert policy.fault is not None
    assert policy.default_rule is Rule.DENY
    assert Rules(policy).decide("any", "any", secret_bearing=False).rule is Rule.DENY


@pytest.mark.req("POL-002")
@pytest.mark.parametrize(
    ("kind", "fault"),
    [
        ("directory", "the policy file is a directory, not a regular file"),
        ("not-utf8", "the policy file is not UTF-8 (byte 10)"),
    ],
)
def test_an_unreadable_file_fails_closed(tmp_path: Path, kind: str, fault: str) -> None:
    """A file that cannot be read or decoded fails closed too, saying why in one line."""
    path = tmp_path / "policy.json"
    if kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b'{"yolo": \xff}')
    policy = load_policy(path)
    assert policy.fault == fault
    assert policy.default_rule is Rule.DENY


@pytest.mark.req("POL-001")
def test_a_missing_file_means_the_defaults(tmp_path: Path) -> None:
    """Every field is optional, so no file is the defaults."""
    assert load_policy(tmp_path / "absent.json") == Policy()
    assert load_policy(None) == Policy()


@pytest.mark.req("POL-002")
def test_a_faulted_policy_denies_every_call_with_its_message(tmp_path: Path) -> None:
    """Reference-free and secret-bearing calls alike end POLICY_DENIED; no vault read."""
    path = tmp_path / "policy.json"
    path.write_text('{"secretBearingCalls": "ALLOW", "tools": {"recorder": "ALLOW"}}')
    h = build(policy=load_policy(path))
    for raw in (args(a="x"), args(a=ref(ID_A))):
        out = h.invoke("recorder", raw)
        assert out.disposition is Disposition.POLICY_DENIED
        assert out.text == POLICY_FAULT_MESSAGE
    assert h.vault.reads == []
    assert h.recorder.raws == []
    assert [r.policy_applied for r in h.records] == ["policy-fault", "policy-fault"]


@pytest.mark.req("POL-002", "ORD-001")
def test_a_faulted_policy_still_reports_malformed_first(tmp_path: Path) -> None:
    """Fail-closed does not hide a malformed reference, which R2.3 puts first."""
    path = tmp_path / "policy.json"
    path.write_text("not json")
    h = build(policy=load_policy(path))
    out = h.invoke("recorder", args(a="{{secret:x}}"))
    assert out.disposition is Disposition.SECRET_UNRESOLVED


@pytest.mark.req("LEDG-001", "MSG-005", "MSG-006")
@pytest.mark.parametrize(
    ("policy", "applied"),
    [
        pytest.param(Policy(tools={"recorder": Rule.DENY}), "tool:DENY", id="tool"),
        pytest.param(Policy(providers={"demo": Rule.DENY}), "provider:DENY", id="provider"),
        pytest.param(Policy(secret_bearing_calls=Rule.DENY), "secret:DENY", id="bearing"),
    ],
)
def test_a_prepass_deny_names_its_rule_in_the_ledger(policy: Policy, applied: str) -> None:
    """policyApplied of a secret-bearing call refused at [5] or [6] names the rule."""
    h = build(policy=policy)
    h.invoke("recorder", args(a=ref(ID_A)))
    assert [r.policy_applied for r in h.records] == [applied]


@pytest.mark.req("POL-003")
def test_the_file_is_read_once_at_start_up(tmp_path: Path) -> None:
    """Editing the file after start-up changes nothing until a restart."""
    path = tmp_path / "policy.json"
    path.write_text('{"secretBearingCalls": "ASK"}')
    h = build(policy=load_policy(path))
    path.write_text('{"secretBearingCalls": "DENY"}')
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.APPROVED_ONCE
    restarted = build(policy=load_policy(path))
    assert restarted.invoke("recorder", args(a=ref(ID_A))).disposition is (
        Disposition.SECRET_FORBIDDEN
    )


# --- precedence (design, "Approval semantics") ---------------------------------------------


def rules(**fields: object) -> Rules:
    return Rules(Policy(**fields))  # type: ignore[arg-type]


@pytest.mark.req("POL-004")
@pytest.mark.parametrize(
    ("set_up", "bearing", "expected"),
    [
        pytest.param(
            lambda r: None,
            False,
            ("ASK", "default:ASK"),
            id="default",
        ),
        pytest.param(
            lambda r: r.save_provider_rule("p", Rule.ALLOW),
            False,
            ("ALLOW", "provider:ALLOW"),
            id="provider-allow-over-default",
        ),
        pytest.param(
            lambda r: (r.save_provider_rule("p", Rule.ALLOW), r.save_tool_rule("t", Rule.ASK)),
            False,
            ("ASK", "tool:ASK"),
            id="tool-rule-over-provider-allow",
        ),
        pytest.param(
            lambda r: (r.save_tool_rule("t", Rule.ASK), r.trust_session("t")),
            False,
            ("ALLOW", "session-trust"),
            id="session-trust-over-tool-rule",
        ),
        pytest.param(
            lambda r: (r.save_tool_rule("t", Rule.ALLOW), r.trust_session("t"), r.set_yolo(True)),
            True,
            ("ASK", "secret:ASK"),
            id="secret-policy-over-trust",
        ),
        pytest.param(
            lambda r: (r.save_tool_rule("t", Rule.DENY), r.trust_session("t"), r.set_yolo(True)),
            True,
            ("DENY", "tool:DENY"),
            id="tool-deny-over-secret-policy",
        ),
        pytest.param(
            lambda r: (r.save_tool_rule("t", Rule.ALLOW), r.save_provider_rule("p", Rule.DENY)),
            False,
            ("DENY", "provider:DENY"),
            id="provider-deny-over-tool-allow",
        ),
        pytest.param(
            lambda r: r.set_yolo(True),
            False,
            ("ALLOW", "yolo"),
            id="yolo-reference-free",
        ),
    ],
)
def test_precedence(set_up: object, bearing: bool, expected: tuple[str, str]) -> None:
    """Policy fault, DENY, secret policy, session trust, tool rule, provider ALLOW, default."""
    live = rules()
    assert callable(set_up)
    set_up(live)
    decision = live.decide("t", "p", secret_bearing=bearing)
    assert (decision.rule.value, decision.applied) == expected


@pytest.mark.req("POL-004")
def test_policy_fault_over_every_rule() -> None:
    """A fault comes before any tool or provider rule, ALLOW or not."""
    live = rules(tools={"t": Rule.ALLOW}, providers={"p": Rule.ALLOW}, fault="bad")
    live.trust_session("t")
    assert live.decide("t", "p", secret_bearing=False).applied == "policy-fault"


@pytest.mark.req("POL-004")
def test_file_default_rule_applies_last() -> None:
    """A tool no rule names gets the file's default rule."""
    assert rules(default_rule=Rule.DENY).decide("t", "p", False).rule is Rule.DENY
    assert rules(default_rule=Rule.ALLOW).decide("t", "p", False).rule is Rule.ALLOW


@pytest.mark.req("POL-004")
def test_revoke_restores_the_file_rule_and_reset_forgets_saves() -> None:
    """Revocation drops a saved rule back to the file's; reset drops every save and trust."""
    live = rules(tools={"t": Rule.ASK})
    live.save_tool_rule("t", Rule.ALLOW)
    live.save_tool_rule("u", Rule.ALLOW)
    live.trust_session("v")
    live.revoke_tool("t")
    assert live.decide("t", "p", False).applied == "tool:ASK"
    assert live.decide("u", "p", False).applied == "tool:ALLOW"
    live.reset()
    assert live.decide("u", "p", False).applied == "default:ASK"
    assert live.decide("v", "p", False).applied == "default:ASK"


@pytest.mark.req("APPR-011")
def test_stamps_move_on_every_change_and_reset_moves_all() -> None:
    """Each save or revocation moves its own stamp; a reset moves every stamp."""
    live = rules()
    start = live.stamp("t", "p")
    live.save_tool_rule("other", Rule.DENY)
    assert live.stamp("t", "p") == start
    live.revoke_tool("t")
    after_tool = live.stamp("t", "p")
    assert after_tool[0] != start[0]
    assert after_tool[1] == start[1]
    live.save_provider_rule("p", Rule.ASK)
    after_provider = live.stamp("t", "p")
    assert after_provider[1] != after_tool[1]
    live.reset()
    after_reset = live.stamp("t", "p")
    assert after_reset[0] != after_provider[0]
    assert after_reset[1] != after_provider[1]
    assert live.stamp("x", "y") != start


# --- R3.1 and R3.3: trust never answers a secret-bearing call --------------------------------


@pytest.mark.req("APPR-001", "INV3")
@pytest.mark.parametrize(
    "trust",
    ["always-allow", "provider-trust", "session-trust", "yolo", "file-allow", "all"],
)
def test_no_trust_answers_a_secret_bearing_call(trust: str) -> None:
    """Tool ALLOW, provider trust, session trust and YOLO never skip the secret prompt."""
    if trust == "file-allow":
        h = build(
            policy=Policy(
                default_rule=Rule.ALLOW,
                tools={"recorder": Rule.ALLOW},
                providers={"demo": Rule.ALLOW},
                yolo=True,
            )
        )
    else:
        h = build()
    live = h.registry.rules
    if trust in ("always-allow", "all"):
        live.save_tool_rule("recorder", Rule.ALLOW)
    if trust in ("provider-trust", "all"):
        live.save_provider_rule("demo", Rule.ALLOW)
    if trust in ("session-trust", "all"):
        live.trust_session("recorder")
    if trust in ("yolo", "all"):
        live.set_yolo(True)
    assert h.invoke("recorder", args(a="x")).disposition is Disposition.ALLOWED
    assert h.operator.requests == []
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.APPROVED_ONCE
    assert len(h.operator.requests) == 1
    assert h.operator.requests[0].secret_bearing


@pytest.mark.req("APPR-006", "APPR-007")
@pytest.mark.parametrize(
    "answer", [Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION]
)
def test_a_broad_answer_to_a_secret_call_runs_it_once_and_grants_nothing(answer: Answer) -> None:
    """The call runs as APPROVED_ONCE; the next calls, with or without references, prompt."""
    operator = ScriptedOperator(answer)
    h = build(operator=operator)
    before = h.registry.rules.stamp("recorder", "demo")
    first = h.invoke("recorder", args(a=ref(ID_A)))
    assert first.disposition is Disposition.APPROVED_ONCE
    assert h.records[-1].approval_disposition is Disposition.APPROVED_ONCE
    assert h.registry.rules.stamp("recorder", "demo") == before
    assert h.registry.rules.decide("recorder", "demo", False).applied == "default:ASK"
    h.invoke("recorder", args(a=ref(ID_A)))
    h.invoke("recorder", args(a="x"))
    assert len(operator.requests) == 3
    assert len(h.recorder.raws) == 3


@pytest.mark.req("APPR-006")
@pytest.mark.parametrize(
    ("answer", "disposition", "next_tool"),
    [
        pytest.param(Answer.ALWAYS_ALLOW, Disposition.APPROVED_ALWAYS, "recorder", id="always"),
        pytest.param(Answer.TRUST_PROVIDER, Disposition.APPROVED_PROVIDER, "echo", id="provider"),
        pytest.param(Answer.TRUST_SESSION, Disposition.APPROVED_SESSION, "recorder", id="session"),
    ],
)
def test_a_broad_answer_to_a_reference_free_call_is_durable(
    answer: Answer, disposition: Disposition, next_tool: str
) -> None:
    """For calls without references the broad answers keep their usual meaning."""
    operator = ScriptedOperator(answer)
    h = build(operator=operator)
    assert h.invoke("recorder", args(a="x")).disposition is disposition
    assert h.invoke(next_tool, args(a="y")).disposition is Disposition.ALLOWED
    assert len(operator.requests) == 1
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.APPROVED_ONCE
    assert len(operator.requests) == 2
