"""The registry: the governed path of one call, steps [0] to [14] in the design's order.

This module owns sequencing. Each step is a call into the module named after it (scan, parse,
policy, resolve, approve, fence, substitute, execute, scrub, cap, ledger), and the optional
tracer hears each step's name as it starts, which is how a test pins the order. Refusals from
parsing to resolution are decided before any prompt. Values exist only between resolution and
scrubbing, inside this call: the registry must never log, record or return one, and it logs
reference names, dispositions and sizes only.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence

from reference_impl import _grammar
from reference_impl._approve import ApprovalGate
from reference_impl._arguments import ToolArguments, substitute
from reference_impl._cap import cap
from reference_impl._clock import Clock, SystemClock
from reference_impl._execute import Executor, Tool
from reference_impl._ledger import Ledger, LedgerError, MemoryLedger, errno_name
from reference_impl._limits import (
    APPROVAL_TIMEOUT_SECONDS,
    ERROR_SNIPPET_CHARS,
    EXECUTION_TIMEOUT_SECONDS,
    PENDING_APPROVAL_LIMIT,
)
from reference_impl._operator import NoOperatorError, Operator, ScriptedOperator
from reference_impl._policy import POLICY_FAULT_MESSAGE, Policy, PolicyPersistError, Rules
from reference_impl._resolve import resolve
from reference_impl._sanitize import cut, sanitize_arguments
from reference_impl._scan import has_marker
from reference_impl._scrub import Scrubber, scrub_tree
from reference_impl._types import (
    SECRET_READ,
    Answer,
    ApprovalRequest,
    CallOutcome,
    Disposition,
    LedgerRecord,
    Reference,
    Refusal,
    Risk,
    Rule,
    SecretRecord,
    SecretValue,
    ToolResult,
    User,
)
from reference_impl._vault import Vault

#: The steps of the governed path in the design's order; [0] is "gate". A call runs a prefix of
#: this order, skipping the steps it does not need (a call without references skips parse and
#: resolve; a call that needs no prompt skips approve and fence).
STEP_ORDER = (
    "gate",
    "scan",
    "parse",
    "policy",
    "resolve",
    "approve",
    "fence",
    "substitute",
    "execute",
    "scrub",
    "cap",
    "ledger",
)

DISABLED_MESSAGE = "Secret references are disabled on this host"
NO_PERMISSION_MESSAGE = "Secret references require the secret.read permission"
BEARING_DENIED_MESSAGE = "Secret-bearing calls are refused by host policy"
PERSIST_FAILED_MESSAGE = "The operator's answer could not be saved; the call did not run"
LEDGER_FAULT_MESSAGE = "The host's ledger cannot be written; no call runs until it can"
INTERNAL_FAILURE_MESSAGE = "The host failed while governing the call; its result is withheld"
#: The refusal of a call that needed approval when no operator could be asked: an MCP client
#: that did not declare elicitation, with no other channel to the operator (decisions R9.6
#: allows a deny). It says what happened, not "the operator denied".
NO_OPERATOR_MESSAGE = (
    "Denied without asking the operator: the client cannot ask for approval (it did not "
    "declare elicitation) and the host has no other way to ask"
)

_BROAD_DISPOSITIONS = {
    Answer.APPROVE: Disposition.APPROVED_ONCE,
    Answer.ALWAYS_ALLOW: Disposition.APPROVED_ALWAYS,
    Answer.TRUST_PROVIDER: Disposition.APPROVED_PROVIDER,
    Answer.TRUST_SESSION: Disposition.APPROVED_SESSION,
}


def _new_id() -> str:
    """Return what ``uuid.uuid4().hex`` returns, without building a ``UUID`` object.

    Sixteen random bytes with the version nibble set to 4 and the variant bits to 10, as
    ``uuid.UUID(bytes=..., version=4)`` sets them, in hexadecimal.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()


#: The scrubber of a call that resolved no value: it scrubs nothing and is never changed.
_NO_VALUES = Scrubber(())


class _Call:
    """What one call has gathered so far; never printed."""

    __slots__ = (
        "applied",
        "args",
        "disposition",
        "id",
        "ledger_error",
        "ledger_id",
        "marked",
        "recorded",
        "refs",
        "sanitized",
        "started",
        "tool",
        "unasked",
    )

    def __init__(self, tool: Tool, args: str, started: float) -> None:
        self.id = _new_id()
        self.tool = tool
        self.args = args
        self.started = started
        self.refs: tuple[Reference, ...] = ()
        self.applied = "none"
        self.sanitized: str | None = None
        self.marked: bool | None = None
        self.disposition: Disposition | None = None
        self.recorded = False
        self.unasked = False
        self.ledger_error: str | None = None
        self.ledger_id: str | None = None

    def sanitized_args(self) -> str:
        if self.sanitized is None:
            # The scan's answer, once step [1] has run, spares the sanitizer a second scan.
            self.sanitized = sanitize_arguments(self.args, marked=self.marked)
        return self.sanitized


