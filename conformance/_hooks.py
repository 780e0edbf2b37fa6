"""The conformance plugin's hooks: self-check, leak sweep, outcomes and reports.

This module owns what the plugin does during a pytest run, as one object registered by
:mod:`conformance.plugin`, its state kept in ``config.stash``. The machinery stays dormant
unless conformance checks are collected (items that use the ``host`` fixture and cite
requirements) or an option of the plugin is given, so the project's own tests run untouched.
When active it: checks the catalog against the collected checks (a MUST without a check, an
unknown ID or a repeated ID stops the run as a harness error); runs the canary sweep after every
check body, failing it on a leak; turns a failure that names only SHOULD requirements into a
non-strict pass; keeps every check's outcome; removes any canary text from failure reports; and
writes the terminal summary and the JSON and Markdown reports. It must never print a value.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from conformance import _barrier, expectations, narrowing, outcomes
from conformance._failures import drop_silent_phase_reports, short_repr
from conformance.canary import (
    SURFACE_CAPABILITIES,
    Canary,
    Detector,
    Guarded,
    issued_canaries,
    issued_count,
    surfaces_judged_by,
)
from conformance.hosts import path_of
from conformance.hosts.subprocess import HostChangedError, HostError
from conformance.inert import escape_controls, escape_controls_keep_lines
from conformance.outcomes import (
    CheckRecord,
    HardeningRow,
    LeakError,
    Outcome,
    RequirementError,
    SuiteError,
)
from conformance.report import (
    EXIT_CODES,
    HARNESS_ERROR,
    CheckResult,
    RequirementInfo,
    RunData,
    build_report,
    redacted,
    summary_rows,
    write_json,
    write_markdown,
)
from conformance.report_views import requirement_properties
from conformance.scenario import RecordingHost

#: The package whose modules are the suite's own checks.
CHECKS_PACKAGE: Final = "conformance.checks"

#: The fixture every conformance check takes.
HOST_FIXTURE: Final = "host"

#: What a check's record says until its call is judged: a check the run never finished.
INTERRUPTED: Final = "the run was interrupted before this check ended"


@dataclass(slots=True)
class State:
    """The plugin's state for one session."""

    active: bool = False
    catalog: dict[str, RequirementInfo] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    results: dict[str, CheckResult] = field(default_factory=dict)
    hardening: list[HardeningRow] = field(default_factory=list)
    host_info: dict[str, Any] = field(default_factory=dict)
    selection: tuple[str, ...] = ()
    started: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    clock: float = field(default_factory=time.monotonic)
    report: dict[str, Any] | None = None
    shown: dict[str, Any] | None = None
    """The report as every view shows it: redacted of the run's canaries, once."""
    stopped: str | None = None
    """Why the run ended before its last check, if it did (decisions S1.7)."""
    first_canary: int = field(default_factory=issued_count)
    path: str = "driver"
    """The path under test, from the suite's own options (decisions S1.8): never the host's word."""
    narrowed: tuple[str, ...] = ()
    """How pytest's own options narrowed the run (decisions S1.7)."""
    planned: frozenset[str] | None = None
    """The requirement IDs the collected checks cite, once collection has finished."""
    deselected: int = 0
    """How many conformance checks something other than ``--requirements`` deselected."""
    short_failures: bool = False
    """Whether the suite chose the short traceback style (no ``-v``, no ``--tb``): requirement
    failures are then drawn by :func:`conformance._failures.short_repr`."""


STATE_KEY: Final = pytest.StashKey[State]()
RECORD_KEY: Final = pytest.StashKey[CheckRecord]()
#: The check's recording host, kept for the report of what it read.
HOST_KEY: Final = pytest.StashKey[RecordingHost]()
#: How many canaries had been minted when a check started: its own come after.
FIRST_CANARY_KEY: Final = pytest.StashKey[int]()
#: A check's detector and the canary count it was built at (:meth:`ConformanceHooks._detector`).
DETECTOR_KEY: Final = pytest.StashKey[tuple[int, Detector]]()


def cited(item: pytest.Item) -> tuple[str, ...]:
    """Return the requirement IDs ``item`` cites, in order, each once."""
    ids: list[str] = []
    for mark in item.iter_markers("req"):
        ids.extend(str(arg) for arg in mark.args)
    return tuple(dict.fromkeys(ids))


