"""Mutants that break the governed path after the grammar: approval, fence, substitution,
scrubbing, cap, ledger, vault, policy, the invariants and operating the host (decisions R3 to
R7, and the design's invariants).

Each entry is a :class:`conformance.mutant_base.Mutant`; :mod:`conformance.mutants` gathers
this catalog with the others. A mutant changes behaviour only; none may print a value.
"""

from __future__ import annotations

from typing import Final

from conformance.mutant_base import Mutant

MUTANTS: Final[tuple[Mutant, ...]] = ()
