"""``secref-conformance list``: what the suite holds, without reading its code.

This module owns the three listings a host author asks for before a run: ``list requirements``
prints every requirement of the catalog with its level and title (the start of its statement
where it has no title); ``list checks`` prints the node id of every check the suite collects,
with the requirement IDs it cites; ``list mutants`` prints every mutant host of the self-test's
catalog with the requirement it breaks and what is broken. Each row is one line of
tab-separated fields on standard output, so that ``cut`` and ``grep`` take it apart; the count
goes to standard error. It runs no check and prints no value.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from typing import Final

import pytest

from conformance.arguments import OneLineParser, add_version, base_arguments

#: How much of a statement stands in for a missing title: the catalog's bound on titles.
TITLE_WIDTH: Final = 70

#: What can be listed.
WHAT: Final = ("requirements", "checks", "mutants")


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog="secref-conformance list",
        description="Print what the suite holds, one tab-separated line each: the requirements "
        "(ID, level, title), the checks (node id, cited requirement IDs) or the self-test's "
        "mutant hosts (name, requirement broken, how it is reached, what is broken). The count "
        "goes to standard error.",
    )
    add_version(parser)
    parser.add_argument("what", choices=WHAT, help="what to list: " + ", ".join(WHAT))
    return parser


def short(text: str, width: int = TITLE_WIDTH) -> str:
    """Return ``text`` on one line, cut to ``width`` characters with an ellipsis if longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def requirement_rows() -> list[tuple[str, ...]]:
    """Return (ID, level, title) for every requirement of the catalog, in catalog order."""
    from conformance.catalog import load_catalog

    return [
        (requirement.id, requirement.level, requirement.title or short(requirement.statement))
        for requirement in load_catalog().requirements
    ]


class _Collector:
    """Records the node id and cited requirements of every conformance check collected."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []
        self.failed: list[str] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.failed.append(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from conformance import _hooks

        self.rows = [
            (item.nodeid, ",".join(_hooks.cited(item)))
            for item in items
            if _hooks.is_conformance_check(item)
        ]


def check_rows() -> list[tuple[str, ...]]:
    """Return (node id, cited IDs) for every check a whole run collects, in collection order.

    Raises:
        RuntimeError: The collection failed (a check module that does not import, say).
    """
    collector = _Collector()
    # The plugin judges a run that ran no check a harness error, so pytest's exit status says
    # nothing here; what was collected, and what failed to be, does.
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main([*base_arguments(), "--collect-only"], [collector])
    if collector.failed or not collector.rows:
        failed = ", ".join(collector.failed) or "nothing was collected"
        raise RuntimeError(f"collecting the checks failed: {failed}")
    return collector.rows


def mutant_rows() -> list[tuple[str, ...]]:
    """Return (name, requirement, via, description) for every mutant, in catalog order."""
    from conformance.selftest.catalog import MUTANTS

    return [(mutant.name, mutant.requirement, mutant.via, mutant.description) for mutant in MUTANTS]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the listing ``argv`` asks for; return 0, or 2 when the checks cannot be collected."""
    what = _parser().parse_args(argv).what
    try:
        rows = {
            "requirements": requirement_rows,
            "checks": check_rows,
            "mutants": mutant_rows,
        }[what]()
    except RuntimeError as error:
        print(f"secref-conformance list: {error}", file=sys.stderr)
        return 2
    for row in rows:
        print("\t".join(row))
    print(f"{len(rows)} {what}", file=sys.stderr)
    return 0
