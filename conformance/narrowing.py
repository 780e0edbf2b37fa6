"""How pytest's own options narrowed a run of the suite, said in words (decisions S1.7).

This module owns :func:`describe`: from a pytest config it names every option that keeps some
conformance checks out of a run (``-k``, ``-m``, ``--deselect``, ``--lf``, ``--ignore``, and
collection targets other than the whole check package) and a model-check campaign below the
CI budget (``SECREF_MODEL_EXAMPLES``), so that the verdict line and every
report say what the run covered. It reads the options only, never the collected items, so that
a parallel run's controller, which collects nothing, names the same narrowing as a serial run.
It never changes a selection, and ``--requirements`` and an early stop are named elsewhere (the
report's ``selection`` and ``stopped`` fields).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from conformance.model import budget

#: The package whose modules are the suite's checks.
CHECKS_PACKAGE: Final = "conformance.checks"

#: How many targets or deselected ids one description lists before it counts the rest.
_SHOWN: Final = 3


def _listed(option: str, values: Sequence[str]) -> str:
    shown = " ".join(f"{option} {shlex.quote(value)}" for value in values[:_SHOWN])
    more = len(values) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _checks_directory() -> Path:
    from conformance import checks

    return Path(checks.__file__).resolve().parent


def _target_narrows(target: str, pyargs: bool, selection: bool) -> bool:
    """Return whether collecting ``target`` leaves out some of the check package's modules.

    A target inside the package does; so does one outside it that does not hold it. With
    ``--requirements`` a module or file of the package is how a narrowed run collects less
    (the selection already names it); a node id is a narrowing of its own.
    """
    if "::" in target:
        return True
    if pyargs and not Path(target).exists():
        if target == CHECKS_PACKAGE or CHECKS_PACKAGE.startswith(target + "."):
            return False
        return not (selection and target.startswith(CHECKS_PACKAGE + "."))
    package = _checks_directory()
    where = Path(target).resolve()
    if where == package or package.is_relative_to(where):
        return False
    return not (selection and where.is_relative_to(package))


def describe(config: Any, selection: Sequence[str] = ()) -> list[str]:
    """Return one description per way pytest's options narrowed the run; empty for none.

    Args:
        config: The run's pytest config (only its options and arguments are read).
        selection: The ``--requirements`` IDs, if any: the check modules such a run collects
            are then not named again.

    Returns:
        Descriptions such as ``-k 'not gen-'``, in the order the options are checked.

    Raises:
        ValueError: ``SECREF_MODEL_EXAMPLES`` is not a whole number of at least 1, or
            ``SECREF_MODEL_SEED`` is not a seed.
    """

    def option(name: str) -> Any:
        return config.getoption(name, None)

    found: list[str] = []
    keyword = option("keyword")
    if keyword:
        found.append(f"-k {shlex.quote(str(keyword))}")
    markexpr = option("markexpr")
    if markexpr:
        found.append(f"-m {shlex.quote(str(markexpr))}")
    deselect = [str(each) for each in option("deselect") or ()]
    if deselect:
        found.append(_listed("--deselect", deselect))
    if option("lf"):
        found.append("--lf")
    ignored = [str(each) for each in (option("ignore") or ())]
    ignored += [str(each) for each in (option("ignore_glob") or ())]
    if ignored:
        found.append(_listed("--ignore", ignored))
    pyargs = bool(option("pyargs"))
    targets = [str(each) for each in getattr(config, "args", ()) or ()]
    narrowing = [target for target in targets if _target_narrows(target, pyargs, bool(selection))]
    whole = any(not _target_narrows(target, pyargs, False) for target in targets)
    if narrowing and not whole:
        shown = ", ".join(shlex.quote(target) for target in narrowing[:_SHOWN])
        more = len(narrowing) - _SHOWN
        found.append(f"collected only {shown}" + (f" and {more} more" if more > 0 else ""))
    # Not an option but the same kind of narrowing: a model campaign below the CI budget.
    model = budget.narrowing()
    if model is not None:
        found.append(model)
    return found
