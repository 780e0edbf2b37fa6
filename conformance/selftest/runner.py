"""The self-test: run the suite against every mutant and hold each run to its requirement.

This module owns ``secref-conformance selftest`` (also ``python -m conformance.selftest``). It
runs the suite against each mutant of :mod:`conformance.selftest.catalog`, each through its own
path (in process, behind the reference driver, or over MCP), side by side
(:mod:`conformance.selftest.pool`), decides from each run's report whether a failure named the
mutant's requirement (:func:`judge`), prints one row per mutant and the mutation score, and then
the capability-stripping tables (:mod:`conformance.selftest.strip`). It also lists the catalog
and serves a mutant behind the reference driver for ``python -m conformance.selftest``. It must
never import :mod:`conformance.cli` (the console script imports this module, lazily, and not the
other way round), never weaken a check to make a mutant pass, and never print a value.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance._stop import GENERATED_MARK
from conformance.arguments import OneLineParser, add_version, base_arguments, process_count
from conformance.catalog import SHOULD, load_catalog
from conformance.model import budget as model_budget
from conformance.selftest import collection, pool
from conformance.selftest import strip as stripping
from conformance.selftest.base import Mutant
from conformance.selftest.catalog import BY_NAME, MUTANTS
from conformance.selftest.hosts import driver_command, run_driver

__all__ = ["Verdict", "judge", "main", "path_arguments", "path_of", "selftest"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the suite made of one mutant."""

    mutant: Mutant
    caught: bool
    caught_by: tuple[str, ...]
    failing_checks: int
    harness_error: str | None
    seconds: float
    reads: tuple[str, ...] = ()
    """The capabilities the catch rested on: what the body of a check that caught it read, and
    for a leak those of the surfaces the value was found on."""
    core: bool = False
    """Whether a hand-written check (not only the generated corpus) caught it."""
    stopped: bool = False
    """Whether the run ended once the mutant's requirement was decided, before its last check."""
    swept: tuple[str, ...] = ()
    """The capabilities only the canary sweep read, and found no value on: stripping one changes
    nothing the catching checks' bodies saw nor where the value was found, so the same failure
    decides the run."""
    modelled: bool = False
    """Whether the model check was among the checks that caught it."""
    rests: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """For each capability in :attr:`reads`, the ids of the catching checks that rested on it."""


