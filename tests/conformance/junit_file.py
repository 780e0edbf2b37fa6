"""Read a JUnit file the suite wrote as a CI dashboard would, and hold it to the run.

This module owns what the tests require of every JUnit file (decisions S1.11): it validates
against the JUnit schema of pytest's ``xunit2`` family (``data/junit-10.xsd``), it parses with
junitparser into one suite named for the project, its counts of tests, failures, errors and
skips are the run's own (from the JSON report's checks and the exit code), and its verdict test
case fails exactly when the exit code is not 0, with the verdict line as its message.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, Final

import junitparser
import xmlschema

from conformance.junit import SUITE_NAME, VERDICT_CASE
from conformance.report import verdict_text

#: The JUnit schema pytest's xunit2 family is validated against, vendored with its licence.
SCHEMA_PATH: Final = Path(__file__).parent / "data" / "junit-10.xsd"

#: Check outcomes that are each a ``<failure>``, an ``<error>``, a ``<skipped>`` in the file.
FAILED: Final = frozenset({"fail", "unexpected-pass"})
ERRORED: Final = frozenset({"error"})
SKIPPED: Final = frozenset({"skipped", "baselined"})


@cache
def schema() -> xmlschema.XMLSchema:
    """Return the vendored xunit2 schema, parsed once."""
    return xmlschema.XMLSchema(str(SCHEMA_PATH))


def schema_errors(path: Path) -> list[str]:
    """Return why the file at ``path`` breaks the schema; empty when it is valid."""
    return [f"{error.path}: {error.reason}" for error in schema().iter_errors(str(path))]


def read_suite(path: Path) -> junitparser.TestSuite:
    """Validate the file at ``path`` and return its one test suite."""
    errors = schema_errors(path)
    assert errors == [], errors[:5]
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    assert len(suites) == 1
    suite = suites[0]
    assert isinstance(suite, junitparser.TestSuite)
    assert suite.name == SUITE_NAME
    return suite


def verdict_case(suite: junitparser.TestSuite) -> junitparser.TestCase:
    """Return the verdict's test case, which every rewritten file holds once."""
    found = [case for case in suite if case.classname == SUITE_NAME and case.name == VERDICT_CASE]
    assert len(found) == 1
    return found[0]


def kinds(case: junitparser.TestCase) -> list[str]:
    """Return the kinds of result a test case holds (``Failure``, ``Error``, ``Skipped``)."""
    return sorted(type(result).__name__ for result in case.result)


def expected_counts(report: dict[str, Any], exit_code: int) -> dict[str, int]:
    """Return the counts the file must hold for a run: its checks plus the verdict case."""
    outcomes = Counter(str(check["outcome"]) for check in report["checks"])
    return {
        "tests": len(report["checks"]) + 1,
        "failures": sum(outcomes[each] for each in FAILED) + (exit_code != 0),
        "errors": sum(outcomes[each] for each in ERRORED),
        "skipped": sum(outcomes[each] for each in SKIPPED),
    }


def counts(suite: junitparser.TestSuite) -> dict[str, int]:
    """Return the suite's counts as its attributes state them."""
    return {
        "tests": int(suite.tests),
        "failures": int(suite.failures),
        "errors": int(suite.errors),
        "skipped": int(suite.skipped),
    }


def assert_agrees(path: Path, report: dict[str, Any], exit_code: int) -> junitparser.TestSuite:
    """Assert the JUnit file at ``path`` says what the run said; return its suite.

    It validates, its counts are the run's (stated and recounted from its test cases alike),
    and the verdict case fails exactly when ``exit_code`` is not 0, its message the verdict line.
    """
    suite = read_suite(path)
    expected = expected_counts(report, exit_code)
    assert counts(suite) == expected, (counts(suite), expected)
    cases = list(suite)
    recounted = {
        "tests": len(cases),
        "failures": sum("Failure" in kinds(case) for case in cases),
        "errors": sum(kinds(case) == ["Error"] for case in cases),
        "skipped": sum(kinds(case) == ["Skipped"] for case in cases),
    }
    assert recounted == expected, (recounted, expected)
    case = verdict_case(suite)
    if exit_code == 0:
        assert case.is_passed
    else:
        assert kinds(case) == ["Failure"]
        assert case.result[0].message == verdict_text(report)
    return suite
