"""The framework checks catch each broken step of a placeholder host (decisions R11.2).

The stand-in framework of ``fake_framework.py`` runs through the adapter base in every mode:
sound, it fails no requirement and its verdict is ``incomplete``, never ``conformant``; each
broken mode fails the requirement its step belongs to. browser-use is checked the same way with
the interpreter running the tests when browser-use is installed in it; otherwise it, askui and
the OpenHands SDK are checked with the interpreter of their own venv, named by
``SECREF_BROWSER_USE_PYTHON``, ``SECREF_ASKUI_PYTHON`` and ``SECREF_OPENHANDS_PYTHON`` (``tox
-e frameworks`` builds them), every path an adapter has (its own tools, its MCP tools) with its
mutant, and Playwright MCP from the npm
prefix named by ``SECREF_PLAYWRIGHT_MCP``, with node and Debian's chromium. The default test env
has none of them (each Python install took minutes here, and a Playwright MCP run takes more
than a minute), so those tests are skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Final

import pytest

from conformance.frameworks.checks import Reading, too_steep
from conformance.frameworks.envs import CHROMIUM
from conformance.frameworks.matrix import measure
from tests.frameworks.support import playwright_prefix

FAKE: Final = Path(__file__).parent / "fake_framework.py"

#: What askui 0.48.0 gives on both of its paths (docs/frameworks.md, "The current matrix"),
#: but for INV7, a ratio of times that a busy machine can move.
ASKUI_ROW: Final = {
    "INV1-ECHO": "fail",
    "INV1-THROW": "fail",
    "INV1-SHA256": "pass",
    "SCRUB-003": "fail",
    "SCRUB-004": "fail",
    "SCRUB-005": "fail",
    "SCRUB-006": "fail",
    "LOG-001": "fail",
    "LEDG-004": "fail",
    "INV2": "fail",
    "INV5": "pass",
    "GRAM-014": "pass",
    "INV6": "pass",
    "SUBST-005": "pass",
}

#: Each broken mode, and the requirement whose check must catch it.
BROKEN: Final = {
    "mask-a-only": "SCRUB-004",
    "partial": "INV2",
    "names": "INV5",
    "keys": "GRAM-014",
    "log": "LOG-001",
    "defaults": "INV7",
}


def _failed(command: str) -> tuple[str, set[str]]:
    entry = measure(command, 30.0)
    rows = entry["rows"]
    return entry["verdict"], {column for column, row in rows.items() if row["status"] == "fail"}


def test_sound_placeholder_host_fails_nothing_and_is_never_conformant() -> None:
    verdict, failed = _failed(f"{sys.executable} {FAKE}")
    assert failed == set()
    assert verdict == "incomplete"


@pytest.mark.parametrize("mode", list(BROKEN))
def test_each_broken_step_is_caught(mode: str) -> None:
    verdict, failed = _failed(f"{sys.executable} {FAKE} {mode}")
    assert BROKEN[mode] in failed
    assert verdict == "non-conformant"


def test_a_surface_never_announced_is_unchecked_never_passed() -> None:
    """Without ``observe.log`` the log is not searched and LOG-001 is unchecked; without
    ``observe.receipts`` every requirement judged on what the tool received is unchecked."""
    entry = measure(f"{sys.executable} {FAKE} unannounced", 30.0)
    statuses = {column: row["status"] for column, row in entry["rows"].items()}
    unseen = {"LOG-001", "INV2", "INV5", "GRAM-014", "INV6"}
    assert {column for column, status in statuses.items() if status == "unchecked"} >= unseen
    assert "fail" not in statuses.values()
    assert entry["verdict"] == "incomplete"


@pytest.mark.parametrize("path", ["", " --mcp"])
def test_browser_use_mutant_without_masking_is_caught(path: str) -> None:
    python = _browser_use_python()
    command = f"{python} -m conformance.frameworks.browser_use{path}"
    real = measure(command, 60.0)
    mutant = measure(f"{command} --mutant", 60.0)
    # The release masks the value itself in the result and the failure text; the mutant not.
    assert not {"result", "failure text"} & _leaked(real, "SCRUB-003")
    assert {"result", "failure text"} <= _leaked(mutant, "SCRUB-003")
    assert real["rows"]["INV2"]["status"] == "fail"


def _browser_use_python() -> str:
    """The test interpreter when browser-use is installed in it, else its own venv's."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"browser-use's agent drives Debian's chromium, and there is none at {CHROMIUM}"
        )
    if importlib.util.find_spec("browser_use") is not None:
        return sys.executable
    return _venv_python("SECREF_BROWSER_USE_PYTHON")


def _venv_python(variable: str) -> str:
    python = os.environ.get(variable, "")
    if not python or not Path(python).exists():
        pytest.skip(f"{variable} names no interpreter; tox -e frameworks builds its venv")
    return python


