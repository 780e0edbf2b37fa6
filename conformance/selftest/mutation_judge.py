"""Judging one mutant: the suite run against a scratch copy of the tree, and what it found.

This module owns the judge of a mutation run: the scratch copy of ``reference_impl`` and
``conformance`` a mutant is written into (``make_scratch``), the check that the suite judges
that copy (``self_check``), the suite command run against each mutant (``suite_command``, the
conformance suite alone with ``--stop-when-decided``, in process and then, for a mutant that
run lets through, over the MCP wire), and the reading of its exit code and JSON report into
killed, reported, survived or timed out (``run_suite``). It never mutates the
working tree, never runs two mutants at once in one copy, never changes what counts as caught
(a mutant is caught when the verdict is not conformant, or when a clean exit's report lists a
requirement not fully met), and never prints a value: the suite's output is discarded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance.hosts._supervise import all_pids, stat_fields
from conformance.model import MODEL_DIR, MODEL_PATH_ENV
from conformance.selftest.mutation_draw import Mutant

#: Seconds one mutant's suite run may take. An unmutated in-process run takes 10 to 20 s on a
#: busy 2-core machine; six times that leaves room for load without letting a mutant that loops
#: hold the run for long.
DEFAULT_TIMEOUT: Final = 120.0

#: Seconds the import probe of :func:`check_imports` may take before its process group is
#: killed, and the bytes of its output read (decisions S1.10): it prints two paths.
PROBE_TIMEOUT: Final = 60.0
PROBE_MAX_BYTES: Final = 64 * 1024

#: Bytes of resident memory one suite run may hold, summed over its process and every
#: descendant (the suite, and over MCP the driver it starts). An unmutated run holds about
#: 110 MB. A mutant can make the host grow without end (a scrubber that looks for an empty form
#: appends the same match forever): without a bound such a run took the machine's memory until
#: the timeout, starving the other worker. A run over the bound is ended at once and counted as
#: a run past its timeout: a host that does not end its call, caught by the runner, not a
#: verdict.
MEMORY_LIMIT: Final = 2 * 1024**3

#: Bytes per page, the unit of the resident size ``/proc`` gives.
_PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

#: The checks a mutation run leaves out: the bounded-work checks of invariant 7 time the host,
#: and on a machine shared with other work their ratios can cross the bound by chance, which
#: would count a mutant as killed by noise. cosmic-ray's operators change no loop's complexity
#: class, so these checks would kill nothing real here.
TIMING_CHECKS: Final = ("test_bounded_work", "test_scrubbing_is_linear")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the suite did with one mutant.

    Attributes:
        mutant: the mutant.
        status: ``killed``, ``reported``, ``survived``, ``timeout`` or ``error`` (the mutant
            could not run).
        exit_code: the suite's exit code when it finished, else ``None``.
    """

    mutant: Mutant
    status: str
    exit_code: int | None


#: The suite option that ends a mutant's run once its verdict can no longer be conformant: at
#: the first failed or errored check, or at the first MUST left unchecked, the checks likeliest
#: to decide it run first. It never changes a verdict (a stopped run is at best incomplete, so
#: it exits 1 or 2), and a SHOULD missed is a non-strict pass, not a decision, so a run that
#: only misses a SHOULD goes on to the end, exits 0, and its full report shows the miss.
STOP: Final = "--stop-when-decided"


#: The report a suite run in a scratch copy writes, in process and over MCP.
REPORT: Final = "conformance.json"
MCP_REPORT: Final = "conformance-mcp.json"

#: The checks the MCP run of a survivor makes: those that run only over MCP (rich results,
#: notifications, elicitation, the wire's refusals and cap), selected by their module. Every
#: other check drives the same core modules through the same calls in process, which the first
#: run already did; over MCP the whole suite takes several times as long.
MCP_CHECKS: Final = "test_mcp.py"


