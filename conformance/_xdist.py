"""Parallel runs of the suite (``--workers``, pytest-xdist): what crosses from worker to controller.

This module owns the one path by which a parallel run's results reach its report. On a worker it
attaches each conformance check's full result, and the hardening rows the check produced, to the
check's last test report, which xdist serializes to the controller; when the worker ends, it
hands over its host's description, the problems its collection found, the canaries it minted and
its late-output barrier's result (:mod:`conformance._barrier`) through ``config.workeroutput``,
which xdist carries in memory and writes nowhere. On the controller, which collects nothing and
runs no check, it rebuilds each check's result, puts the results back in collection order, folds
the workers' barrier results into one, adopts every worker's canaries so that the report's
redaction knows them all, and raises the same usage error a serial run raises when a worker's
self-check fails. The report itself is then built once, in the controller, by
:mod:`conformance._hooks`, exactly as in a serial run. It must never put a canary's value on a
test report or in a user property: those reach the terminal, JUnit files and any report plugin.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from conformance import _barrier, _hooks
from conformance.canary import Canary, adopt_canaries, issued_canaries
from conformance.outcomes import HardeningRow, Outcome
from conformance.report import CheckResult

#: The name the bridge is registered under.
PLUGIN_NAME: Final = "secref-conformance-xdist"

#: The attribute of a check's teardown report that carries its result to the controller.
RESULT_ATTRIBUTE: Final = "secref_check"

#: The key of a worker's ``workeroutput`` that carries the rest of its run.
WORKER_OUTPUT_KEY: Final = "secref_conformance"

#: What a crashed check's report holds instead of a phase (xdist's own marker).
_CRASHED_PHASE: Final = "???"


def is_worker(config: pytest.Config) -> bool:
    """Return whether ``config`` is that of an xdist worker process."""
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """Return whether ``config`` controls xdist workers, so that no check runs in its process."""
    return not is_worker(config) and config.getoption("dist", "no") not in ("no", None)


def result_payload(result: CheckResult, hardening: Iterable[HardeningRow]) -> dict[str, Any]:
    """Return a check's result and hardening rows as plain data a worker can send.

    Args:
        result: The check's result as the worker's hooks built it.
        hardening: The hardening rows the check produced.

    Returns:
        Lists, strings, numbers and booleans only, which xdist serializes as they are. It holds
        what the result holds: labels, IDs and redacted text, never a value.
    """
    return {
        "nodeid": result.nodeid,
        "requirements": list(result.requirements),
        "vectors": list(result.vectors),
        "outcome": result.outcome.value,
        "failed": list(result.failed),
        "non_strict": [list(pair) for pair in result.non_strict],
        "alternatives": [list(pair) for pair in result.alternatives],
        "detail": result.detail,
        "duration_s": result.duration_s,
        "unchecked": [list(pair) for pair in result.unchecked],
        "leak": result.leak,
        "harness": result.harness,
        "attempts": result.attempts,
        "reads": list(result.reads),
        "swept_only": list(result.swept_only),
        "leaked_on": list(result.leaked_on),
        "sweeps": [
            {"call": str(sweep["call"]), "searched": list(sweep["searched"])}
            for sweep in result.sweeps
        ],
        "not_searched": list(result.not_searched),
        "hardening": [[row.form, row.surface, row.scrubbed, row.check] for row in hardening],
    }


def result_from_payload(payload: Mapping[str, Any]) -> tuple[CheckResult, list[HardeningRow]]:
    """Rebuild a check's result and hardening rows from what :func:`result_payload` returned.

    Args:
        payload: The plain data a worker sent.

    Returns:
        The result, equal to the one the worker built, and the check's hardening rows.

    Raises:
        KeyError: A field is missing.
        ValueError: The outcome is not one of :class:`conformance.outcomes.Outcome`.
    """

    def pairs(key: str) -> list[tuple[str, str]]:
        return [(str(first), str(second)) for first, second in payload[key]]

    result = CheckResult(
        nodeid=str(payload["nodeid"]),
        requirements=tuple(payload["requirements"]),
        vectors=tuple(payload["vectors"]),
        outcome=Outcome(payload["outcome"]),
        failed=tuple(payload["failed"]),
        non_strict=pairs("non_strict"),
        alternatives=pairs("alternatives"),
        detail=payload["detail"],
        duration_s=float(payload["duration_s"]),
        unchecked=pairs("unchecked"),
        leak=bool(payload["leak"]),
        harness=bool(payload["harness"]),
        attempts=int(payload["attempts"]),
        reads=tuple(payload["reads"]),
        swept_only=tuple(payload["swept_only"]),
        leaked_on=tuple(payload["leaked_on"]),
        sweeps=[
            {"call": sweep["call"], "searched": list(sweep["searched"])}
            for sweep in payload["sweeps"]
        ],
        not_searched=tuple(payload["not_searched"]),
    )
    rows = [
        HardeningRow(str(form), str(surface), bool(scrubbed), str(check))
        for form, surface, scrubbed, check in payload["hardening"]
    ]
    return result, rows


def self_check_message(problems: Sequence[str]) -> str:
    """Return the usage error a failed self-check raises, the same in a serial run."""
    return "conformance self-check failed:\n  " + "\n  ".join(problems)


@dataclass(slots=True)
class Gathered:
    """What the controller received from its workers, by worker id.

    Attributes:
        order: Each collected node id's position in the collection, as the first worker sent it.
        hardening: The hardening rows of each check, by node id.
        hosts: Each worker's description of its host; empty for a worker that started none.
        canaries: The canaries each worker minted, adopted into this process.
        collection_problems: The self-check problems the workers' collections found, once each.
        problems: The run's other problems: a worker that crashed or collided canaries.
        exit: The message and return code of a ``pytest.exit`` a worker's check called (an
            unknown ``--host``, say), which ends the whole run as it ends a serial one.
        late: Each worker's late-output barrier result (decisions S1.9).
    """

    order: dict[str, int] = field(default_factory=dict)
    hardening: dict[str, list[HardeningRow]] = field(default_factory=dict)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    canaries: dict[str, tuple[Canary, ...]] = field(default_factory=dict)
    collection_problems: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exit: tuple[str, int | None] | None = None
    late: list[CheckResult] = field(default_factory=list)


GATHERED_KEY: Final = pytest.StashKey[Gathered]()


class XdistBridge:
    """The hooks of a parallel run, in a worker and in the controller alike."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = is_worker(config)
        #: On a worker: how many of the session's hardening rows have gone with a check.
        self._shipped = 0
        #: On a worker: the session, and the ``pytest.exit`` that ended it, if one did.
        self._session: pytest.Session | None = None
        self._exit: tuple[str, int | None] | None = None
        config.stash[GATHERED_KEY] = Gathered()

    @property
    def state(self) -> _hooks.State:
        """The plugin's session state (:mod:`conformance._hooks`)."""
        return self.config.stash[_hooks.STATE_KEY]

    @property
    def gathered(self) -> Gathered:
        """What the controller received so far."""
        return self.config.stash[GATHERED_KEY]

    # --- both sides: every test report ---------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On a worker, attach a check's result to its last report; on the controller, keep it."""
        if self.worker:
            self._attach(report)
        else:
            self._receive(report)

    def _attach(self, report: pytest.TestReport) -> None:
        # Runs before xdist serializes the report: the teardown report is a check's last.
        result = self.state.results.get(report.nodeid)
        if report.when != "teardown" or result is None:
            return
        rows = self.state.hardening[self._shipped :]
        self._shipped = len(self.state.hardening)
        setattr(report, RESULT_ATTRIBUTE, result_payload(result, rows))

    def _receive(self, report: pytest.TestReport) -> None:
        payload = getattr(report, RESULT_ATTRIBUTE, None)
        if isinstance(payload, Mapping):
            result, rows = result_from_payload(payload)
            self.state.active = True
            self.state.results[result.nodeid] = result
            self.gathered.hardening[result.nodeid] = rows
        elif str(report.when) == _CRASHED_PHASE:  # xdist's report of a dead worker
            # The worker died in the check: a serial run would have died with it, reporting
            # nothing, so the run is a harness error rather than one check's failure.
            self.gathered.problems.append(
                f"a worker process crashed while running {report.nodeid}; its result is missing"
            )

    # --- a worker's end ------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Keep the session, to stop it when a check ends the run."""
        self._session = session

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """On a worker, turn a ``pytest.exit`` into a stop the controller hears of.

        Without it the controller sees a worker end with checks still scheduled, and fails with
        an internal error instead of the message a serial run prints.
        """
        exited = excinfo.value
        if not self.worker or not isinstance(exited, pytest.exit.Exception):
            return
        code = exited.returncode
        self._exit = (exited.msg, None if code is None else int(code))
        if self._session is not None:
            self._session.shouldstop = exited.msg or "pytest.exit"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On a worker, hand the controller its host, its collection problems and its canaries."""
        if not self.worker:
            return
        state = self.state
        minted = issued_canaries()[state.first_canary :]
        late = state.results.get(_barrier.NODE_ID)
        output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
        output[WORKER_OUTPUT_KEY] = {
            "host": dict(state.host_info),
            "problems": list(state.problems),
            "canaries": [(canary.label, canary.kind.value, canary.value) for canary in minted],
            "hardening": [
                [row.form, row.surface, row.scrubbed, row.check]
                for row in state.hardening[self._shipped :]
            ],
            "exit": None if self._exit is None else list(self._exit),
            "late": None if late is None else result_payload(late, ()),
        }

    # --- the controller ------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Keep the collection order, so results are reported in the order a serial run has."""
        if not self.gathered.order:
            self.gathered.order = {nodeid: index for index, nodeid in enumerate(ids)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Take what a worker handed over when it ended."""
        worker = str(node.gateway.id)
        gathered = self.gathered
        output = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        if error is not None or output is None:
            gathered.problems.append(
                f"worker {worker} ended before handing over its results; the run is incomplete"
            )
        if output is None:
            return
        gathered.hosts[worker] = dict(output["host"])
        canaries = adopt_canaries(
            (str(label), str(kind), str(value)) for label, kind, value in output["canaries"]
        )
        gathered.canaries[worker] = gathered.canaries.get(worker, ()) + canaries
        for problem in output["problems"]:
            if problem not in gathered.collection_problems:
                gathered.collection_problems.append(problem)
        gathered.hardening.setdefault("", []).extend(
            HardeningRow(str(form), str(surface), bool(scrubbed), str(check))
            for form, surface, scrubbed, check in output["hardening"]
        )
        if output.get("late") is not None:
            gathered.late.append(result_from_payload(output["late"])[0])
        if output["exit"] is not None and gathered.exit is None:
            message, code = output["exit"]
            gathered.exit = (str(message), None if code is None else int(code))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """After the workers are done, fold what they sent into the session's state."""
        if self.worker:
            return (yield)
        gathered = self.gathered
        outcome: object = None
        try:
            outcome = yield
        except KeyboardInterrupt:  # xdist's stop, which a worker's pytest.exit asked for
            if gathered.exit is None:
                raise
        finally:
            self._fold()
        if gathered.exit is not None:
            # A check ended its worker's run (an unknown --host): it ends this one the same way.
            message, code = gathered.exit
            pytest.exit(message, returncode=code)
        if gathered.collection_problems:
            # Each worker's collection stopped on it; the run stops as a serial one does.
            raise pytest.UsageError(self_check_message(gathered.collection_problems))
        return outcome

    def _fold(self) -> None:
        state, gathered = self.state, self.gathered
        last = len(gathered.order)
        ranked = sorted(
            state.results.values(), key=lambda result: gathered.order.get(result.nodeid, last)
        )
        state.results = {result.nodeid: result for result in ranked}
        late = _barrier.merged(gathered.late)
        if late is not None:
            # One barrier check, as a serial run has, whatever the number of workers.
            state.results[late.nodeid] = late
        state.hardening = [
            row for result in ranked for row in gathered.hardening.get(result.nodeid, ())
        ] + gathered.hardening.get("", [])
        if gathered.collection_problems or state.results:
            state.active = True
        for worker in sorted(gathered.hosts):
            if gathered.hosts[worker]:
                state.host_info = gathered.hosts[worker]
                break
        seen: dict[str, str] = {}
        for worker, canaries in sorted(gathered.canaries.items()):
            for canary in canaries:
                if seen.setdefault(canary.value, worker) != worker:
                    gathered.problems.append(
                        f"canary {canary.label} of worker {worker} repeats a value of worker "
                        f"{seen[canary.value]}; values must be unique across processes"
                    )
        state.problems.extend(gathered.collection_problems)
        state.problems.extend(dict.fromkeys(gathered.problems))
