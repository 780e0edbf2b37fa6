"""Mutants that break the order of a call's steps and the policy rules (decisions R2.3 and R7.2).

This module owns the broken reference hosts that take a step too early or too late (a refusal
after the prompt, the vault read for an unknown tool, the kill switch ignored) or that read the
policy files wrongly (a default deny, an allow that outranks a deny, the last member winning).
Each entry is a :class:`~conformance.selftest.base.Mutant`. It changes behaviour only and never
prints a value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"
_local = threading.local()
_RESOLVE = "reference_impl._resolve"


def _fail_open(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._policy import Policy

    @functools.wraps(original)
    def load(path: Any) -> Any:
        policy = original(path)
        return Policy() if policy.fault is not None else policy

    return load


def _bearing_deny_first(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._registry import BEARING_DENIED_MESSAGE
    from reference_impl._types import Disposition, Refusal, Rule

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if call.refs and self.policy.secret_bearing_calls is Rule.DENY:
            return Refusal(
                Disposition.SECRET_FORBIDDEN, BEARING_DENIED_MESSAGE, "bearing-denied", "MSG-006"
            )
        return original(self, call)

    return prepass


def _permission_dropped(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        return original(**{**fields, "permission": None})

    return build


def _remember_found(original: Callable[..., Any]) -> Callable[..., Any]:
    """The vault walk keeps the records it found."""

    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        found = original(vault, wanted)
        _local.found = found
        return found

    return walk


def _empty_field_deferred(original: Callable[..., Any]) -> Callable[..., Any]:
    """An empty field is not refused at resolution; its refusal waits for the prompt."""
    from reference_impl._types import Refusal

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        _local.deferred = None
        _local.found = {}
        outcome = original(vault, references)
        if not isinstance(outcome, Refusal) or outcome.reason != "empty-field":
            return outcome
        records = tuple(_local.found[reference.id] for reference in references)
        pairs = tuple(
            (reference, record.value(reference.field))
            for reference, record in zip(references, records, strict=True)
        )
        _local.deferred = outcome
        return pairs, records

    return resolve


def _refuse_after_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """A refusal left over from resolution is given once the operator has answered."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        answered = original(self, call, records)
        deferred = getattr(_local, "deferred", None)
        _local.deferred = None
        return deferred if deferred is not None else answered

    return approve


def _ledger_at_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger record is written as the prompt opens, before the tool has run."""
    from reference_impl._types import Disposition

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        self._record(call, Disposition.APPROVED_ONCE, False, None)
        _local.recorded = call.id
        return original(self, call, records)

    return approve


def _record_once(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call whose record was written early is not recorded again when it ends."""

    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if getattr(_local, "recorded", None) == call.id:
            _local.recorded = None
            return call.id
        return original(self, call, *args)

    return record


def _bearing_default_deny(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """A policy file that does not set secretBearingCalls makes it DENY."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def parse(text: str) -> Any:
        policy = original(text)
        if "secretBearingCalls" not in json.loads(text):
            return dataclasses.replace(policy, secret_bearing_calls=Rule.DENY)
        return policy

    return parse


def _tool_allow_first(original: Callable[..., Any]) -> Callable[..., Any]:
    """A tool ALLOW is consulted before a provider DENY, and wins."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def denied(self: Any, tool: str, provider: str) -> Any:
        verdict = original(self, tool, provider)
        if verdict == "provider:DENY" and self._tools.get(tool) is Rule.ALLOW:
            return None
        return verdict

    return denied


def _kill_only_when_gated(original: Callable[..., bool]) -> Callable[..., bool]:
    """The kill switch is read only where the pre-pass mutant below asks for it."""

    @functools.wraps(original)
    def killed(self: Any, tool: str) -> bool:
        return bool(getattr(_local, "kill_now", False)) and original(self, tool)

    return killed


def _kill_after_prepass(original: Callable[..., Any]) -> Callable[..., Any]:
    """The kill switch is decided after the secret pre-pass, so a pre-pass refusal wins."""
    from reference_impl._types import Disposition, Refusal

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        refusal = original(self, call)
        if refusal is not None:
            return refusal
        _local.kill_now = True
        try:
            dead = self.rules.killed(call.tool.name)
        finally:
            _local.kill_now = False
        if dead:
            return Refusal(
                Disposition.KILL_SWITCHED,
                f"Tool {call.tool.name} is disabled by the kill-switch",
                "kill-switch",
                "ORD-004",
            )
        return None

    return prepass


def _kill_all_ignored(original: Callable[..., None]) -> Callable[..., None]:
    """Pulling the kill switch for every tool does nothing."""

    @functools.wraps(original)
    def kill(self: Any, tool: str | None = None) -> None:
        if tool is not None:
            original(self, tool)

    return kill


def _allow_outranks_kill(original: Callable[..., bool]) -> Callable[..., bool]:
    """A tool ALLOW, a provider ALLOW, YOLO or session trust lets a kill-switched tool run."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def killed(self: Any, tool: str) -> bool:
        with self._lock:
            allowed = (
                self._tools.get(tool) is Rule.ALLOW
                or Rule.ALLOW in self._providers.values()
                or self._yolo
                or tool in self._session_trusted
            )
        return False if allowed else original(self, tool)

    return killed


def _unknown_tool_reads_vault(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call to an unknown tool that carries a marker reads the vault's first page first."""
    from reference_impl._scan import has_marker

    @functools.wraps(original)
    def invoke(self: Any, tool_name: str, args_json: str) -> Any:
        if tool_name not in self._tools and self.vault is not None and has_marker(args_json):
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, tool_name, args_json)

    return invoke


