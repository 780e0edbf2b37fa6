"""Mutant hosts that only the model-based check catches.

This module owns the broken reference hosts behind ``conformance/checks/test_model.py``: each
breaks one requirement at a moment or in a role no targeted check visits (a revocation during
the prompt of a call with two references; a call of two usernames to a trusted tool), and the
older checks let it through. A mutant here changes behaviour only, and never prints a value.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG: Final = "reference_impl._registry"


class _FrozenRules:
    """The fence's view of the rules for one call: the stamp the prompt opened under, and no
    DENY; everything else is the live rules'."""

    def __init__(self, rules: Any) -> None:
        self._rules = rules
        self._stamp: Any = None

    def stamp(self, tool: str, provider: str) -> Any:
        if self._stamp is None:
            self._stamp = self._rules.stamp(tool, provider)
        return self._stamp

    def denied(self, tool: str, provider: str) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rules, name)


def _fence_blind_to_two_references(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        if len(call.refs) < 2:
            return original(self, call, records)
        blind = copy.copy(self)
        blind.rules = _FrozenRules(self.rules)
        return original(blind, call, records)

    return approve


def _trusted_usernames_unasked(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Disposition

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        # Two or more: the targeted check of this role asks about a single username reference.
        usernames = len(call.refs) >= 2 and all(ref.field.value == "username" for ref in call.refs)
        if usernames and call.tool.name in self.rules._session_trusted:
            return Disposition.APPROVED_ONCE
        return original(self, call, records)

    return approve


MUTANTS: Final = (
    Mutant(
        "fence-blind-to-two-references",
        "FENCE-001",
        "A revocation, reset or DENY while the prompt is open is missed when the call carries "
        "two or more references.",
        ((_REG, "Registry._approve", _fence_blind_to_two_references),),
    ),
    Mutant(
        "trusted-usernames-unasked",
        "APPR-001",
        "A call whose references are two or more usernames, and nothing else, runs without a "
        "prompt on a tool trusted for the session.",
        ((_REG, "Registry._approve", _trusted_usernames_unasked),),
    ),
)
