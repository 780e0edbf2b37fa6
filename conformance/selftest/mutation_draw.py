"""Generating, filtering and drawing the mutants of a mutation run.

This module owns the mutants themselves: it names the reference host's core modules, lets
cosmic-ray generate every mutant of them into a session, drops those that only touch an
annotation, a docstring or a logging call (``ignored_spans``) or sit on a ``# pragma: no
mutate`` line, draws a seeded sample per module (the same source and seed always give the same
mutants; a run given no seed gets a fresh one, ``fresh_seed``), and locates each drawn mutant by
its text (``Mutant``). It never runs the suite and never writes outside the session it is
given: only the scratch copy's modules are read.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: The reference host's core modules, as the task of mutation testing names them.
CORE_MODULES: Final = (
    "_grammar",
    "_scan",
    "_scrub",
    "_sanitize",
    "_registry",
    "_resolve",
    "_arguments",
    "_cap",
    "_approve",
    "_policy",
    "_ledger",
)

#: Mutants drawn per module when ``--per-module`` is not given: the size of the triaged run, so
#: that ``tox -e mutation`` repeats it (110 mutants, about 40 minutes on a busy 2-core machine).
DEFAULT_PER_MODULE: Final = 10

#: The seed the checked-in triage was built on (docs/mutation.md, "Figures"). A run draws that
#: sample again only when given ``--seed 11``: a run's default is a fresh seed (``fresh_seed``),
#: so that a default run measures the suite on mutants nobody triaged, not the old sample.
TRIAGED_SEED: Final = 11

#: Fresh seeds are drawn below this bound, so that a seed stays short enough to copy.
_SEED_BOUND: Final = 2**31

#: Method names whose calls only write to the host log.
_LOG_METHODS: Final = frozenset(
    {"debug", "info", "warning", "error", "exception", "critical", "log", "isEnabledFor"}
)

#: Names of objects whose calls are logging: ``log``, ``logger``, ``logging``, ``self.log``.
_LOG_OWNERS: Final = frozenset({"log", "logger", "logging"})

_PRAGMA: Final = re.compile(r"#.*pragma:.*no mutate")

Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One generated mutant, located by content so that it survives edits elsewhere.

    Attributes:
        job_id: cosmic-ray's id in the session.
        module: the core module's name, for example ``_scan``.
        operator: cosmic-ray's operator name.
        occurrence: the operator's occurrence index in the module.
        line: the first changed line (1-based) in the source the session was made from.
        before: the changed source line(s), stripped, joined with ``\\n``.
        after: the mutated line(s), stripped, joined with ``\\n``.
    """

    job_id: str
    module: str
    operator: str
    occurrence: int
    line: int
    before: str
    after: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The identity the triage and sample files use: module, operator, before, after."""
        return (self.module, self.operator, self.before, self.after)


# --- the filter ---------------------------------------------------------------------------------


def _char_col(line: str, byte_col: int) -> int:
    """Convert an ``ast`` UTF-8 byte column into the character column cosmic-ray reports."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _span(node: ast.AST, lines: Sequence[str]) -> tuple[Position, Position]:
    start_line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    start = (start_line, _char_col(lines[start_line - 1], node.col_offset))  # type: ignore[attr-defined]
    end_col = node.end_col_offset or 0  # type: ignore[attr-defined]
    return start, (end_line, _char_col(lines[end_line - 1], end_col))


def _is_log_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr not in _LOG_METHODS and node.func.attr != "getLogger":
        return False
    owner = node.func.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name in _LOG_OWNERS


