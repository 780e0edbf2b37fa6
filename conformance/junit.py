"""The JUnit XML file a CI dashboard reads, brought into line with the verdict (decisions S1.11).

This module owns what the suite changes in the JUnit file pytest's own ``--junitxml`` writer
wrote: a check whose failure the host's expectations file baselines becomes a ``<skipped>``
with its reason (a flaky check passed on a rerun and stays the pass pytest wrote), a check that
errored (the host broke under it, or the harness did) an ``<error>`` instead of a
``<failure>``, a check judged failed or skipped after pytest's report was written gets the
result it ended with, a check of the suite's own that no pytest item ran (the late-output
barrier) gets a test case of its own, the suite is named ``secref-conformance``, and one test case,
``secref-conformance::verdict``, passes when the run's exit code is 0 and fails otherwise with
the verdict line as its message; the suite's counts are then recounted from the test cases.

The file it leaves is valid against the JUnit schema of pytest's ``xunit2`` family, whatever
family pytest wrote: a test case's properties, which that schema does not allow, move into its
``<system-out>`` as ``secref NAME: VALUE`` lines, and attributes the schema does not know (the
``file`` and ``line`` of the ``xunit1`` family) are dropped.

It works on the written file, after pytest's writer has finished with it, rather than on the
writer's private per-test objects: the file's shape is the format's contract, the objects are
pytest's internals. It never adds host text beyond what pytest wrote (the verdict line is the
suite's own), and it never touches a file it cannot parse.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from conformance.inert import escape_controls
from conformance.outcomes import Outcome

#: The test suite's name, and the class name of the verdict's test case.
SUITE_NAME: Final = "secref-conformance"

#: The name of the test case that carries the verdict.
VERDICT_CASE: Final = "verdict"

#: Check outcomes whose failure the expectations file accounted for: a skip with its reason. A
#: flaky check is not one of them: it holds only because a rerun passed (decisions S1.6).
FORGIVEN: Final = frozenset({Outcome.BASELINED.value})

#: Check outcomes that mean nothing was learned: an ``<error>``, never a ``<failure>``.
ERRORED: Final = frozenset({Outcome.ERROR.value})

#: Check outcomes that are a failure: a ``<failure>`` when pytest's writer wrote none.
FAILED: Final = frozenset({Outcome.FAIL.value, Outcome.UNEXPECTED_PASS.value})

#: Check outcomes that are a skip: a ``<skipped>`` when pytest's writer wrote none.
SKIPPED: Final = frozenset({Outcome.SKIPPED.value})

#: The elements a test case's result can be.
_RESULTS: Final = ("failure", "error", "skipped")

#: The attributes the ``xunit2`` schema allows on a test case, and on the suite.
_CASE_ATTRIBUTES: Final = frozenset({"name", "time", "classname", "group"})
_SUITE_ATTRIBUTES: Final = frozenset(
    {
        "name",
        "tests",
        "failures",
        "errors",
        "group",
        "time",
        "skipped",
        "timestamp",
        "hostname",
        "id",
        "package",
        "file",
        "log",
        "url",
        "version",
    }
)
_ROOT_ATTRIBUTES: Final = frozenset({"name", "time", "tests", "failures", "errors"})

#: The children the ``xunit2`` schema allows in a test case.
_CASE_CHILDREN: Final = frozenset(
    {
        *_RESULTS,
        "rerunFailure",
        "rerunError",
        "flakyFailure",
        "flakyError",
        "system-out",
        "system-err",
    }
)


def case_key(nodeid: str, prefix: str | None = None) -> tuple[str, str]:
    """Return the (classname, name) pytest's writer gives the test case of ``nodeid``.

    Args:
        nodeid: A pytest node id.
        prefix: The ``--junitprefix`` value, if any.

    Returns:
        The two attributes that identify the test case in the file.
    """
    try:
        from _pytest.junitxml import mangle_test_address

        names = list(mangle_test_address(nodeid))
    except ImportError:  # pytest moved it: the same rule, as pytest 8 and 9 apply it
        path, *rest = nodeid.split("::")
        names = [re.sub(r"\.py$", "", path.replace("/", ".")), *rest]
    classnames = names[:-1]
    if prefix:
        classnames.insert(0, prefix)
    return ".".join(classnames), names[-1]


def _as(case: ElementTree.Element, tag: str, message: str, text: str | None) -> None:
    """Replace the failure or error of ``case`` by one ``tag`` element."""
    for child in [child for child in case if child.tag in _RESULTS]:
        case.remove(child)
    element = ElementTree.Element(tag, message=message)
    if tag == "skipped":
        element.set("type", "pytest.skip")
    element.text = text
    # A result goes before captured output, as pytest writes it.
    index = next(
        (at for at, child in enumerate(case) if child.tag in ("system-out", "system-err")),
        len(case),
    )
    case.insert(index, element)


def _prune(element: ElementTree.Element, allowed: frozenset[str]) -> None:
    """Drop the attributes of ``element`` the schema does not allow there."""
    for name in [name for name in element.attrib if name not in allowed]:
        del element.attrib[name]


def _to_schema(case: ElementTree.Element) -> None:
    """Make one test case valid for the ``xunit2`` schema, keeping what its properties said.

    Its ``<properties>`` (the requirement IDs, the vector, the outcome the suite recorded)
    become ``secref NAME: VALUE`` lines at the head of its ``<system-out>``; any other child
    the schema does not know is dropped.
    """
    _prune(case, _CASE_ATTRIBUTES)
    lines = [
        f"secref {item.get('name', '')}: {item.get('value', '')}"
        for properties in case.findall("properties")
        for item in properties.iter("property")
    ]
    for child in [child for child in case if child.tag not in _CASE_CHILDREN]:
        case.remove(child)
    if not lines:
        return
    out = case.find("system-out")
    if out is None:
        out = ElementTree.SubElement(case, "system-out")
    out.text = "\n".join(lines) + ("\n" + out.text if out.text else "")


def _result(case: ElementTree.Element) -> str | None:
    """Return the tag of the result pytest's writer gave ``case``, or ``None`` for a pass."""
    return next((child.tag for child in case if child.tag in _RESULTS), None)


