"""The governed path end to end: refusal messages, their order, vault reads and transparency."""

from __future__ import annotations

import json

import pytest

from reference_impl import (
    BEARING_DENIED_MESSAGE,
    DISABLED_MESSAGE,
    MALFORMED_PREFIX,
    NO_PERMISSION_MESSAGE,
    NO_VAULT_MESSAGE,
    STEP_ORDER,
    WITHHELD,
    Answer,
    ApprovalRequest,
    Disposition,
    Policy,
    Registry,
    Rule,
    ScriptedOperator,
    SecretRecord,
    Tool,
    User,
)
from tests.reference_impl.support import (
    ID_A,
    ID_AI,
    ID_B,
    ID_EMPTY,
    ID_MISSING,
    ID_MISSING_2,
    NOTES_A,
    PASSWORD_A,
    PASSWORD_B,
    SECRET_USER,
    USERNAME_A,
    Host,
    Recorder,
    args,
    build,
    record,
    ref,
)

NO_READ = User(name="guest")


# --- the design's Troubleshooting table and the R2 table -------------------------------------


@pytest.mark.req("MSG-001", "GRAM-008")
def test_troubleshooting_malformed() -> None:
    """`Malformed secret reference {{secret:...}}: ...`: a bad id refuses the call."""
    h = build()
    out = h.invoke("recorder", args(a="{{secret:not-a-uuid}}"))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text.startswith(MALFORMED_PREFIX)
    assert out.is_error
    assert h.recorder.raws == []


@pytest.mark.req("MSG-004")
def test_troubleshooting_no_secret_read() -> None:
    """`Secret references require the secret.read permission` for a non-admin without it."""
    h = build(user=NO_READ)
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_FORBIDDEN
    assert out.text.startswith(NO_PERMISSION_MESSAGE)
    assert h.vault.reads == []


@pytest.mark.req("MSG-004")
def test_an_admin_needs_no_explicit_secret_read() -> None:
    """An admin holds every permission, secret.read included."""
    h = build(user=User(name="root", is_admin=True))
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.APPROVED_ONCE


@pytest.mark.req("MSG-003")
def test_troubleshooting_disabled() -> None:
    """`Secret references are disabled on this host`: refused, never passed through."""
    h = build(policy=Policy(secret_references_enabled=False))
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_FORBIDDEN
    assert out.text.startswith(DISABLED_MESSAGE)
    assert h.recorder.raws == []
    assert h.vault.reads == []


@pytest.mark.req("MSG-006")
def test_troubleshooting_bearing_calls_denied() -> None:
    """`Secret-bearing calls are refused by host policy` with secretBearingCalls DENY."""
    h = build(policy=Policy(secret_bearing_calls=Rule.DENY))
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_FORBIDDEN
    assert out.text.startswith(BEARING_DENIED_MESSAGE)
    assert h.vault.reads == []
    # Reference-free calls are untouched by the secret policy.
    assert h.invoke("recorder", args(a="x")).disposition is Disposition.APPROVED_ONCE


@pytest.mark.req("MSG-007")
def test_troubleshooting_unknown_ids() -> None:
    """`no secret with id ...`: each missing id once, lower case, in order of first use."""
    h = build()
    raw = args(
        a=ref(ID_MISSING_2.upper()),
        b=ref(ID_A),
        c=ref(ID_MISSING, "notes"),
        d=ref(ID_MISSING_2, "username"),
    )
    out = h.invoke("recorder", raw)
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text == f"no secret with id {ID_MISSING_2}, {ID_MISSING}"


@pytest.mark.req("MSG-008")
@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        pytest.param(ref(ID_B, "notes"), f"secret {ID_B} has no notes", id="empty-notes"),
        pytest.param(ref(ID_EMPTY), f"secret {ID_EMPTY} has no password", id="empty-password"),
    ],
)
def test_troubleshooting_empty_field(reference: str, expected: str) -> None:
    """`secret ... has no notes`: an empty field refuses the call."""
    h = build()
    out = h.invoke("recorder", args(a=ref(ID_A), b=reference))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text == expected
    assert h.recorder.raws == []