def vectors_of(item: pytest.Item) -> tuple[str, ...]:
    """Return the vector IDs ``item`` runs."""
    return tuple(
        dict.fromkeys(str(arg) for mark in item.iter_markers("vector") for arg in mark.args)
    )


def is_conformance_check(item: pytest.Item) -> bool:
    """Return whether ``item`` is a conformance check: it cites IDs and takes ``host``."""
    module = getattr(item, "module", None)
    in_package = module is not None and module.__name__.startswith(CHECKS_PACKAGE + ".")
    uses_host = HOST_FIXTURE in getattr(item, "fixturenames", ())
    return in_package or (uses_host and bool(cited(item)))


def load_catalog() -> dict[str, RequirementInfo]:
    """Return the requirement catalog by ID, for outcomes and reports.

    Raises:
        conformance.catalog.CatalogError: The catalog breaks its schema, or an ID repeats.
    """
    from conformance import catalog

    return {
        entry.id: RequirementInfo(
            id=entry.id,
            level=entry.level,
            section=entry.section,
            statement=entry.statement,
            scope=entry.scope,
            alternatives=entry.alternatives,
            reason=entry.reason,
            title=entry.title,
        )
        for entry in catalog.load_catalog().requirements
    }


def self_check(citations: Sequence[tuple[str, Sequence[str]]], complete: bool) -> list[str]:
    """Return the problems the catalog self-check finds; empty when all is well.

    Args:
        citations: (check id, requirement IDs it cites) for every collected check.
        complete: Whether every check module of the suite was collected, so that a MUST
            without a check is a real gap rather than a narrowed run.

    Returns:
        One line per problem: a catalog that does not validate (an ID repeats, say), an ID
        cited twice by one check, an unknown ID, or a MUST that no check cites.
    """
    from conformance import catalog

    problems: list[str] = []
    every: list[str] = []
    for check, ids in citations:
        if len(ids) != len(set(ids)):
            problems.append(f"{check} cites a requirement ID more than once")
        every.extend(ids)
    try:
        unknown = sorted(catalog.unknown_ids(every))
        missing = sorted(catalog.must_without_checks(every)) if complete else []
    except Exception as error:  # an invalid catalog (a repeated ID) is a harness error
        return [*problems, f"the requirement catalog is invalid: {error}"]
    if unknown:
        problems.append("checks cite unknown requirement IDs: " + ", ".join(unknown))
    if missing:
        problems.append("MUST requirements without a check: " + ", ".join(missing))
    return problems


def _package_modules() -> set[str]:
    import pkgutil

    from conformance import checks

    return {
        f"{CHECKS_PACKAGE}.{info.name}"
        for info in pkgutil.iter_modules(checks.__path__)
        if info.name.startswith("test_")
    }


