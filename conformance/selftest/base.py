"""What a mutant and a legal variant are, and how one is applied.

This module owns the :class:`Mutant` record (a name, the one requirement it violates, a
description and its patches), the :class:`Variant` record (a host that takes an alternative
the rulings allow, which the suite must pass), and :func:`applied`, which swaps one attribute
of a ``reference_impl`` module or class for a function of the original and puts it back
afterwards. The mutants themselves live in the ``catalog_*`` modules beside it, gathered in
order by :mod:`conformance.selftest.catalog`, and the variants in
:mod:`conformance.selftest.variants`; this module must never import them, nor anything that
runs the suite. A mutant or variant changes behaviour only; none may print a value.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: A patch: (module, dotted attribute inside it, function of the original to the replacement).
Patch = tuple[str, str, Callable[[Any], Any]]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One broken reference host.

    Attributes:
        name: A stable name, used on the command line.
        requirement: The one requirement ID it violates; the suite must fail naming it.
        description: What is broken, in one sentence.
        patches: How it is broken.
        driver: Whether it can also run behind the reference driver (subprocess path).
        via: The path the self-test checks it through by default: ``"inprocess"``,
            ``"driver"`` (the reference driver in a subprocess) or ``"mcp"`` (the reference
            driver, its calls sent over its MCP endpoint with ``--via mcp``).
    """

    name: str
    requirement: str
    description: str
    patches: tuple[Patch, ...]
    driver: bool = True
    via: str = "inprocess"


@dataclass(frozen=True, slots=True)
class Variant:
    """One reference host changed to take an alternative the rulings allow (decisions S1.12).

    Attributes:
        name: A stable name, used on the command line.
        requirements: The requirement IDs whose checks it must pass, every one of them.
        description: What it does differently, in one sentence, and the ruling that allows it.
        patches: How it is changed, as a mutant's patches are.
        via: The path it is checked through, as :attr:`Mutant.via`.
        hidden: Capabilities its adapter hides (through ``conformance.strip``), so that the
            suite can learn what the variant shows only the way the variant shows it.
    """

    name: str
    requirements: tuple[str, ...]
    description: str
    patches: tuple[Patch, ...]
    via: str = "inprocess"
    hidden: tuple[str, ...] = ()


def _resolve(module_name: str, dotted: str) -> tuple[Any, str]:
    owner: Any = importlib.import_module(module_name)
    *parents, attribute = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, attribute


@contextlib.contextmanager
def applied(mutant: Mutant | Variant) -> Iterator[None]:
    """Apply ``mutant``'s (or a variant's) patches for the duration of the block, then undo
    them."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for module_name, dotted, transform in mutant.patches:
            owner, attribute = _resolve(module_name, dotted)
            original = (
                owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
            )
            undo.append((owner, attribute, original))
            setattr(owner, attribute, transform(original))
        yield
    finally:
        for owner, attribute, original in reversed(undo):
            setattr(owner, attribute, original)