def _recount(suite: ElementTree.Element) -> None:
    cases = list(suite.iter("testcase"))
    tags = [{child.tag for child in case} for case in cases]
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum("failure" in each for each in tags)))
    suite.set("errors", str(sum("error" in each and "failure" not in each for each in tags)))
    suite.set(
        "skipped",
        str(sum("skipped" in each and not each & {"failure", "error"} for each in tags)),
    )


def rewrite(
    path: str | Path,
    checks: Iterable[Mapping[str, Any]],
    verdict_line: str,
    exit_code: int,
    prefix: str | None = None,
) -> bool:
    """Bring the JUnit file at ``path`` into line with the run's verdict.

    Args:
        path: The file pytest's writer wrote.
        checks: The JSON report's ``checks`` entries (``id``, ``outcome``, ``detail``).
        verdict_line: The verdict as a sentence (:func:`conformance.report.verdict_text`).
        exit_code: The run's exit code: the verdict test case fails unless it is 0.
        prefix: The ``--junitprefix`` value, if any.

    Returns:
        Whether the file was rewritten (``False`` when it is missing or not JUnit XML).
    """
    target = Path(path)
    try:
        # The file this run's own pytest just wrote: trusted input.
        tree = ElementTree.parse(target)  # noqa: S314
    except (OSError, ElementTree.ParseError):
        return False
    root = tree.getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return False
    cases = {
        (case.get("classname", ""), case.get("name", "")): case for case in suite.iter("testcase")
    }
    for check in checks:
        case = cases.get(case_key(str(check["id"]), prefix))
        if case is None and str(check["id"]).startswith(f"{SUITE_NAME}::"):
            # A check of the suite's own that no pytest item ran (the late-output barrier,
            # decisions S1.9): a test case of its own, so the file counts every check.
            case = ElementTree.SubElement(
                suite,
                "testcase",
                classname=SUITE_NAME,
                name=str(check["id"]).split("::", 1)[1],
                time=f"{float(check.get('durationS') or 0.0):.3f}",
            )
        if case is None:
            continue
        detail = escape_controls(str(check.get("detail") or check["outcome"]))
        outcome, written = check["outcome"], _result(case)
        if outcome in FORGIVEN:
            _as(case, "skipped", detail, f"{outcome}: {detail}")
        elif outcome in ERRORED:
            found = case.find("failure")
            if found is not None or written is None:
                _as(case, "error", detail, found.text if found is not None else None)
        elif outcome in FAILED and written not in ("failure", "error"):
            # Judged failed after pytest's report was written (a late search, say).
            _as(case, "failure", detail, f"{outcome}: {detail}")
        elif outcome in SKIPPED and written is None:
            _as(case, "skipped", detail, f"{outcome}: {detail}")
    for case in suite.iter("testcase"):
        _to_schema(case)
    verdict = ElementTree.SubElement(
        suite, "testcase", classname=SUITE_NAME, name=VERDICT_CASE, time="0.000"
    )
    line = escape_controls(verdict_line)
    if exit_code != 0:
        failure = ElementTree.SubElement(verdict, "failure", message=line)
        failure.text = f"exit code {exit_code}: {line}"
    suite.set("name", SUITE_NAME)
    _prune(suite, _SUITE_ATTRIBUTES)
    if root is not suite:
        root.set("name", SUITE_NAME)
        _prune(root, _ROOT_ATTRIBUTES)
    _recount(suite)
    tree.write(target, encoding="utf-8", xml_declaration=True)
    return True


class JunitVerdict:
    """Rewrites the JUnit file once pytest's writer has written it (:func:`rewrite`).

    Registered by :mod:`conformance.plugin` when ``--junitxml`` is given, outside an xdist
    worker (a parallel run's controller writes the file).

    Args:
        config: The pytest config.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @staticmethod
    def exit_code(report: Mapping[str, Any], status: int) -> int:
        """Return the exit code the console script gives a run: the verdict's, and 2 when the
        verdict's is 0 but pytest's own status is not (as :func:`conformance.cli.run` does).

        Args:
            report: The JSON report.
            status: pytest's exit status for the session.
        """
        code = int(report["exitCode"])
        return 2 if code == 0 and status != 0 else code

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """After every other ``pytest_sessionfinish`` (pytest's writer's too), rewrite the file."""
        from conformance import _hooks
        from conformance.report import verdict_text

        yield
        state = self.config.stash.get(_hooks.STATE_KEY, None)
        path = self.config.getoption("xmlpath", None)
        if state is None or state.report is None or not path:
            return
        report = state.report
        rewrite(
            path,
            report["checks"],
            verdict_text(report),
            self.exit_code(report, int(session.exitstatus)),
            self.config.getoption("junitprefix", None),
        )
