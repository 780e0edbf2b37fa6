"""Mutants of the approval flow at moments that span two prompts, and of the fence and the queue
against controls applied while prompts are open.

This module owns the broken reference hosts behind ``conformance/checks/test_time_hunt.py``: a
fence that keeps one binding per tool (the revocation stamps, or the count of ``secret.read``
losses), refreshed by each prompt that opens, so a later call's prompt hides a change the first
one met; a fence that guards secret-bearing calls only, so a DENY saved while a reference-free
call's prompt is open lets it run; a fence that re-reads the rule in force as upstream's
``policyFor`` does, the tool's own rule first, beside saves that leave the stamps alone (a legal
variant), so a provider's DENY is hidden by the tool's ALLOW; a countdown that any operator
action restarts, so an answer after the approval timeout runs the call; and a kill-switch that
empties the approval queue's count while prompts are open. Each is a
:class:`~conformance.selftest.base.Mutant`; each changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch
from conformance.selftest.catalog_approval import save_keeps_stamp

_REG: Final = "reference_impl._registry"
_GATE: Final = "reference_impl._approve"
_POLICY: Final = "reference_impl._policy"
_HARNESS: Final = "reference_impl.harness"


def _bound_per_tool(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``Registry._approve`` to note, per tool, the stamps and the count of secret.read
    losses as each prompt opens: the latest prompt's binding replaces an earlier one's."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        tool = call.tool
        bound = self.__dict__.setdefault("_bound", {})
        with self._user_lock:
            losses = self._read_losses
        bound[tool.name] = (self.rules.stamp(tool.name, tool.provider_id), losses)
        return original(self, call, records)

    return approve


def _kill_clears(original: Callable[..., None]) -> Callable[..., None]:
    """Patch ``HarnessHost.control`` so that the kill-switch zeroes the count of open prompts."""

    @functools.wraps(original)
    def control(self: Any, op: str, params: Any) -> None:
        original(self, op, params)
        if op == "kill" and self.registry is not None:
            gate = self.registry.gate
            with gate._lock:
                gate._open = 0

    return control


def _control_noted(original: Callable[..., None]) -> Callable[..., None]:
    """Patch ``HarnessHost.control`` to note when the operator last acted on the host."""

    @functools.wraps(original)
    def control(self: Any, op: str, params: Any) -> None:
        self.__dict__["_active"] = time.monotonic()
        original(self, op, params)

    return control


#: The fence's re-read of the rule in force, as upstream's ``policyFor``: the tool's own rule,
#: else its provider's, else the default. Inserted into the recompiled function's globals.
_POLICY_FOR: Final = (
    "def _policy_for(rules, tool, provider):\n"
    "    with rules._lock:\n"
    "        if rules._policy.fault is not None:\n"
    "            return Rule.DENY\n"
    "        rule = rules._tools.get(tool) or rules._providers.get(provider)\n"
    "        return rule if rule is not None else rules._policy.default_rule\n"
)

#: The fence's rule checks, from the stamps' comparison to the DENY re-check, as the registry
#: writes them.
_FENCE_RULES: Final = """        if self.rules.stamp(tool.name, tool.provider_id) != stamp:
            return Refusal(
                Disposition.POLICY_DENIED,
                "The tool's approval was revoked while the prompt was open",
                "revoked",
                "FENCE-001",
            )
        if self.rules.denied(tool.name, tool.provider_id) is not None:"""

MUTANTS: Final = (
    Mutant(
        "stamps-bound-per-tool",
        "FENCE-001",
        "The fence compares the stamps with the ones the latest prompt for the tool opened "
        "under, so a call whose prompt met a revocation or reset runs when a later call's "
        "prompt opened after it.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "if self.rules.stamp(tool.name, tool.provider_id) != stamp:",
                "if self.rules.stamp(tool.name, tool.provider_id) != "
                "self.__dict__.get('_bound', {}).get(tool.name, (stamp,))[0]:",
            ),
            (_REG, "Registry._approve", _bound_per_tool),
        ),
    ),
    Mutant(
        "read-losses-bound-per-tool",
        "FENCE-003",
        "The fence counts losses of secret.read since the latest prompt for the tool opened, "
        "so a call whose prompt met a loss (given back before the answer) runs when a later "
        "call's prompt opened after it.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "if call.refs and self._read_lost_since(losses):",
                "if call.refs and self._read_lost_since("
                "self.__dict__.get('_bound', {}).get(tool.name, (None, losses))[1]):",
            ),
            (_REG, "Registry._approve", _bound_per_tool),
        ),
    ),
    Mutant(
        "reference-free-calls-unfenced",
        "FENCE-002",
        "The fence's rule checks guard secret-bearing calls only, so a DENY saved while a "
        "reference-free call's prompt is open, and in force at the answer, lets it run.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                _FENCE_RULES,
                _FENCE_RULES.replace("        if self.", "        if call.refs and self."),
            ),
        ),
    ),
    Mutant(
        "fence-reads-tool-rule-first",
        "FENCE-002",
        "Saves leave the stamps alone (legal) and the fence re-reads the rule in force tool "
        "first, as upstream's policyFor, so a provider DENY saved while the prompt is open is "
        "hidden by the tool's own ALLOW and the call runs.",
        (
            (_POLICY, "Rules.save_tool_rule", save_keeps_stamp("_tool_stamps")),
            (_POLICY, "Rules.save_provider_rule", save_keeps_stamp("_provider_stamps")),
            line_patch(
                _REG,
                "Registry._approve",
                "if self.rules.denied(tool.name, tool.provider_id) is not None:",
                "if _policy_for(self.rules, tool.name, tool.provider_id) is Rule.DENY:",
                _POLICY_FOR,
            ),
        ),
    ),
    Mutant(
        "control-restarts-countdown",
        "APPR-008",
        "Any operator action on the host keeps an open prompt alive: its countdown restarts, so "
        "an answer after the approval timeout runs the call when the operator acted meanwhile.",
        (
            (_HARNESS, "HarnessHost.control", _control_noted),
            line_patch(
                _HARNESS,
                "_CallbackOperator.ask",
                "if time.monotonic() > deadline:",
                "if time.monotonic() > max("
                "deadline, self._host.__dict__.get('_active', 0.0) + timeout):",
            ),
        ),
        # Behind the driver the adapter's own wait for the answer ends at the timeout.
        driver=False,
    ),
    Mutant(
        "kill-empties-queue",
        "APPR-009",
        "The kill-switch zeroes the count of open prompts while prompts are still open, so "
        "prompts open beyond the limit after any tool is killed.",
        (
            (_HARNESS, "HarnessHost.control", _kill_clears),
            line_patch(
                _GATE,
                "ApprovalGate.ask",
                "self._open -= 1",
                "self._open = max(0, self._open - 1)",
            ),
        ),
    ),
)
