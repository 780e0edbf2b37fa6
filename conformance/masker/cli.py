"""``secref-conformance masker``: check maskers against decisions R10 and write their matrix.

This module owns the masker subcommand: choosing each masker (``reference``, ``mutant:<name>``
or an adapter command), running every check against it with fresh canaries, writing the JSON
report (checked against ``conformance/schemas/masker/report.schema.json``) and the Markdown one
(one masker's rows, or the matrix of several), refusing to write a report
in which any run of a canary survives, and the exit code: for one masker its verdict (0
conformant, 1 incomplete or non-conformant), with ``--matrix`` 0 once every masker was
measured; 2 on a harness error. ``secref-conformance masker selftest`` runs the reference
scrubber and every broken masker. It prints names, verdicts and form letters, never a value.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance.arguments import OneLineParser, add_version, positive_seconds
from conformance.masker.checks import Canaries, Status, run_checks
from conformance.masker.mutants import MUTANTS, mutant, reference_masker
from conformance.masker.protocol import (
    CANARY_RUN,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    Masker,
    MaskerAbandonedError,
    MaskerError,
    SubprocessMasker,
)
from conformance.masker.report import (
    EXIT_CODES,
    HARNESS_ERROR,
    fold,
    matrix_markdown,
    to_json,
    verdict,
)

#: Where reports go unless told otherwise.
DEFAULT_JSON: Final = Path("reports") / "masker.json"
DEFAULT_MD: Final = Path("reports") / "masker.md"

#: A lone surrogate: a JSON escape an adapter may send, with no UTF-8 form.
LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class LeakInReport(Exception):  # noqa: N818 - the name says what was found
    """A report about to be written holds a run of a canary: the harness itself is broken."""


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="secref-conformance masker",
        description="Check maskers against the scrub contract (decisions R10). Exit codes: 0 "
        "conformant (with --matrix: every masker measured), 1 incomplete or non-conformant, "
        "2 harness error. 'secref-conformance masker selftest' checks the checks.",
    )
    add_version(parser)
    parser.add_argument(
        "--masker",
        action="append",
        required=True,
        metavar="COMMAND",
        help="'reference' (the reference scrubber, in process), 'mutant:<name>', or a command "
        "that starts a masker-protocol adapter; repeat for a matrix",
    )
    parser.add_argument(
        "--report-json",
        type=Path,
        default=DEFAULT_JSON,
        metavar="PATH",
        help="where the JSON report goes (default: %(default)s)",
    )
    parser.add_argument(
        "--report-md",
        type=Path,
        default=DEFAULT_MD,
        metavar="PATH",
        help="where the Markdown report goes (default: %(default)s)",
    )
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="measure every masker and exit 0 once all were measured, whatever their verdicts",
    )
    parser.add_argument(
        "--start-timeout",
        type=positive_seconds,
        default=DEFAULT_START_TIMEOUT,
        metavar="SECONDS",
        help="seconds an adapter has to say hello (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help="seconds an adapter has to answer each request (default: %(default)s)",
    )
    return parser


def open_masker(spec: str, start_timeout: float, call_timeout: float) -> Masker:
    """Return the masker ``spec`` names.

    Args:
        spec: ``reference``, ``mutant:<name>``, or an adapter command.
        start_timeout: Seconds an adapter has to say hello.
        call_timeout: Seconds an adapter has to answer a request.

    Returns:
        The masker, started.

    Raises:
        KeyError: No mutant has the name given.
        MaskerStartError: The adapter could not be started.
    """
    if spec == "reference":
        return reference_masker()
    if spec.startswith("mutant:"):
        return mutant(spec.removeprefix("mutant:")).masker()
    return SubprocessMasker(spec, start_timeout, call_timeout)


def measure(masker: Masker) -> dict[str, Any]:
    """Run every check against ``masker`` with fresh canaries and return its JSON report.

    Raises:
        LeakInReport: The report would hold a run of a canary.
        MaskerAbandonedError: The masker failed three requests in a row (decisions S1.10).
    """
    canaries = Canaries.mint()
    try:
        outcomes = run_checks(masker, canaries)
        # An abandoned masker's remaining checks were errored with the cause at once; what was
        # learned before is not a measurement of the masker, so the run is a harness error.
        if masker.abandoned is not None:
            raise MaskerAbandonedError(masker.abandoned)
        report = to_json(masker.info, fold(outcomes))
    finally:
        masker.close()
    ensure_clean(json.dumps(report, ensure_ascii=False), canaries)
    return report


def ensure_clean(text: str, canaries: Canaries) -> None:
    """Refuse ``text`` if any run of :data:`CANARY_RUN` characters of a value is in it.

    Raises:
        LeakInReport: A run was found; the message names the secret, not the run.
    """
    for secret in canaries.all():
        for start in range(len(secret.value) - CANARY_RUN + 1):
            if secret.value[start : start + CANARY_RUN] in text:
                raise LeakInReport(f"a report holds part of {secret.name}")


def _summary(report: dict[str, Any]) -> str:
    failed = [
        f"{row['id']}({','.join(row['formsLeaked'])})" if row["formsLeaked"] else row["id"]
        for row in report["requirements"]
        if row["status"] == Status.FAIL.value and row["level"] == "MUST"
    ]
    unchecked = [
        row["id"]
        for row in report["requirements"]
        if row["status"] == Status.UNCHECKED.value and row["level"] == "MUST"
    ]
    masker = report["masker"]
    text = f"{masker['name']!r} {masker['version']!r}: {report['verdict']}"
    if failed:
        text += f"; failed MUSTs: {' '.join(failed)}"
    if unchecked:
        text += f"; unchecked MUSTs: {' '.join(unchecked)}"
    return text


def _write(reports: list[dict[str, Any]], json_path: Path, md_path: Path) -> None:
    json_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    document = reports[0] if len(reports) == 1 else {"maskers": reports}
    validate_report(document)
    text = json.dumps(document, indent=2, ensure_ascii=False)
    # A lone surrogate an adapter sent (in its name, say) has no UTF-8 form: it is written as
    # the JSON escape it came as, which reads back as the same string.
    text = LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    json_path.write_text(text + "\n", "utf-8")
    md_path.write_text(matrix_markdown(reports), "utf-8")


def validate_report(document: dict[str, Any]) -> None:
    """Check a JSON report against ``conformance/schemas/masker/report.schema.json``.

    Raises:
        jsonschema.ValidationError: The report does not match its schema.
    """
    import jsonschema

    schema = json.loads(
        resources.files("conformance")
        .joinpath("schemas", "masker", "report.schema.json")
        .read_text("utf-8")
    )
    jsonschema.validate(document, schema)


def selftest() -> int:
    """Run the reference scrubber and every broken masker; report which were caught.

    Returns:
        0 when the reference is conformant and every mutant is caught, else 1.
    """
    failures = 0
    reference = measure(reference_masker())
    print(f"reference: {_summary(reference)}")
    if reference["verdict"] != "conformant":
        failures += 1
    for item in MUTANTS:
        report = measure(item.masker())
        row = next(r for r in report["requirements"] if r["id"] == item.requirement)
        caught = (
            row["behaviour"] == item.behaviour
            if item.behaviour
            else row["status"] == Status.FAIL.value
        )
        failures += not caught
        print(f"{'caught' if caught else 'MISSED'} {item.name} by {item.requirement}")
    print(f"secref-conformance masker selftest: {len(MUTANTS)} mutants, {failures} problems")
    return 1 if failures else 0


def main(argv: Sequence[str]) -> int:
    """Entry point of ``secref-conformance masker``.

    Args:
        argv: The arguments after ``masker``.

    Returns:
        The exit code.
    """
    if list(argv[:1]) == ["selftest"]:
        return selftest()
    options = _parser().parse_args(argv)
    reports = []
    code = 0
    for spec in options.masker:
        try:
            masker = open_masker(spec, options.start_timeout, options.timeout)
            report = measure(masker)
        except (MaskerError, KeyError, LeakInReport) as error:
            print(f"secref-conformance masker: {HARNESS_ERROR}: {type(error).__name__}: {error}")
            return EXIT_CODES[HARNESS_ERROR]
        print(_summary(report))
        reports.append(report)
        code = max(code, EXIT_CODES[verdict_of(report)])
    _write(reports, options.report_json, options.report_md)
    print(f"reports: {options.report_json} {options.report_md}")
    return 0 if options.matrix else code


def verdict_of(report: dict[str, Any]) -> str:
    """Return the verdict a JSON report states."""
    return str(report["verdict"])


__all__ = ["main", "measure", "open_masker", "selftest", "verdict", "verdict_of"]
