"""Mutation testing of the reference host, with the conformance suite alone as the judge.

This module owns ``python -m conformance.selftest.mutation`` (``tox -e mutation``): it copies the
reference host to a scratch directory, lets cosmic-ray generate mutants of the host's core
modules there, drops the mutants that only touch annotations, docstrings or logging, draws a
seeded sample per module, runs ``secref-conformance -- -x`` (in-process host, one process per
mutant, with a per-mutant timeout) against each, and writes a per-module table of generated,
killed, survived, timed-out and equivalent mutants with the kill rate, as Markdown and JSON.
It also renders the checked-in triage file and picks the fixed CI sample; given worker URLs,
it hands the drawn mutants to cosmic-ray http workers instead
(:mod:`conformance.selftest.mutation_workers`).
It never mutates the working tree (only the scratch copy, or a worker's own copy), never runs
two mutants at once in one copy, and never prints a value: the suite's own output is stored,
not echoed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import itertools
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

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

#: Seconds one mutant's suite run may take. An unmutated in-process run takes 10 to 20 s on a
#: busy 2-core machine; six times that leaves room for load without letting a mutant that loops
#: hold the run for long.
DEFAULT_TIMEOUT: Final = 120.0

#: Mutants drawn per module when ``--per-module`` is not given: the size of the triaged run, so
#: that ``tox -e mutation`` repeats it (110 mutants, about 40 minutes on a busy 2-core machine).
DEFAULT_PER_MODULE: Final = 10

#: The seed of every draw, so that two runs over the same source pick the same mutants.
DEFAULT_SEED: Final = 11

#: Size of the fixed sample that runs in CI (tests/conformance/test_mutation_sample.py).
CI_SAMPLE_SIZE: Final = 20

#: Where the session and the tables go unless told otherwise.
DEFAULT_SESSION: Final = Path("reports") / "mutation.sqlite"
DEFAULT_MD: Final = Path("reports") / "mutation.md"
DEFAULT_JSON: Final = Path("reports") / "mutation.json"
DEFAULT_TRIAGE_MD: Final = Path("docs") / "mutation-triage.md"

#: The checked-in data files, shipped with the package.
TRIAGE_FILE: Final = "mutation_triage.yaml"
SAMPLE_FILE: Final = "mutation_sample.json"

#: The verdicts a survivor may be given in the triage file.
VERDICTS: Final = (
    "equivalent",
    "internal-only",
    "either-choice",
    "should-only",
    "gap-closed",
    "open-gap",
)

#: Survivors no conformance suite may kill: the change shows on no surface of a host, or it
#: moves the host to another behaviour an EITHER ruling allows. The observable rate sets them
#: aside; the plain rate does not.
UNKILLABLE: Final = frozenset({"internal-only", "either-choice"})

#: Method names whose calls only write to the host log.
_LOG_METHODS: Final = frozenset(
    {"debug", "info", "warning", "error", "exception", "critical", "log", "isEnabledFor"}
)

#: Names of objects whose calls are logging: ``log``, ``logger``, ``logging``, ``self.log``.
_LOG_OWNERS: Final = frozenset({"log", "logger", "logging"})

#: The checks a mutation run leaves out: the bounded-work checks of invariant 7 time the host,
#: and on a machine shared with other work their ratios can cross the bound by chance, which
#: would count a mutant as killed by noise. cosmic-ray's operators change no loop's complexity
#: class, so these checks would kill nothing real here.
TIMING_CHECKS: Final = ("test_bounded_work", "test_scrubbing_is_linear")

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


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the suite did with one mutant.

    Attributes:
        mutant: the mutant.
        status: ``killed``, ``survived``, ``timeout`` or ``error`` (the mutant could not run).
        exit_code: the suite's exit code when it finished, else ``None``.
    """

    mutant: Mutant
    status: str
    exit_code: int | None


