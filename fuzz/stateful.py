"""A rule-based state machine over the reference registry.

This module owns the stateful fuzz model: random interleavings of calls with and without
references, policy saves, revocations, resets, permission changes, session trust and operator
answers (approvals, denials, broad answers and timeouts, from a scripted operator that may also
act on the host while its prompt is open). After every step it checks the invariants: the
ledger holds one record per call that reached the pre-pass, no handler ran for a refused,
denied, timed-out or revoked call, and no value appears on any surface. It must never print a
value: failures name references and dispositions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fuzz import rig as rig_module
from fuzz.strategies import POOL_IDS, argument_cases, carries_marker, fresh_id
from reference_impl import (
    SECRET_READ,
    Answer,
    ApprovalRequest,
    CallOutcome,
    Disposition,
    MemoryLedger,
    Policy,
    Rule,
    Rules,
    ScriptedOperator,
    User,
)
from reference_impl._approve import ApprovalGate

TOOLS: Final = ("echo", "recorder")
PROVIDER: Final = "fuzz"

#: What the operator does while a prompt is open, before answering (decisions R3.4).
ACTIONS: Final = ("none", "none", "revoke-tool", "deny-tool", "deny-provider", "reset", "drop-read")

#: Dispositions after which the handler must not have run.
NOT_RUN: Final = frozenset(
    {
        Disposition.DENIED,
        Disposition.TIMEOUT,
        Disposition.QUEUE_FULL,
        Disposition.POLICY_DENIED,
        Disposition.SECRET_FORBIDDEN,
        Disposition.SECRET_UNRESOLVED,
        Disposition.KILL_SWITCHED,
        Disposition.RBAC_DENIED,
    }
)


def _simple_args(kind: str, index: int, field: str) -> str:
    secret_id = POOL_IDS[index % len(POOL_IDS)]
    if kind == "none":
        return '{"path": ".env", "n": 1.50}'
    if kind == "valid":
        return f'{{"content": "KEY={{{{secret:{secret_id.upper()}{field}}}}}", "x": [1]}}'
    if kind == "unknown":
        return f'{{"content": "{{{{secret:{fresh_id()}}}}} and {{{{secret:{secret_id}}}}}"}}'
    if kind == "malformed":
        return '{"a": {"b": ["{{secret:cnry-0042}}"]}}'
    return '{"{{SECRET:' + secret_id + '}}": "v"}'


_RIG: rig_module.Rig | None = None


def _shared_rig() -> rig_module.Rig:
    # One registry for every run, reset in place, so handler threads are reused.
    global _RIG
    if _RIG is None:
        _RIG = rig_module.build_rig()
    return _RIG


class RegistryMachine(RuleBasedStateMachine):
    """Random interleavings of calls and host changes, with the invariants checked each step."""

    def __init__(self) -> None:
        super().__init__()
        self.rig = _shared_rig()
        self.calls = 0  # calls that reached the pre-pass
        self.results: list[str] = []
        self.answer = Answer.APPROVE
        self.action = "none"

    @initialize(
        bearing=st.sampled_from([Rule.ASK, Rule.ASK, Rule.DENY]),
        enabled=st.sampled_from([True, True, False]),
        default=st.sampled_from([Rule.ALLOW, Rule.ASK]),
    )
    def start(self, bearing: Rule, enabled: bool, default: Rule) -> None:
        """Start a fresh host: a new policy, rules, ledger and operator on the shared registry."""
        registry = self.rig.registry
        registry.policy = Policy(
            secret_references_enabled=enabled,
            secret_bearing_calls=bearing,
            default_rule=default,
        )
        registry.rules = Rules(registry.policy)
        self.rig.ledger = MemoryLedger()
        registry.ledger = self.rig.ledger
        self.rig.operator = ScriptedOperator(self._answer)
        registry.gate = ApprovalGate(self.rig.operator, 0.05, registry.gate.limit)
        registry.set_user(User(permissions=frozenset({SECRET_READ})))
        self.rig.clear()

    def _answer(self, request: ApprovalRequest) -> Answer:
        rules = self.rig.registry.rules
        if self.action == "revoke-tool":
            rules.revoke_tool(request.tool_name)
        elif self.action == "deny-tool":
            rules.save_tool_rule(request.tool_name, Rule.DENY)
        elif self.action == "deny-provider":
            rules.save_provider_rule(request.provider_id, Rule.DENY)
        elif self.action == "reset":
            rules.reset()
        elif self.action == "drop-read":
            self.rig.registry.set_user(User())
        return self.answer

    # --- rules ------------------------------------------------------------------------------

    @rule(
        tool=st.sampled_from(TOOLS),
        args=st.one_of(
            st.tuples(
                st.sampled_from(["none", "valid", "valid", "unknown", "malformed", "key"]),
                st.integers(0, 2),
                st.sampled_from(["", ".password", ".username", ".notes"]),
            ).map(lambda t: _simple_args(*t)),
            argument_cases(max_depth=2).map(lambda case: case.raw),
        ),
        answer=st.sampled_from(list(Answer)),
        action=st.sampled_from(ACTIONS),
    )
    def call(self, tool: str, args: str, answer: Answer, action: str) -> None:
        """Make one call; the operator answers ``answer`` after doing ``action``."""
        self.answer, self.action = answer, action
        before_runs = len(self.rig.receipts)
        before_prompts = len(self.rig.operator.requests)
        outcome = self.rig.registry.invoke(tool, args)
        self.calls += 1
        self.results.append(outcome.text)
        ran = len(self.rig.receipts) > before_runs
        prompted = len(self.rig.operator.requests) > before_prompts
        self._check_call(outcome, ran, prompted)
        # A stale revocation or permission drop stays in force; the model need not undo it.

    def _check_call(self, outcome: CallOutcome, ran: bool, prompted: bool) -> None:
        disposition = outcome.disposition
        name = disposition.value
        if disposition in NOT_RUN:
            assert not ran, f"the handler ran for a call ended as {name}"
        else:
            assert ran, f"the handler did not run for a call ended as {name}"
        if outcome.secret_refs and disposition not in NOT_RUN:
            assert prompted, "a secret-bearing call ran without a prompt"
            assert disposition is Disposition.APPROVED_ONCE, (
                f"a secret-bearing call ended as {name}, not APPROVED_ONCE"
            )
        if prompted and self.answer is Answer.TIMEOUT:
            assert disposition is Disposition.TIMEOUT, f"an unanswered prompt ended as {name}"
        if (
            prompted
            and self.answer not in (Answer.DENY, Answer.TIMEOUT)
            and self.action in ("revoke-tool", "deny-tool", "deny-provider", "reset")
        ):
            assert disposition is Disposition.POLICY_DENIED, (
                f"a call revoked while its prompt was open ended as {name}"
            )

    @rule(kind=st.sampled_from(["tool", "provider"]), rule_=st.sampled_from(list(Rule)))
    def save_rule(self, kind: str, rule_: Rule) -> None:
        """Save a tool or provider rule, as an operator's earlier answer would."""
        rules = self.rig.registry.rules
        if kind == "tool":
            rules.save_tool_rule("echo", rule_)
        else:
            rules.save_provider_rule(PROVIDER, rule_)

    @rule(kind=st.sampled_from(["tool", "provider"]))
    def revoke(self, kind: str) -> None:
        """Revoke a saved rule."""
        rules = self.rig.registry.rules
        if kind == "tool":
            rules.revoke_tool("echo")
        else:
            rules.revoke_provider(PROVIDER)

    @rule()
    def reset(self) -> None:
        """Reset every saved rule and all session trust."""
        self.rig.registry.rules.reset()

    @rule(admin=st.booleans(), read=st.booleans())
    def permissions(self, admin: bool, read: bool) -> None:
        """Change the signed-in user's role and permissions."""
        granted = frozenset({SECRET_READ}) if read else frozenset()
        self.rig.registry.set_user(User(is_admin=admin, permissions=granted))

    @rule(tool=st.sampled_from(TOOLS))
    def trust_session(self, tool: str) -> None:
        """Trust a tool for the session; a secret-bearing call must still prompt."""
        self.rig.registry.rules.trust_session(tool)

    @precondition(lambda self: self.calls > 0)
    @rule()
    def yolo(self) -> None:
        """Turn YOLO mode on; a secret-bearing call must still prompt."""
        self.rig.registry.rules.set_yolo(True)

    # --- invariants -------------------------------------------------------------------------

    @invariant()
    def one_record_per_call(self) -> None:
        """The ledger holds exactly one record per call that reached the pre-pass."""
        assert len(self.rig.ledger.records) == self.calls, (
            f"{len(self.rig.ledger.records)} ledger records for {self.calls} calls"
        )

    @invariant()
    def no_value_anywhere(self) -> None:
        """No form of any value is in any result, the ledger, a request or the log."""
        leaks = self.rig.leaks("\n".join(self.results))
        assert not leaks, f"values leaked: {leaks}"

    @invariant()
    def records_name_only_references(self) -> None:
        """Every record's arguments are the agent's own: no substituted value, references kept."""
        for record in self.rig.ledger.records:
            assert carries_marker(record.sanitized_args) or not record.secret_refs, (
                "a record with references lost them from its arguments"
            )


def run_machine(with_settings: settings) -> None:
    """Run :class:`RegistryMachine` as one test under ``with_settings``."""
    # Older Hypothesis releases leave run_state_machine_as_test unannotated; calling it through
    # a typed name type-checks against every release.
    run: Callable[..., None] = run_state_machine_as_test
    run(RegistryMachine, settings=with_settings)
