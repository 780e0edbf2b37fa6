"""The masker report: one row per requirement for a masker, the verdict, and the matrix.

This module owns the masker requirement catalog (``conformance/masker/requirements.yaml``, apart
from the host catalog), folding a run's outcomes into one row per requirement under the rules of
decisions S1 (a requirement whose checks could not see anything is unchecked, never passed; one
that cannot arise on the masker's paths is not applicable), the verdict and exit code, and the
JSON and Markdown reports of one masker or of a matrix of maskers (decisions R10.5). Text from a
masker (its name, version and error text) is escaped for each medium. It must never write a
value: outcomes hold names and form letters only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

import jsonschema
import yaml

from conformance.masker.checks import Outcome, Status
from conformance.masker.protocol import MaskerInfo

#: Verdicts and their exit codes (decisions S1.2).
CONFORMANT: Final = "conformant"
INCOMPLETE: Final = "incomplete"
NON_CONFORMANT: Final = "non-conformant"
HARNESS_ERROR: Final = "harness error"
EXIT_CODES: Final = {CONFORMANT: 0, INCOMPLETE: 1, NON_CONFORMANT: 1, HARNESS_ERROR: 2}

#: How a row's status is written in the matrix.
_CELLS: Final = {
    Status.PASS: "pass",
    Status.FAIL: "FAIL",
    Status.UNCHECKED: "unchecked",
    Status.NOT_APPLICABLE: "n/a",
    Status.REPORTED: "reported",
}


@dataclass(frozen=True, slots=True)
class MaskRequirement:
    """One masker requirement.

    Attributes:
        id: ``MASK-NNN``, never renumbered.
        level: ``MUST``, ``SHOULD`` or ``EITHER``.
        section: The ruling it comes from.
        statement: The rule, in this project's words.
    """

    id: str
    level: str
    section: str
    statement: str


@cache
def load_requirements() -> tuple[MaskRequirement, ...]:
    """Return the masker catalog, checked against its schema.

    Raises:
        jsonschema.ValidationError: The catalog does not match its schema.
        ValueError: An ID repeats.
    """
    root = resources.files("conformance")
    document = yaml.safe_load(root.joinpath("masker", "requirements.yaml").read_text("utf-8"))
    schema = json.loads(
        root.joinpath("schemas", "masker", "requirements.schema.json").read_text("utf-8")
    )
    jsonschema.validate(document, schema)
    found = tuple(
        MaskRequirement(item["id"], item["level"], item["section"], item["statement"])
        for item in document["requirements"]
    )
    ids = [item.id for item in found]
    if len(ids) != len(set(ids)):
        raise ValueError("a masker requirement ID repeats")
    return found


@dataclass(frozen=True, slots=True)
class Row:
    """What a run concluded about one requirement.

    Attributes:
        requirement: The requirement.
        status: Its status over every path.
        paths: The paths it was checked on.
        forms: The forms that survived, over every path.
        details: The outcomes' sentences, value-free.
        behaviour: For EITHER, the behaviour seen.
    """

    requirement: MaskRequirement
    status: Status
    paths: tuple[str, ...]
    forms: tuple[str, ...]
    details: tuple[str, ...]
    behaviour: str


def fold(outcomes: Sequence[Outcome]) -> list[Row]:
    """Fold outcomes into one row per catalog requirement.

    A failure on any path fails the row; otherwise a pass on some path passes it; a row with
    only not-applicable outcomes is not applicable; anything else, no outcome included, is
    unchecked.

    Args:
        outcomes: Every outcome of a run.

    Returns:
        The rows, in catalog order.
    """
    rows = []
    for requirement in load_requirements():
        mine = [item for item in outcomes if item.requirement == requirement.id]
        statuses = {item.status for item in mine}
        if Status.FAIL in statuses:
            status = Status.FAIL
        elif Status.REPORTED in statuses:
            status = Status.REPORTED
        elif Status.PASS in statuses:
            status = Status.PASS
        elif statuses == {Status.NOT_APPLICABLE}:
            status = Status.NOT_APPLICABLE
        else:
            status = Status.UNCHECKED
        shown = [item for item in mine if item.status == status] or mine
        behaviours = sorted({item.behaviour for item in mine if item.behaviour})
        rows.append(
            Row(
                requirement,
                status,
                tuple(
                    sorted(
                        {
                            item.path
                            for item in mine
                            if item.path
                            and item.status in (Status.PASS, Status.FAIL, Status.REPORTED)
                        }
                    )
                ),
                tuple(sorted({form for item in mine for form in item.forms})),
                tuple(
                    dict.fromkeys(
                        (f"[{item.path}] " if item.path else "") + item.detail for item in shown
                    )
                ),
                # Masking more on any path is what gets reported.
                "masks-shorter" if "masks-shorter" in behaviours else ", ".join(behaviours),
            )
        )
    return rows


def verdict(rows: Sequence[Row]) -> str:
    """Return the verdict of decisions S1.2 for a masker's rows."""
    musts = [row for row in rows if row.requirement.level == "MUST"]
    if any(row.status is Status.FAIL for row in musts):
        return NON_CONFORMANT
    if any(row.status is Status.UNCHECKED for row in musts):
        return INCOMPLETE
    return CONFORMANT