def run_suite(arguments: Sequence[str]) -> dict[str, Any] | None:
    """Run the suite in this process and return its JSON report."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="secref-selftest-") as directory:
        report = Path(directory) / "report.json"
        # The inner run's own pytest lines ("3 failed, ...") would read as failures of a green
        # self-test; its verdict is the report. They are shown only when no report came.
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            pytest.main(
                [
                    *base_arguments(collection.modules_for(arguments)),
                    "--no-header",
                    "--tb=no",
                    "--report-json",
                    str(report),
                    # A temporary directory of the run's own: runs side by side never share
                    # (and clean up) one another's.
                    "--basetemp",
                    str(Path(directory) / "tmp"),
                    *arguments,
                ]
            )
        if not report.exists():
            sys.stdout.write(printed.getvalue())
            return None
        loaded: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return loaded


def _rested_on(check: Mapping[str, Any]) -> set[str]:
    """The capabilities a catching check's failure rests on: what its body read (its reads
    less those only the sweep read), and for a leak those of the surfaces the value was found
    on (every surface it read, for a report that does not say which)."""
    reads = set(check.get("reads", ()))
    rested = reads - set(check.get("sweptOnly", ()))
    if check.get("leak"):
        rested |= reads & set(check.get("leakedOn", reads))
    return rested


def judge(mutant: Mutant, report: dict[str, Any] | None, seconds: float) -> Verdict:
    """Decide from a suite report whether ``mutant`` was caught, naming its requirement."""
    if report is None:
        return Verdict(mutant, False, (), 0, "the suite wrote no report", seconds)
    failing = [check for check in report["checks"] if check["outcome"] == "fail"]
    named = tuple(dict.fromkeys(rid for check in failing for rid in check["failedRequirements"]))
    problem = "; ".join(report["problems"]) or None
    caught = mutant.requirement in named
    entry = load_catalog().get(mutant.requirement)
    if not caught and entry is not None and entry.level == SHOULD:
        # A SHOULD never fails a run: a mutant breaking one is caught when the suite reports
        # that requirement non-strict.
        noted = {item["requirement"] for check in report["checks"] for item in check["nonStrict"]}
        caught = mutant.requirement in noted
        named = (*named, *sorted(noted & {mutant.requirement}))
    catching = [
        check
        for check in report["checks"]
        if mutant.requirement in check["failedRequirements"]
        or any(item["requirement"] == mutant.requirement for item in check["nonStrict"])
    ]
    # What the catch rested on: what the check's body read, and for a leak the surfaces the
    # value was found on; not what the sweep read beside them, whose loss leaves the same
    # failure to decide the run.
    used = {capability for check in catching for capability in check.get("reads", ())}
    rested = {capability for check in catching for capability in _rested_on(check)}
    reads, swept = tuple(sorted(rested)), tuple(sorted(used - rested))
    core = any(GENERATED_MARK not in check["id"] for check in catching)
    modelled = any(stripping.is_model_check(check["id"]) for check in catching)
    stopped = bool(report.get("stopped"))
    rests = tuple(
        (capability, tuple(sorted(c["id"] for c in catching if capability in _rested_on(c))))
        for capability in reads
    )
    return Verdict(
        mutant,
        caught,
        named,
        len(failing),
        problem,
        seconds,
        reads,
        core,
        stopped,
        swept,
        modelled,
        rests,
    )


def path_of(mutant: Mutant, via: str) -> str:
    """The path a self-test run takes to ``mutant``: its own under ``"catalog"``, else ``via``."""
    return mutant.via if via == "catalog" else via


def path_arguments(path: str) -> list[str]:
    """The suite arguments that reach a mutant on ``path``: the MCP layer's mutants are served
    behind the driver and reached over MCP, so their runs, stripped ones included, say
    ``--via mcp``."""
    return ["--via", "mcp"] if path == "mcp" else []


def host_arguments(mutant: Mutant, path: str) -> list[str]:
    """The suite arguments that serve ``mutant`` on ``path``: in this process, or behind the
    reference driver (over its MCP endpoint for ``"mcp"``)."""
    host = f"mutant:{mutant.name}" if path == "inprocess" else driver_command(mutant.name)
    return ["--host", host, *path_arguments(path)]


def progress(line: str) -> None:
    """Print one line of a long run at once, so that a log piped to a file or CI shows it."""
    print(line, flush=True)


def selftest(
    names: Sequence[str] = (),
    *,
    via: str = "catalog",
    broad: bool = False,
    strip: bool = False,
    strip_corpus: str = "core",
    out: Callable[[str], None] | None = None,
    workers: int = 1,
) -> int:
    """Run the suite against every mutant (or those named) and print the mutation score.

    Each mutant's run orders the checks of its requirement first and ends once a failure names
    it (``--stop-when-decided``); every stripped run ends once it can no longer be conformant.
    The rows and the closing lines count these stops, so that none is read as a pass.

    Args:
        names: Mutants to run; every mutant by default.
        via: ``"catalog"`` (each mutant through its own path, :attr:`Mutant.via`),
            ``"inprocess"``, or ``"driver"`` (the reference driver in a subprocess).
        broad: Run the whole suite against each mutant rather than the checks citing its
            requirement.
        strip: Also run the capability-stripping tables (:mod:`conformance.selftest.strip`):
            the reference driver with each capability stripped, and each driver-capable
            mutant with each capability its catch used stripped. No row may be conformant.
        strip_corpus: ``"core"`` leaves the generated grammar corpus out of the stripped runs of
            the reference driver; ``"all"`` keeps it.
        out: Where lines go; standard output, flushed line by line, by default.
        workers: How many runs go side by side (:mod:`conformance.selftest.pool`); the rows
            are printed in the catalog's order whichever finishes first.

    Returns:
        0 when every mutant was caught by a failure naming its requirement, 1 otherwise, 2 when
        a name is unknown.
    """
    out = out or progress
    chosen = [BY_NAME[name] for name in names if name in BY_NAME] if names else list(MUTANTS)
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        out(f"unknown mutants: {', '.join(unknown)}")
        return 2
    if via == "driver":
        chosen = [mutant for mutant in chosen if mutant.driver]
    verdicts: list[Verdict] = []
    paths = [path_of(mutant, via) for mutant in chosen]
    through_driver = sum(path in ("driver", "mcp") for path in paths)
    runs: list[list[str]] = []
    for mutant, path in zip(chosen, paths, strict=True):
        arguments = host_arguments(mutant, path)
        if not broad:
            arguments += ["--requirements", mutant.requirement]
        # The run ends at the first failure naming the mutant's requirement: that is all the
        # judgement reads, and the checks citing it run first.
        arguments += ["--stop-when-decided", mutant.requirement]
        runs.append(arguments)
    if workers > 1:
        # Collected here once, so that every forked worker inherits the index.
        collection.check_modules()
    answers = pool.run_all(run_suite, runs, workers)
    for mutant, path, (report, seconds) in zip(chosen, paths, answers, strict=True):
        verdict = judge(mutant, report, seconds)
        verdicts.append(verdict)
        mark = "caught" if verdict.caught else "MISSED"
        by = ", ".join(verdict.caught_by[:6]) or "-"
        stop = stripping.STOPPED_NOTE if verdict.stopped else ""
        out(
            f"{mark:<7} {mutant.name:<28} breaks {mutant.requirement:<10} "
            f"failed naming {by} ({verdict.failing_checks} checks, {verdict.seconds:.1f} s, "
            f"via {path}{stop})"
        )
    caught = sum(verdict.caught for verdict in verdicts)
    stops = sum(verdict.stopped for verdict in verdicts)
    score = 100.0 * caught / len(verdicts) if verdicts else 0.0
    out(
        f"mutation score: {caught}/{len(verdicts)} caught ({score:.0f}%); "
        f"{through_driver} through the subprocess driver, "
        f"{len(verdicts) - through_driver} in process; "
        f"{stops} runs stopped once decided, {workers} side by side"
    )
    broken: list[str] = []
    if strip:
        broken = _strip_tables(verdicts, out, strip_corpus, via, workers)
    missed = [verdict.mutant.name for verdict in verdicts if not verdict.caught]
    if missed or broken or not verdicts:
        # One closing line that says what failed, so that a log cut to its tail still does.
        parts = [f"mutants missed: {', '.join(missed)}"] if missed else []
        parts += [f"stripped runs broken: {', '.join(broken)}"] if broken else []
        out(f"self-test FAILED: {'; '.join(parts) or 'no mutant ran'}")
        return 1
    return 0


def _strip_tables(
    verdicts: Sequence[Verdict],
    out: Callable[[str], None],
    corpus: str = "core",
    via: str = "catalog",
    workers: int = 1,
) -> list[str]:
    """Print both capability-stripping tables; return the labels of the rows that broke."""
    from reference_impl.harness import CAPABILITIES

    adapter = f"{shlex.quote(sys.executable)} -m reference_impl.driver"
    out("")
    out("the reference driver with one capability stripped:")
    extra = stripping.CORE_ONLY if corpus == "core" else ()
    # Each run is a whole suite behind a stripped adapter; the model check's part in it is
    # whether it judges what it could not see, which its first example answers as its budget
    # does (model.budget.first_example), in less time.
    with model_budget.first_example():
        rows = stripping.capability_table(adapter, CAPABILITIES, run_suite, out, extra, workers)
    out("")
    out("mutants with a capability their catch used stripped:")
    # A mutant that breaks a SHOULD leaves a conformant verdict even with nothing stripped (a
    # SHOULD is reported, never failed), so only MUST mutants can show a stripped run certifying.
    musts = {entry.id for entry in load_catalog().requirements if entry.level == "MUST"}
    eligible = [
        verdict
        for verdict in verdicts
        if verdict.mutant.driver and verdict.caught and verdict.mutant.requirement in musts
    ]
    cases, repeats = _one_row_per_catch(eligible, via)
    rows += stripping.mutant_table(cases, run_suite, out, workers)
    broken = [row for row in rows if not row.holds]
    stops = sum(row.stopped for row in rows)
    left_out = sum(
        capability not in stripping.IDENTITY for verdict in eligible for capability in verdict.swept
    )
    out(
        f"capability stripping: {len(rows) - len(broken)}/{len(rows)} runs never conformant, "
        f"no check judging on what it could not see; {stops} runs stopped once decided; "
        f"{left_out} not run: a capability only the sweep read and found no value on, which "
        f"the same failure decides; {repeats} not rerun: the same checks caught an earlier "
        "mutant of the same requirement resting on the same capability, on the same path"
    )
    return [row.label for row in broken]


def _one_row_per_catch(
    eligible: Sequence[Verdict], via: str
) -> tuple[list[tuple[str, str, tuple[str, ...], bool, list[str], bool]], int]:
    """The mutant table's cases, each capability rerun once per catch; and how many were not.

    A row reruns a mutant's requirement with one capability hidden, to show that the checks
    which caught it, blind to it, never certify. Its outcome is set by those checks, the
    requirement, the capability and the path (with what the rerun leaves out): a second mutant
    caught by the same checks of the same requirement, resting on the same capability and
    reached the same way, drives the same checks blind once more. It is counted, not rerun.
    """
    seen: set[tuple[object, ...]] = set()
    cases: list[tuple[str, str, tuple[str, ...], bool, list[str], bool]] = []
    repeats = 0
    for verdict in eligible:
        path = path_arguments(path_of(verdict.mutant, via))
        by_capability = dict(verdict.rests)
        kept: list[str] = []
        for capability in verdict.reads:
            key = (
                verdict.mutant.requirement,
                capability,
                by_capability.get(capability, ()),
                tuple(path),
                verdict.core,
                verdict.modelled,
            )
            if key in seen and capability not in stripping.IDENTITY:
                repeats += 1
                continue
            seen.add(key)
            kept.append(capability)
        cases.append(
            (
                verdict.mutant.name,
                verdict.mutant.requirement,
                tuple(kept),
                verdict.core,
                path,
                verdict.modelled,
            )
        )
    return cases, repeats


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.selftest``: list mutants, serve one as a driver, or self-test."""
    parser = OneLineParser(
        prog="python -m conformance.selftest",
        description="The mutant catalog: list it, serve one mutant as a driver, or run the suite "
        "against the mutants (every one must be caught).",
    )
    add_version(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the catalog")
    serve = commands.add_parser("driver", help="serve a mutant over driver protocol v1")
    serve.add_argument("name", help="the mutant to serve (see the list command)")
    run = commands.add_parser("selftest", help="run the suite against the mutants")
    run.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="the mutants to run (default: every mutant of the catalog)",
    )
    run.add_argument(
        "--via",
        choices=("catalog", "inprocess", "driver"),
        default="catalog",
        help="how each mutant is reached: the path its catalog entry names (catalog, the "
        "default), in process, or behind the reference driver in a subprocess",
    )
    run.add_argument(
        "--broad",
        action="store_true",
        help="run every check against each mutant, not only those of the requirement it "
        "breaks (default: off)",
    )
    run.add_argument(
        "--jobs",
        type=process_count,
        default=pool.default_workers(),
        metavar="N",
        help="runs side by side, each in a process of its own (default: one more than the "
        "cores, since runs also wait on their adapters)",
    )
    run.add_argument(
        "--strip",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run the capability-stripping tables (default: on when no mutant is named)",
    )
    run.add_argument(
        "--strip-corpus",
        choices=("core", "all"),
        default="core",
        help="with the stripping tables: leave the generated grammar corpus out of the "
        "reference driver's stripped runs (core, the default) or keep it (all)",
    )
    model_reach = commands.add_parser(
        "reach",
        help="run the model check alone against the mutants: which it finds unaided",
        description="Run the model check alone, at its CI budget, against every catalog mutant "
        "(or those named), each on its own path, and print which it fails, naming what and "
        "after how many steps. A measurement: exits 0 whatever it finds (a model check "
        "skipped as unchecked is a row of its own), 1 when a run gave no report or the model "
        "check errored.",
    )
    model_reach.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="the mutants to run (default: every mutant of the catalog)",
    )
    model_reach.add_argument(
        "--jobs",
        type=process_count,
        default=pool.default_workers(),
        metavar="N",
        help="runs side by side, each in a process of its own (default: one more than the cores)",
    )
    legal = commands.add_parser(
        "legal",
        help="run the whole suite against every legal variant: none may be judged "
        "not-conformant (arguments after -- go to pytest in each run)",
        description="Run the whole suite against every legal variant (or those named), each "
        "in a process of its own; exit 1 when any is judged not-conformant, fails a check, or "
        "ends incomplete though it shows everything. Arguments after -- go to pytest in each "
        "run.",
    )
    legal.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="the legal variants to run (default: every one; an unknown name is refused "
        "with the list of them)",
    )
    legal.add_argument(
        "--workers",
        type=process_count,
        default=1,
        metavar="N",
        help="processes each run's checks are spread over (secref-conformance --workers; "
        "default: 1)",
    )
    legal.add_argument(
        "--campaign",
        type=process_count,
        default=None,
        metavar="N",
        help="draw N model-check examples from a fresh seed in each run, printed in its row "
        "(default: the CI budget and seed)",
    )
    arguments = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if arguments[:1] == ["legal"] and "--" in arguments:
        cut = arguments.index("--")
        arguments, extra = arguments[:cut], arguments[cut + 1 :]
    options = parser.parse_args(arguments)
    if options.command == "legal":
        from conformance.selftest.legal import legal_variants, sweep

        unknown = sorted(set(options.names) - {variant.name for variant in legal_variants()})
        if unknown:
            known = ", ".join(variant.name for variant in legal_variants())
            parser.error(
                f"no legal variant is called {', '.join(unknown)}; the legal variants: {known}"
            )
        return sweep(options.names, workers=options.workers, campaign=options.campaign, extra=extra)
    if options.command == "reach":
        from conformance.selftest.reach import reach

        return reach(options.names, workers=options.jobs)
    if options.command == "list":
        for mutant in MUTANTS:
            print(f"{mutant.name}\t{mutant.requirement}\t{mutant.description}")
        return 0
    if options.command == "driver":
        return run_driver(options.name)
    strip = not options.names if options.strip is None else options.strip
    return selftest(
        options.names,
        via=options.via,
        broad=options.broad,
        strip=strip,
        strip_corpus=options.strip_corpus,
        workers=options.jobs,
    )
