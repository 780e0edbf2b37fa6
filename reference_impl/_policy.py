"""Policy: the host policy file and the live tool and provider rules.

This module owns reading the policy file at start-up (decisions R7.2), the rules that change
while the host runs (saves, revocations, resets, session trust, YOLO, the kill-switch), the
revocation stamps an approval is bound to, and the precedence of the design's "Approval
semantics". It fails closed: a file that cannot be read, parsed or validated makes every tool
DENY, and nothing in it can make a secret-bearing call run without a prompt.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Final

from reference_impl._files import InputFileError, parse_json, read_input_file, unknown_member
from reference_impl._types import Rule

#: The three fields the design adds to the policy file, with their defaults (R7.2).
SECRET_FIELDS: Final = ("secretReferencesEnabled", "secretBearingCalls", "resultScrubbingEnabled")

#: Every top-level field this host's policy file may carry. An unknown field makes the file
#: invalid: a misspelt ``secretBearingCall: DENY`` must not silently leave ASK in force.
KNOWN_FIELDS: Final = frozenset({*SECRET_FIELDS, "defaultRule", "tools", "providers", "yolo"})

POLICY_FAULT_MESSAGE: Final = "The host policy could not be read; every tool is denied"


@dataclass(frozen=True, slots=True)
class Policy:
    """The policy file as read at start-up.

    Attributes:
        secret_references_enabled: ``secretReferencesEnabled``; false refuses every reference.
        secret_bearing_calls: ``secretBearingCalls``: ASK or DENY, never ALLOW.
        result_scrubbing_enabled: ``resultScrubbingEnabled``.
        default_rule: The rule for a tool no other rule names.
        tools: Tool rules by tool name.
        providers: Provider rules by provider id.
        yolo: YOLO mode: run calls without references with no prompt.
        fault: Why the file is invalid, or ``None``. A faulted policy denies every tool.
    """

    secret_references_enabled: bool = True
    secret_bearing_calls: Rule = Rule.ASK
    result_scrubbing_enabled: bool = True
    default_rule: Rule = Rule.ASK
    tools: dict[str, Rule] = field(default_factory=dict)
    providers: dict[str, Rule] = field(default_factory=dict)
    yolo: bool = False
    fault: str | None = None

    @classmethod
    def faulted(cls, reason: str) -> Policy:
        """Return the fail-closed policy for an invalid file."""
        return cls(default_rule=Rule.DENY, fault=reason)


class PolicyError(ValueError):
    """The policy file is invalid; the message says why and never quotes the file."""


class PolicyPersistError(OSError):
    """A rule could not be saved to the policy store; the rule is not in force."""


def _rules(value: object, what: str) -> dict[str, Rule]:
    if not isinstance(value, dict):
        raise PolicyError(f"{what} must be an object of rules")
    rules: dict[str, Rule] = {}
    for name, rule in value.items():
        if rule not in ("ALLOW", "ASK", "DENY"):
            raise PolicyError(f"a rule in {what} must be ALLOW, ASK or DENY")
        rules[name] = Rule(rule)
    return rules


def parse_policy(text: str) -> Policy:
    """Validate policy text.

    Args:
        text: The policy file's content.

    Returns:
        The policy.

    Raises:
        PolicyError: The text is not a valid policy.
    """
    try:
        # A member written twice is refused at any depth: which one counts is ambiguous, and
        # "the last one wins" could relax a DENY written first (decisions R7.2).
        data = parse_json(text, "the policy file")
    except InputFileError as error:
        raise PolicyError(str(error)) from None
    if not isinstance(data, dict):
        raise PolicyError("the policy file must hold a JSON object")
    unknown = sorted(set(data) - KNOWN_FIELDS)
    if unknown:
        # Only a short printable name is quoted: a long one could be a value (decisions R7.3).
        raise PolicyError(f"the policy file has {unknown_member(unknown[0])}")
    for name in ("secretReferencesEnabled", "resultScrubbingEnabled", "yolo"):
        if name in data and not isinstance(data[name], bool):
            raise PolicyError(f"{name} must be true or false")
    bearing = data.get("secretBearingCalls", "ASK")
    if bearing not in ("ASK", "DENY"):
        raise PolicyError("secretBearingCalls must be ASK or DENY")
    default = data.get("defaultRule", "ASK")
    if default not in ("ALLOW", "ASK", "DENY"):
        raise PolicyError("defaultRule must be ALLOW, ASK or DENY")
    return Policy(
        secret_references_enabled=data.get("secretReferencesEnabled", True),
        secret_bearing_calls=Rule(bearing),
        result_scrubbing_enabled=data.get("resultScrubbingEnabled", True),
        default_rule=Rule(default),
        tools=_rules(data.get("tools", {}), "tools"),
        providers=_rules(data.get("providers", {}), "providers"),
        yolo=data.get("yolo", False),
    )


def load_policy(path: str | os.PathLike[str] | None) -> Policy:
    """Read the policy file at start-up, failing closed.

    Args:
        path: The file, or ``None`` for the defaults. A missing file means the defaults too,
            as every field is optional.

    Returns:
        The policy, or a faulted policy that denies every tool when the file is invalid: when
        it is not a regular file, is over 16 MiB, is not UTF-8 JSON or writes a member twice
        (decisions R7.2, R7.3).
    """
    if path is None:
        return Policy()
    try:
        text = read_input_file(path, "the policy file")
    except FileNotFoundError:
        return Policy()
    except InputFileError as error:
        return Policy.faulted(str(error))
    try:
        return parse_policy(text)
    except PolicyError as error:
        return Policy.faulted(str(error))


@dataclass(frozen=True, slots=True)
class Decision:
    """A policy decision for one call: the rule in force and where it came from."""

    rule: Rule
    applied: str


class Rules:
    """The live rules: saved at run time, revoked, reset, and stamped on every change.

    A stamp counts the changes to one tool's or one provider's rule. An approval is bound to the
    stamps read when its prompt opened; the fence refuses it if either moved (design, step [9]).
    """

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._lock = threading.Lock()
        self._tools: dict[str, Rule] = dict(policy.tools)
        self._providers: dict[str, Rule] = dict(policy.providers)
        self._tool_stamps: dict[str, int] = {}
        self._provider_stamps: dict[str, int] = {}
        self._session_trusted: set[str] = set()
        self._yolo = policy.yolo
        self._kill_all = False
        self._killed: set[str] = set()
        self._generation = 0
        #: Why saving a rule fails (a policy store that cannot be written), or ``None``.
        self.store_failure: str | None = None

    @property
    def policy(self) -> Policy:
        """The policy file as read at start-up."""
        return self._policy

    def stamp(self, tool: str, provider: str) -> tuple[int, int]:
        """Return the tool's and the provider's revocation stamps.

        Each counts the changes to that rule plus the resets of every rule, so a reset moves
        every stamp at once.
        """
        with self._lock:
            return (
                self._generation + self._tool_stamps.get(tool, 0),
                self._generation + self._provider_stamps.get(provider, 0),
            )

    def save_tool_rule(self, tool: str, rule: Rule) -> None:
        """Save a rule for a tool ("always allow" saves ALLOW).

        Raises:
            PolicyPersistError: The policy store cannot be written; nothing changes.
        """
        with self._lock:
            if self.store_failure is not None:
                raise PolicyPersistError(self.store_failure)
            self._tools[tool] = rule
            self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) + 1

    def save_provider_rule(self, provider: str, rule: Rule) -> None:
        """Save a rule for a provider ("trust this provider" saves ALLOW).

        Raises:
            PolicyPersistError: The policy store cannot be written; nothing changes.
        """
        with self._lock:
            if self.store_failure is not None:
                raise PolicyPersistError(self.store_failure)
            self._providers[provider] = rule
            self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) + 1

    def revoke_tool(self, tool: str) -> None:
        """Drop the tool's saved rule and session trust; the file's rule, if any, stays."""
        with self._lock:
            if tool in self._policy.tools:
                self._tools[tool] = self._policy.tools[tool]
            else:
                self._tools.pop(tool, None)
            self._session_trusted.discard(tool)
            self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) + 1

    def revoke_provider(self, provider: str) -> None:
        """Drop the provider's saved rule; the file's rule, if any, stays."""
        with self._lock:
            if provider in self._policy.providers:
                self._providers[provider] = self._policy.providers[provider]
            else:
                self._providers.pop(provider, None)
            self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) + 1

    def reset(self) -> None:
        """Forget every rule saved at run time and all session trust; every stamp moves."""
        with self._lock:
            self._tools = dict(self._policy.tools)
            self._providers = dict(self._policy.providers)
            self._session_trusted.clear()
            self._generation += 1

    def trust_session(self, tool: str) -> None:
        """Trust a tool for the rest of the session."""
        with self._lock:
            self._session_trusted.add(tool)

    def set_yolo(self, enabled: bool) -> None:
        """Turn YOLO mode on or off."""
        with self._lock:
            self._yolo = enabled

    def kill(self, tool: str | None = None) -> None:
        """Pull the kill-switch for one tool, or for every tool."""
        with self._lock:
            if tool is None:
                self._kill_all = True
            else:
                self._killed.add(tool)

    def unkill(self) -> None:
        """Release the kill-switch."""
        with self._lock:
            self._kill_all = False
            self._killed.clear()

    def killed(self, tool: str) -> bool:
        """Return whether the kill-switch withholds ``tool``."""
        with self._lock:
            return self._kill_all or tool in self._killed

    def denied(self, tool: str, provider: str) -> str | None:
        """Return which DENY applies (policy fault, tool, provider), or ``None``."""
        with self._lock:
            if self._policy.fault is not None:
                return "policy-fault"
            if self._tools.get(tool) is Rule.DENY:
                return "tool:DENY"
            if self._providers.get(provider) is Rule.DENY:
                return "provider:DENY"
            return None

    def decide(self, tool: str, provider: str, secret_bearing: bool) -> Decision:
        """Decide a call by the design's precedence, after the kill-switch and RBAC.

        Policy fault, then tool or provider DENY, then the secret policy, then session trust
        (and YOLO), then the tool rule, then provider ALLOW, then the default.

        Args:
            tool: The tool's name.
            provider: The tool's provider.
            secret_bearing: Whether the call carries references; such a call is never ALLOW.

        Returns:
            The decision and a label for the ledger's ``policyApplied``.
        """
        denied = self.denied(tool, provider)
        if denied is not None:
            return Decision(Rule.DENY, denied)
        with self._lock:
            if secret_bearing:
                bearing = self._policy.secret_bearing_calls
                return Decision(bearing, "secret:" + bearing.value)
            if tool in self._session_trusted:
                return Decision(Rule.ALLOW, "session-trust")
            if self._yolo:
                return Decision(Rule.ALLOW, "yolo")
            tool_rule = self._tools.get(tool)
            if tool_rule is not None:
                return Decision(tool_rule, "tool:" + tool_rule.value)
            provider_rule = self._providers.get(provider)
            if provider_rule is not None:
                return Decision(provider_rule, "provider:" + provider_rule.value)
            return Decision(self._policy.default_rule, "default:" + self._policy.default_rule.value)