def to_json(info: MaskerInfo, rows: Sequence[Row]) -> dict[str, Any]:
    """Return one masker's report as JSON-ready data."""
    return {
        "masker": {"name": info.name, "version": info.version, "shape": info.shape},
        "capabilities": sorted(info.capabilities),
        "verdict": verdict(rows),
        "requirements": [
            {
                "id": row.requirement.id,
                "level": row.requirement.level,
                "status": row.status.value,
                "paths": list(row.paths),
                "formsLeaked": list(row.forms),
                "behaviour": row.behaviour,
                "details": list(row.details),
            }
            for row in rows
        ],
    }


def escape_md(text: str) -> str:
    """Return ``text`` inert in a Markdown table cell: markup, pipes and controls escaped."""
    out = []
    for char in text:
        if char in "\\`*_{}[]()<>#+!|~&":
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            out.append(f"\\x{ord(char):02x}")
        elif 0xD800 <= ord(char) < 0xE000:
            # A lone surrogate (a JSON escape an adapter may send) has no UTF-8 form.
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _cell(row: Mapping[str, Any]) -> str:
    status = row["status"]
    if status == Status.FAIL.value:
        forms = row["formsLeaked"]
        return "FAIL" + (f" ({', '.join(escape_md(form) for form in forms)})" if forms else "")
    if status == Status.REPORTED.value:
        leaked = ", ".join(escape_md(form) for form in row["formsLeaked"])
        return escape_md(row["behaviour"]) + (f" (leaked: {leaked})" if leaked else "")
    return {item.value: cell for item, cell in _CELLS.items()}[status]


def matrix_markdown(reports: Sequence[Mapping[str, Any]]) -> str:
    """Return the matrix of maskers by requirement as a Markdown page section.

    Args:
        reports: One :func:`to_json` report per masker.

    Returns:
        A table with a row per masker and a column per requirement, then each masker's
        details, each cell naming the forms that survived.
    """
    requirements = load_requirements()
    header = "| masker | version | verdict | " + " | ".join(r.id for r in requirements) + " |"
    lines = [
        header,
        "|" + "---|" * (3 + len(requirements)),
    ]
    for report in reports:
        cells = {row["id"]: _cell(row) for row in report["requirements"]}
        lines.append(
            f"| {escape_md(report['masker']['name'])} | {escape_md(report['masker']['version'])}"
            f" | {report['verdict']} | "
            + " | ".join(cells.get(r.id, "") for r in requirements)
            + " |"
        )
    lines += ["", "| ID | level | rule |", "|---|---|---|"]
    lines += [f"| {r.id} | {r.level} | {escape_md(r.statement)} |" for r in requirements]
    for report in reports:
        masker = report["masker"]
        lines += [
            "",
            f"### {escape_md(masker['name'])} {escape_md(masker['version'])}",
            "",
            f"Shape: {escape_md(masker['shape'])}; paths announced: "
            f"{escape_md(', '.join(report['capabilities']) or 'none')}; verdict: "
            f"{report['verdict']}.",
            "",
        ]
        for row in report["requirements"]:
            if row["status"] in (Status.FAIL.value, Status.UNCHECKED.value, Status.REPORTED.value):
                detail = "; ".join(escape_md(item) for item in row["details"][:6])
                lines.append(f"- {row['id']} {row['status']}: {detail}")
    return "\n".join(lines) + "\n"