@pytest.mark.req("MSG-011")
def test_troubleshooting_ai_provider_key() -> None:
    """`... is an AI provider key ...`: a secret tagged ai-provider is never delivered."""
    h = build()
    out = h.invoke("recorder", args(a=ref(ID_AI, "username")))
    assert out.disposition is Disposition.SECRET_FORBIDDEN
    assert out.text.startswith(f"secret {ID_AI} is an AI provider key")


@pytest.mark.req("MSG-011")
def test_only_the_exact_tag_marks_an_ai_provider_key() -> None:
    """Tags such as AI-Provider or ai-provider-x are not the AI-provider tag."""
    records = [
        record(ID_A, "a.example", "user-a", "password-aaaa", tags=("AI-Provider",)),
        record(ID_B, "b.example", "user-b", "password-bbbb", tags=("ai-provider-x",)),
    ]
    h = build(records=records)
    out = h.invoke("recorder", args(a=ref(ID_A), b=ref(ID_B)))
    assert out.disposition is Disposition.APPROVED_ONCE


@pytest.mark.req("MSG-009")
def test_troubleshooting_vault_failure_reports_the_kind_only() -> None:
    """`the vault could not be read (...)`: the kind follows, never the failure's message."""
    h = build()
    h.vault.fail_with = "offline"
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text == "the vault could not be read (offline)"


@pytest.mark.req("MSG-009")
def test_a_vault_bug_is_a_vault_failure_without_its_message() -> None:
    """A vault port that raises anything else is reported by a static kind."""

    class BrokenVault:
        def read_page(self, page: int, page_size: int) -> list[SecretRecord]:
            raise RuntimeError("token hunter2-canary expired")

    registry = Registry(vault=BrokenVault(), user=User(is_admin=True))
    registry.register(Tool("recorder", "demo", Recorder()))
    out = registry.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text.startswith("the vault could not be read (")
    assert "hunter2" not in out.text


@pytest.mark.req("MSG-010")
def test_troubleshooting_no_vault() -> None:
    """`No secret vault is available on this host` for a registry built without one."""
    registry = Registry(user=User(is_admin=True))
    recorder = Recorder()
    registry.register(Tool("recorder", "demo", recorder))
    out = registry.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert out.text == NO_VAULT_MESSAGE
    assert registry.invoke("recorder", args(a="x")).disposition is Disposition.APPROVED_ONCE
    assert recorder.raws == [args(a="x")]


@pytest.mark.req("MSG-005")
@pytest.mark.parametrize("kind", ["tool", "provider"])
def test_tool_or_provider_deny_refuses_without_a_vault_read(kind: str) -> None:
    """A tool or provider DENY refuses as POLICY_DENIED before any vault read."""
    rules = {"tools": {"recorder": Rule.DENY}} if kind == "tool" else {}
    providers = {"demo": Rule.DENY} if kind == "provider" else {}
    h = build(policy=Policy(tools=rules.get("tools", {}), providers=providers))
    out = h.invoke("recorder", args(a=ref(ID_A)))
    assert out.disposition is Disposition.POLICY_DENIED
    assert h.vault.reads == []
    assert h.operator.requests == []


# --- R2.3 which refusal wins ----------------------------------------------------------------


