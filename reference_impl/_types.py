"""Value types shared by every step of the governed path.

This module owns the frozen dataclasses and enums that carry what happened to a call. It must
never hold a secret in a printable form: values live in :class:`SecretValue`, whose ``repr`` and
``str`` are redacted, and a :class:`Refusal` carries only static text and reference names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final


class Field(enum.Enum):
    """The three fields a reference can name, by their lower-case wire names."""

    PASSWORD = "password"
    USERNAME = "username"
    NOTES = "notes"


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``{{secret:<uuid>[.<field>]}}`` reference, by identity.

    Attributes:
        id: The secret's id, lower-cased.
        field: The field the reference names; no field means the password.
    """

    id: str
    field: Field

    @property
    def name(self) -> str:
        """The reference's name, ``<lower-case id>.<field>``, as the ledger records it."""
        return f"{self.id}.{self.field.value}"


REDACTED: Final = "<redacted>"


class SecretValue:
    """A resolved secret value that refuses to print itself.

    Anything that formats a ``SecretValue`` (logging, f-strings, ``repr`` in a traceback) sees
    ``<redacted>``. Only :meth:`reveal` returns the text, and only substitution and scrubbing
    call it.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """Return the plaintext. Callers own keeping it off every persistent surface."""
        return self._value

    def __repr__(self) -> str:
        return f"SecretValue({REDACTED})"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, format_spec: str) -> str:
        return REDACTED

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretValue) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a SecretValue is never pickled")


class Disposition(enum.Enum):
    """How a call ended, as the ledger's ``approvalDisposition`` records it."""

    ALLOWED = "ALLOWED"
    """Policy or trust let a call without references run with no prompt."""
    APPROVED_ONCE = "APPROVED_ONCE"
    """The operator approved this call only; every approved secret-bearing call ends here."""
    APPROVED_ALWAYS = "APPROVED_ALWAYS"
    """A call without references approved with "always allow" for its tool."""
    APPROVED_PROVIDER = "APPROVED_PROVIDER"
    """A call without references approved with "trust this provider"."""
    APPROVED_SESSION = "APPROVED_SESSION"
    """A call without references approved with "trust for this session"."""
    DENIED = "DENIED"
    """The operator denied the call."""
    TIMEOUT = "TIMEOUT"
    """The prompt stayed unanswered past the approval timeout."""
    QUEUE_FULL = "QUEUE_FULL"
    """More prompts were open than the pending limit allows."""
    POLICY_DENIED = "POLICY_DENIED"
    """A tool or provider rule, an unreadable policy, or the revocation fence refused the call."""
    POLICY_PERSIST_FAILED = "POLICY_PERSIST_FAILED"
    """A broad answer to a call without references could not be saved."""
    SECRET_FORBIDDEN = "SECRET_FORBIDDEN"
    """The host would not deliver: permission, policy, feature off, AI-provider key."""
    SECRET_UNRESOLVED = "SECRET_UNRESOLVED"
    """The host could not deliver: malformed, unknown id, empty field, vault failure."""
    KILL_SWITCHED = "KILL_SWITCHED"
    """The kill-switch withheld the tool."""
    RBAC_DENIED = "RBAC_DENIED"
    """The signed-in user may not use the tool."""
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    """No tool of that name is registered; such a call never reaches the pre-pass."""


#: Dispositions the activity log counts as "withheld": the tool never ran and no operator
#: answered (design, "What the ledger records").
WITHHELD: Final = frozenset(
    {
        Disposition.QUEUE_FULL,
        Disposition.POLICY_PERSIST_FAILED,
        Disposition.SECRET_FORBIDDEN,
        Disposition.SECRET_UNRESOLVED,
    }
)


class Rule(enum.Enum):
    """A tool or provider rule in the policy."""

    ALLOW = "ALLOW"
    ASK = "ASK"
    DENY = "DENY"


class Risk(enum.IntEnum):
    """A tool's risk, as an approval request shows it. Secret-bearing calls are at least HIGH."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4


class Answer(enum.Enum):
    """What the operator answered to an approval request."""

    APPROVE = "approve"
    DENY = "deny"
    ALWAYS_ALLOW = "always_allow"
    TRUST_PROVIDER = "trust_provider"
    TRUST_SESSION = "trust_session"
    TIMEOUT = "timeout"


#: Answers that grant more than the one call. On a secret-bearing call they all mean "once".
BROAD_ANSWERS: Final = frozenset({Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION})


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call refused before its tool ran.

    Attributes:
        disposition: The ledger disposition.
        message: The message the agent reads. Static text, reference names, pointers and
            offsets only: never candidate text, never a value.
        reason: A short static code for the cause, e.g. ``"malformed"``.
        requirement: The catalog ID of the requirement that makes this a refusal.
    """

    disposition: Disposition
    message: str
    reason: str
    requirement: str