class Registry:
    """The reference host's tool registry.

    Args:
        policy: The policy file as read at start-up; the defaults when omitted.
        vault: The vault port, or ``None`` for a host without one.
        operator: Who answers prompts; by default one that approves everything.
        ledger: Where records go; by default a list in memory.
        clock: The clock port.
        user: The signed-in user.
        approval_timeout: Seconds a prompt stays open.
        pending_limit: Prompts open at once before QUEUE_FULL.
        execution_timeout: Seconds a handler may run.
        logger: The host log.
        tracer: Hears each step's name as the step starts.
    """

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        vault: Vault | None = None,
        operator: Operator | None = None,
        ledger: Ledger | None = None,
        clock: Clock | None = None,
        user: User | None = None,
        approval_timeout: float = APPROVAL_TIMEOUT_SECONDS,
        pending_limit: int = PENDING_APPROVAL_LIMIT,
        execution_timeout: float = EXECUTION_TIMEOUT_SECONDS,
        logger: logging.Logger | None = None,
        tracer: Callable[[str], None] | None = None,
    ) -> None:
        self.policy = policy if policy is not None else Policy()
        self.rules = Rules(self.policy)
        self.vault = vault
        self.ledger: Ledger = ledger if ledger is not None else MemoryLedger()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.gate = ApprovalGate(
            operator if operator is not None else ScriptedOperator(),
            approval_timeout,
            pending_limit,
        )
        self.execution_timeout = execution_timeout
        self.log = logger if logger is not None else logging.getLogger("reference_impl")
        self._tracer = tracer
        self._tools: dict[str, Tool] = {}
        self._user = user if user is not None else User()
        self._user_lock = threading.Lock()
        #: How many times the signed-in user has lost secret.read: a prompt open across a loss
        #: refuses its call even if the permission is given back before the answer (R3.4).
        self._read_losses = 0
        self._executor = Executor()

    # --- host administration -------------------------------------------------------------

    def register(self, tool: Tool) -> None:
        """Add a tool, replacing any of the same name."""
        self._tools[tool.name] = tool

    def tools(self) -> tuple[Tool, ...]:
        """Return the registered tools."""
        return tuple(self._tools.values())

    @property
    def user(self) -> User:
        """The signed-in user."""
        with self._user_lock:
            return self._user

    def set_user(self, user: User) -> None:
        """Sign in another user, or change the user's permissions."""
        with self._user_lock:
            if self._user.may(SECRET_READ) and not user.may(SECRET_READ):
                self._read_losses += 1
            self._user = user

    def _read_lost_since(self, losses: int) -> bool:
        """Whether the user lacks secret.read now, or lost it since ``losses`` was counted."""
        with self._user_lock:
            return self._read_losses != losses or not self._user.may(SECRET_READ)

    # --- the governed path -----------------------------------------------------------------

    def _trace(self, step: str) -> None:
        if self._tracer is not None:
            self._tracer(step)

    def invoke(self, tool_name: str, args_json: str) -> CallOutcome:
        """Run one call through the governed path.

        Args:
            tool_name: The tool the agent named.
            args_json: The arguments exactly as the agent wrote them.

        Returns:
            What the agent reads. Every refusal is an outcome with its disposition. This method
            does not raise, whatever the arguments and whatever the handler does: a failure of
            the host itself ends the call with its result withheld, and is recorded.
        """
        tool = self._tools.get(tool_name)
        if tool is None:
            return CallOutcome(Disposition.UNKNOWN_TOOL, "Unknown tool", is_error=True)
        call = _Call(tool, args_json, self.clock.monotonic())
        try:
            return self._govern(call, args_json)
        except Exception as error:  # invoke's contract is that it never raises
            return self._internal_failure(call, error)

    def _govern(self, call: _Call, args_json: str) -> CallOutcome:
        """Run steps [0] to [14] for ``call``."""
        tool = call.tool
        # The log calls of the common path are guarded, so that a disabled level costs no
        # argument building.
        debug = self.log.isEnabledFor(logging.DEBUG)
        if debug:
            self.log.debug("call %s: %s received %d characters", call.id, tool.name, len(args_json))

        # [0] kill-switch and RBAC: a withheld tool reads no vault and never prompts.
        self._trace("gate")
        if self.rules.killed(tool.name):
            return self._refuse(
                call,
                Refusal(
                    Disposition.KILL_SWITCHED,
                    f"Tool {tool.name} is disabled by the kill-switch",
                    "kill-switch",
                    "ORD-004",
                ),
            )
        if tool.permission is not None and not self.user.may(tool.permission):
            return self._refuse(
                call,
                Refusal(
                    Disposition.RBAC_DENIED,
                    f"Tool {tool.name} requires the {tool.permission} permission",
                    "rbac",
                    "ORD-004",
                ),
            )

        # A call runs only when its record can be written: a ledger that cannot be opened, or
        # whose last append failed, refuses the call before anything reads the vault.
        refusal = self._ledger_fault()
        if refusal is not None:
            return self._refuse(call, refusal)

        # [1] the marker scan, which is all a call without references pays; [2] the parse.
        self._trace("scan")
        parsed: _grammar.ParsedArguments | None = None
        call.marked = has_marker(args_json)
        if call.marked:
            self._trace("parse")
            outcome = _grammar.parse_arguments(args_json)
            if isinstance(outcome, Refusal):
                return self._refuse(call, outcome)
            if outcome.references:
                parsed = outcome
                call.refs = outcome.references
        if debug:
            self.log.debug("call %s: references %s", call.id, [ref.name for ref in call.refs])

        # [3] to [6], the pre-pass refusals, and the policy decision.
        self._trace("policy")
        refusal = self._prepass(call)
        if refusal is not None:
            return self._refuse(call, refusal)
        decision = self.rules.decide(tool.name, tool.provider_id, bool(call.refs))
        call.applied = decision.applied
        if decision.rule is Rule.DENY:
            return self._refuse(call, self._policy_denied(tool))

        # [7] one vault walk for every reference.
        resolved: tuple[tuple[Reference, SecretValue], ...] = ()
        records: tuple[SecretRecord, ...] = ()
        if parsed is not None:
            self._trace("resolve")
            found = resolve(self.vault, parsed.references)
            if isinstance(found, Refusal):
                return self._refuse(call, found)
            resolved, records = found

        # [8] the prompt, always for a secret-bearing call; [9] the revocation fence.
        disposition = Disposition.ALLOWED
        if call.refs or decision.rule is Rule.ASK:
            answered = self._approve(call, records)
            if isinstance(answered, Refusal):
                return self._refuse(call, answered)
            disposition = answered

        # Another call's append may have failed while this one waited for its prompt.
        refusal = self._ledger_fault()
        if refusal is not None:
            return self._refuse(call, refusal)

        # [10] substitute, [11] execute.
        call.disposition = disposition
        self._trace("substitute")
        arguments = substitute(parsed, resolved) if parsed is not None else ToolArguments(args_json)
        self._trace("execute")
        result = self._executor.run(tool, arguments, self.execution_timeout)
        del arguments

        # [12] scrub, before [13] the cap.
        self._trace("scrub")
        scrubber = Scrubber(resolved) if resolved else _NO_VALUES
        text = result.text
        rich = result.rich if not result.is_error else None
        if scrubber and self.policy.result_scrubbing_enabled:
            text = scrubber.scrub(text)
            if rich is not None:
                rich = scrub_tree(scrubber, rich)
        self._trace("cap")
        text = cap(text)

        # [14] the ledger, from the agent's own arguments. Its error snippet is scrubbed even
        # with result scrubbing off, since the ledger is a persistent surface; with it on, the
        # text was scrubbed at [12] and is not scrubbed again.
        snippet = None
        if result.is_error:
            if scrubber and not self.policy.result_scrubbing_enabled:
                snippet = cut(scrubber.scrub(text), ERROR_SNIPPET_CHARS)
            else:
                snippet = cut(text, ERROR_SNIPPET_CHARS)
        ledger_id = self._record(call, disposition, result.is_error, snippet)
        if ledger_id is None:
            # The tool ran and its record is lost: the caller is told, on the call itself.
            return CallOutcome(
                disposition,
                text,
                result.is_error,
                tuple(r.name for r in call.refs),
                ledger_error=call.ledger_error,
            )
        if self.log.isEnabledFor(logging.INFO):
            self.log.info(
                "call %s: %s %s, %d characters returned",
                call.id,
                tool.name,
                disposition.value,
                len(text),
            )
        return CallOutcome(
            disposition,
            text,
            result.is_error,
            tuple(r.name for r in call.refs),
            ledger_id=ledger_id,
            rich=rich,
        )

    def _ledger_fault(self) -> Refusal | None:
        """Refuse a call whose record could not be written, before it runs."""
        fault = self.ledger.ready()
        if fault is None:
            return None
        return Refusal(Disposition.POLICY_DENIED, LEDGER_FAULT_MESSAGE, "ledger-fault", "LEDG-013")

    def _internal_failure(self, call: _Call, error: Exception) -> CallOutcome:
        """End a call the host itself failed on: withhold its result, and record it once."""
        self.log.error(
            "call %s: %s failed inside the host (%s)",
            call.id,
            call.tool.name,
            type(error).__name__,
        )
        disposition = (
            call.disposition if call.disposition is not None else Disposition.POLICY_DENIED
        )
        ledger_id = call.ledger_id
        if not call.recorded:
            try:
                ledger_id = self._record(call, disposition, True, INTERNAL_FAILURE_MESSAGE)
            except Exception:  # the record of a failure must not fail the call
                call.ledger_error = "the call's record could not be built"
        return CallOutcome(
            disposition,
            INTERNAL_FAILURE_MESSAGE,
            True,
            tuple(r.name for r in call.refs),
            ledger_id=ledger_id,
            ledger_error=call.ledger_error if ledger_id is None else None,
        )

    def _prepass(self, call: _Call) -> Refusal | None:
        """Decide steps [3] to [6] of a secret-bearing call, in the order of decisions R2.3."""
        if not call.refs:
            return None
        if not self.policy.secret_references_enabled:
            return Refusal(Disposition.SECRET_FORBIDDEN, DISABLED_MESSAGE, "disabled", "MSG-003")
        if not self.user.may(SECRET_READ):
            return Refusal(
                Disposition.SECRET_FORBIDDEN, NO_PERMISSION_MESSAGE, "no-permission", "MSG-004"
            )
        # The ledger's policyApplied names the rule that refused, as it does after [6].
        denied = self.rules.denied(call.tool.name, call.tool.provider_id)
        if denied is not None:
            call.applied = denied
            return self._policy_denied(call.tool)
        if self.policy.secret_bearing_calls is Rule.DENY:
            call.applied = "secret:DENY"
            return Refusal(
                Disposition.SECRET_FORBIDDEN, BEARING_DENIED_MESSAGE, "bearing-denied", "MSG-006"
            )
        return None

    def _policy_denied(self, tool: Tool) -> Refusal:
        if self.policy.fault is not None:
            return Refusal(
                Disposition.POLICY_DENIED, POLICY_FAULT_MESSAGE, "policy-fault", "POL-002"
            )
        return Refusal(
            Disposition.POLICY_DENIED,
            f"Tool {tool.name} is denied by host policy",
            "policy-deny",
            "MSG-005",
        )

    def _approve(self, call: _Call, records: Sequence[SecretRecord]) -> Disposition | Refusal:
        """Prompt the operator, then run the fence; return the disposition or a refusal."""
        self._trace("approve")
        tool = call.tool
        stamp = self.rules.stamp(tool.name, tool.provider_id)
        with self._user_lock:
            losses = self._read_losses
        descriptors = tuple(
            f"{record.website} ({record.username.reveal()}) - {reference.field.value}"
            for reference, record in zip(call.refs, records, strict=True)
        )
        request = ApprovalRequest(
            id=_new_id(),
            tool_name=tool.name,
            provider_id=tool.provider_id,
            risk=max(tool.risk, Risk.HIGH) if call.refs else tool.risk,
            descriptors=descriptors,
            arguments=call.sanitized_args(),
            secret_refs=tuple(reference.name for reference in call.refs),
            stamp=stamp,
        )
        self.log.debug("call %s: prompt %s for %s", call.id, request.id, request.secret_refs)
        try:
            answer = self.gate.ask(request)
        except NoOperatorError:
            # Nobody saw the request: the refusal and the record say so (decisions R9.6).
            self.log.info("call %s: no operator can be asked; the call is denied", call.id)
            call.unasked = True
            return Refusal(Disposition.DENIED, NO_OPERATOR_MESSAGE, "no-operator", "MCP-009")
        except Exception:  # an operator that fails has not approved
            self.log.warning("call %s: the operator failed; the call is denied", call.id)
            answer = Answer.DENY
        if answer is None:
            return Refusal(
                Disposition.QUEUE_FULL,
                "Too many approval requests are pending",
                "queue-full",
                "APPR-009",
            )
        if answer is Answer.TIMEOUT:
            return Refusal(
                Disposition.TIMEOUT, "The approval request timed out", "timeout", "APPR-008"
            )
        if answer is Answer.DENY:
            return Refusal(Disposition.DENIED, "The operator denied the call", "denied", "APPR-010")

        self._trace("fence")
        if self.rules.killed(tool.name):
            return Refusal(
                Disposition.KILL_SWITCHED,
                f"Tool {tool.name} is disabled by the kill-switch",
                "kill-switch",
                "ORD-004",
            )
        if self.rules.stamp(tool.name, tool.provider_id) != stamp:
            return Refusal(
                Disposition.POLICY_DENIED,
                "The tool's approval was revoked while the prompt was open",
                "revoked",
                "FENCE-001",
            )
        if self.rules.denied(tool.name, tool.provider_id) is not None:
            return Refusal(
                Disposition.POLICY_DENIED,
                f"Tool {tool.name} is denied by host policy",
                "policy-deny",
                "FENCE-002",
            )
        if call.refs and self._read_lost_since(losses):
            return Refusal(
                Disposition.SECRET_FORBIDDEN, NO_PERMISSION_MESSAGE, "no-permission", "FENCE-003"
            )

        if call.refs:
            # A broad answer to a secret-bearing call runs it once and grants nothing.
            return Disposition.APPROVED_ONCE
        try:
            if answer is Answer.ALWAYS_ALLOW:
                self.rules.save_tool_rule(tool.name, Rule.ALLOW)
            elif answer is Answer.TRUST_PROVIDER:
                self.rules.save_provider_rule(tool.provider_id, Rule.ALLOW)
        except PolicyPersistError:
            # A broad answer that cannot be kept grants nothing, and the call fails closed.
            return Refusal(
                Disposition.POLICY_PERSIST_FAILED,
                PERSIST_FAILED_MESSAGE,
                "persist-failed",
                "APPR-012",
            )
        if answer is Answer.TRUST_SESSION:
            self.rules.trust_session(tool.name)
        return _BROAD_DISPOSITIONS[answer]

    def _refuse(self, call: _Call, refusal: Refusal) -> CallOutcome:
        """End a call that its tool never saw, and record it."""
        self.log.info(
            "call %s: %s refused %s (%s)",
            call.id,
            call.tool.name,
            refusal.disposition.value,
            refusal.reason,
        )
        ledger_id = self._record(
            call, refusal.disposition, True, cut(refusal.message, ERROR_SNIPPET_CHARS)
        )
        return CallOutcome(
            refusal.disposition,
            refusal.message,
            True,
            tuple(r.name for r in call.refs),
            refusal,
            ledger_id=ledger_id,
            ledger_error=call.ledger_error,
        )

    def _record(
        self, call: _Call, disposition: Disposition, is_error: bool, snippet: str | None
    ) -> str | None:
        """Append the call's record; return its id, or ``None`` with ``call.ledger_error`` set.

        A failed append is never silent: it is logged at WARNING, by kind and without a value,
        and the outcome carries it (decisions R6.7).
        """
        self._trace("ledger")
        call.recorded = True
        record = LedgerRecord(
            id=call.id,
            timestamp=self.clock.now().isoformat(),
            tool_name=call.tool.name,
            provider_id=call.tool.provider_id,
            policy_applied=call.applied,
            approval_disposition=disposition,
            duration_ms=max(0, int((self.clock.monotonic() - call.started) * 1000)),
            is_error=is_error,
            sanitized_args=call.sanitized_args(),
            error_snippet=snippet,
            secret_refs=tuple(reference.name for reference in call.refs),
            operator_asked=False if call.unasked else None,
        )
        try:
            self.ledger.append(record)
        except Exception as error:  # any failure to record is reported alike
            # An OSError's text from this package's ledger names the file and an errno only;
            # any other failure is named by its type, as its text could quote anything.
            if isinstance(error, LedgerError):
                call.ledger_error = str(error)
            elif isinstance(error, OSError):
                call.ledger_error = f"the ledger could not be written ({errno_name(error)})"
            else:
                call.ledger_error = f"the ledger could not be written ({type(error).__name__})"
            self.log.warning("call %s: %s", call.id, call.ledger_error)
            return None
        call.ledger_id = record.id
        return record.id


def result_of(text: str, is_error: bool = False) -> ToolResult:
    """Return a handler result; a convenience for tools written as lambdas."""
    return ToolResult(text, is_error)
