"""Mutation testing of the reference host, with the conformance suite alone as the judge.

This module owns the command line ``python -m conformance.selftest.mutation`` (``tox -e
mutation``) and the run it starts: it copies the tree to a scratch directory, checks the judge
there, has :mod:`~conformance.selftest.mutation_draw` generate, filter and draw the mutants of
the reference host's core modules (with a fresh seed unless ``--seed`` is given, printed first so
that any run can be replayed), judges each with the suite (one process per mutant,
:mod:`~conformance.selftest.mutation_judge`) here or on cosmic-ray http workers
(:mod:`~conformance.selftest.mutation_workers`), and rewrites the tables
(:mod:`~conformance.selftest.mutation_report`) after every mutant, in draw order. Its other
subcommands re-tabulate a run, render the triage page, pick the CI sample
(:mod:`~conformance.selftest.mutation_sample`), start local workers, and run a worker's judge.
It holds no judging or counting of its own, never mutates the working tree, and never prints a
value: the suite's own output is stored, not echoed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from conformance.arguments import OneLineParser, add_version, positive_seconds, process_count
from conformance.selftest import mutation_local_workers, mutation_workers
from conformance.selftest.mutation_draw import (
    CORE_MODULES,
    DEFAULT_PER_MODULE,
    TRIAGED_SEED,
    Generated,
    Mutant,
    describe,
    draw,
    fresh_seed,
    init_session,
)
from conformance.selftest.mutation_judge import (
    DEFAULT_TIMEOUT,
    Outcome,
    execute,
    make_scratch,
    self_check,
)
from conformance.selftest.mutation_report import (
    headline,
    load_triage,
    render_md,
    render_triage,
    tabulate,
)
from conformance.selftest.mutation_sample import CI_SAMPLE_SIZE, SAMPLE_PATH, write_sample

#: Where the session and the tables go unless told otherwise.
DEFAULT_SESSION: Final = Path("reports") / "mutation.sqlite"
DEFAULT_MD: Final = Path("reports") / "mutation.md"
DEFAULT_JSON: Final = Path("reports") / "mutation.json"
DEFAULT_TRIAGE_MD: Final = Path("docs") / "mutation-triage.md"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m conformance.selftest.mutation",
        description="Mutation testing of the reference host's core modules, judged by the "
        "conformance suite alone.",
    )
    add_version(parser)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="generate, draw, run and tabulate (the default)")
    run.add_argument(
        "--modules",
        default=",".join(CORE_MODULES),
        metavar="MODULES",
        help="comma-separated modules of the reference host to mutate (default: the core "
        f"modules, {', '.join(CORE_MODULES)})",
    )
    run.add_argument(
        "--per-module",
        type=int,
        default=DEFAULT_PER_MODULE,
        metavar="N",
        help="mutants drawn per module; 0 runs every mutant (default: %(default)s)",
    )
    run.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the seed of the draw, to replay a run's; none draws a fresh seed, printed at the "
        f"start and in the report (default: none; the triage was built on {TRIAGED_SEED})",
    )
    run.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="seconds per mutant (default: %(default)s)",
    )
    run.add_argument(
        "--session",
        type=Path,
        default=DEFAULT_SESSION,
        metavar="PATH",
        help="cosmic-ray's session database (default: %(default)s)",
    )
    run.add_argument(
        "--report-md",
        type=Path,
        default=DEFAULT_MD,
        metavar="PATH",
        help="where the Markdown table goes (default: %(default)s)",
    )
    run.add_argument(
        "--report-json",
        type=Path,
        default=DEFAULT_JSON,
        metavar="PATH",
        help="where the JSON report goes (default: %(default)s)",
    )
    run.add_argument(
        "--triage",
        type=Path,
        default=None,
        metavar="PATH",
        help="another triage file (default: the packaged mutation_triage.yaml)",
    )
    run.add_argument(
        "--worker-url",
        dest="worker_urls",
        action="append",
        default=[],
        metavar="URL",
        help="a cosmic-ray http worker to run mutants on (repeat, or a comma list); "
        "none runs them here, one at a time (default: none)",
    )
    workers = sub.add_parser(
        "workers", help="start local cosmic-ray http workers, each in its own copy of the tree"
    )
    workers.add_argument(
        "--count",
        type=process_count,
        default=2,
        metavar="N",
        help="workers to start (default: %(default)s)",
    )
    workers.add_argument(
        "--base-port",
        type=int,
        default=9876,
        metavar="PORT",
        help="the first worker's port; the others take the next ones (default: %(default)s)",
    )
    workers.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address the workers listen on (default: %(default)s)",
    )
    judge = sub.add_parser("judge", help="(run by a worker) judge the mutant in place here")
    judge.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="seconds the judgement may take (default: %(default)s)",
    )
    sub.add_parser("fingerprint", help="(run by a worker) describe this copy of the tree")
    sample = sub.add_parser("sample", help="pick the fixed CI sample from a run's kills")
    sample.add_argument(
        "--report-json",
        type=Path,
        default=DEFAULT_JSON,
        metavar="PATH",
        help="the run's JSON report (default: %(default)s)",
    )
    sample.add_argument(
        "--size",
        type=process_count,
        default=CI_SAMPLE_SIZE,
        metavar="N",
        help="mutants in the sample (default: %(default)s)",
    )
    sample.add_argument(
        "--seed",
        type=int,
        default=TRIAGED_SEED,
        help="the seed of the sample's draw (default: %(default)s, the triaged run's)",
    )
    sample.add_argument(
        "--out",
        type=Path,
        default=SAMPLE_PATH,
        metavar="PATH",
        help="the sample file (default: the packaged mutation_sample.json)",
    )
    report = sub.add_parser("report", help="re-tabulate a run's JSON with the current triage")
    report.add_argument(
        "--report-md",
        type=Path,
        default=DEFAULT_MD,
        metavar="PATH",
        help="where the Markdown table goes (default: %(default)s)",
    )
    report.add_argument(
        "--report-json",
        type=Path,
        default=DEFAULT_JSON,
        metavar="PATH",
        help="the run's JSON report (default: %(default)s)",
    )
    triage = sub.add_parser("render-triage", help="write docs/mutation-triage.md")
    triage.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_TRIAGE_MD,
        metavar="PATH",
        help="where the page goes (default: %(default)s)",
    )
    return parser


def _run(args: argparse.Namespace) -> int:
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
    if args.seed is None:
        args.seed = fresh_seed()
    command = "python -m conformance.selftest.mutation run " + " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in (
            ("modules", ",".join(modules)),
            ("per_module", args.per_module),
            ("seed", args.seed),
        )
    )
    # The seed first, before anything can fail, so that any run can be replayed.
    print(f"seed {args.seed}; replay with: {command}", file=sys.stderr)
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
        f"seed {args.seed}: {len(outcomes)} mutants run; {len(missing)} untriaged survivors; "
        f"{headline(tabulate(generated, outcomes, triage))}; table in {args.report_md}",
        file=sys.stderr,
    )
    return 1 if missing else 0


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


def tree_problem(root: Path) -> str | None:
    """Why ``root`` cannot be the tree a mutation run copies and mutates, or None.

    The run, its workers and a remote judge copy ``reference_impl`` and ``conformance`` from
    the directory they are started in: the project's root, as ``tox -e mutation`` starts them.
    """
    missing = [name for name in ("reference_impl", "conformance") if not (root / name).is_dir()]
    if not missing:
        return None
    return (
        f"{root} holds no {' and no '.join(missing)}; start it from the project's root, the "
        "directory holding both (as tox -e mutation does)"
    )


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
        count = write_sample(args.report_json, args.out, args.size, args.seed)
        print(f"{count} mutants written to {args.out}", file=sys.stderr)
        return 0
    if args.command == "report":
        return _report(args)
    if args.command == "render-triage":
        args.out.write_text(render_triage(load_triage()), "utf-8")
        return 0
    if args.command in ("run", "workers", "judge", "fingerprint"):
        problem = tree_problem(Path.cwd())
        if problem is not None:
            print(
                f"python -m conformance.selftest.mutation {args.command}: {problem}",
                file=sys.stderr,
            )
            return 2
    if args.command in ("workers", "judge", "fingerprint"):
        if args.command == "workers":
            return mutation_local_workers.serve(Path.cwd(), args.count, args.base_port, args.host)
        if args.command == "judge":
            return mutation_workers.judge(Path.cwd(), args.timeout)
        return mutation_workers.fingerprint_command(Path.cwd())
    return _run(args)


if __name__ == "__main__":
    raise SystemExit(main())