@dataclass(frozen=True, slots=True)
class SecretRecord:
    """One vault entry. Its three text fields are wrapped so they never print."""

    id: str
    website: str
    username: SecretValue
    password: SecretValue
    notes: SecretValue
    tags: tuple[str, ...] = ()

    def value(self, which: Field) -> SecretValue:
        """Return the named field's value."""
        if which is Field.PASSWORD:
            return self.password
        if which is Field.USERNAME:
            return self.username
        return self.notes


@dataclass(frozen=True, slots=True)
class User:
    """The signed-in user, for RBAC: an admin holds every permission."""

    name: str = "operator"
    is_admin: bool = False
    permissions: frozenset[str] = frozenset()

    def may(self, permission: str) -> bool:
        """Return whether the user holds ``permission``."""
        return self.is_admin or permission in self.permissions


#: The permission that gates secret references, and ``secret_get`` with them (design, [4]).
SECRET_READ: Final = "secret.read"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the operator is asked to approve.

    Attributes:
        id: Unique per prompt.
        tool_name: The tool the call names.
        provider_id: The provider that serves the tool.
        risk: The tool's risk, raised to at least HIGH when the call carries references.
        descriptors: One ``<website> (<username>) - <field>`` per reference, in order of use.
        arguments: The arguments as the agent wrote them, references intact, sanitized.
        secret_refs: The reference names, in order of first use.
        stamp: The revocation stamps of the tool and the provider when the prompt opened; the
            approval is bound to them.
    """

    id: str
    tool_name: str
    provider_id: str
    risk: Risk
    descriptors: tuple[str, ...]
    arguments: str
    secret_refs: tuple[str, ...]
    stamp: tuple[int, int]

    @property
    def secret_bearing(self) -> bool:
        """Whether the call carries references."""
        return bool(self.secret_refs)


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What ``invoke`` returns to the agent.

    Attributes:
        disposition: How the call ended.
        text: The result or failure text the agent reads, scrubbed and capped.
        is_error: Whether ``text`` is failure text or a refusal.
        secret_refs: The reference names the call carried.
        refusal: The refusal, when the call was refused before its tool ran.
        ledger_id: The id of the ledger record written for the call, if one was.
        rich: The handler's further result surfaces, scrubbed as ``text`` is (``ToolResult``).
        ledger_error: Why the call's record could not be written, in static words naming the
            file and the kind of failure, or ``None`` when it was (decisions R6.7).
    """

    disposition: Disposition
    text: str
    is_error: bool
    secret_refs: tuple[str, ...] = ()
    refusal: Refusal | None = None
    ledger_id: str | None = None
    rich: object = None
    ledger_error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a handler returns: its text and whether that text reports a failure.

    Attributes:
        text: The result or failure text.
        is_error: Whether ``text`` reports a failure.
        rich: Optionally, a JSON-ready tree of further result surfaces (content items,
            ``structuredContent``, ``_meta``, progress and log lines) that the MCP layer sends
            as they are; the registry scrubs every string and member name in it.
    """

    text: str
    is_error: bool = False
    rich: object = None


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """One line of the operation ledger (decisions R6.2)."""

    id: str
    timestamp: str
    tool_name: str
    provider_id: str
    policy_applied: str
    approval_disposition: Disposition
    duration_ms: int
    is_error: bool
    sanitized_args: str
    error_snippet: str | None
    secret_refs: tuple[str, ...] = field(default=())
    operator_asked: bool | None = None
    """``False`` when the call needed approval and no operator could be asked; ``None`` (the
    field is not written) otherwise. Only ``False`` is ever written: a record without the field
    is one whose prompt, if any, reached an operator."""

    def to_json_dict(self) -> dict[str, object]:
        """Return the record under the ledger's wire field names."""
        data: dict[str, object] = {
            "id": self.id,
            "timestamp": self.timestamp,
            "toolName": self.tool_name,
            "providerId": self.provider_id,
            "policyApplied": self.policy_applied,
            "approvalDisposition": self.approval_disposition.value,
            "durationMs": self.duration_ms,
            "isError": self.is_error,
            "sanitizedArgs": self.sanitized_args,
            "errorSnippet": self.error_snippet,
            "secretRefs": list(self.secret_refs),
        }
        if self.operator_asked is not None:
            data["operatorAsked"] = self.operator_asked
        return data
