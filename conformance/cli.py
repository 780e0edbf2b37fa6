"""The ``secref-conformance`` console script: run the suite against a host, or self-test it.

This module owns the user's first command. ``secref-conformance`` runs the conformance checks
(pytest with the ``secref_conformance`` plugin, in this process) against the host ``--host``
names, the in-process reference host by default; writes the reports asked for (JSON, Markdown,
JUnit XML; when none is asked, the JSON and Markdown reports in ``reports/``); and exits 0 when
the host is conformant, 1 when it is not, and 2 on a harness error, a run in which no check
executed included. ``secref-conformance selftest`` runs the suite against every mutant of the
mutant catalog; ``secref-conformance masker`` checks maskers instead of hosts
(:mod:`conformance.masker.cli`); ``secref-conformance smoke`` starts an adapter, makes two calls
and prints what it saw (:mod:`conformance.smoke`), which also makes the handshake of every run's
adapter before pytest collects; ``secref-conformance list`` prints the requirements, checks or
mutants the suite holds (:mod:`conformance.listing`); ``secref-conformance report`` shows
saved JSON reports again, or side by side (:mod:`conformance.report_cli`). It prints what
pytest and the plugin print, and never a value.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from conformance.arguments import (
    OneLineParser,
    add_version,
    base_arguments,
    positive_count,
    positive_seconds,
    process_count,
)
from conformance.inert import escape_controls
from conformance.report_views import verdict_text

#: Where reports go when no report is asked for (none of --report-json, --report-md and
#: --junit-xml): both of these. Asking for any report writes only the reports asked for.
DEFAULT_JSON: Final = Path("reports") / "conformance.json"
DEFAULT_MD: Final = Path("reports") / "conformance.md"

#: Exit codes.
CONFORMANT: Final = 0
NOT_CONFORMANT: Final = 1
HARNESS_FAILURE: Final = 2


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="secref-conformance",
        description="Check a host against the secret-reference contract. Exit codes: "
        "0 conformant, 1 not conformant, 2 harness error (including a run where no check "
        "executed). 'secref-conformance selftest' runs the suite against the mutant catalog, "
        "'secref-conformance legal' against every legal variant (none may fail), "
        "'secref-conformance reach' the model check alone against the catalog; "
        "'secref-conformance list requirements|checks|mutants' prints what the suite holds; "
        "'secref-conformance report --help' shows saved JSON reports again, or side by side; "
        "'secref-conformance masker --help' checks maskers; 'secref-conformance smoke --help' "
        "takes a quick look at an adapter. An adapter is started and handshaken before any "
        "check is collected: one that cannot be ends the run with one line and exit code 2.",
    )
    add_version(parser)
    parser.add_argument(
        "--host",
        default=None,
        help="the host under test: 'inprocess' (default, the reference host), "
        "'mutant:<name>', or a command that starts a driver-protocol adapter",
    )
    parser.add_argument(
        "--via",
        choices=("driver", "mcp"),
        default=None,
        help="how calls reach an adapter: its driver-protocol invoke (default) or the "
        "official MCP client to the endpoint it announces (docs/mcp.md)",
    )
    _add_report_options(parser)
    parser.add_argument(
        "--requirements",
        default=None,
        metavar="IDS",
        help="run only the checks citing these comma-separated requirement IDs",
    )
    parser.add_argument(
        "--expectations",
        default=None,
        metavar="FILE",
        help="the host's known failures and flaky checks (JSON or YAML); strict: a listed "
        "failure that passes fails the run",
    )
    parser.add_argument(
        "--validate-protocol",
        action="store_true",
        help="check every driver-protocol message against its JSON Schema",
    )
    parser.add_argument(
        "--host-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds a driver-protocol host has to answer each request (default 30)",
    )
    parser.add_argument(
        "--host-start-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds a driver-protocol host has to answer the handshake (default 8)",
    )
    parser.add_argument(
        "--host-max-line",
        type=positive_count,
        default=None,
        metavar="BYTES",
        help="bytes one line of a driver-protocol host's output may hold (default 16 MiB); "
        "a longer line, or as much text without a newline, ends the running check as errored",
    )
    parser.add_argument(
        "--workers",
        type=process_count,
        default=1,
        metavar="N",
        help="run the checks in N processes (pytest-xdist), each with a host of its own; the "
        "verdict, the reports and the exit code are those of a one-process run (default 1)",
    )
    parser.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        help="after '--', further pytest arguments (for example -k or -x)",
    )
    return parser


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """Add the report options: each writes one report, and only those asked for are written."""
    parser.add_argument(
        "--report-json",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"write the JSON report to PATH (default: {DEFAULT_JSON}, when no report option "
        "is given)",
    )
    parser.add_argument(
        "--report-md",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"write the Markdown report to PATH (default: {DEFAULT_MD}, when no report option "
        "is given)",
    )
    parser.add_argument(
        "--junit-xml",
        type=Path,
        default=None,
        metavar="PATH",
        help="write a JUnit XML file to PATH, one testcase per check, for CI dashboards "
        "(pytest's --junitxml; default: none)",
    )
    parser.add_argument(
        "--step-summary",
        type=Path,
        default=None,
        metavar="PATH",
        help="append the verdict and the Markdown report to PATH, a CI job summary (default: "
        "$GITHUB_STEP_SUMMARY when it is set, else none)",
    )
    parser.add_argument(
        "--no-step-summary",
        action="store_true",
        help="append no job summary, even when $GITHUB_STEP_SUMMARY is set",
    )


def _reports(options: argparse.Namespace) -> tuple[Path | None, Path | None, list[str]]:
    """Return the JSON and Markdown reports to write, and the pytest arguments for JUnit XML.

    When no report is asked for, the JSON and Markdown reports go to ``reports/``; otherwise
    only those asked for are written. The JSON path is ``None`` when it was not asked for: the
    run then writes it to a temporary file, since the verdict is read from it.
    """
    asked = (options.report_json, options.report_md, options.junit_xml)
    if all(path is None for path in asked):
        return DEFAULT_JSON, DEFAULT_MD, []
    junit = [] if options.junit_xml is None else [f"--junitxml={options.junit_xml}"]
    return options.report_json, options.report_md, junit


def run(
    host: str | None,
    report_json: Path,
    report_md: Path | None = None,
    requirements: str | None = None,
    extra: Sequence[str] = (),
    keep_json: bool = True,
) -> int:
    """Run the suite and return its exit code.

    Args:
        host: The ``--host`` value, or ``None`` for the in-process reference host.
        report_json: Where the JSON report goes.
        report_md: Where the Markdown report goes, if anywhere.
        requirements: Comma-separated requirement IDs to narrow the run to.
        extra: Further pytest arguments.
        keep_json: Whether the JSON report was asked for; when not, ``report_json`` is a
            temporary file that is not named in the closing line.

    Returns:
        0 conformant, 1 not conformant, 2 harness error.
    """
    import pytest

    from conformance.report import written_here

    arguments = [*base_arguments(), "--report-json", str(report_json)]
    if report_md is not None:
        arguments += ["--report-md", str(report_md)]
    if host:
        arguments += ["--host", host]
    if requirements:
        arguments += ["--requirements", requirements]
    arguments += [argument for argument in extra if argument != "--"]
    if report_json.exists():
        report_json.unlink()
    started = time.monotonic()
    status = pytest.main(arguments)
    took = time.monotonic() - started
    own = written_here(report_json)
    if own is None or not report_json.exists():
        print(
            f"secref-conformance: no report was written (pytest exit status {int(status)})",
            file=sys.stderr,
        )
        return HARNESS_FAILURE
    # The run's verdict is the report it wrote, not whatever the file holds now.
    report = json.loads(own)
    if report_json.read_text(encoding="utf-8") != own:
        print(
            f"secref-conformance: {report_json} now holds another run's report (runs side by "
            "side wrote the same file); give each run its own --report-json. This run: "
            f"{escape_controls(verdict_text(report))} (exit code {report.get('exitCode')})",
            file=sys.stderr,
        )
        return HARNESS_FAILURE
    # The kernel's exit code, as every report prints it (decisions S1.11).
    code = int(report.get("exitCode", HARNESS_FAILURE))
    if code == CONFORMANT and status != pytest.ExitCode.OK:
        # pytest failed the session after the report was written: the report cannot say so.
        print(
            f"secref-conformance: pytest exit status {int(status)} after the report was written",
            file=sys.stderr,
        )
        code = HARNESS_FAILURE
    where = f"; report {report_json}" if keep_json else ""
    # One duration for the run, from the report's one clock, as every report prints it.
    seconds = float(report.get("durationS", took))
    line = escape_controls(verdict_text(report))
    print(f"secref-conformance: {line} (exit code {code}) in {seconds:.1f} s{where}")
    return code


def _terminated(signum: int, frame: object) -> None:
    """Stop the run as an interrupt does, so that it ends its hosts and writes its reports."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``secref-conformance``, in a process of its own.

    At the end it kills any child of this process still alive (an orphan of an adapter's tree,
    reparented here); call :func:`run` instead from a process that has children of its own.
    ``SIGTERM`` (a CI job cancelled, or an adapter signalling its parent) stops the run as
    ``Ctrl-C`` does: the hosts are ended, the reports say the run was interrupted, exit code 2.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("secref-conformance: interrupted before a verdict (exit code 2)", file=sys.stderr)
        return HARNESS_FAILURE
    finally:
        from conformance.hosts import release_started
        from conformance.hosts._supervise import end_strays

        release_started()
        # The console script's process runs only the suite, and as a subreaper it is the parent
        # of every orphan an adapter left: any child still alive now is one of those.
        end_strays()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["selftest"], ["legal"], ["reach"]):
        from conformance.selftest import runner

        return runner.main(args)
    if args[:1] == ["masker"]:
        from conformance.masker import cli as masker_cli

        return masker_cli.main(args[1:])
    if args[:1] == ["smoke"]:
        from conformance import smoke

        return smoke.main(args[1:])
    if args[:1] == ["report"]:
        from conformance import report_cli

        return report_cli.main(args[1:])
    if args[:1] == ["list"]:
        from conformance import listing

        return listing.main(args[1:])
    options = _parser().parse_args(args)
    passed: list[str] = []
    if options.expectations:
        from conformance import expectations

        try:
            expectations.load(options.expectations)
        except expectations.ExpectationsError as error:
            # Refused before the run starts: a usage error, with no report to write.
            print(f"secref-conformance: --expectations: {error}", file=sys.stderr)
            return HARNESS_FAILURE
        passed += ["--expectations", options.expectations]
    if options.validate_protocol:
        passed.append("--validate-protocol")
    if options.via is not None:
        passed += ["--via", options.via]
    if options.host_timeout is not None:
        passed += ["--host-timeout", str(options.host_timeout)]
    if options.host_start_timeout is not None:
        passed += ["--host-start-timeout", str(options.host_start_timeout)]
    if options.host_max_line is not None:
        passed += ["--host-max-line", str(options.host_max_line)]
    if options.workers > 1:
        import importlib.util

        if importlib.util.find_spec("xdist") is None:
            print(
                "secref-conformance: --workers needs pytest-xdist (the 'conformance' extra)",
                file=sys.stderr,
            )
            return HARNESS_FAILURE
        # One host per worker process; the controller rebuilds each check's result.
        passed += ["-n", str(options.workers), "--dist", "load"]
    from conformance import smoke, step_summary
    from conformance.hosts import release_started

    # An adapter is started and handshaken before pytest collects anything: one that cannot be
    # ends the run here, in seconds, with one line; a good one is kept and used by the run.
    refused = smoke.start_first(options)
    if refused is not None:
        return refused
    report_json, report_md, junit = _reports(options)
    # The verdict is read from the JSON report: unasked for, it goes to a temporary directory.
    scratch: tempfile.TemporaryDirectory[str] | None = None
    if report_json is None:
        scratch = tempfile.TemporaryDirectory(prefix="secref-conformance-")
        report_json = Path(scratch.name) / "conformance.json"
    try:
        code = run(
            options.host,
            report_json,
            report_md,
            options.requirements,
            [*passed, *junit, *options.pytest_args],
            keep_json=scratch is None,
        )
        summary = step_summary.target(options.step_summary, options.no_step_summary)
        if summary is not None:
            step_summary.append(summary, report_json, code)
        return code
    finally:
        release_started()
        if scratch is not None:
            scratch.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