@pytest.mark.req("ORD-001", "ORD-003", "INV3", "VAULT-001")
@pytest.mark.parametrize(
    ("policy", "user", "raw", "disposition", "prefix"),
    [
        pytest.param(
            Policy(secret_references_enabled=False, secret_bearing_calls=Rule.DENY),
            NO_READ,
            args(a=ref(ID_A), b="{{secret:x}}"),
            Disposition.SECRET_UNRESOLVED,
            MALFORMED_PREFIX,
            id="malformed-beats-all",
        ),
        pytest.param(
            Policy(secret_references_enabled=False, tools={"recorder": Rule.DENY}),
            NO_READ,
            args(a=ref(ID_MISSING)),
            Disposition.SECRET_FORBIDDEN,
            DISABLED_MESSAGE,
            id="disabled-beats-permission",
        ),
        pytest.param(
            Policy(tools={"recorder": Rule.DENY}, secret_bearing_calls=Rule.DENY),
            NO_READ,
            args(a=ref(ID_MISSING)),
            Disposition.SECRET_FORBIDDEN,
            NO_PERMISSION_MESSAGE,
            id="permission-beats-deny",
        ),
        pytest.param(
            Policy(providers={"demo": Rule.DENY}, secret_bearing_calls=Rule.DENY),
            None,
            args(a=ref(ID_MISSING)),
            Disposition.POLICY_DENIED,
            "Tool recorder is denied by host policy",
            id="deny-beats-bearing",
        ),
        pytest.param(
            Policy(secret_bearing_calls=Rule.DENY),
            None,
            args(a=ref(ID_MISSING)),
            Disposition.SECRET_FORBIDDEN,
            BEARING_DENIED_MESSAGE,
            id="bearing-beats-resolution",
        ),
    ],
)
def test_refusal_precedence(
    policy: Policy, user: User | None, raw: str, disposition: Disposition, prefix: str
) -> None:
    """The first refusal of R2.3's order wins, before any vault read or prompt."""
    h = build(policy=policy, user=user if user is not None else SECRET_USER)
    out = h.invoke("recorder", raw)
    assert out.disposition is disposition
    assert out.text.startswith(prefix)
    assert h.vault.reads == []
    assert h.operator.requests == []


@pytest.mark.req("ORD-002")
@pytest.mark.parametrize(
    ("raw", "fail", "prefix"),
    [
        pytest.param(
            args(a=ref(ID_MISSING), b=ref(ID_AI), c=ref(ID_B, "notes")),
            "offline",
            "the vault could not be read (offline)",
            id="failure-first",
        ),
        pytest.param(
            args(a=ref(ID_MISSING), b=ref(ID_B, "notes"), c=ref(ID_AI)),
            None,
            f"secret {ID_AI} is an AI provider key",
            id="ai-provider-before-unknown",
        ),
        pytest.param(
            args(a=ref(ID_B, "notes"), b=ref(ID_MISSING)),
            None,
            f"no secret with id {ID_MISSING}",
            id="unknown-before-empty",
        ),
    ],
)
def test_resolution_refusal_precedence(raw: str, fail: str | None, prefix: str) -> None:
    """Within resolution: vault failure, AI-provider key, unknown id, empty field."""
    h = build()
    h.vault.fail_with = fail
    out = h.invoke("recorder", raw)
    assert out.text.startswith(prefix)
    assert h.operator.requests == []
    assert h.recorder.raws == []


# --- R6.3, R6.5: which calls are recorded ----------------------------------------------------


@pytest.mark.req("LEDG-005", "LEDG-008")
def test_every_call_that_reaches_the_prepass_is_recorded() -> None:
    """Refusals are recorded with their dispositions; withheld ones count as withheld."""
    h = build(user=NO_READ)
    outcomes = [
        h.invoke("recorder", args(a="{{secret:x}}")),
        h.invoke("recorder", args(a=ref(ID_A))),
        h.invoke("recorder", args(a="plain")),
    ]
    assert [r.approval_disposition for r in h.records] == [o.disposition for o in outcomes]
    assert [r.id for r in h.records] == [o.ledger_id for o in outcomes]
    assert outcomes[0].disposition in WITHHELD
    assert outcomes[1].disposition in WITHHELD
    assert Disposition.SECRET_FORBIDDEN in WITHHELD
    assert Disposition.SECRET_UNRESOLVED in WITHHELD


@pytest.mark.req("LEDG-006", "ORD-004")
@pytest.mark.parametrize("cause", ["kill-switch", "rbac"])
def test_kill_switch_and_rbac_withhold_first_and_are_recorded(cause: str) -> None:
    """[0] decides before everything; this host records the withheld call."""
    extra = Tool("guarded", "demo", Recorder(), permission="files.write")
    h = build(extra_tools=[extra])
    if cause == "kill-switch":
        h.registry.rules.kill("guarded")
        expected = Disposition.KILL_SWITCHED
    else:
        expected = Disposition.RBAC_DENIED
    out = h.invoke("guarded", args(a="{{secret:malformed}}", b=ref(ID_A)))
    assert out.disposition is expected
    assert h.vault.reads == []
    assert h.operator.requests == []
    assert [r.approval_disposition for r in h.records] == [expected]


