"""A failed requirement is drawn as pytest's short style draws it, at a fraction of the cost.

:mod:`conformance._failures` draws requirement failures from the line cache instead of pytest's
per-failure parse of the source, and drops the passed setup and teardown reports pytest's
failure summary would otherwise search once per failure. Neither may change a character of what
a run prints. These check the suite's own output rather than a host, so they cite no
requirement.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance import _hooks
from conformance._failures import drop_silent_phase_reports, short_repr
from conformance.outcomes import RequirementError, fail, require
from tests.conformance.suite_runs import console, run_suite

BROKEN_HOST = Path(__file__).parent / "broken_hosts" / "broken_host.py"


def _checked_helper(value: int) -> None:
    require(value == 2, "APPR-010", f"a helper saw {value}")


def _a_check() -> None:
    _checked_helper(1)


def _caught(action: Any) -> pytest.ExceptionInfo[BaseException]:
    with pytest.raises((RequirementError, KeyError)) as caught:
        action()
    return caught


def _item(tmp_path: Path) -> Any:
    """A stand-in for a check item: pytest's filter keeps every frame; paths are absolute."""
    return SimpleNamespace(
        _traceback_filter=lambda excinfo: excinfo.traceback,
        config=SimpleNamespace(invocation_params=SimpleNamespace(dir=tmp_path)),
    )


def test_a_requirement_failure_is_drawn_as_pytest_draws_it(tmp_path: Path) -> None:
    caught = _caught(_a_check)
    drawn = short_repr(_item(tmp_path), caught)
    assert drawn is not None
    by_pytest = caught.getrepr(style="short", abspath=True, tbfilter=lambda e: e.traceback)
    assert str(drawn) == str(by_pytest)
    assert str(drawn.reprcrash) == str(by_pytest.reprcrash)
    assert "in _checked_helper" in str(drawn)
    assert "E   conformance.outcomes.RequirementError: [APPR-010] a helper saw 1" in str(drawn)


def _missing() -> None:
    empty: dict[str, int] = {}
    empty["missing"]


def _chained() -> None:
    try:
        _missing()
    except KeyError:
        fail("APPR-010", "raised while handling another error")


def test_other_failures_are_left_to_pytest(tmp_path: Path) -> None:
    """A chained failure, a bug in a check and an item pytest filters otherwise keep pytest's
    own drawing (``None``)."""
    assert short_repr(_item(tmp_path), _caught(_chained)) is None
    assert short_repr(_item(tmp_path), _caught(_missing)) is None
    unfiltered: Any = SimpleNamespace(config=_item(tmp_path).config)
    assert short_repr(unfiltered, _caught(_a_check)) is None
    assert isinstance(_caught(_chained).value, RequirementError)


def _phase(when: str, sections: list[tuple[str, str]]) -> Any:
    return SimpleNamespace(when=when, sections=sections)


def test_only_phase_reports_with_teardown_output_are_kept() -> None:
    kept = _phase("teardown", [("Captured stdout teardown", "bye")])
    phases = [
        _phase("setup", []),
        kept,
        _phase("teardown", []),
        _phase("setup", [("Captured stdout setup", "hi")]),
    ]
    reporter = SimpleNamespace(stats={"": phases, "failed": ["x"]})
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: reporter))
    drop_silent_phase_reports(config)  # type: ignore[arg-type]
    assert reporter.stats == {"": [kept], "failed": ["x"]}
    no_terminal = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    drop_silent_phase_reports(no_terminal)  # type: ignore[arg-type]


def test_a_failing_run_prints_what_pytests_short_style_prints(tmp_path: Path) -> None:
    """The same failing run, drawn by the suite and (``--tb=short``) by pytest, prints the same
    text but for its timings."""
    host = f"{sys.executable} -m conformance.strip ALL -- {sys.executable} {BROKEN_HOST} good"
    arguments = ("--host", host, "--requirements", "APPR-010,APPR-008,SCRUB-020")
    ours, _ = console(tmp_path, *arguments)
    pytests, _ = console(tmp_path, *arguments, "--", "--tb=short")
    assert (ours.returncode, pytests.returncode) == (1, 1), ours.stdout[-2000:]

    def untimed(text: str) -> str:
        return re.sub(r"\d+(\.\d+)?\s?s\b", "<time>", text)

    assert "E   conformance.outcomes.RequirementError: [APPR-010]" in ours.stdout
    assert "FAILURES" in ours.stdout
    assert untimed(ours.stdout) == untimed(pytests.stdout)


def test_a_conformance_run_draws_its_requirement_failures_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drawing is wired into a run: every failed check of a failing run is drawn by it."""
    drawn: list[str] = []

    def counted(item: Any, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        result = short_repr(item, excinfo)
        if result is not None:
            drawn.append(item.nodeid)
        return result

    monkeypatch.setattr(_hooks, "short_repr", counted)
    host = f"{sys.executable} -m conformance.strip ALL -- {sys.executable} {BROKEN_HOST} good"
    run = run_suite(tmp_path, "--host", host, "--requirements", "APPR-010,APPR-008")
    failed = [check["id"] for check in run.report()["checks"] if check["outcome"] == "fail"]
    assert run.status == 1
    assert failed
    assert sorted(drawn) == sorted(failed)
