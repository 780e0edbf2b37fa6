"""Mutants that break the grammar, refusal-message and ordering requirements (decisions R1, R2).

Each entry is a :class:`conformance.mutant_base.Mutant`; :mod:`conformance.mutants` gathers
this catalog with the others. A mutant changes behaviour only; none may print a value.
"""

from __future__ import annotations

from typing import Final

from conformance.mutant_base import Mutant

MUTANTS: Final[tuple[Mutant, ...]] = ()