@pytest.mark.req("ORD-004", "POL-004")
def test_kill_switch_beats_rbac_and_release_restores() -> None:
    """The kill-switch for every tool comes before RBAC, and releasing it restores calls."""
    extra = Tool("guarded", "demo", Recorder(), permission="files.write")
    h = build(extra_tools=[extra])
    h.registry.rules.kill()
    assert h.invoke("guarded", args(a="x")).disposition is Disposition.KILL_SWITCHED
    h.registry.rules.unkill()
    assert h.invoke("guarded", args(a="x")).disposition is Disposition.RBAC_DENIED
    h.registry.set_user(User(permissions=frozenset({"files.write"})))
    assert h.invoke("guarded", args(a="x")).disposition is Disposition.APPROVED_ONCE


@pytest.mark.req("ORD-004")
def test_rbac_comes_before_secret_read() -> None:
    """A tool's own permission is checked before secret.read."""
    extra = Tool("guarded", "demo", Recorder(), permission="files.write")
    h = build(extra_tools=[extra], user=NO_READ)
    assert h.invoke("guarded", args(a=ref(ID_A))).disposition is Disposition.RBAC_DENIED


@pytest.mark.req("ORD-004")
def test_unknown_tool_never_reaches_the_prepass() -> None:
    """A tool that is not registered is refused without a record."""
    h = build()
    out = h.invoke("nope", args(a=ref(ID_A)))
    assert out.disposition is Disposition.UNKNOWN_TOOL
    assert h.records == []
    assert h.vault.reads == []


# --- ORD-005: the order of the steps ---------------------------------------------------------


def traced(raw: str, policy: Policy | None = None) -> tuple[list[str], Disposition]:
    steps: list[str] = []
    h = build(policy=policy, tracer=steps.append)
    return steps, h.invoke("recorder", raw).disposition


@pytest.mark.req("ORD-005")
def test_a_secret_bearing_call_runs_every_step_in_the_design_order() -> None:
    """The tracer hears scan, parse, policy, resolve, approve, fence, substitute, execute,
    scrub, cap and ledger, after the gate, in exactly that order."""
    steps, disposition = traced(args(a=ref(ID_A)))
    assert disposition is Disposition.APPROVED_ONCE
    assert tuple(steps) == STEP_ORDER
    assert STEP_ORDER == (
        "gate", "scan", "parse", "policy", "resolve", "approve", "fence",
        "substitute", "execute", "scrub", "cap", "ledger",
    )  # fmt: skip


@pytest.mark.req("ORD-005")
@pytest.mark.parametrize(
    ("raw", "policy", "expected"),
    [
        pytest.param(
            args(a="x"),
            Policy(default_rule=Rule.ALLOW),
            ["gate", "scan", "policy", "substitute", "execute", "scrub", "cap", "ledger"],
            id="reference-free-allowed",
        ),
        pytest.param(
            args(a="{{secret:x}}"),
            Policy(),
            ["gate", "scan", "parse", "ledger"],
            id="malformed",
        ),
        pytest.param(
            args(a=ref(ID_MISSING)),
            Policy(),
            ["gate", "scan", "parse", "policy", "resolve", "ledger"],
            id="unresolved",
        ),
    ],
)
def test_shorter_calls_run_a_subsequence_of_the_order(
    raw: str, policy: Policy, expected: list[str]
) -> None:
    """Calls that skip steps still hear the rest in the design's order."""
    steps, _ = traced(raw, policy=policy)
    assert steps == expected
    positions = [STEP_ORDER.index(step) for step in steps]
    assert positions == sorted(positions)


# --- R7.1 vault reads -------------------------------------------------------------------------


