"""The check counts the documentation gives stay those of the suite.

A page that says what "the whole suite" costs names how many checks it ran; when checks are
added that figure goes stale unnoticed. Every such count in ``docs/`` (``the whole suite (N
checks)``, ``for N checks``) must be within :data:`TOLERANCE` of the count a whole run collects
today, and the counts of :data:`REQUIRED` must be there at all, so that a figure cannot pass by
being deleted. The reader is also run on a stale page and on a page without the figure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parent.parent

#: How far a documented count may drift from the collected one before it is stale.
TOLERANCE: Final = 0.10

#: How a page states the size of a whole run.
COUNT: Final = re.compile(r"(?:whole suite \(|\bfor )(\d{1,3}(?:,\d{3})*|\d+) checks\b")

#: Pages that must state the size of the run their figures were measured on.
REQUIRED: Final = ("driver-protocol.md",)


def counts(text: str) -> list[int]:
    """Return every whole-run check count ``text`` states."""
    return [int(found.replace(",", "")) for found in COUNT.findall(text)]


def stale(pages: dict[str, str], collected: int) -> list[str]:
    """Return what is wrong with the counts ``pages`` (name to text) give."""
    found = []
    for name in REQUIRED:
        if not counts(pages.get(name, "")):
            found.append(f"{name} no longer states how many checks its figures ran")
    for name, text in sorted(pages.items()):
        for count in counts(text):
            if abs(count - collected) > TOLERANCE * collected:
                found.append(f"{name} says {count:,} checks; a whole run collects {collected:,}")
    return found


@pytest.fixture(scope="module")
def collected() -> int:
    from conformance.listing import check_rows

    return len(check_rows())


@pytest.mark.slow
def test_documented_check_counts_match_the_collection(collected: int) -> None:
    pages = {page.name: page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md")}
    assert stale(pages, collected) == []


def test_a_stale_or_missing_count_is_caught() -> None:
    fresh = "Medians of three runs of the whole suite (2,040 checks), and of five rounds"
    assert counts(fresh) == [2040]
    assert stale({"driver-protocol.md": fresh}, 2040) == []
    assert stale({"driver-protocol.md": fresh}, 2300) == [
        "driver-protocol.md says 2,040 checks; a whole run collects 2,300"
    ]
    assert stale({"driver-protocol.md": "Medians of three runs."}, 2040) == [
        "driver-protocol.md no longer states how many checks its figures ran"
    ]
    assert stale({"conformance.md": "took 27.4 s for 631 checks"}, 2040) != []
