"""``line_patch``: a one-line source mutant as an ordinary patch of the mutant catalog.

The identity change (the line read as itself) must leave the reference host as conformant as it
was on the check module of the function's class, so the recompile itself changes nothing; a line
that is not in the function once, and a function that a recompile on its own would change (a
closure, a zero-argument ``super()``, a private name), are refused rather than left unmutated.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Final

import pytest

from conformance.selftest.base import Mutant, applied, line_patch
from tests.conformance.suite_runs import run_suite

#: (module, function, a line of it, the check module of its class).
IDENTITIES: Final = (
    (
        "reference_impl._registry",
        "Registry._refuse",
        "call, refusal.disposition, True, cut(refusal.message, ERROR_SNIPPET_CHARS)",
        "conformance.checks.test_ledger_outcomes",
    ),
    (
        "reference_impl._grammar",
        "_Walker.strings",
        'if char == ",":',
        "conformance.checks.test_separators",
    ),
    (
        "reference_impl._policy",
        "Rules.revoke_tool",
        "self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) + 1",
        "conformance.checks.test_fence_spans",
    ),
)


def _closure() -> Any:
    seen = 0

    def counted() -> int:
        return seen + 1

    return counted


class _Shapes:
    @staticmethod
    def twice(value: int) -> int:
        return value * 2

    @property
    def size(self) -> int:
        return 2

    def __repr__(self) -> str:
        return super().__repr__()

    def hidden(self) -> int:
        return self.__secret

    __secret = 3


def _transform(original: Any, before: str, after: str) -> Any:
    """Apply a line patch's transform to ``original``, as :func:`applied` does."""
    return line_patch(__name__, "_Shapes", before, after)[2](original)


@pytest.mark.parametrize(
    ("module", "dotted", "line", "check"), IDENTITIES, ids=[case[1] for case in IDENTITIES]
)
def test_identity_leaves_the_host_conformant(
    module: str, dotted: str, line: str, check: str, tmp_path: Path
) -> None:
    """The function recompiled with its line unchanged passes its class's check module."""
    identity = Mutant(
        "identity", "none", "The line as it is.", (line_patch(module, dotted, line, line),)
    )
    owner_name, attribute = dotted.split(".")
    owner = getattr(importlib.import_module(module), owner_name)
    original = vars(owner)[attribute]
    with applied(identity):
        assert vars(owner)[attribute] is not original
        run = run_suite(tmp_path, target=["--pyargs", check])
    assert vars(owner)[attribute] is original
    assert run.status == 0
    assert any(row["outcome"] == "pass" for row in run.report()["checks"])


def test_missing_or_repeated_line_refused() -> None:
    """A line that is not in the function, or is in it twice, is refused by name."""
    from reference_impl._registry import Registry

    _, _, transform = line_patch("reference_impl._registry", "Registry._refuse", "no line", "")
    with pytest.raises(ValueError, match=r"Registry\._refuse: .* 0 times"):
        transform(vars(Registry)["_refuse"])
    with pytest.raises(ValueError, match="2 times"):
        _transform(vars(_Shapes)["twice"], "value", "value")


def test_closure_and_class_cell_refused() -> None:
    """A closure, a zero-argument ``super()`` and a mangled private name are refused."""
    with pytest.raises(ValueError, match="seen"):
        _transform(_closure(), "seen + 1", "seen + 2")
    with pytest.raises(ValueError, match="__class__"):
        _transform(vars(_Shapes)["__repr__"], "super()", "super()")
    with pytest.raises(ValueError, match="private"):
        _transform(vars(_Shapes)["hidden"], "self.__secret", "self.__secret")


def test_wrappers_put_back_once() -> None:
    """A static method and a property come back as one, wrapped once, with the line changed."""
    twice = _transform(vars(_Shapes)["twice"], "value * 2", "value * 3")
    assert isinstance(twice, staticmethod)
    assert twice.__func__(2) == 6
    size = _transform(vars(_Shapes)["size"], "return 2", "return 5")
    assert isinstance(size, property)
    assert size.fget is not None
    assert size.fget(_Shapes()) == 5