@dataclass(frozen=True, slots=True)
class TriageEntry:
    """One survivor's verdict from the checked-in triage file.

    Attributes:
        module: the core module.
        operator: cosmic-ray's operator name.
        before: the changed line(s), stripped.
        after: the mutated line(s), stripped.
        verdict: one of ``VERDICTS``.
        reason: why; for ``gap-closed`` and ``open-gap`` the check that does or would close it.
    """

    module: str
    operator: str
    before: str
    after: str
    verdict: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The identity shared with ``Mutant.key``."""
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


# --- the data files ------------------------------------------------------------------------------


def load_triage(path: Path | None = None) -> list[TriageEntry]:
    """Read the triage file (the packaged one unless ``path`` is given).

    Args:
        path: another triage file to read.

    Returns:
        Its entries, in file order.

    Raises:
        ValueError: an entry lacks a field, has an unknown verdict or an empty reason.
    """
    if path is None:
        text = resources.files("conformance.selftest").joinpath(TRIAGE_FILE).read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    data = yaml.safe_load(text) or {}
    entries: list[TriageEntry] = []
    for raw in data.get("survivors", []):
        try:
            entry = TriageEntry(
                module=str(raw["module"]),
                operator=str(raw["operator"]),
                before=str(raw["before"]).strip(),
                after=str(raw["after"]).strip(),
                verdict=str(raw["verdict"]),
                reason=str(raw["reason"]).strip(),
            )
        except KeyError as exc:
            raise ValueError(f"triage entry lacks {exc.args[0]!r}: {raw!r}") from exc
        if entry.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {entry.verdict!r} in the triage file")
        if not entry.reason:
            raise ValueError(f"a triage entry for {entry.module} has no reason")
        entries.append(entry)
    return entries


def load_sample() -> list[dict[str, Any]]:
    """Read the fixed CI sample of mutants the suite kills.

    Returns:
        Entries with ``module``, ``operator``, ``line``, ``before`` and ``after``.
    """
    text = resources.files("conformance.selftest").joinpath(SAMPLE_FILE).read_text("utf-8")
    entries: list[dict[str, Any]] = json.loads(text)["mutants"]
    return entries


def apply_line_mutation(source: str, before: str, after: str, line_hint: int) -> str:
    """Apply a recorded one-line mutant to a module's source, found by its text.

    Args:
        source: the module's current source.
        before: the original line, stripped.
        after: the mutated line, stripped.
        line_hint: the line it was on when recorded; the nearest match wins.

    Returns:
        The mutated source.

    Raises:
        LookupError: no line reads ``before`` any more (the sample needs refreshing).
    """
    lines = source.splitlines(keepends=True)
    matches = [i for i, text in enumerate(lines) if text.strip() == before]
    if not matches:
        raise LookupError(f"no line reads {before!r}; refresh the sample")
    index = min(matches, key=lambda i: abs(i + 1 - line_hint))
    text = lines[index]
    indent = text[: len(text) - len(text.lstrip())]
    ending = text[len(text.rstrip("\r\n")) :]
    lines[index] = indent + after + ending
    return "".join(lines)


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


# --- execution ------------------------------------------------------------------------------------


def suite_command(scratch: Path) -> str:
    """The command that judges one mutant: the conformance suite alone, stopping at a failure.

    Args:
        scratch: the scratch directory; reports go there, not to the working tree.

    Returns:
        A shell-quoted command line (cosmic-ray splits it with ``shlex``).
    """
    parts = [
        sys.executable,
        "-m",
        "conformance.cli",
        "--report-json",
        str(scratch / "conformance.json"),
        "--report-md",
        str(scratch / "conformance.md"),
        "--",
        "-x",
        "-q",
        "-k",
        " and ".join(f"not {name}" for name in TIMING_CHECKS),
        "-p",
        "no:cacheprovider",
    ]
    return " ".join(shlex.quote(p) for p in parts)


@dataclass(frozen=True, slots=True)
class Scratch:
    """A scratch copy of the reference host that mutants are written into.

    Attributes:
        root: the directory on ``PYTHONPATH`` that holds ``reference_impl`` and ``conformance``.
    """

    root: Path

    def env(self) -> dict[str, str]:
        """The environment a suite run needs so that it imports the scratch copy first."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), env.get("PYTHONPATH", "")])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env


#: Appended to a scratch copy for the run's self-check: every call then fails, so a suite that
#: really judges the copy cannot pass.
_SELF_CHECK: Final = "\n\nRegistry.invoke = None  # type: ignore[assignment]\n"