class ConformanceHooks:
    """The plugin's hook implementations, one instance per pytest config."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        state = State()
        state.active = bool(
            config.getoption("secref_host", None)
            or config.getoption("secref_report_json", None)
            or config.getoption("secref_report_md", None)
            or config.getoption("secref_requirements", None)
            or config.getoption("secref_expectations", None)
        )
        self.expectations: expectations.Expectations | None = None
        source = config.getoption("secref_expectations", None)
        if source:
            try:
                self.expectations = expectations.load(source)
                expectations.check_declarations(
                    self.expectations,
                    {rid: entry.level for rid, entry in load_catalog().items()},
                )
            except expectations.ExpectationsError as error:
                raise pytest.UsageError(f"--expectations: {error}") from error
        selection = config.getoption("secref_requirements", None) or ""
        state.selection = tuple(part.strip() for part in selection.split(",") if part.strip())
        state.path = path_of(
            config.getoption("secref_host", None), config.getoption("secref_via", "driver")
        )
        try:
            state.narrowed = tuple(narrowing.describe(config, state.selection))
        except ValueError as error:
            raise pytest.UsageError(str(error)) from error
        self._selecting = False
        if state.active and short_tracebacks(config):
            # A failing check's cause is its requirement message; the suite's own frames say
            # nothing more. -v or an explicit --tb brings back pytest's long form.
            config.option.tbstyle = "short"
            state.short_failures = True
        config.stash[STATE_KEY] = state

    @property
    def state(self) -> State:
        """The session's state."""
        return self.config.stash[STATE_KEY]

    # --- collection ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Activate on conformance checks, run the self-check, select, and label items."""
        state = self.state
        checks = [item for item in items if is_conformance_check(item)]
        if not checks and not state.active:
            return
        state.active = True
        state.catalog = load_catalog()
        modules = {module.__name__ for item in checks if (module := getattr(item, "module", None))}
        complete = not state.selection and _package_modules() <= modules
        state.problems.extend(self_check([(item.nodeid, cited(item)) for item in checks], complete))
        if state.selection:
            unknown = [rid for rid in state.selection if rid not in state.catalog]
            if unknown:
                state.problems.append("--requirements names unknown IDs: " + ", ".join(unknown))
            wanted = set(state.selection)
            keep = [
                item
                for item in items
                if not is_conformance_check(item) or wanted & set(cited(item))
            ]
            dropped = [item for item in items if item not in keep]
            if dropped:
                self._selecting = True
                try:
                    config.hook.pytest_deselected(items=dropped)
                finally:
                    self._selecting = False
                items[:] = keep
        for item in items:
            if is_conformance_check(item):
                if state.short_failures:
                    _draw_requirement_failures_short(item)
                for requirement in cited(item):
                    item.user_properties.append(("requirement", requirement))
                for vector in vectors_of(item):
                    item.user_properties.append(("vector", vector))
        if state.problems:
            raise pytest.UsageError(
                "conformance self-check failed:\n  " + "\n  ".join(state.problems)
            )

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """Count the checks deselected other than by ``--requirements`` (decisions S1.7)."""
        if not self._selecting:
            self.state.deselected += sum(1 for item in items if is_conformance_check(item))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Note the requirements the checks left to run cite: the run's selection."""
        state = self.state
        if state.active:
            state.planned = frozenset(
                rid for item in session.items if is_conformance_check(item) for rid in cited(item)
            )

    # --- running ------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Note where this check's canaries begin: at its first attempt, so that a rerun's
        redaction covers every attempt's canaries (conformance._rerun, decisions S1.6)."""
        if FIRST_CANARY_KEY not in item.stash:
            item.stash[FIRST_CANARY_KEY] = issued_count()

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """Run a check's body while recording its notes, then sweep every surface for leaks."""
        if not self.state.active or not is_conformance_check(pyfuncitem):
            return (yield)
        with outcomes.recording(pyfuncitem.nodeid) as record:
            pyfuncitem.stash[RECORD_KEY] = record
            raised: BaseException | None = None
            result: object = None
            try:
                result = yield
            except BaseException as error:  # judged below, after the sweep
                raised = error
            host = pyfuncitem.funcargs.get(HOST_FIXTURE)
            if isinstance(host, RecordingHost):
                pyfuncitem.stash[HOST_KEY] = host
                host.sweep()
                # A value found on a surface the suite did read is a leak, whatever else; a
                # failure the check itself saw is kept beside it.
                try:
                    self._judge_sweeps(host, record, pyfuncitem)
                except LeakError as leak:
                    if isinstance(raised, RequirementError):
                        raise LeakError(
                            tuple(dict.fromkeys((*raised.requirements, *leak.requirements))),
                            f"{raised.detail}; {leak.detail}",
                        ) from None
                    if isinstance(raised, HostError):
                        raise raised from None
                    raise
                if host.blind and not isinstance(raised, HostError):
                    # The check needed what the host did not announce: it proves nothing
                    # either way (decisions S1.1).
                    pytest.skip("; ".join(dict.fromkeys(host.blind)))
                self._note_unsearched(host, record, pyfuncitem)
            if raised is not None:
                raise raised
        return result

    @staticmethod
    def _note_unsearched(host: RecordingHost, record: CheckRecord, item: pytest.Item) -> None:
        """Mark unchecked each cited requirement whose surface the sweep could not search."""
        unseen = {surface for sweep in host.sweeps for surface in sweep.unsearched}
        for surface in sorted(unseen, key=lambda each: each.value):
            capability = SURFACE_CAPABILITIES[surface]
            reason = (
                f"the {surface.value} was not searched: the host did not announce {capability}"
                if capability is not None
                else f"the {surface.value} was not searched whole: the bound on what the "
                "suite keeps of it cut it (decisions S1.9)"
            )
            for requirement in cited(item):
                if surface in surfaces_judged_by(requirement):
                    record.unchecked.append((requirement, reason))

    def _judge_sweeps(self, host: RecordingHost, record: CheckRecord, item: pytest.Item) -> None:
        leaks = [finding for sweep in host.sweeps for finding in sweep.leaks]
        if not record.hardening:
            # A check that measured the hardening forms itself has already said what it saw.
            for sweep in host.sweeps:
                for finding in sweep.hardening:
                    record.hardening.append(
                        HardeningRow(finding.form, finding.surface.value, False, item.nodeid)
                    )
        if leaks:
            family = tuple(rid for rid in cited(item) if rid.startswith("INV1"))
            requirements = tuple(
                dict.fromkeys(rid for finding in leaks for rid in (*finding.requirements, *family))
            )
            shown = "; ".join(finding.describe() for finding in leaks[:5])
            more = f" and {len(leaks) - 5} more" if len(leaks) > 5 else ""
            raise LeakError(requirements, f"value leaked: {shown}{more}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Record the check's outcome; downgrade SHOULD-only failures; strip canary text."""
        report = yield
        state = self.state
        if not state.active or not is_conformance_check(item):
            return report
        result = state.results.get(item.nodeid)
        if result is None:
            # Until its call is judged a check has not passed: a run interrupted in the middle of
            # it (Ctrl-C, SIGTERM, a harness error that ends the session) leaves it an error.
            result = CheckResult(
                item.nodeid,
                cited(item),
                vectors_of(item),
                outcome=Outcome.ERROR,
                detail=INTERRUPTED,
            )
            state.results[item.nodeid] = result
        result.duration_s += report.duration
        self._scrub_report(item, report)
        if report.when == "call":
            self._judge_call(item, call, report, result)
        elif report.skipped:
            result.outcome = Outcome.SKIPPED
            result.detail = _skip_reason(report)
        elif report.failed:
            result.outcome = Outcome.ERROR
            result.detail = f"{report.when} error: {_first_line(report)}"
        if report.when == "teardown":
            item.user_properties.append(("outcome", result.outcome.value))
            for requirement in result.failed:
                item.user_properties.append(("failed-requirement", requirement))
            for requirement, alternative in result.alternatives:
                item.user_properties.append(("alternative", f"{requirement}={alternative}"))
            for requirement, _reason in result.unchecked:
                item.user_properties.append(("unchecked-requirement", requirement))
            report.user_properties = list(item.user_properties)
        return report

    def _judge_call(
        self,
        item: pytest.Item,
        call: pytest.CallInfo[None],
        report: pytest.TestReport,
        result: CheckResult,
    ) -> None:
        record = item.stash.get(RECORD_KEY, None)
        if record is not None:
            result.non_strict.extend(record.non_strict)
            result.alternatives.extend(record.alternatives)
            result.unchecked.extend(dict.fromkeys(record.unchecked))
            self.state.hardening.extend(record.hardening)
        recording = item.stash.get(HOST_KEY, None)
        if recording is not None:
            result.reads = tuple(sorted(recording.reads | recording.swept))
            result.swept_only = tuple(sorted(recording.swept - recording.reads))
            result.leaked_on = tuple(
                sorted(
                    {
                        capability
                        for sweep in recording.sweeps
                        for finding in sweep.leaks
                        if (capability := SURFACE_CAPABILITIES.get(finding.surface)) is not None
                    }
                )
            )
            result.sweeps = [
                {"call": where, "searched": list(searched)}
                for sweep in recording.sweeps
                for where, searched in sweep.calls
            ]
            unseen = {surface.value for sweep in recording.sweeps for surface in sweep.unsearched}
            result.not_searched = tuple(sorted(unseen))
        if report.skipped:
            result.outcome = Outcome.SKIPPED
            result.detail = _skip_reason(report)
            return
        if report.passed and result.unchecked:
            left = set(cited(item)) - {rid for rid, _ in result.unchecked}
            if not left:
                # Every requirement the check cites went unjudged: it proves nothing.
                result.outcome = Outcome.SKIPPED
                result.detail = "; ".join(dict.fromkeys(reason for _, reason in result.unchecked))
                report.outcome = "skipped"
                report.longrepr = (str(item.path), 0, f"Skipped: {result.detail}")
                return
        if report.passed:
            result.outcome = (
                Outcome.NON_STRICT
                if result.non_strict
                else Outcome.ACCEPTED
                if result.alternatives
                else Outcome.PASS
            )
            # The placeholder of a check not yet judged goes: a check that passed has no
            # failure to explain (a SHOULD missed or an alternative taken is listed apart).
            result.detail = ""
            return
        error = call.excinfo.value if call.excinfo is not None else None
        met = getattr(getattr(item, "funcargs", {}).get("secref_host"), "failure", None)
        if isinstance(met, HostError) and not isinstance(error, HostError):
            error = met  # the check failed because the host broke under it
        if isinstance(error, HostError):
            # The host failed at the protocol level (crash, hang, garbage): nothing was learned.
            result.outcome = Outcome.ERROR
            result.detail = self._redact(item, f"host error: {error}")
            # A host that restarted as another ends the run, not this check (decisions S1.8).
            result.harness = isinstance(error, HostChangedError)
            report.longrepr = result.detail  # the cause, without a traceback through the suite
            return
        if isinstance(error, SuiteError):
            # The suite's own failure: nothing was learned about the host.
            result.outcome = Outcome.ERROR
            result.detail = self._redact(item, f"suite error: {error.detail}")
            report.longrepr = result.detail
            return
        if isinstance(error, RequirementError):
            named = error.requirements
            levels = {self.state.catalog[rid].level for rid in named if rid in self.state.catalog}
            if levels and levels <= {"SHOULD"} and set(named) <= set(self.state.catalog):
                # A SHOULD missed is reported, and the run still passes; but the check stopped
                # there, so what it would have judged after it was never seen.
                result.non_strict.extend((rid, error.detail) for rid in named)
                stopped = f"the check stopped at {', '.join(named)} before judging it"
                result.unchecked.extend(
                    (rid, stopped)
                    for rid in cited(item)
                    if rid not in named and rid not in {req for req, _ in result.unchecked}
                )
                result.outcome = Outcome.NON_STRICT
                report.outcome = "passed"
                report.longrepr = None
                return
            result.failed = named
            result.leak = isinstance(error, LeakError)
            result.detail = self._redact(item, error.detail)
            lead_with(report, f"{', '.join(named)}: {result.detail}")
        else:
            musts = tuple(
                rid
                for rid in cited(item)
                if self.state.catalog.get(rid) is not None
                and self.state.catalog[rid].level in ("MUST", "EITHER")
            )
            result.failed = musts or cited(item)
            kind = type(error).__name__ if error is not None else "failure"
            result.detail = self._redact(item, f"{kind}: {_first_line(report)}")
        result.outcome = Outcome.FAIL

    # --- keeping canaries out of every report -------------------------------------------------

    def _run_canaries(self) -> tuple[Canary, ...]:
        """Return the canaries minted since this session began: all a report of it can hold."""
        return issued_canaries(self.state.first_canary)

    @staticmethod
    def _detector(item: pytest.Item) -> Detector:
        """Return a detector for the canaries minted since ``item`` started.

        One detector serves every phase of a check until another canary is minted: building
        one indexes every window of every form, and a check's three reports would build three.
        """
        first = item.stash.get(FIRST_CANARY_KEY, 0)
        count = issued_count()
        kept = item.stash.get(DETECTOR_KEY, None)
        if kept is not None and kept[0] == count:
            return kept[1]
        detector = Detector(
            [Guarded(canary.label, canary.value) for canary in issued_canaries(first)]
        )
        item.stash[DETECTOR_KEY] = (count, detector)
        return detector

    def _redact(self, item: pytest.Item, text: str) -> str:
        return self._detector(item).redact(text) if text else text

    def _scrub_report(self, item: pytest.Item, report: pytest.TestReport) -> None:
        if report.longrepr is None and not any(content for _key, content in report.sections):
            return
        detector = self._detector(item)
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            # A skip: (path, line, reason), the shape pytest's skip summary needs.
            reason = str(longrepr[2])
            cleaned = escape_controls(detector.redact(reason))
            if cleaned != reason:
                report.longrepr = (longrepr[0], longrepr[1], cleaned)
        else:
            text = str(longrepr or "")
            # Redaction catches runs of a value too, not only whole forms; and host text printed
            # on the terminal must not carry control characters there.
            cleaned = escape_controls_keep_lines(detector.redact(text))
            if cleaned != text:
                report.longrepr = cleaned
        for index, (key, content) in enumerate(report.sections):
            cleaned = escape_controls_keep_lines(detector.redact(content))
            if cleaned != content:
                report.sections[index] = (key, cleaned)

    # --- the end of the run -------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Build the report, write the files asked for, and fail a run where no check ran."""
        state = self.state
        if state.active:
            # Late output is searched before any verdict: in a worker too, which hands the
            # result over with the rest (decisions S1.9, conformance._barrier).
            _barrier.run(self.config, state.results, self._run_canaries())
            drop_silent_phase_reports(self.config)
        if not state.active or hasattr(self.config, "workerinput"):
            # A parallel run's worker hands its results over instead (conformance._xdist).
            return
        if not state.catalog:
            try:
                state.catalog = load_catalog()
            except Exception as error:  # the report must still be written
                state.problems.append(f"the catalog could not be loaded ({type(error).__name__})")
        checks = list(state.results.values())
        for check in checks:
            if check.harness and check.detail and check.detail not in state.problems:
                # A harness error of the run, said once, whatever the expectations file says.
                state.problems.append(check.detail)
        if not checks:
            # Skipped checks did run: what they could not see makes the run incomplete.
            state.problems.append("no conformance check executed")
        if exitstatus in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.INTERRUPTED):
            state.problems.append(f"pytest ended with {pytest.ExitCode(exitstatus).name}")
        if (
            exitstatus == pytest.ExitCode.TESTS_FAILED
            and not session.shouldfail
            and not any(
                check.outcome in (Outcome.FAIL, Outcome.ERROR) and check.nodeid != _barrier.NODE_ID
                for check in checks
            )
        ):
            # pytest failed the session, neither for a check nor for an early stop: a test of
            # the session that is not a conformance check failed. The verdict says so, so that
            # the exit code and every report agree (decisions S1.11).
            state.problems.append("a test that is not a conformance check failed")
        from conformance import vectors

        if state.deselected and not state.narrowed:
            # Something deselected checks that no option named: say so rather than certify.
            state.narrowed = (f"{state.deselected} checks deselected",)
        try:
            digest: str | None = vectors.vectors_digest()
        except Exception:  # a missing corpus is a problem of its own, reported by the checks
            digest = None
        host = dict(
            state.host_info
            or {"name": "unknown", "version": "", "language": "", "capabilities": []}
        )
        # The path is the suite's own (decisions S1.8): set here, over whatever came before.
        host["via"] = state.path
        run = RunData(
            host=host,
            vectors_digest=digest,
            checks=checks,
            catalog=list(state.catalog.values()),
            hardening=state.hardening,
            problems=state.problems,
            started=state.started,
            duration_s=time.monotonic() - state.clock,
            expectations=self.expectations,
            selection=state.selection,
            stopped=state.stopped or (str(session.shouldfail) if session.shouldfail else None),
            narrowed=state.narrowed,
            planned=state.planned,
        )
        report = build_report(run)
        state.report = report
        _junit_properties(self.config, report)
        json_path = self.config.getoption("secref_report_json", None)
        md_path = self.config.getoption("secref_report_md", None)
        # Redacted once for every view: the search is the costly part of writing a report.
        state.shown = redacted(report, self._run_canaries())
        if json_path:
            write_json(state.shown, json_path, ())
        if md_path:
            write_markdown(state.shown, md_path, ())
        if report["verdict"] == HARNESS_ERROR and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        if (
            report["expectations"] is not None
            and EXIT_CODES[report["verdict"]] == 0
            and session.exitstatus == pytest.ExitCode.TESTS_FAILED
        ):
            # Every failure was a known or flaky one of the host's expectations file.
            session.exitstatus = pytest.ExitCode.OK
        if report["exitCode"] == 1 and session.exitstatus == pytest.ExitCode.OK:
            # An incomplete run, or a failure no pytest test reported (late output): pytest
            # run directly says what the verdict says (decisions S1.11).
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        assert EXIT_CODES[report["verdict"]] in (0, 1, 2)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the verdict, what needs attention, the rest, and the verdict again.

        Colours go through the reporter's own markup, so pytest's ``--color`` and ``NO_COLOR``
        decide whether they show.
        """
        report = self.state.shown
        if report is None:
            return
        terminalreporter.section("secret-reference conformance")
        for line in summary_rows(report, ()):
            markup: dict[str, bool] = {}
            if line.colour is not None:
                markup = {line.colour: True, "bold": line.text.startswith("verdict:")}
            terminalreporter.write_line(line.text, **markup)


def _junit_properties(config: pytest.Config, report: dict[str, Any]) -> None:
    """Put the verdict and each requirement's outcome and counts in a JUnit file, if asked for.

    Runs before pytest's JUnit writer, which writes these as the test suite's properties.
    """
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pytest moved its writer; the JSON and Markdown reports still say it
        return
    writer = config.stash.get(xml_key, None)
    if writer is None:
        return
    writer.add_global_property("secref-verdict", report["verdict"])
    if report.get("stopped"):
        # A stopped run's verdict is never a pass; the dashboard shows why it ended early.
        writer.add_global_property("secref-stopped", report["stopped"])
    for described in report.get("narrowed", ()):
        # A narrowed run's verdict speaks for its selection only (decisions S1.7).
        writer.add_global_property("secref-narrowed", described)
    if report.get("selection"):
        writer.add_global_property("secref-selection", ",".join(report["selection"]))
    for item in report["unchecked"]["undeclared"]:
        writer.add_global_property("secref-unchecked-must", item["id"])
    for name, value in requirement_properties(report):
        writer.add_global_property(name, value)


def _draw_requirement_failures_short(item: pytest.Item) -> None:
    """Have ``item`` draw a requirement failure cheaply in the short style, as pytest would."""
    drawn_by_pytest = item.repr_failure

    def repr_failure(excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        drawn = short_repr(item, excinfo)
        return drawn_by_pytest(excinfo) if drawn is None else drawn

    setattr(item, "repr_failure", repr_failure)  # noqa: B010 (mypy refuses assigning a method)


def short_tracebacks(config: pytest.Config) -> bool:
    """Return whether failures are shown short: neither ``-v`` nor ``--tb`` was given."""
    if getattr(config.option, "tbstyle", "auto") != "auto":
        return False
    for argument in config.invocation_params.args:
        text = str(argument)
        if text == "--verbose" or (text.startswith("-v") and set(text[1:]) == {"v"}):
            return False
    return True


def lead_with(report: pytest.TestReport, message: str) -> None:
    """Put ``message`` (the requirement and why) before a failure's traceback.

    The traceback stays pytest's own object, so its crash line, its serialization to a parallel
    run's controller and the JUnit writer's message are untouched.
    """
    longrepr = report.longrepr
    chain = getattr(longrepr, "chain", None)
    if chain:
        try:
            from _pytest._code.code import ReprEntryNative
        except ImportError:  # pytest moved it: the traceback alone still says it
            return
        chain[0][0].reprentries.insert(0, ReprEntryNative([escape_controls(message) + "\n"]))
    elif isinstance(longrepr, str):
        report.longrepr = escape_controls(message) + "\n\n" + longrepr


def _first_line(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip().splitlines()
    for line in reversed(text):
        if line.startswith("E "):
            return line[2:].strip()[:300]
    return (text[-1] if text else "").strip()[:300]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "skipped")


def host_metadata(info: Any, selector: str, path: str = "driver") -> dict[str, Any]:
    """Return a host's description as the report holds it, with the suite's path under test.

    Args:
        info: The host's description, from its handshake: data, never the suite's state.
        selector: The ``--host`` value.
        path: The path under test, as the suite's options chose it (decisions S1.8).
    """
    return {
        "name": info.name,
        "version": info.version,
        "language": info.language,
        "capabilities": sorted(info.capabilities),
        "selector": selector,
        "via": path,
    }
