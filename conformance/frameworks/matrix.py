"""``python -m conformance.frameworks.matrix``: the placeholder-host matrix (decisions R11.3).

This module owns the frameworks matrix: it starts each framework adapter (a driver-protocol
command), runs the checks of :mod:`conformance.frameworks.checks` with fresh canaries, and
writes ``reports/frameworks.json`` and ``reports/frameworks.md``: framework (with its version)
x requirement, the forms and surfaces that leaked, R1 and R2 reported not applicable with the
spelling named, and the parts these hosts do not offer reported unchecked. A framework whose
env could not be built is given as ``--not-run 'name: reason'`` and shown as not run. The
verdict is ``non-conformant`` when a MUST failed and ``incomplete`` otherwise, never
``conformant`` (R11.2). Exit 0 once every framework given was measured, 2 on a harness error.
It prints names, verdicts and form letters, never a value, and refuses to write a report that
holds a run of a canary.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from conformance.canary import issued_canaries
from conformance.frameworks.checks import COLUMNS, NOT_APPLICABLE, NOT_OFFERED, run_checks
from conformance.hosts.subprocess import SubprocessHost
from conformance.inert import markdown_text as _escape

#: Where the reports go unless told otherwise.
DEFAULT_JSON: Final = Path("reports") / "frameworks.json"
DEFAULT_MD: Final = Path("reports") / "frameworks.md"


def measure(command: str, timeout: float) -> dict[str, Any]:
    """Start one adapter, run every check, and return its entry of the report."""
    started = time.monotonic()
    host = SubprocessHost(command, call_timeout=timeout, start_timeout=60.0)
    try:
        info = host.info()
        # The suite's host keeps only the published members of the handshake, so the
        # placeholder member is read by a handshake of its own.
        patterns = _placeholder_of(command, timeout)
        rows = run_checks(host, patterns)
    finally:
        host.close()
    failed = [column for column, row in rows.items() if row.status == "fail"]
    return {
        "framework": info.name,
        "version": info.version,
        "capabilities": sorted(info.capabilities),
        "spelling": patterns.get("spelling", ""),
        "verdict": "non-conformant" if failed else "incomplete",
        "rows": {column: row.wire() for column, row in rows.items()},
        "notApplicable": NOT_APPLICABLE.replace("{spelling}", str(patterns.get("spelling", ""))),
        "unchecked": NOT_OFFERED,
        "runSeconds": round(time.monotonic() - started, 1),
    }


def _placeholder_of(command: str, timeout: float) -> dict[str, Any]:
    """Return the ``placeholder`` member of an adapter's handshake, read by a raw ``start``."""
    import subprocess

    from conformance.hosts._protocol import split_command

    line = json.dumps({"id": 0, "method": "start", "params": {"protocol": 1}}) + "\n"
    done = subprocess.run(
        split_command(command),
        input=line + json.dumps({"id": 1, "method": "shutdown", "params": {}}) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    first = json.loads(done.stdout.splitlines()[0])
    return dict(first["result"]["host"].get("placeholder") or {})


def cell(row: dict[str, Any]) -> str:
    """Return one matrix cell: ``pass``, ``unchecked`` or ``FAIL (forms @ surfaces)``."""
    if row["status"] != "fail":
        return str(row["status"])
    where = ", ".join(row["surfaces"])
    forms = ",".join(row["forms"])
    inner = " @ ".join(part for part in (forms, where) if part)
    return f"FAIL ({inner})" if inner else "FAIL"


def markdown(
    entries: Sequence[dict[str, Any]],
    skipped: Sequence[str],
    installs: Sequence[dict[str, Any]] = (),
) -> str:
    """Return the Markdown matrix, the envs' install times and each framework's details.

    What the adapter announced (its name, version, spelling, capabilities) and the details
    that quote its spelling are made inert for Markdown (:func:`conformance.inert.markdown_text`).
    """
    head = ["framework", "version", "verdict", "R1, R2", *COLUMNS]
    lines = [
        "# Placeholder hosts measured (decisions R11)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for entry in entries:
        cells = [_escape(entry["framework"]), _escape(entry["version"]), entry["verdict"], "n/a"]
        cells += [cell(entry["rows"][column]) for column in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    for line in skipped:
        name = line.split(":", 1)[0]
        lines.append(f"| {_escape(name)} | | not run | " + " | ".join("" for _ in COLUMNS) + " |")
    lines.append("")
    for line in skipped:
        lines.append(f"- not run: {_escape(line)}")
    for install in installs:
        seconds = install["installSeconds"]
        took = "reused, not measured" if seconds < 0 else f"{seconds:.0f} s"
        lines.append(f"- install of `{install['requirement']}`: {took}")
    lines += ["", "| framework | run time |", "|---|---|"]
    lines += [f"| {_escape(e['framework'])} | {e['runSeconds']} s |" for e in entries]
    for entry in entries:
        lines += [
            "",
            f"### {_escape(entry['framework'])} {_escape(entry['version'])}",
            "",
            f"Spelling: {_escape(entry['spelling'])}; surfaces announced: "
            f"{_escape(', '.join(entry['capabilities']))}, result, failure text, standard error; "
            f"verdict: {entry['verdict']}; run time {entry['runSeconds']} s.",
            "",
            f"- R1, R2: {_escape(entry['notApplicable'])}",
            f"- unchecked: {_escape(entry['unchecked'])}",
        ]
        for column in COLUMNS:
            row = entry["rows"][column]
            if row["status"] != "pass":
                details = "; ".join(row["details"])
                lines.append(f"- {column} {row['status']}: {_escape(details)}")
    return "\n".join(lines) + "\n"


def _guard(text: str) -> None:
    """Refuse a report that holds a run of 8 characters of any canary of this process."""
    for canary in issued_canaries():
        value = canary.value
        for start in range(max(1, len(value) - 7)):
            if len(value) >= 8 and value[start : start + 8] in text:
                raise SystemExit(f"a report would hold a run of {canary}: not written")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every adapter given and write the matrix; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.frameworks.matrix")
    parser.add_argument("--framework", action="append", default=[], metavar="COMMAND")
    parser.add_argument("--not-run", action="append", default=[], metavar="'NAME: REASON'")
    parser.add_argument(
        "--install",
        action="append",
        default=[],
        metavar="REQUIREMENT=SECONDS",
        help="an env's install time, as measured by conformance.frameworks.envs (-1: reused)",
    )
    parser.add_argument("--report-json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--report-md", type=Path, default=DEFAULT_MD)
    parser.add_argument("--timeout", type=float, default=60.0)
    options = parser.parse_args(argv)
    entries = []
    for command in options.framework:
        entry = measure(command, options.timeout)
        print(f"{entry['framework']} {entry['version']}: {entry['verdict']}")
        entries.append(entry)
    for line in options.not_run:
        print(f"not run: {line}")
    installs = [
        {"requirement": req, "installSeconds": float(sec)}
        for req, sec in (item.rsplit("=", 1) for item in options.install)
    ]
    document = {"frameworks": entries, "notRun": list(options.not_run), "installs": installs}
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    md = markdown(entries, options.not_run, installs)
    _guard(text + md)
    options.report_json.parent.mkdir(parents=True, exist_ok=True)
    options.report_json.write_text(text, encoding="utf-8")
    options.report_md.write_text(md, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