def make_scratch(source_root: Path, into: Path) -> Scratch:
    """Copy ``reference_impl`` and ``conformance`` into ``into``, so a suite run judges the copy.

    The suite is copied too: pytest puts the directory holding the ``conformance`` package
    first on ``sys.path`` when it collects the checks, so with the suite taken from the working
    tree the host would be imported from there, unmutated. The copy also keeps the judge
    fixed while the working tree changes.

    Args:
        source_root: the project's root, holding ``reference_impl`` and ``conformance``.
        into: an empty directory.

    Returns:
        The scratch copy.

    Raises:
        RuntimeError: a child process would import either package from elsewhere.
    """
    for package in ("reference_impl", "conformance"):
        shutil.copytree(
            source_root / package,
            into / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    scratch = Scratch(into)
    check_imports(scratch)
    return scratch


def check_imports(scratch: Scratch) -> None:
    """Check that a child process given ``scratch.env()`` imports both packages from the copy.

    Args:
        scratch: the scratch copy (or a worker's copy of the tree).

    Raises:
        RuntimeError: a child process would import either package from elsewhere.
    """
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import conformance, reference_impl; "
            "print(conformance.__file__); print(reference_impl.__file__)",
        ],
        env=scratch.env(),
        cwd=scratch.root,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in probe.stdout.split():
        if not Path(line).resolve().is_relative_to(scratch.root.resolve()):
            raise RuntimeError("a suite run would not import the scratch copy")


def self_check(scratch: Scratch, timeout: float) -> str | None:
    """Check that the suite judges the scratch copy: unmutated it passes, broken it fails.

    Args:
        scratch: the scratch copy.
        timeout: seconds per suite run.

    Returns:
        None when both hold, else what went wrong.
    """
    (scratch.root / "conformance.json").unlink(missing_ok=True)
    status, code, seconds = run_suite(scratch, timeout)
    if status != "survived":
        shortfalls = ", ".join(missed(scratch))
        detail = f"; not fully met: {shortfalls}" if shortfalls else ""
        return f"the unmutated host does not pass cleanly ({status}, exit {code}{detail})"
    print(f"unmutated host: conformant in {seconds:.0f} s", file=sys.stderr)
    path = scratch.root / "reference_impl" / "_registry.py"
    original = path.read_text("utf-8")
    try:
        path.write_text(original + _SELF_CHECK, "utf-8")
        status, code, seconds = run_suite(scratch, timeout)
    finally:
        path.write_text(original, "utf-8")
    if status == "survived":
        return "a host whose every call fails passed: the suite does not judge the scratch copy"
    print(f"broken host: caught in {seconds:.0f} s", file=sys.stderr)
    return None


#: Seconds between two looks at ``alive`` while a suite run started with one is going.
_ALIVE_POLL: Final = 0.5