@pytest.mark.req("VAULT-002", "VAULT-004")
def test_one_vault_walk_per_call_and_none_after_the_prompt() -> None:
    """Several references read the vault once, before the prompt, and never again."""
    reads_at_prompt: list[list[int]] = []
    hosts: list[Host] = []

    def answer(request: ApprovalRequest) -> Answer:
        reads_at_prompt.append(list(hosts[0].vault.reads))
        return Answer.APPROVE

    h = build(operator=ScriptedOperator(answer))
    hosts.append(h)
    out = h.invoke("recorder", args(a=ref(ID_A), b=ref(ID_B, "username"), c=ref(ID_A, "notes")))
    assert out.disposition is Disposition.APPROVED_ONCE
    assert reads_at_prompt == [[0]]
    assert h.vault.reads == [0]


@pytest.mark.req("VAULT-003", "INV5", "SUBST-003")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{ "b" : 1.50e+2 , "a":"\\u00e9" ,"n":null}', id="object"),
        pytest.param('{"a": "\\\\u007b\\\\u007bsecret:x}}"}', id="false-alarm"),
        pytest.param("[1, 2, 3]", id="array"),
        pytest.param("not json at all {", id="not-json"),
        pytest.param("", id="empty"),
        pytest.param('{"a": "{{\u017fecret:' + ID_A + '}}"}', id="look-alike"),
    ],
)
def test_reference_free_calls_pass_byte_for_byte(raw: str) -> None:
    """A call without references reaches the handler unchanged, reads nothing, records no refs."""
    h = build()
    out = h.invoke("recorder", raw)
    assert out.disposition is Disposition.APPROVED_ONCE
    assert h.recorder.raws == [raw]
    assert h.vault.reads == []
    assert h.records[0].secret_refs == ()
    assert h.records[0].sanitized_args == raw


# --- R4 substitution --------------------------------------------------------------------------


@pytest.mark.req("SUBST-001", "SUBST-002", "SUBST-005", "INV6")
def test_substitution_is_one_rewrite_and_views_agree() -> None:
    """Raw JSON and the per-key view agree, nested too; order and number text are kept."""
    raw = (
        '{"z": 1.50, "content": "KEY=' + ref(ID_A) + '\\n",'
        ' "nested": {"list": ["' + ref(ID_B) + '", 7e0, {"u": "' + ref(ID_A, "username") + '"}]},'
        ' "notes": "' + ref(ID_A, "notes") + '", "a": true}'
    )
    h = build()
    assert h.invoke("recorder", raw).disposition is Disposition.APPROVED_ONCE
    (received,) = h.recorder.raws
    (view,) = h.recorder.views
    # Comparisons are computed first, so a failure never prints a value.
    checks = {
        "raw keeps leading bytes": received.startswith('{"z": 1.50, "content": '),
        "raw keeps number text": '7e0, {"u": ' in received,
        "key order": list(view) == ["z", "content", "nested", "notes", "a"],
        "view parses raw": view == json.loads(received),
        "content": view["content"] == "KEY=" + PASSWORD_A + "\n",
        "nested": view["nested"] == {"list": [PASSWORD_B, 7.0, {"u": USERNAME_A}]},
        "notes": view["notes"] == NOTES_A,
    }
    failed = [name for name, ok in checks.items() if not ok]
    assert failed == []


@pytest.mark.req("SUBST-004", "INV2")
def test_all_or_nothing() -> None:
    """One unresolvable reference means no handler call and nothing substituted anywhere."""
    h = build()
    out = h.invoke("recorder", args(a=ref(ID_A), b=ref(ID_MISSING)))
    assert out.disposition is Disposition.SECRET_UNRESOLVED
    assert h.recorder.raws == []
    assert h.operator.requests == []
    assert h.records[0].sanitized_args == args(a=ref(ID_A), b=ref(ID_MISSING))


@pytest.mark.req("SUBST-001")
def test_a_value_with_json_specials_stays_one_string() -> None:
    """A value holding quotes, backslashes and controls is encoded, never breaking the JSON."""
    h = build()
    h.invoke("recorder", args(k=ref(ID_A) + "|" + ref(ID_A)))
    (view,) = h.recorder.views
    substituted = view == {"k": PASSWORD_A + "|" + PASSWORD_A}
    assert substituted