def suite_command(scratch: Path, via_mcp: bool = False) -> str:
    """The command that judges one mutant: the conformance suite alone, ending once decided.

    It passes ``--stop-when-decided`` (``STOP``) rather than pytest's ``-x``: both end a run
    that can no longer be conformant, but the stop also ends at a MUST left unchecked and runs
    the checks likeliest to decide first, so a killed mutant costs less. The judgement is the
    same: the exit code is the verdict's, and a clean exit means every check ran.

    Args:
        scratch: the scratch directory; reports go there, not to the working tree.
        via_mcp: judge the copy over the MCP wire instead, with the checks that run only
            there (:data:`MCP_CHECKS`): the reference driver started from the copy, every call
            through the official MCP client (as ``tox -e conformance-mcp`` runs it).

    Returns:
        A shell-quoted command line (cosmic-ray splits it with ``shlex``).
    """
    report = MCP_REPORT if via_mcp else REPORT
    host = ["--host", f"{shlex.quote(sys.executable)} -m reference_impl.driver", "--via", "mcp"]
    parts = [
        sys.executable,
        "-m",
        "conformance.cli",
        *(host if via_mcp else []),
        "--report-json",
        str(scratch / report),
        "--report-md",
        str(scratch / report.replace(".json", ".md")),
        "--",
        STOP,
        "-q",
        "-k",
        MCP_CHECKS if via_mcp else " and ".join(f"not {name}" for name in TIMING_CHECKS),
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

    @property
    def model(self) -> Path:
        """The directory holding an unmutated ``reference_impl`` for the model check's model."""
        return self.root / MODEL_DIR

    def env(self) -> dict[str, str]:
        """The environment a suite run needs so that it imports the scratch copy first, and
        the model check's model (the reference driver) runs from the unmutated copy, where
        there is one."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), env.get("PYTHONPATH", "")])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if (self.model / "reference_impl").is_dir():
            env[MODEL_PATH_ENV] = str(self.model)
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
        RuntimeError: a child process would import either package from elsewhere, or the
            probe did not end within :data:`PROBE_TIMEOUT` seconds, or failed.
    """
    for package in ("reference_impl", "conformance"):
        shutil.copytree(
            source_root / package,
            into / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    # The model check compares the host with the reference driver; judging a mutant, that model
    # must be the unmutated host, or a mutant that breaks the model ends the run as a harness
    # error, which would count as a kill.
    shutil.copytree(
        source_root / "reference_impl",
        into / MODEL_DIR / "reference_impl",
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
    # The probe owns its process group and writes to a file: its run is bounded in time, and
    # what is read back in size, whatever an interpreter start-up in the copy does.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import conformance, reference_impl; "
                "print(conformance.__file__); print(reference_impl.__file__)",
            ],
            env=scratch.env(),
            cwd=scratch.root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _end_group(proc)
        if code is None:
            raise RuntimeError(f"the import probe did not end within {PROBE_TIMEOUT:g} s")
        if code != 0:
            raise RuntimeError(f"the import probe exited with status {code}")
        out.seek(0)
        text = out.read(PROBE_MAX_BYTES).decode("utf-8", errors="replace")
    for line in text.split():
        if not Path(line).resolve().is_relative_to(scratch.root.resolve()):
            raise RuntimeError("a suite run would not import the scratch copy")


def process_tree(root: int) -> dict[int, int]:
    """Process ``root`` and its live descendants, each with its resident memory in bytes.

    Read from ``/proc`` (Linux) with the supervisor's reader: the stat file's fourth field is
    the parent, its twenty-fourth the resident pages. Descendants are found by their parents,
    not by session, so a host adapter the suite starts in a session of its own is found too. A
    process that ends while it is read is left out; without ``/proc`` the tree is empty.
    """
    children: dict[int, list[int]] = {}
    resident: dict[int, int] = {}
    for pid in all_pids():
        fields = stat_fields(pid)
        if fields is None or len(fields) < 22:
            continue
        parent = int(fields[1])
        children.setdefault(parent, []).append(pid)
        resident[pid] = int(fields[21]) * _PAGE_SIZE
    tree: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in tree or pid not in resident:
            continue
        tree[pid] = resident[pid]
        todo.extend(children.get(pid, ()))
    return tree


def tree_memory(root: int) -> int:
    """Bytes of resident memory held by process ``root`` and its descendants; 0 where unknown,
    so the bound is never a reason to end a run where it cannot be read."""
    return sum(process_tree(root).values())


def _kill_run(proc: subprocess.Popen[Any]) -> None:
    """Kill a suite run that went past a bound: every process of its tree, then its group.

    The tree is read first, while the run still holds it: a host adapter the suite started in
    a session of its own (the MCP driver, the mutant itself on that path) would otherwise be
    orphaned, and go on, by killing the group alone.
    """
    for pid in process_tree(proc.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    proc.wait()


def _end_group(proc: subprocess.Popen[Any]) -> None:
    """Kill what is left of ``proc``'s process group (its own session) and reap ``proc``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    proc.wait()


def self_check(scratch: Scratch, timeout: float) -> str | None:
    """Check that the suite judges the scratch copy: unmutated it passes, broken it fails.

    Args:
        scratch: the scratch copy.
        timeout: seconds per suite run.

    Returns:
        None when both hold, else what went wrong.
    """
    # Each run the judge may make, alone and unmutated, must pass in full and in time: a
    # survivor is judged over MCP too, so a broken or slow MCP run would count it as killed.
    runs = [("", False), (" over MCP", True)] if mcp_available() else [("", False)]
    for where, via_mcp in runs:
        for report in (REPORT, MCP_REPORT):
            (scratch.root / report).unlink(missing_ok=True)
        command = suite_command(scratch.root, via_mcp=via_mcp)
        status, code, seconds = _run_once(scratch, command, timeout, None)
        shortfalls = missed(scratch, MCP_REPORT if via_mcp else REPORT)
        if status != "exited" or code != 0 or shortfalls:
            detail = f"; not fully met: {', '.join(shortfalls)}" if shortfalls else ""
            reason = None if via_mcp else stopped(scratch)
            detail += f"; {reason}" if reason else ""
            return (
                f"the unmutated host does not pass cleanly{where} ({status}, exit {code}{detail})"
            )
        print(f"unmutated host: conformant{where} in {seconds:.0f} s", file=sys.stderr)
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


#: Seconds between two looks at a running suite: its memory, and ``alive`` when one is given.
_ALIVE_POLL: Final = 0.5


#: The fewest seconds worth starting the MCP run with: less could never finish it, and its
#: timing out would change nothing (the in-process status stands).
MIN_MCP_SECONDS: Final = 20.0


def mcp_available() -> bool:
    """Whether the official MCP SDK is installed, so that a survivor can be judged over MCP."""
    return importlib.util.find_spec("mcp") is not None


def run_suite(
    scratch: Scratch, timeout: float, alive: Callable[[], bool] | None = None
) -> tuple[str, int | None, float]:
    """Run the suite against whatever the scratch copy holds: in process, then over MCP.

    A mutant the in-process run lets through (it survives, or only a SHOULD is missed) is
    judged again over the MCP wire when the MCP SDK is installed: the suite's MCP checks (rich
    results, notifications, elicitation, the wire's own rules) never run in process, and a
    host is conformant only if it is on every path. The second run gets what is left of
    ``timeout``; if it runs out, the in-process status stands: a mutant is never counted as
    killed because two runs took longer than one.

    Args:
        scratch: the scratch copy.
        timeout: seconds both runs may take together; a run still going then is killed.
        alive: when given, asked every half second; once it says False the run's process group
            is killed and the run ends as ``error`` (a worker whose server has gone).

    Returns:
        (status, exit code or None, seconds): status is ``killed`` (a run's verdict was not
        conformant, exit 1), ``harness-error`` (a run ended as a harness error, exit 2, such
        as a host that cannot start: counted as a kill, shown apart), ``reported`` (both
        exited 0 but a report lists a requirement not fully met, such as a SHOULD the mutant
        broke), ``survived``, ``timeout``, or ``error`` (``alive`` said no).
    """
    for report in (REPORT, MCP_REPORT):
        (scratch.root / report).unlink(missing_ok=True)
    status, code, seconds = _run_once(scratch, suite_command(scratch.root), timeout, alive)
    if status != "exited":
        return status, code, seconds
    if code != 0:
        return failed(code), code, seconds
    shortfall = bool(missed(scratch))
    left = timeout - seconds
    if mcp_available() and left >= MIN_MCP_SECONDS:
        command = suite_command(scratch.root, via_mcp=True)
        status, code, more = _run_once(scratch, command, left, alive)
        seconds += more
        if status == "error":
            return status, code, seconds
        if status == "exited" and code != 0:
            return failed(code), code, seconds
        if status == "exited":
            shortfall = shortfall or bool(missed(scratch, MCP_REPORT))
    return ("reported" if shortfall else "survived"), 0, seconds


#: A run that exited 2 (or anything but 0 and 1): the suite ended it as a harness error, so no
#: verdict judged the mutant; a host that cannot start or answer does this.
HARNESS_ERROR: Final = "harness-error"


def failed(code: int | None) -> str:
    """Return the status of a suite run that exited non-zero: ``killed`` when its verdict was
    not conformant (exit 1), :data:`HARNESS_ERROR` otherwise."""
    return "killed" if code == 1 else HARNESS_ERROR


def _run_once(
    scratch: Scratch, command: str, timeout: float, alive: Callable[[], bool] | None
) -> tuple[str, int | None, float]:
    """Run one suite command in the copy: ``exited`` with its code, ``timeout`` or ``error``.

    The run is bounded in time (``timeout``) and in memory (:data:`MEMORY_LIMIT`, read every
    half second where ``/proc`` exists); past either its whole tree is killed (:func:`_kill_run`)
    and it ends as ``timeout``.
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        shlex.split(command),
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
            code = proc.wait(timeout=max(0.0, min(left, _ALIVE_POLL)))
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline or tree_memory(proc.pid) > MEMORY_LIMIT:
                _kill_run(proc)
                return "timeout", None, time.monotonic() - started
            if alive is not None and not alive():
                _kill_run(proc)
                return "error", None, time.monotonic() - started
    # Whatever the run started in its session (an adapter's children) ends with it.
    _end_group(proc)
    return "exited", code, time.monotonic() - started


#: The requirement outcomes that say the host did not fully meet a requirement although the run
#: exited 0: a SHOULD missed (non-strict), or a requirement a check could not judge.
_SHORTFALLS: Final = frozenset({"non-strict", "fail", "error", "unchecked"})


def missed(scratch: Scratch, report_name: str = REPORT) -> list[str]:
    """The requirements the last suite run in ``scratch`` reports as not fully met.

    The unmutated host meets every requirement it is judged on (``self_check`` makes sure), so
    any ID here is the mutant's doing: typically a SHOULD the mutant broke, which the report
    lists as non-strict while the run still exits 0. A report that cannot be read counts as no
    shortfall, so a mutant is never counted as caught by a missing file.

    Args:
        scratch: the scratch copy the suite wrote its JSON report into.
        report_name: the report's file name: the in-process run's, or the MCP run's.

    Returns:
        The requirement IDs, in catalog order.
    """
    try:
        report = json.loads((scratch.root / report_name).read_text("utf-8"))
        rows = report["requirements"]
        return [row["id"] for row in rows if row.get("outcome") in _SHORTFALLS]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def stopped(scratch: Scratch) -> str | None:
    """Why the last suite run in ``scratch`` ended before its last check, if its report says.

    A run that stops (``--stop-when-decided``) is never conformant and exits non-zero, so this
    never decides a mutant's status; it names the check or the MUST that decided a run.

    Args:
        scratch: the scratch copy the suite wrote its JSON report into.

    Returns:
        The report's ``stopped`` reason, or None when the run went to the end or the report
        cannot be read.
    """
    try:
        report = json.loads((scratch.root / REPORT).read_text("utf-8"))
        reason = report["stopped"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(reason) if reason else None


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
