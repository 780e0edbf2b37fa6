"""Mutants of controls that change state outside a prompt, and of precedence.

This module owns broken reference hosts of the second set of independent-implementer faults
that concern controls and the order of authority: a reset or revocation that relaxes what the
policy file decided, a trust checked before authorization, a permission check a trust skips.
The older checks let each of them through; the checks named below were written for them:

- ``trust-outranks-rbac``: ``test_withheld.py::test_rbac_outranks_every_rule`` (a tool the
  user may not use stays RBAC_DENIED under every ALLOW, YOLO and session trust, for plain and
  secret-bearing calls alike);
- ``reset-lifts-fail-closed``: ``test_policy.py::test_invalid_policy_outlasts_every_control``
  (an invalid policy file still denies every tool after a reset, a revocation, a saved ALLOW,
  session trust or YOLO);
- ``reset-restores-secret-switches`` and ``trust-skips-secret-read``:
  ``test_roles_hunt.py::test_refusal_before_the_vault_outlasts_every_control`` (the two secret
  switches of the policy file, and a missing ``secret.read``, still refuse a secret-bearing
  call after each of those controls);
- ``kill-switch-at-fence-as-policy-deny``:
  ``test_fence_history.py::test_kill_switch_pulled_while_prompt_open`` (FENCE-006 accepts a
  refusal as KILL_SWITCHED or one approved run, nothing else).

Each changes behaviour only and never prints a value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_REG: Final = "reference_impl._registry"
_POLICY: Final = "reference_impl._policy"

#: The test a host that takes trust for "do not check, just ask" puts before a permission check:
#: YOLO mode, or session trust for the call's tool.
_TRUSTED: Final = "self.rules._yolo or {tool}.name in self.rules._session_trusted"


# --- whole-function patches --------------------------------------------------------------------


def _reset_to_builtin_default_rule(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Rules.reset`` that also sets the live default rule back to the built-in ASK, which is
    where a host that fails closed by making DENY the live default keeps its fault."""
    from reference_impl._types import Rule

    def reset(self: Any) -> None:
        original(self)
        with self._lock:
            self._policy = dataclasses.replace(self._policy, default_rule=Rule.ASK, fault=None)

    return reset


def _reset_to_builtin_switches(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Rules.reset`` that restores every live setting, the secret switches included, to its
    built-in default."""
    from reference_impl._types import Rule

    def reset(self: Any) -> None:
        original(self)
        with self._lock:
            self._policy = dataclasses.replace(
                self._policy, secret_bearing_calls=Rule.ASK, secret_references_enabled=True
            )

    return reset


def _prepass_reads_live_switches(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``Registry._prepass`` reading the secret switches from the live rules' policy."""
    from reference_impl._registry import (
        BEARING_DENIED_MESSAGE,
        DISABLED_MESSAGE,
        NO_PERMISSION_MESSAGE,
    )
    from reference_impl._types import SECRET_READ, Disposition, Refusal, Rule

    def _prepass(self: Any, call: Any) -> Any:
        if not call.refs:
            return None
        live = self.rules.policy
        if not live.secret_references_enabled:
            return Refusal(Disposition.SECRET_FORBIDDEN, DISABLED_MESSAGE, "disabled", "MSG-003")
        if not self.user.may(SECRET_READ):
            return Refusal(
                Disposition.SECRET_FORBIDDEN, NO_PERMISSION_MESSAGE, "no-permission", "MSG-004"
            )
        denied = self.rules.denied(call.tool.name, call.tool.provider_id)
        if denied is not None:
            call.applied = denied
            return self._policy_denied(call.tool)
        if live.secret_bearing_calls is Rule.DENY:
            call.applied = "secret:DENY"
            return Refusal(
                Disposition.SECRET_FORBIDDEN, BEARING_DENIED_MESSAGE, "bearing-denied", "MSG-006"
            )
        return None

    return _prepass


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "trust-outranks-rbac",
        "ORD-004",
        "YOLO and session trust are checked as a fast path before the tool's RBAC, so a user "
        "without the tool's permission uses a trusted tool, and a secret-bearing call to it "
        "reaches the vault and the prompt.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "        if tool.permission is not None and not self.user.may(tool.permission):\n",
                "        if (\n"
                "            tool.permission is not None\n"
                "            and not self.user.may(tool.permission)\n"
                f"            and not ({_TRUSTED.format(tool='tool')})\n"
                "        ):\n",
            ),
        ),
    ),
    Mutant(
        "reset-lifts-fail-closed",
        "POL-002",
        "Reset sets the live default rule back to the built-in ASK, where a host that fails "
        "closed on an invalid policy file keeps its every-tool DENY, so after a reset an "
        "invalid policy no longer denies anything.",
        ((_POLICY, "Rules.reset", _reset_to_builtin_default_rule),),
    ),
    Mutant(
        "reset-restores-secret-switches",
        "MSG-006",
        "The secret switches live with the run-time rules and reset restores them to their "
        "built-in defaults, so after a reset secretBearingCalls DENY and "
        "secretReferencesEnabled false from the policy file are forgotten and secret-bearing "
        "calls prompt and run.",
        (
            (_POLICY, "Rules.reset", _reset_to_builtin_switches),
            (_REG, "Registry._prepass", _prepass_reads_live_switches),
        ),
    ),
    Mutant(
        "kill-switch-at-fence-as-policy-deny",
        "FENCE-006",
        "The fence folds every refusal it makes into one disposition: a call whose tool is "
        "kill-switched while its prompt is open is refused as POLICY_DENIED, neither as "
        "KILL_SWITCHED nor run as approved, the two outcomes the rulings leave open.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                '        self._trace("fence")\n'
                "        if self.rules.killed(tool.name):\n"
                "            return Refusal(\n"
                "                Disposition.KILL_SWITCHED,\n",
                '        self._trace("fence")\n'
                "        if self.rules.killed(tool.name):\n"
                "            return Refusal(\n"
                "                Disposition.POLICY_DENIED,\n",
            ),
        ),
    ),
    Mutant(
        "trust-skips-secret-read",
        "MSG-004",
        "Under YOLO or session trust the pre-pass skips the secret.read check (trust taken as "
        "'do not check, just ask'), at step [4] and at the fence alike, so a user without "
        "secret.read is prompted and, approved, gets the value delivered.",
        (
            line_patch(
                _REG,
                "Registry._prepass",
                "        if not self.user.may(SECRET_READ):\n",
                "        if not self.user.may(SECRET_READ) and not (\n"
                f"            {_TRUSTED.format(tool='call.tool')}\n"
                "        ):\n",
            ),
            line_patch(
                _REG,
                "Registry._approve",
                "        if call.refs and self._read_lost_since(losses):\n",
                "        if (\n"
                "            call.refs\n"
                "            and self._read_lost_since(losses)\n"
                f"            and not ({_TRUSTED.format(tool='tool')})\n"
                "        ):\n",
            ),
        ),
    ),
)