def _last_member_wins(original: Callable[..., Any]) -> Callable[..., Any]:
    """JSON objects in the host's files keep the last of two members of one name."""
    return dict


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "policy-fails-open",
        "POL-002",
        "An invalid policy file is replaced by the defaults instead of denying every tool.",
        (("reference_impl.harness", "load_policy", _fail_open),),
    ),
    Mutant(
        "bearing-deny-first",
        "ORD-001",
        "secretBearingCalls DENY is decided before the feature switch, secret.read and tool DENY.",
        ((_REG, "Registry._prepass", _bearing_deny_first),),
        via="driver",
    ),
    Mutant(
        "rbac-ignored",
        "ORD-004",
        "A tool's RBAC permission is dropped when it is registered, so anyone may use it.",
        (("reference_impl.harness", "Tool", _permission_dropped),),
    ),
    Mutant(
        "empty-field-after-prompt",
        "ORD-003",
        "An empty field is refused only after the operator has answered the prompt.",
        (
            (_RESOLVE, "_walk", _remember_found),
            (_REG, "resolve", _empty_field_deferred),
            (_REG, "Registry._approve", _refuse_after_prompt),
        ),
        via="driver",
    ),
    Mutant(
        "ledger-at-prompt",
        "ORD-005",
        "The ledger record is written as the prompt opens, before the tool runs.",
        (
            (_REG, "Registry._approve", _ledger_at_prompt),
            (_REG, "Registry._record", _record_once),
        ),
        via="driver",
    ),
    Mutant(
        "policy-last-member-wins",
        "POL-005",
        "A policy member written twice keeps its last value instead of invalidating the file.",
        (("reference_impl._files", "_no_duplicates", _last_member_wins),),
        driver=False,
    ),
    Mutant(
        "bearing-default-deny",
        "POL-001",
        "A policy file that does not set secretBearingCalls denies secret-bearing calls.",
        (("reference_impl._policy", "parse_policy", _bearing_default_deny),),
        via="driver",
    ),
    Mutant(
        "tool-allow-beats-provider-deny",
        "POL-004",
        "A tool ALLOW outranks a provider DENY.",
        (("reference_impl._policy", "Rules.denied", _tool_allow_first),),
        via="driver",
    ),
    Mutant(
        "kill-after-prepass",
        "ORD-004",
        "The kill switch is decided after the secret pre-pass, so a malformed reference or a "
        "secret-policy DENY is reported instead.",
        (
            ("reference_impl._policy", "Rules.killed", _kill_only_when_gated),
            (_REG, "Registry._prepass", _kill_after_prepass),
        ),
        via="driver",
    ),
    Mutant(
        "kill-all-ignored",
        "ORD-004",
        "Pulling the kill switch for every tool does nothing.",
        (("reference_impl._policy", "Rules.kill", _kill_all_ignored),),
    ),
    Mutant(
        "allow-outranks-kill",
        "POL-004",
        "An ALLOW rule, YOLO or session trust lets a kill-switched tool run.",
        (("reference_impl._policy", "Rules.killed", _allow_outranks_kill),),
        via="driver",
    ),
    Mutant(
        "unknown-tool-reads-vault",
        "ORD-006",
        "A call to an unknown tool that carries a marker reads the vault before it is refused.",
        ((_REG, "Registry.invoke", _unknown_tool_reads_vault),),
        via="driver",
    ),
)