def ignored_spans(source: str) -> list[tuple[Position, Position]]:
    """List the source spans whose mutants the run drops: annotations, docstrings, logging.

    A mutant there cannot change what a host does: annotations are not evaluated (the core
    modules use ``from __future__ import annotations``), docstrings are text, and the host log
    is not a surface any check may read (the design keeps values out of it; the invariant
    checks read the log through the host's own scrubbed surfaces, not through these calls).

    Args:
        source: a module's source text.

    Returns:
        (start, end) positions, (line 1-based, character column 0-based), end exclusive.
    """
    tree = ast.parse(source)
    lines = source.splitlines() or [""]
    spans: list[tuple[Position, Position]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                spans.append(_span(body[0], lines))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            spans.append(_span(node.returns, lines))
        if isinstance(node, ast.arg) and node.annotation is not None:
            spans.append(_span(node.annotation, lines))
        if isinstance(node, ast.AnnAssign):
            spans.append(_span(node.annotation, lines))
        if _is_log_call(node):
            spans.append(_span(node, lines))
    return spans


def is_ignored(start: Position, end: Position, spans: Sequence[tuple[Position, Position]]) -> bool:
    """Tell whether a mutation's span lies wholly inside one of ``spans``.

    Args:
        start: the mutation's start position.
        end: the mutation's end position.
        spans: what ``ignored_spans`` returned for the module.

    Returns:
        True when the mutant touches only an annotation, a docstring or a logging call.
    """
    return any(lo <= start and end <= hi for lo, hi in spans)


# --- generation -----------------------------------------------------------------------------------


def _changed_lines(original: str, mutated: str) -> tuple[int, str, str]:
    old, new = original.splitlines(), mutated.splitlines()
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            before = "\n".join(s.strip() for s in old[i1:i2])
            after = "\n".join(s.strip() for s in new[j1:j2])
            return i1 + 1, before, after
    return 0, "", ""


@dataclass(frozen=True, slots=True)
class Generated:
    """Every mutant of one run, sorted into what the run does with it.

    Attributes:
        generated: count per module of what cosmic-ray generated.
        filtered: count per module dropped as annotation, docstring or logging only.
        pragma: count per module on lines marked ``# pragma: no mutate`` (equivalent).
        candidates: per module, the mutants that may be drawn, in a stable order.
    """

    generated: Mapping[str, int]
    filtered: Mapping[str, int]
    pragma: Mapping[str, int]
    candidates: Mapping[str, list[Any]]


def _module_of(path: Path) -> str:
    return Path(path).stem


def init_session(scratch: Path, session: Path, modules: Sequence[str]) -> Generated:
    """Generate every mutant of ``modules`` in the scratch copy into a cosmic-ray session.

    Args:
        scratch: the directory holding the scratch copy of ``reference_impl``.
        session: the session database to (re)create.
        modules: core module names.

    Returns:
        The counts and the drawable work items per module.
    """
    from cosmic_ray.commands.init import init
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    paths = [scratch / "reference_impl" / f"{name}.py" for name in modules]
    spans = {_module_of(p): ignored_spans(p.read_text("utf-8")) for p in paths}
    lines = {_module_of(p): p.read_text("utf-8").splitlines() for p in paths}
    generated = dict.fromkeys(modules, 0)
    filtered = dict.fromkeys(modules, 0)
    pragma = dict.fromkeys(modules, 0)
    candidates: dict[str, list[Any]] = {name: [] for name in modules}
    skipped = WorkResult(worker_outcome=WorkerOutcome.SKIPPED)
    if session.exists():
        session.unlink()
    with use_db(str(session), WorkDB.Mode.create) as db:
        init(paths, db, {})
        for item in db.work_items:
            spec = item.mutations[0]
            name = _module_of(spec.module_path)
            generated[name] += 1
            end_line = spec.end_pos[0] - (1 if spec.end_pos[1] == 0 else 0)
            if is_ignored(tuple(spec.start_pos), tuple(spec.end_pos), spans[name]):
                filtered[name] += 1
                db.set_result(item.job_id, skipped)
            elif _PRAGMA.search(lines[name][end_line - 1]):
                pragma[name] += 1
                db.set_result(item.job_id, skipped)
            else:
                candidates[name].append(item)
    for items in candidates.values():
        items.sort(key=lambda it: (it.mutations[0].operator_name, it.mutations[0].occurrence))
    return Generated(generated, filtered, pragma, candidates)


def fresh_seed() -> int:
    """A seed for a run given none: drawn from the system's randomness, never a fixed default.

    Returns:
        An integer in ``[0, 2**31)``; the run prints it, so that ``--seed`` replays the draw.
    """
    return secrets.randbelow(_SEED_BOUND)


def draw(candidates: Mapping[str, list[Any]], per_module: int, seed: int) -> dict[str, list[Any]]:
    """Draw a seeded sample of each module's candidates.

    Args:
        candidates: per module, work items in a stable order.
        per_module: how many to draw per module; 0 or less draws them all.
        seed: the seed; each module's draw is seeded with ``f"{seed}:{module}"``.

    Returns:
        Per module, the drawn work items, in candidate order.
    """
    drawn: dict[str, list[Any]] = {}
    for name, items in candidates.items():
        if per_module <= 0 or per_module >= len(items):
            drawn[name] = list(items)
            continue
        rng = random.Random(f"{seed}:{name}")
        picked = sorted(rng.sample(range(len(items)), per_module))
        drawn[name] = [items[i] for i in picked]
    return drawn


def describe(item: Any) -> Mutant:
    """Turn a cosmic-ray work item into a ``Mutant`` located by its text.

    Args:
        item: a cosmic-ray ``WorkItem`` with one mutation.

    Returns:
        The mutant, with the changed line(s) before and after.
    """
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    spec = item.mutations[0]
    source = Path(spec.module_path).read_text("utf-8")
    operator = get_operator(spec.operator_name)(**(spec.operator_args or {}))
    mutated = mutate_code(source, operator, spec.occurrence)
    line, before, after = _changed_lines(source, mutated or source)
    return Mutant(
        job_id=item.job_id,
        module=_module_of(spec.module_path),
        operator=spec.operator_name,
        occurrence=spec.occurrence,
        line=line,
        before=before,
        after=after,
    )