def run_suite(
    scratch: Scratch, timeout: float, alive: Callable[[], bool] | None = None
) -> tuple[str, int | None, float]:
    """Run the suite once against whatever the scratch copy holds.

    Args:
        scratch: the scratch copy.
        timeout: seconds before the run's process group is killed.
        alive: when given, asked every half second; once it says False the run's process group
            is killed and the run ends as ``error`` (a worker whose server has gone).

    Returns:
        (status, exit code or None, seconds): status is ``killed`` (the run failed),
        ``reported`` (it exited 0 but its report lists a requirement not fully met, such as a
        SHOULD the mutant broke), ``survived``, ``timeout``, or ``error`` (``alive`` said no).
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        shlex.split(suite_command(scratch.root)),
        env=scratch.env(),
        cwd=scratch.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = started + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            code = proc.wait(timeout=max(0.0, left if alive is None else min(left, _ALIVE_POLL)))
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                os.killpg(proc.pid, 9)
                proc.wait()
                return "timeout", None, time.monotonic() - started
            if alive is not None and not alive():
                os.killpg(proc.pid, 9)
                proc.wait()
                return "error", None, time.monotonic() - started
    status = "killed" if code != 0 else ("reported" if missed(scratch) else "survived")
    return status, code, time.monotonic() - started


#: The requirement outcomes that say the host did not fully meet a requirement although the run
#: exited 0: a SHOULD missed (non-strict), or a requirement a check could not judge.
_SHORTFALLS: Final = frozenset({"non-strict", "fail", "error", "unchecked"})


def missed(scratch: Scratch) -> list[str]:
    """The requirements the last suite run in ``scratch`` reports as not fully met.

    The unmutated host meets every requirement it is judged on (``self_check`` makes sure), so
    any ID here is the mutant's doing: typically a SHOULD the mutant broke, which the report
    lists as non-strict while the run still exits 0. A report that cannot be read counts as no
    shortfall, so a mutant is never counted as caught by a missing file.

    Args:
        scratch: the scratch copy the suite wrote its JSON report into.

    Returns:
        The requirement IDs, in catalog order.
    """
    try:
        report = json.loads((scratch.root / "conformance.json").read_text("utf-8"))
        rows = report["requirements"]
        return [row["id"] for row in rows if row.get("outcome") in _SHORTFALLS]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def execute(
    scratch: Scratch, mutants: Sequence[Mutant], timeout: float, log: Any = sys.stderr
) -> Iterator[tuple[Outcome, float]]:
    """Run the suite against each mutant in turn, one at a time.

    Args:
        scratch: the scratch copy; each mutant is written in and undone after its run.
        mutants: the mutants to judge.
        timeout: seconds per mutant.
        log: where progress lines go (module, operator, line, outcome; never a value).

    Yields:
        Each mutant's outcome and the seconds its run took.
    """
    for index, mutant in enumerate(mutants, 1):
        path = scratch.root / "reference_impl" / f"{mutant.module}.py"
        original = path.read_text("utf-8")
        try:
            if not mutant.before:
                outcome, seconds = Outcome(mutant, "error", None), 0.0
            else:
                path.write_text(_mutate(original, mutant), "utf-8")
                (scratch.root / "conformance.json").unlink(missing_ok=True)
                status, code, seconds = run_suite(scratch, timeout)
                outcome = Outcome(mutant, status, code)
        finally:
            path.write_text(original, "utf-8")
        print(
            f"[{index}/{len(mutants)}] {mutant.module}:{mutant.line} {mutant.operator} "
            f"-> {outcome.status} ({seconds:.0f} s)",
            file=log,
            flush=True,
        )
        yield outcome, seconds


def _mutate(source: str, mutant: Mutant) -> str:
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    mutated = mutate_code(source, get_operator(mutant.operator)(), mutant.occurrence)
    if mutated is None:
        raise RuntimeError(f"cosmic-ray could not re-apply a mutant of {mutant.module}")
    result: str = mutated
    return result


# --- the tables -----------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    """Escape text for one Markdown table cell (source lines carry pipes and backticks)."""
    flat = text.replace("\n", " ⏎ ").replace("|", "\\|").replace("`", "'")
    return f"`{flat}`" if flat else ""


def tabulate(
    generated: Generated,
    outcomes: Sequence[Outcome],
    triage: Sequence[TriageEntry],
) -> dict[str, Any]:
    """Count, per module, what happened to the mutants, with the kill rate.

    A timed-out mutant counts as killed (a host that hangs is caught), and is shown apart; so
    does a reported one (the run exited 0, but its report lists a requirement not fully met).
    The kill rate is killed (reported and timeouts included) over the run mutants not judged
    equivalent, where equivalent means a triage entry says so. A second rate also sets aside
    the survivors triaged internal-only and counts those triaged gap-closed as killed. Mutants
    on ``# pragma: no mutate`` lines are counted as equivalent but never run.

    Args:
        generated: what ``init_session`` returned.
        outcomes: the outcomes so far.
        triage: the triage file's entries.

    Returns:
        A JSON-ready dict: ``modules`` (one row per module), ``total`` and ``survivors``.
    """
    verdicts = {entry.key: entry for entry in triage}
    rows: dict[str, dict[str, Any]] = {}
    for name in generated.generated:
        rows[name] = {
            "module": name,
            "generated": generated.generated[name],
            "filtered": generated.filtered[name],
            "pragma": generated.pragma[name],
            "candidates": len(generated.candidates[name]),
            "run": 0,
            "killed": 0,
            "reported": 0,
            "timeout": 0,
            "survived": 0,
            "internal": 0,
            "equivalent": 0,
            "closed": 0,
            "error": 0,
        }
    survivors: list[dict[str, Any]] = []
    for outcome in outcomes:
        row = rows[outcome.mutant.module]
        row["run"] += 1
        if outcome.status in ("killed", "reported", "timeout", "error"):
            row[outcome.status] += 1
            continue
        entry = verdicts.get(outcome.mutant.key)
        if entry is not None and entry.verdict == "equivalent":
            row["equivalent"] += 1
        else:
            row["survived"] += 1
            if entry is not None and entry.verdict == "gap-closed":
                row["closed"] += 1
            if entry is not None and entry.verdict in UNKILLABLE:
                row["internal"] += 1
        survivors.append(
            {
                "module": outcome.mutant.module,
                "operator": outcome.mutant.operator,
                "line": outcome.mutant.line,
                "before": outcome.mutant.before,
                "after": outcome.mutant.after,
                "verdict": entry.verdict if entry else "untriaged",
                "reason": entry.reason if entry else "",
            }
        )
    total: dict[str, Any] = {"module": "all"}
    for field in ("generated", "filtered", "pragma", "candidates", "run", "killed", "timeout"):
        total[field] = sum(row[field] for row in rows.values())
    for field in ("reported", "survived", "equivalent", "closed", "internal", "error"):
        total[field] = sum(row[field] for row in rows.values())
    for row in [*rows.values(), total]:
        judged = row["killed"] + row["reported"] + row["timeout"] + row["survived"]
        caught = row["killed"] + row["reported"] + row["timeout"]
        row["kill_rate"] = round(caught / judged, 4) if judged else None
        row["kill_rate_closed"] = round((caught + row["closed"]) / judged, 4) if judged else None
        # Unkillable survivors (internal-only, or a legal EITHER choice) are beyond any suite;
        # this rate sets them aside as well, and is shown beside the plain one, never instead.
        observable = judged - row["internal"]
        row["kill_rate_observable"] = (
            round((caught + row["closed"]) / observable, 4) if observable else None
        )
    return {"modules": list(rows.values()), "total": total, "survivors": survivors}


def render_md(table: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """Render ``tabulate``'s result as Markdown.

    Args:
        table: what ``tabulate`` returned.
        settings: the run's settings (command, seed, per-module draw, timeout, seconds).

    Returns:
        The Markdown text.
    """
    out = [
        "# Mutation testing of the reference host",
        "",
        f"Command: `{settings['command']}`. Seed {settings['seed']}, "
        f"{settings['per_module'] or 'all'} per module, timeout {settings['timeout']:.0f} s "
        f"per mutant, {settings['seconds']:.0f} s in all. The judge is the conformance suite "
        "alone (`secref-conformance -- -x`, in-process host), the timing checks of invariant 7 "
        "left out.",
        "",
        "| Module | Generated | Filtered | Pragma | Run | Killed | Reported | Timed out "
        "| Survived | Equivalent | Unkillable | Kill rate | Gap closed since "
        "| Kill rate with them | Observable kill rate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def percent(rate: float | None) -> str:
        return "n/a" if rate is None else f"{rate:.0%}"

    for row in [*table["modules"], table["total"]]:
        out.append(
            f"| `{row['module']}` | {row['generated']} | {row['filtered']} | {row['pragma']} "
            f"| {row['run']} | {row['killed']} | {row['reported']} | {row['timeout']} "
            f"| {row['survived']} | {row['equivalent']} | {row['internal']} "
            f"| {percent(row['kill_rate'])} | {row['closed']} "
            f"| {percent(row['kill_rate_closed'])} | {percent(row['kill_rate_observable'])} |"
        )
    out += [
        "",
        "Generated: what cosmic-ray made. Filtered: dropped, touching only an annotation, a "
        "docstring or a logging call. Pragma: on a `# pragma: no mutate` line (equivalent, not "
        "run). Run: drawn and judged. Killed: the suite failed. Reported: the suite exited 0 "
        "but its report lists a requirement as not fully met (a SHOULD the mutant broke shows "
        "as non-strict; the unmutated host has none). Kill rate: (killed + reported + timed "
        "out) / (run - equivalent). Gap closed since: survivors the triage file marks as killed "
        "by a check added after the run; the next column counts them as killed. Observable kill "
        "rate: as that column, but over run - equivalent - unkillable, where unkillable "
        "survivors are those triaged internal-only (nothing a host shows changes) or "
        "either-choice (the host moves to another behaviour an EITHER ruling allows): no "
        "conformance suite may kill them.",
        "",
        "## Survivors",
        "",
    ]
    if not table["survivors"]:
        out.append("None.")
    else:
        out += [
            "| Module | Line | Operator | Before | After | Verdict |",
            "|---|---|---|---|---|---|",
        ]
        for s in table["survivors"]:
            out.append(
                f"| `{s['module']}` | {s['line']} | {s['operator'].removeprefix('core/')} "
                f"| {_md_cell(s['before'])} | {_md_cell(s['after'])} | {s['verdict']} |"
            )
    return "\n".join(out) + "\n"


def render_triage(triage: Sequence[TriageEntry]) -> str:
    """Render the triage file as the Markdown page ``docs/mutation-triage.md``.

    Args:
        triage: the triage file's entries.

    Returns:
        The Markdown text.
    """
    out = [
        "# Mutation survivors, triaged",
        "",
        "Generated from `conformance/selftest/mutation_triage.yaml` by "
        "`python -m conformance.selftest.mutation render-triage`; edit the YAML, not this page. "
        "How to triage: [mutation.md](mutation.md).",
        "",
    ]
    counts = {verdict: sum(1 for e in triage if e.verdict == verdict) for verdict in VERDICTS}
    out.append(", ".join(f"{verdict}: {count}" for verdict, count in counts.items()) + ".")
    out.append("")
    for module in CORE_MODULES:
        entries = [e for e in triage if e.module == module]
        if not entries:
            continue
        out += [f"## `{module}`", "", "| Operator | Before | After | Verdict | Reason |"]
        out.append("|---|---|---|---|---|")
        for e in entries:
            reason = e.reason.replace("\n", " ").replace("|", "\\|")
            out.append(
                f"| {e.operator.removeprefix('core/')} | {_md_cell(e.before)} "
                f"| {_md_cell(e.after)} | {e.verdict} | {reason} |"
            )
        out.append("")
    return "\n".join(out)


# --- the command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.selftest.mutation",
        description="Mutation testing of the reference host's core modules, judged by the "
        "conformance suite alone.",
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="generate, draw, run and tabulate (the default)")
    run.add_argument("--modules", default=",".join(CORE_MODULES), help="comma-separated")
    run.add_argument(
        "--per-module", type=int, default=DEFAULT_PER_MODULE, help="0 runs every mutant"
    )
    run.add_argument("--seed", type=int, default=DEFAULT_SEED)
    run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per mutant")
    run.add_argument("--session", type=Path, default=DEFAULT_SESSION)
    run.add_argument("--report-md", type=Path, default=DEFAULT_MD)
    run.add_argument("--report-json", type=Path, default=DEFAULT_JSON)
    run.add_argument("--triage", type=Path, default=None, help="another triage file")
    run.add_argument(
        "--worker-url",
        dest="worker_urls",
        action="append",
        default=[],
        metavar="URL",
        help="a cosmic-ray http worker to run mutants on (repeat, or a comma list); "
        "none runs them here, one at a time",
    )
    workers = sub.add_parser(
        "workers", help="start local cosmic-ray http workers, each in its own copy of the tree"
    )
    workers.add_argument("--count", type=int, default=2)
    workers.add_argument("--base-port", type=int, default=9876)
    workers.add_argument("--host", default="127.0.0.1", help="the address the workers listen on")
    judge = sub.add_parser("judge", help="(run by a worker) judge the mutant in place here")
    judge.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    sub.add_parser("fingerprint", help="(run by a worker) describe this copy of the tree")
    sample = sub.add_parser("sample", help="pick the fixed CI sample from a run's kills")
    sample.add_argument("--report-json", type=Path, default=DEFAULT_JSON)
    sample.add_argument("--size", type=int, default=CI_SAMPLE_SIZE)
    sample.add_argument("--seed", type=int, default=DEFAULT_SEED)
    sample.add_argument(
        "--out", type=Path, default=Path(__file__).with_name(SAMPLE_FILE), help="sample file"
    )
    report = sub.add_parser("report", help="re-tabulate a run's JSON with the current triage")
    report.add_argument("--report-md", type=Path, default=DEFAULT_MD)
    report.add_argument("--report-json", type=Path, default=DEFAULT_JSON)
    triage = sub.add_parser("render-triage", help="write docs/mutation-triage.md")
    triage.add_argument("--out", type=Path, default=DEFAULT_TRIAGE_MD)
    return parser


def _run(args: argparse.Namespace) -> int:
    from conformance.selftest import mutation_workers

    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = sorted(set(modules) - set(CORE_MODULES))
    if unknown:
        print(f"not a core module: {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        urls = mutation_workers.parse_worker_urls(args.worker_urls)
        if urls:
            mutation_workers.check_timeout(args.timeout)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    triage = load_triage(args.triage)
    root = Path.cwd()
    started = time.monotonic()
    command = "python -m conformance.selftest.mutation run " + " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in (("per_module", args.per_module), ("seed", args.seed))
    )
    with tempfile.TemporaryDirectory(prefix="secref-mutation-") as tmp:
        scratch = make_scratch(root, Path(tmp))
        # Workers are asked first: a wrong URL or a worker on another tree fails in seconds.
        problem = mutation_workers.preflight(scratch, urls) if urls else None
        problem = problem or self_check(scratch, args.timeout)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
        args.session.parent.mkdir(parents=True, exist_ok=True)
        generated = init_session(scratch.root, args.session.resolve(), modules)
        drawn = draw(generated.candidates, args.per_module, args.seed)
        # Round robin over the modules, so that a run cut short still has every module's rate.
        rounds = itertools.zip_longest(*(drawn[name] for name in modules))
        items = [item for row in rounds for item in row if item is not None]
        mutants = [describe(item) for item in items]
        order = {m.job_id: index for index, m in enumerate(mutants)}
        done: dict[int, tuple[Outcome, dict[str, Any]]] = {}

        def record(outcome: Outcome, secs: float) -> None:
            # Workers finish out of order; the tables list mutants in draw order, as a local
            # run does, so that the two give the same tables.
            m = outcome.mutant
            done[order[m.job_id]] = (
                outcome,
                {
                    "module": m.module,
                    "operator": m.operator,
                    "occurrence": m.occurrence,
                    "line": m.line,
                    "before": m.before,
                    "after": m.after,
                    "status": outcome.status,
                    "exit_code": outcome.exit_code,
                    "seconds": round(secs, 1),
                },
            )
            outcomes = [done[i][0] for i in sorted(done)]
            records = [done[i][1] for i in sorted(done)]
            # Rewritten after every mutant, so that an interrupted run still leaves its table.
            settings: dict[str, Any] = {
                "command": command,
                "seed": args.seed,
                "per_module": args.per_module,
                "timeout": args.timeout,
                "seconds": time.monotonic() - started,
                "done": len(outcomes),
                "drawn": len(mutants),
            }
            if urls:
                settings["workers"] = len(urls)
            table = tabulate(generated, outcomes, triage)
            args.report_json.parent.mkdir(parents=True, exist_ok=True)
            args.report_json.write_text(
                json.dumps({"settings": settings, **table, "mutants": records}, indent=2) + "\n",
                "utf-8",
            )
            args.report_md.parent.mkdir(parents=True, exist_ok=True)
            args.report_md.write_text(render_md(table, settings), "utf-8")

        if urls:
            config = mutation_workers.write_config(
                args.session.with_suffix(".toml"), modules, urls, args.timeout
            )
            try:
                mutation_workers.dispatch(scratch, items, mutants, config, record)
            except mutation_workers.WorkerError as exc:
                print(exc, file=sys.stderr)
                return 2
        else:
            for outcome, secs in execute(scratch, mutants, args.timeout):
                record(outcome, secs)
    outcomes = [done[i][0] for i in sorted(done)]
    untriaged = [o for o in outcomes if o.status == "survived"]
    keys = {e.key for e in triage}
    missing = [o for o in untriaged if o.mutant.key not in keys]
    print(
        f"{len(outcomes)} mutants run; {len(missing)} untriaged survivors; "
        f"table in {args.report_md}",
        file=sys.stderr,
    )
    return 1 if missing else 0


def stratified(
    records: Sequence[Mapping[str, Any]], size: int, seed: int
) -> list[Mapping[str, Any]]:
    """Draw ``size`` records, seeded, taking the modules in turn so that each is in the sample.

    Each module's records are shuffled with the seed; the draw then takes one from each module
    in ``CORE_MODULES`` order, round after round, until it has ``size`` or runs out.
    """
    rng = random.Random(seed)
    by_module: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_module.setdefault(str(record["module"]), []).append(record)
    for group in by_module.values():
        rng.shuffle(group)
    order = [m for m in CORE_MODULES if m in by_module] + sorted(set(by_module) - set(CORE_MODULES))
    rounds = itertools.zip_longest(*(by_module[m] for m in order))
    drawn = [record for row in rounds for record in row if record is not None]
    return drawn[:size]


def _sample(args: argparse.Namespace) -> int:
    data = json.loads(args.report_json.read_text("utf-8"))
    killed = [
        r
        for r in data["mutants"]
        if r["status"] == "killed"
        and r["exit_code"] == 1
        and "\n" not in r["before"]
        and "\n" not in r["after"]
        and r["before"]
    ]
    picked = sorted(
        stratified(killed, args.size, args.seed), key=lambda r: (r["module"], r["line"])
    )
    payload = {
        "about": "Mutants the conformance suite kills, run in CI by "
        "tests/conformance/test_mutation.py::test_sampled_mutant_is_killed. Refresh with "
        "`python -m conformance.selftest.mutation run --per-module 10` then "
        "`python -m conformance.selftest.mutation sample` (docs/mutation.md).",
        "mutants": [
            {k: r[k] for k in ("module", "operator", "line", "before", "after")} for r in picked
        ],
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    print(f"{len(picked)} mutants written to {args.out}", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace) -> int:
    data = json.loads(args.report_json.read_text("utf-8"))
    rows = {row["module"]: row for row in data["modules"]}
    generated = Generated(
        generated={name: row["generated"] for name, row in rows.items()},
        filtered={name: row["filtered"] for name, row in rows.items()},
        pragma={name: row["pragma"] for name, row in rows.items()},
        candidates={name: [None] * row["candidates"] for name, row in rows.items()},
    )
    outcomes = [
        Outcome(
            Mutant(
                "", r["module"], r["operator"], r["occurrence"], r["line"], r["before"], r["after"]
            ),
            r["status"],
            r["exit_code"],
        )
        for r in data["mutants"]
    ]
    table = tabulate(generated, outcomes, load_triage())
    data.update(table)
    args.report_json.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    args.report_md.write_text(render_md(table, data["settings"]), "utf-8")
    untriaged = [s for s in table["survivors"] if s["verdict"] == "untriaged"]
    print(f"{len(untriaged)} untriaged survivors; table in {args.report_md}", file=sys.stderr)
    return 1 if untriaged else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m conformance.selftest.mutation``.

    Args:
        argv: the arguments; ``sys.argv[1:]`` when None. No subcommand means ``run``.

    Returns:
        0 when done with every survivor triaged, 1 when a survivor is untriaged, 2 on a
        set-up error (unknown module, a refused worker URL, a worker that does not answer or
        holds another tree, or an unmutated host that is not conformant). ``workers`` returns
        0 once stopped by a signal.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0].startswith("-"):
        args_list.insert(0, "run")
    args = _parser().parse_args(args_list)
    if args.command == "sample":
        return _sample(args)
    if args.command == "report":
        return _report(args)
    if args.command == "render-triage":
        args.out.write_text(render_triage(load_triage()), "utf-8")
        return 0
    if args.command in ("workers", "judge", "fingerprint"):
        from conformance.selftest import mutation_workers

        if args.command == "workers":
            return mutation_workers.serve(Path.cwd(), args.count, args.base_port, args.host)
        if args.command == "judge":
            return mutation_workers.judge(Path.cwd(), args.timeout)
        return mutation_workers.fingerprint_command(Path.cwd())
    return _run(args)


if __name__ == "__main__":
    raise SystemExit(main())
