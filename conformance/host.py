"""The one small interface through which the suite talks to a host under test.

This module owns what a check may ask of a host: configure it, invoke a tool with raw argument
text, play the operator while a prompt is open, and observe every surface afterwards. The
in-process reference host and the subprocess driver both implement :class:`HostUnderTest`, so
every check runs unchanged against either. Nothing here knows how a host is built; nothing here
may print a canary.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class HandlerKind(enum.Enum):
    """The standard adversarial handlers a check can bind to a tool (docs/driver-protocol.md)."""

    ECHO = "echo"
    """Returns the raw arguments, then every form (a to d) of every string value, one a line."""
    SHA256 = "sha256"
    """Returns the lower-case hex SHA-256 of each string value's UTF-8 bytes, one a line."""
    THROWER = "thrower"
    """Raises an error whose message holds every string value."""
    TIMEOUT = "timeout"
    """Sleeps past the execution timeout, then returns every string value."""
    OVERCAP = "overcap"
    """Returns filler so that the first string value straddles the 150,000-character cut."""
    STATIC = "static"
    """Returns a fixed text from its options."""
    RECORDER = "recorder"
    """Returns "ok"; its receipt is the point."""
    RICH = "rich"
    """MCP only: puts every form of the values on every MCP surface (docs/mcp.md)."""


@dataclass(frozen=True, slots=True)
class SecretSpec:
    """One vault entry to configure. Canaries go here and nowhere else."""

    id: str
    website: str
    username: str
    password: str
    notes: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool to register, bound to a standard handler."""

    name: str
    provider: str
    handler: HandlerKind
    risk: str = "MEDIUM"
    permission: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostConfig:
    """Everything a check sets up before its first call; applied by :meth:`HostUnderTest.reset`.

    Attributes:
        secrets: The vault's entries.
        vault: ``"present"``, ``"absent"`` (a host built without a vault), or ``"failing:<kind>"``
            (every read fails with that kind, e.g. ``"failing:offline"``).
        policy: The policy file's content as an object, or ``None`` for no file.
        policy_text: Raw policy file text, used instead of ``policy`` to test invalid files.
        admin: Whether the signed-in user is an admin.
        permissions: The user's permissions.
        tools: The tools to register.
        approval_timeout_s: The host's approval timeout.
        pending_limit: The host's pending-prompt limit.
        execution_timeout_s: The host's execution timeout.
        vault_failure_message: The failure's own message for a ``failing:<kind>`` vault, chosen
            by the suite (a canary the host must never report); ``None`` leaves it to the host.
        vault_failing_from_page: For a ``failing:<kind>`` vault, the first page that fails; the
            pages before it are served. ``None`` (the default) fails every read.
        ledger_seed: The bytes of an existing ledger file the host opens and appends to, as if
            it had written them in an earlier run; ``None`` starts with no file.
        policy_store: ``"working"``, or ``"failing"``: saving a rule (an "always allow" or a
            "trust this plugin" answer) fails to persist.
    """

    secrets: tuple[SecretSpec, ...] = ()
    vault: str = "present"
    policy: Mapping[str, Any] | None = None
    policy_text: str | None = None
    admin: bool = False
    permissions: tuple[str, ...] = ("secret.read",)
    tools: tuple[ToolSpec, ...] = ()
    approval_timeout_s: float = 45.0
    pending_limit: int = 4
    execution_timeout_s: float = 5.0
    vault_failure_message: str | None = None
    vault_failing_from_page: int | None = None
    ledger_seed: bytes | None = None
    policy_store: str = "working"


class Control(Protocol):
    """What the operator may do to the host while a prompt is open (decisions R3.4)."""

    def revoke(self, kind: str, name: str) -> None:
        """Revoke the saved rule of a ``"tool"`` or a ``"provider"``."""
        ...

    def reset(self) -> None:
        """Reset every saved rule and all session trust."""
        ...

    def save_rule(self, kind: str, name: str, rule: str) -> None:
        """Save ``ALLOW``, ``ASK`` or ``DENY`` for a ``"tool"`` or a ``"provider"``."""
        ...

    def set_permissions(self, admin: bool, permissions: Sequence[str]) -> None:
        """Change the signed-in user's role and permissions."""
        ...

    def trust_session(self, tool: str) -> None:
        """Trust a tool for the session, as the operator's earlier answer would have."""
        ...

    def set_yolo(self, enabled: bool) -> None:
        """Turn YOLO mode on or off."""
        ...

    def kill(self, tool: str | None = None) -> None:
        """Pull the kill-switch for one tool, or for every tool with ``None``."""
        ...


class Answer(enum.Enum):
    """The operator's answer to one prompt. ``NONE`` leaves it unanswered until it times out."""

    APPROVE = "approve"
    DENY = "deny"
    ALWAYS_ALLOW = "always_allow"
    TRUST_PROVIDER = "trust_provider"
    TRUST_SESSION = "trust_session"
    NONE = "none"


#: Plays the operator for one prompt: gets the request as a JSON-ready dict and the control
#: surface, may act on the host, and returns the answer.
OperatorScript = Callable[[Mapping[str, Any], Control], Answer]


@dataclass(frozen=True, slots=True)
class CallResult:
    """What the agent reads back from one call."""

    disposition: str
    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class Receipt:
    """What one handler received: its raw JSON text and its per-key view of it."""

    tool: str
    raw: str
    view: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One host log record, at any level."""

    level: str
    message: str


@dataclass(frozen=True, slots=True)
class Observation:
    """Every surface a check inspects after its calls.

    Attributes:
        ledger_bytes: The ledger file's bytes, exactly.
        log_records: Every host log record since the reset, debug and trace included.
        approval_requests: Every approval request, as JSON-ready dicts.
        receipts: Every handler call, in order.
        vault_reads: The page numbers read, in order, since the reset.
        printed: Anything else the host printed (its stderr, for a subprocess host).
        ledger_read: Every ledger record as the host's own reader decodes it, or ``None`` when
            the host does not report it (capability ``observe.ledger-read``).
        printed_whole: Whether ``printed`` holds all the host printed since the reset; when a
            bound cut it, the surface was not searched whole (decisions S1.9).
    """

    ledger_bytes: bytes
    log_records: tuple[LogRecord, ...]
    approval_requests: tuple[Mapping[str, Any], ...]
    receipts: tuple[Receipt, ...]
    vault_reads: tuple[int, ...]
    printed: str = ""
    ledger_read: tuple[Mapping[str, Any], ...] | None = None
    printed_whole: bool = True


class PendingCall(Protocol):
    """A call started without waiting for it."""

    def result(self, timeout: float) -> CallResult:
        """Wait for the call's result."""
        ...


@dataclass(frozen=True, slots=True)
class HostInfo:
    """Who the host is, from its handshake."""

    name: str
    version: str
    language: str
    capabilities: frozenset[str]


class HostUnderTest(Protocol):
    """A host the suite can check. Implementations: the in-process reference host and the
    subprocess driver client."""

    def info(self) -> HostInfo:
        """Return the host's name, version, language and capabilities."""
        ...

    def reset(self, config: HostConfig) -> None:
        """Start afresh with ``config``: empty ledger, log, requests, receipts and reads."""
        ...

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        """Run one call and wait for it; ``operator`` answers any prompt (approve if omitted)."""
        ...

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> PendingCall:
        """Start one call and return at once."""
        ...

    def observe(self) -> Observation:
        """Return every surface as it is now."""
        ...

    def control(self) -> Control:
        """Return the operator's control surface, to act on the host outside any prompt."""
        ...

    def close(self) -> None:
        """Release the host."""
        ...
