"""The CI job summary: the verdict and the Markdown report, appended where a CI job shows them.

This module owns ``secref-conformance --step-summary PATH``. GitHub Actions shows, on a job's
page, whatever a step appends to the file named by ``$GITHUB_STEP_SUMMARY``; the console script
appends there by default when that variable is set. What it appends is a heading with the
kernel's verdict line and the exit code, then the run's Markdown report, rendered from the JSON
report (already redacted when it was written) and cut at :data:`MAX_BYTES`, since a summary
holds at most 1 MiB per step. A run that wrote no report still gets its heading, saying so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

#: Bytes of Markdown appended at most: a job summary holds 1 MiB per step.
MAX_BYTES: Final = 900_000

#: The environment variable GitHub Actions sets to the step's summary file.
GITHUB_VARIABLE: Final = "GITHUB_STEP_SUMMARY"


def target(
    asked: Path | None, refused: bool, environ: Mapping[str, str] | None = None
) -> Path | None:
    """Return the summary file to append to: ``asked``, else ``$GITHUB_STEP_SUMMARY`` unless
    ``refused`` (``--no-step-summary``), else none."""
    if asked is not None:
        return asked
    if refused:
        return None
    value = (os.environ if environ is None else environ).get(GITHUB_VARIABLE, "")
    return Path(value) if value else None


def render(report_json: Path, code: int) -> str:
    """Return the summary of the run whose JSON report is ``report_json`` and exit code ``code``."""
    from conformance.inert import markdown_text
    from conformance.report import render_markdown, verdict_text

    try:
        report = json.loads(report_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return (
            f"## secref-conformance: harness-error (exit code {code})\n\n"
            "No report was written; the step's log says why.\n"
        )
    # The line names the run's narrowing (a -k expression, say): inert, as in the report below.
    line = markdown_text(verdict_text(report))
    heading = f"## secref-conformance: {line} (exit code {code})\n\n"
    body = render_markdown(report)
    data = body.encode("utf-8")
    if len(data) > MAX_BYTES:
        body = data[:MAX_BYTES].decode("utf-8", "ignore")
        body += "\n\n(report cut here; the whole report is in the JSON and Markdown files)\n"
    return heading + body


def append(path: Path, report_json: Path, code: int) -> None:
    """Append the run's summary to ``path``, creating it if needed."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(render(report_json, code))