def _leaked(entry: dict[str, object], column: str) -> set[str]:
    rows = entry["rows"]
    assert isinstance(rows, dict)
    return set(rows[column]["surfaces"])


@pytest.mark.parametrize("path", ["", " --mcp"])
def test_askui_mutant_without_redaction_is_caught(path: str) -> None:
    python = _venv_python("SECREF_ASKUI_PYTHON")
    real = measure(f"{python} -m conformance.frameworks.askui{path}", 60.0)
    mutant = measure(f"{python} -m conformance.frameworks.askui{path} --mutant", 60.0)
    # The release masks the value itself in the result, the failure text and its report; the
    # mutant not.
    assert not {"result", "failure text", "persisted"} & _leaked(real, "SCRUB-003")
    assert {"result", "failure text", "persisted"} <= _leaked(mutant, "SCRUB-003")
    # Every other cell is the pinned release's, as docs/frameworks.md gives it: a cell that
    # moves means the adapter or the framework (a dependency it floats on) has changed.
    statuses = {column: row["status"] for column, row in real["rows"].items()}
    assert real["verdict"] == "non-conformant"
    assert {c: statuses[c] for c in ASKUI_ROW} == ASKUI_ROW


def test_openhands_mutant_without_masking_is_caught() -> None:
    python = _venv_python("SECREF_OPENHANDS_PYTHON")
    real = measure(f"{python} -m conformance.frameworks.openhands", 60.0)
    mutant = measure(f"{python} -m conformance.frameworks.openhands --mutant", 60.0)
    assert "result" not in _leaked(real, "SCRUB-003")
    assert "result" in _leaked(mutant, "SCRUB-003")
    assert real["verdict"] == mutant["verdict"] == "non-conformant"


def test_playwright_mcp_mutant_without_masking_is_caught() -> None:
    prefix = playwright_prefix()
    command = f"{sys.executable} -m conformance.frameworks.playwright_mcp --prefix {prefix}"
    real = measure(command, 60.0)
    mutant = measure(f"{command} --mutant", 60.0)
    # The release masks the value itself wherever it is written whole; the mutant not.
    assert not {"result", "log", "persisted"} & _leaked(real, "SCRUB-003")
    assert {"result", "log", "persisted"} <= _leaked(mutant, "SCRUB-003")
    assert real["verdict"] == mutant["verdict"] == "non-conformant"


def test_growth_is_judged_on_processor_time_only_when_the_tree_did_the_work() -> None:
    """A busy machine stretches wall readings; work done outside the tree leaves no processor
    time: the clock that judges follows the largest call's share (``CPU_SHARE``)."""
    base = Reading(0.01, 0.01)
    small = Reading(0.30, 0.10).less(base)
    tree_worked = Reading(1.01, 6.41).less(base)
    elsewhere = Reading(6.41, 0.02).less(base)
    assert small.judged(tree_worked) == pytest.approx(0.09)
    assert tree_worked.judged(tree_worked) == pytest.approx(6.40)
    assert small.judged(elsewhere) == pytest.approx(0.29)
    unknown = Reading(0.30, None)
    assert unknown.judged(unknown) == 0.30
    assert not unknown.on_cpu()
    # Few clock ticks behind a long wall reading: not yet measurable, the text is doubled.
    assert not Reading(0.20, 0.02).measurable()
    assert Reading(0.20, 0.06).measurable()
    assert Reading(0.20, 0.001).measurable()  # the work is elsewhere: the wall clock times it
    assert Reading(0.30, 0.10).least(Reading(0.20, 0.12)) == Reading(0.20, 0.10)


def test_a_quadratic_scan_is_judged_when_the_small_text_reads_under_the_floor_again() -> None:
    """The small text is timed again after the large one, and on a busy machine that least
    reading can fall under the floor its first readings had reached (0.05 s): the quadratic
    scan of ``fake_framework.py defaults`` then went unjudged, the way its INV7 passed once in
    CI. The floor
    now stands in for such a reading; it only lowers the ratio, so linear work still passes."""
    first_small, again = Reading(0.09, 0.05), Reading(0.06, 0.03)
    quadratic, linear = Reading(8.0, 3.2), Reading(0.9, 0.4)
    small = first_small.least(again)
    assert first_small.measurable()
    assert small.judged(quadratic) < 0.05
    detail = too_steep(small, quadratic, 8, measured=True)
    assert detail is not None
    assert "64 times as long (0.05 s, then 3.20 s, processor time)" in detail
    assert too_steep(first_small, linear, 8, measured=True) is None
    assert too_steep(small, linear, 8, measured=True) is None
    # A small text never measured (its size capped) is still not judged, but a call past the
    # slowest bound always is.
    assert too_steep(Reading(0.02, 0.01), Reading(0.9, 0.5), 8, measured=False) is None
    assert too_steep(Reading(0.02, 0.01), Reading(21.0, 20.5), 8, measured=False) is not None
