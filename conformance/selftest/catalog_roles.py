"""Mutants that judge a call by its reference fields, or read the admin role once.

This module owns the broken reference hosts behind ``conformance/checks/test_roles_hunt.py``: a
host whose feature switch, secret policy or fence guards passwords and notes only (a username is
"account metadata"), one whose YOLO mode lifts ``secretBearingCalls = DENY``, one whose YOLO
mode, turned on while a prompt is open, approves it, and two that read the admin role once, at
a call's start or at the session's first secret-bearing call. Each is a
:class:`~conformance.selftest.base.Mutant`; each changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_REG: Final = "reference_impl._registry"
_GATE: Final = "reference_impl._approve"
_POLICY: Final = "reference_impl._policy"

#: True when a call carries a reference to anything but a username: the mutants' notion of a
#: "credential-bearing" call. Inserted into the recompiled functions' globals.
_CREDENTIAL: Final = (
    "def _credential(refs):\n    return any(ref.field.value != 'username' for ref in refs)\n"
)

#: The admin role as the patched fence read it when the prompt opened, per calling thread.
_local = threading.local()


def _admin_at_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``Registry._approve`` to note the admin role as the prompt opens."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.admin = self.user.is_admin
        return original(self, call, records)

    return approve


def _fence_with_noted_role(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``Registry._read_lost_since`` to judge the role the prompt opened under."""
    from reference_impl._types import SECRET_READ

    @functools.wraps(original)
    def lost(self: Any, losses: int) -> bool:
        admin = getattr(_local, "admin", self.user.is_admin)
        return bool(
            self._read_losses != losses or not (admin or SECRET_READ in self.user.permissions)
        )

    return lost


def _losses_by_permission(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``Registry.set_user`` to count a loss of secret.read by the permission alone."""
    from reference_impl._types import SECRET_READ

    @functools.wraps(original)
    def set_user(self: Any, user: Any) -> None:
        with self._user_lock:
            if SECRET_READ in self._user.permissions and SECRET_READ not in user.permissions:
                self._read_losses += 1
            self._user = user

    return set_user


def _note_registry(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``Registry._approve`` to hand the patched gate its registry on the call's thread."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.registry = self
        return original(self, call, records)

    return approve


def _yolo_approves_pending(original: Callable[..., Any]) -> Callable[..., Any]:
    """Patch ``ApprovalGate.ask`` so that YOLO turned on while the prompt is open turns the
    operator's denial into an approval."""
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        rules = _local.registry.rules
        before = rules._yolo
        answer = original(self, request)
        if answer is Answer.DENY and not before and rules._yolo:
            return Answer.APPROVE
        return answer

    return ask


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "username-skips-secret-policy",
        "MSG-006",
        "secretBearingCalls = DENY refuses calls that carry a password or a note only: a call "
        "whose references are all usernames is judged by its tool's rules, prompts and runs.",
        (
            line_patch(
                _REG,
                "Registry._prepass",
                "if self.policy.secret_bearing_calls is Rule.DENY:",
                "if _credential(call.refs) and self.policy.secret_bearing_calls is Rule.DENY:",
                _CREDENTIAL,
            ),
            line_patch(
                _REG,
                "Registry._govern",
                "decision = self.rules.decide(tool.name, tool.provider_id, bool(call.refs))",
                "decision = self.rules.decide(tool.name, tool.provider_id, _credential(call.refs))",
                _CREDENTIAL,
            ),
        ),
    ),
    Mutant(
        "username-ignores-feature-switch",
        "MSG-003",
        "secretReferencesEnabled = false refuses calls that carry a password or a note only: a "
        "call whose references are all usernames prompts and runs.",
        (
            line_patch(
                _REG,
                "Registry._prepass",
                "if not self.policy.secret_references_enabled:",
                "if _credential(call.refs) and not self.policy.secret_references_enabled:",
                _CREDENTIAL,
            ),
        ),
    ),
    Mutant(
        "username-unfenced-secret-read",
        "FENCE-003",
        "The fence checks secret.read only for a call that carries a password or a note: a "
        "username-only call whose user lost secret.read while its prompt was open runs.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "if call.refs and self._read_lost_since(losses):",
                "if _credential(call.refs) and self._read_lost_since(losses):",
                _CREDENTIAL,
            ),
        ),
    ),
    Mutant(
        "admin-role-read-at-prompt",
        "FENCE-003",
        "The fence judges the admin role the prompt opened under and counts a loss of "
        "secret.read by the permission alone, so an admin demoted while the prompt is open "
        "keeps the right to read and the call runs.",
        (
            (_REG, "Registry._approve", _admin_at_prompt),
            (_REG, "Registry._read_lost_since", _fence_with_noted_role),
            (_REG, "Registry.set_user", _losses_by_permission),
        ),
    ),
    Mutant(
        "admin-role-kept-for-session",
        "MSG-004",
        "The admin role is read once, at the session's first secret-bearing call, so an admin "
        "demoted between two calls still passes the secret.read check and the fence.",
        (
            line_patch(
                _REG,
                "Registry._prepass",
                "if not self.user.may(SECRET_READ):",
                "if not (self.__dict__.setdefault('_session_admin', self.user.is_admin)"
                " or SECRET_READ in self.user.permissions):",
            ),
            line_patch(
                _REG,
                "Registry._read_lost_since",
                "return self._read_losses != losses or not self._user.may(SECRET_READ)",
                "return self._read_losses != losses or not ("
                "self.__dict__.get('_session_admin', self._user.is_admin)"
                " or SECRET_READ in self._user.permissions)",
            ),
        ),
    ),
    Mutant(
        "yolo-lifts-secret-policy",
        "MSG-006",
        "YOLO mode lifts secretBearingCalls = DENY: under YOLO a secret-bearing call prompts "
        "and runs instead of being refused.",
        (
            line_patch(
                _REG,
                "Registry._prepass",
                "if self.policy.secret_bearing_calls is Rule.DENY:",
                "if self.policy.secret_bearing_calls is Rule.DENY and not self.rules._yolo:",
            ),
            line_patch(
                _POLICY,
                "Rules.decide",
                "bearing = self._policy.secret_bearing_calls",
                "bearing = Rule.ASK if self._yolo else self._policy.secret_bearing_calls",
            ),
        ),
    ),
    Mutant(
        "yolo-approves-open-prompt",
        "APPR-010",
        "YOLO turned on while a prompt is open approves what is pending: the operator's denial "
        "of a secret-bearing call becomes an approval and the call runs.",
        (
            (_REG, "Registry._approve", _note_registry),
            (_GATE, "ApprovalGate.ask", _yolo_approves_pending),
        ),
    ),
)
