"""The model-based check: a host and the reference host driven alike, compared step by step.

This module owns :func:`run_model`, the state machine behind ``test_model.py``. Each example
configures both hosts with one drawn configuration, then takes steps: calls with any mix of
references, look-alikes and plain values; every control the host announced, at any moment
(before a call, between calls, while a prompt is open, after an answer, after a timeout); and
operator answers at once, after a delay, after the approval timeout, never, or twice, to
prompts held open across steps through ``start``. After each step the host under test is
compared with a fresh in-process reference host driven identically (the model), field by
field (:mod:`conformance.model.compare`), and every surface is swept for every value. A
failure is a :class:`~conformance.outcomes.RequirementError` naming the requirement, and
Hypothesis prints the shrunk steps as the reproducer; steps hold ids and labels, never a value.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from hypothesis import seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, FlakyFailure
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conformance.canary import (
    CallRecord,
    Detector,
    Guarded,
    Mint,
    guarded_values,
    visible_surfaces,
)
from conformance.host import Answer, CallResult, Control, HostConfig, HostUnderTest, PendingCall
from conformance.hosts.subprocess import SubprocessHost
from conformance.model import MODEL_PATH_ENV, compare, controls, world
from conformance.model.budget import (
    CI_SEED,
    SHRINK_BUDGET_S,
    Step,
    Tally,
    budget,
    shrink,
    step_line,
)
from conformance.model.compare import Call, Held
from conformance.model.controls import Action
from conformance.outcomes import LeakError, RequirementError, SuiteError, accept, fail, should
from conformance.scenario import (
    CONTROL_CAPABILITIES,
    WAIT_SECONDS,
    RecordingHost,
    ledger_records,
    scrubbing_of,
)
from conformance.via import MCP

#: How long the operator waits before a delayed answer, and past the timeout for a late one.
DELAY_S: Final = 0.05
LATE_S: Final = world.SHORT_TIMEOUT_S + 0.25

ANSWERS: Final = (
    Answer.APPROVE,
    Answer.DENY,
    Answer.ALWAYS_ALLOW,
    Answer.TRUST_PROVIDER,
    Answer.TRUST_SESSION,
)
#: The answers that approve a call.
APPROVING: Final = tuple(answer for answer in ANSWERS if answer is not Answer.DENY)

Method = TypeVar("Method", bound=Callable[..., None])


def _traced(method: Method) -> Method:
    """Count a rule's steps in the run's tally, and note a failure with its steps."""

    @functools.wraps(method)
    def step(self: Any, **arguments: Any) -> None:
        tally: Tally = self.tally
        tally.step(method.__name__, arguments)
        try:
            method(self, **arguments)
        except Exception:
            tally.failed()
            raise

    return step  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Plan:
    """How the operator answers one call's prompt.

    Attributes:
        when: ``"at-once"``, ``"delayed"``, ``"late"`` (after the approval timeout),
            ``"never"``, ``"acting"`` (controls first) or ``"held"`` (by a later step).
        answer: The answer given.
        actions: The controls applied while the prompt is open, for ``"acting"``.
    """

    when: str
    answer: Answer = Answer.APPROVE
    actions: tuple[Action, ...] = ()


class _Operator:
    """Plays one plan for one call on one host; a held prompt waits for the machine's answers."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.opened = threading.Event()
        self.answers: queue.Queue[Answer] = queue.Queue()

    def __call__(self, _request: Mapping[str, Any], control: Control) -> Answer:
        self.opened.set()
        when = self.plan.when
        if when == "held":
            try:
                return self.answers.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                return Answer.DENY
        for action in self.plan.actions:
            controls.apply(control, action)
        if when == "delayed":
            time.sleep(DELAY_S)
        elif when == "late":
            time.sleep(LATE_S)
        return Answer.NONE if when == "never" else self.plan.answer


@dataclass(slots=True)
class _Open:
    """A call whose prompt is held open on both hosts."""

    call: Call
    host: tuple[PendingCall, _Operator]
    model: tuple[PendingCall, _Operator]


def _settled(pending: PendingCall, operator: _Operator) -> CallResult | None:
    """Wait until the call shows its prompt (``None``) or ends (its result)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if operator.opened.is_set():
            return None
        try:
            return pending.result(0.01)
        except TimeoutError:
            continue
    raise RequirementError("APPR-008", "a started call neither prompted nor ended in time")


@dataclass(slots=True)
class _Cursor:
    """How much of each surface the comparison has seen."""

    prompts: int = 0
    receipts: int = 0
    reads: int = 0
    records: int = 0


@dataclass(slots=True)
class Context:
    """What one check run shares across the examples.

    Attributes:
        host: The host under test, recorded.
        model: The reference host the host is compared with.
        noted: The EITHER alternatives and SHOULD notes already reported, reported once.
        seed: The campaign seed, or ``None`` in CI.
        tally: The run's examples and steps, and its shortest failure.
    """

    host: RecordingHost
    model: HostUnderTest
    noted: set[tuple[str, str]] = field(default_factory=set)
    seed: int | None = None
    tally: Tally = field(default_factory=Tally)


def machine_for(context: Context) -> type[RuleBasedStateMachine]:
    """Return the state machine class for one check run against ``context.host``."""
    capabilities = context.host.info().capabilities
    # Every announced capability shapes the steps drawn and the surfaces compared: all are read.
    context.host.reads.update(capabilities)
    can_start = "start" in capabilities
    sees = {name: name in capabilities for name in CONTROL_CAPABILITIES.values()}
    sees.update({cap: cap in capabilities for cap in _SURFACES})
    visible = visible_surfaces(capabilities)
    actions = controls.actions(capabilities)
    fence_actions = controls.fence_actions(capabilities)
    grants = tuple(name for name in controls.GRANTS if controls.GRANT_NEEDS[name] in capabilities)
    exact_raw = context.host.path != MCP
    answered = st.builds(
        Plan, when=st.sampled_from(("at-once", "delayed")), answer=st.sampled_from(ANSWERS)
    )
    # Controls while the prompt is open, the fence's likeliest, then an answer that approves
    # most often: the moment a fence fault shows (decisions R3.4).
    acting = st.builds(
        Plan,
        when=st.just("acting"),
        answer=st.sampled_from((Answer.APPROVE, *ANSWERS)),
        actions=st.lists(st.one_of(fence_actions, actions), min_size=1, max_size=3).map(tuple),
    )
    plans = st.one_of(
        answered,
        answered,
        st.builds(Plan, when=st.sampled_from(("never", "late"))),
        acting,
        acting,
        *([st.just(Plan("held"))] * 2 if can_start else []),
    )

    class ModelMachine(RuleBasedStateMachine):
        """A host and the model, driven alike and compared after every step."""

        def __init__(self) -> None:
            context.tally.begin()
            super().__init__()
            self.tally = context.tally
            self.held = Held()
            self.open: list[_Open] = []
            self.cursors = (_Cursor(), _Cursor())
            self.config: HostConfig | None = None
            self.detector = Detector(())
            self.own_message = Detector(())
            self.batched = False
            self.failure_text: str | None = None
            self.user: tuple[bool, tuple[str, ...]] = (False, ())
            self.short = False
            self.steps = 0
            self.calls: list[tuple[str, CallResult]] = []

        # --- configure ----------------------------------------------------------------------

        @initialize(
            setup=world.setups(
                absent="vault.absent" in capabilities,
                failing="vault.failing" in capabilities,
                store_failing="policy.store-failing" in capabilities,
                failure_message="vault.failure-message" in capabilities,
            ),
            probe=world.probes(),
            before=st.lists(actions, max_size=2).map(tuple),
        )
        @_traced
        def configure(
            self, setup: world.Setup, probe: world.Probe, before: tuple[Action, ...]
        ) -> None:
            """Configure both hosts afresh with one drawn configuration, make the calls of
            ``probe``, then apply ``before``: the controls a host meets before its first call."""
            mint = Mint()
            self.failure_text = setup.failure_text(mint)
            self.config = setup.config(mint, self.failure_text)
            self.detector = Detector(guarded_values(self.config.secrets))
            if self.failure_text is not None:
                own = Guarded("the vault failure's own message", self.failure_text)
                self.own_message = Detector((own,))
            self.short = setup.short_timeout
            self.user = (setup.admin, setup.permissions)
            self._restart()
            self._probe(probe)
            for action in before:
                self._control(action)

        def _probe(self, probe: world.Probe) -> None:
            """Walk the open alphabets a little further in each example, so that the CI budget
            meets every name of both, in calls the comparison judges like any other:

            - four calls, each with one reference naming a field the contract does not have,
              the next four of :data:`world.UNKNOWN_FIELDS` from ``probe.fields``: each is
              malformed whatever the field is called (decisions R1.2);
            - a DENY saved for ``send_mail`` (:data:`world.RULED`), then calls to three of the
              tools registered under its near names, from ``probe.names``, each approved at
              once: a tool keeps its own rule whatever its name is close to (POL-004);
            - a call of ``probe.count`` references (256, 17, 33 or 65, :func:`world.many`)
              to the echo, whose result holds the passwords more than 500 times with 256, in
              the raw arguments and four forms; and one to the thrower, whose failure text
              quotes them all, with 256 followed by a filler past the result cap: counts past
              any plausible fixed limit, and a failure text longer than the cap, through scrub
              and cap (decisions R5, R6.1);
            - a call with both unknown ids among three known references, one of them between
              two, in the order opposite to the sorted one (:func:`world.attribution`): all or
              nothing, and the ids named in order of first use (INV2, MSG-007).

            Ten calls an example walk the 64 fields and the 24 names from a drawn start (the
            first example from the first of each), and make the calls of many and the
            attribution call in each. The calls of many come first, and once they are judged
            both hosts start afresh, configured alike, so that their long records and texts
            do not come back with every later observation.
            Drawn as rules of their own, Hypothesis now and then spent most of a run's steps
            on one of them, and the other rules met too few calls.
            """
            with self._batch():
                echoed = world.many(probe.count, probe.offset, filler=False)
                self._invoke(world.ECHO_NAME, echoed, Plan("at-once", Answer.APPROVE))
                long = probe.count == world.MANY_COUNTS[0]
                quoted = world.many(probe.count, probe.offset, filler=long)
                self._invoke(world.THROWER_NAME, quoted, Plan("at-once", Answer.APPROVE))
            # Their records, prompts and texts are long, and every later step would read them
            # again: both hosts start afresh, configured alike, once they are judged.
            self._restart()
            with self._batch():
                for number in range(4):
                    name = world.UNKNOWN_FIELDS[(probe.fields + number) % len(world.UNKNOWN_FIELDS)]
                    member = world.Item("malformed", probe.secret, name)
                    self._invoke(world.RECORDER_NAME, (member,), Plan("at-once", Answer.APPROVE))
                if sees["control.save-rule"]:
                    self._control(("save_rule", "tool", world.RULED.name, "DENY"))
                members = (world.Item("ref", probe.secret),) if probe.bearing else ()
                for number in range(3):
                    name = world.TWIN_NAMES[(probe.names + number) % len(world.TWIN_NAMES)]
                    self._invoke(name, members, Plan("at-once", Answer.APPROVE))
                attribution = world.attribution(probe.unknown_at, probe.secret)
                self._invoke(world.RECORDER_NAME, attribution, Plan("at-once", Answer.APPROVE))

        def _restart(self) -> None:
            """Configure both hosts afresh with the example's configuration, and compare and
            sweep from there."""
            assert self.config is not None
            if self.held.off_model:
                return
            context.host.reset(self.config)
            context.model.reset(self.config)
            self.cursors = (_Cursor(), _Cursor())
            self.calls = []

        # --- steps --------------------------------------------------------------------------

        @rule(
            tool=st.sampled_from((*world.CALLED, *world.CALLED, *world.CALLED_RARELY)),
            members=world.members(),
            plan=plans,
        )
        @_traced
        def invoke(self, tool: str, members: tuple[world.Item, ...], plan: Plan) -> None:
            """Make one call; its prompt is answered by ``plan``."""
            self._invoke(tool, members, plan)

        @rule(
            tool=st.sampled_from(world.FENCED),
            members=world.several(),
            action=fence_actions,
            answer=st.sampled_from(APPROVING),
        )
        @_traced
        def invoke_fenced(
            self, tool: str, members: tuple[world.Item, ...], action: Action, answer: Answer
        ) -> None:
            """Make a call with several references whose open prompt meets one of the fence's
            controls, then approve it: the moment a fence fault shows, drawn on purpose rather
            than left to a mixed draw (decisions R3.4). A user who lost ``secret.read`` earlier
            in the example gets it back first, so that the call reaches its prompt."""
            self._may_read()
            self._invoke(tool, members, Plan("acting", answer, (action,)))

        @precondition(lambda _self: bool(grants))
        @rule(
            grant=st.sampled_from(grants or ("",)),
            tool=st.sampled_from(world.FENCED),
            members=world.narrow(),
            plan=answered,
        )
        @_traced
        def invoke_granted(
            self, grant: str, tool: str, members: tuple[world.Item, ...], plan: Plan
        ) -> None:
            """Grant the tool a trust (session trust, YOLO, an ALLOW rule), then call it with
            usernames only, one reference, or two fields of one secret: a secret-bearing call
            is asked whatever the trust (decisions R3.1, R3.2). A user who lost
            ``secret.read`` gets it back first, as for a fenced call."""
            self._may_read()
            self._control(controls.GRANTS[grant](tool))
            self._invoke(tool, members, plan)

        def _may_read(self) -> None:
            """Give the user ``secret.read`` back where a control took it (and the host lets the
            suite set permissions): the fence's lost-permission control, drawn often, would
            otherwise leave most of an example's later calls refused before their prompt."""
            admin, permissions = self.user
            if world.READ in permissions or not sees["control.set-permissions"]:
                return
            self._control(("set_permissions", admin, (world.READ, *permissions)))

        def _invoke(self, tool: str, members: tuple[world.Item, ...], plan: Plan) -> None:
            if self.held.off_model:
                return
            if plan.when == "held" and (self.short or len(self.open) >= 3):
                plan = Plan("at-once")
            if plan.when in ("never", "late") and not self.short:
                plan = Plan("delayed", Answer.DENY)
            self.steps += 1
            args = world.arguments(members)
            call = Call(
                self.steps,
                tool,
                world.carries_reference(members),
                answer=plan.answer.value,
                short=len(args) <= compare.KEPT_CHARS,
            )
            if plan.when == "held":
                self._start_held(call, tool, args)
                return
            for action in plan.actions:
                call.events.append(controls.event(action))
            model_op, host_op = _Operator(plan), _Operator(plan)
            model_pending = context.model.start(tool, args, model_op)
            outcome = context.host.invoke(tool, args, host_op)
            model_outcome = model_pending.result(WAIT_SECONDS)
            call.prompted = model_op.opened.is_set()
            if call.prompted:
                # The operator applied the plan's controls while the prompt was open.
                for action in plan.actions:
                    self._noted(action)
            self._finished(call, outcome, model_outcome)

        def _start_held(self, call: Call, tool: str, args: str) -> None:
            host_op, model_op = _Operator(Plan("held")), _Operator(Plan("held"))
            host_pending = context.host.start(tool, args, host_op)
            model_pending = context.model.start(tool, args, model_op)
            host_done = _settled(host_pending, host_op)
            model_done = _settled(model_pending, model_op)
            call.prompted = model_done is None
            if host_done is None and model_done is None:
                self.open.append(_Open(call, (host_pending, host_op), (model_pending, model_op)))
                self._compare(call)
                return
            if host_done is not None and model_done is not None:
                self._finished(call, host_done, model_done)
                return
            # One host prompted and the other did not: the prompts decide it.
            for operator in (host_op, model_op):
                operator.answers.put(Answer.DENY)
            self._compare(call)
            self.held.off_model = True

        @contextlib.contextmanager
        def _batch(self) -> Iterator[None]:
            """Compare each call of a step of several calls, and sweep the surfaces once, after
            the last: a sweep reads every surface from the start of the example."""
            self.batched = True
            try:
                yield
            finally:
                self.batched = False
            if not self.held.off_model:
                self._sweep(context.host.observe())

        # No rule's availability turns on what the hosts did: which prompts are open is the
        # hosts' doing (their timing included), and Hypothesis requires the same draws to meet
        # the same rules in every example, else it stops the run. The rules for an open prompt
        # are always drawable: with none open, an answer does nothing and a control is a plain
        # one.
        @rule(
            index=st.integers(0, 2),
            answer=st.sampled_from(ANSWERS),
            delayed=st.booleans(),
            twice=st.booleans(),
        )
        @_traced
        def answer(self, index: int, answer: Answer, delayed: bool, twice: bool) -> None:
            """Answer a held prompt, at once or after a delay; ``twice`` queues a second answer
            for the same prompt, which a host that asks once never reads. With no prompt held
            it does nothing."""
            if not self.open:
                return
            entry = self.open.pop(index % len(self.open))
            entry.call.answer = answer.value
            if delayed:
                time.sleep(DELAY_S)
            for _pending, operator in (entry.host, entry.model):
                operator.answers.put(answer)
                if twice:
                    operator.answers.put(answer)
            outcome = entry.host[0].result(WAIT_SECONDS)
            model_outcome = entry.model[0].result(WAIT_SECONDS)
            self._finished(entry.call, outcome, model_outcome)

        @rule(action=actions)
        @_traced
        def control(self, action: Action) -> None:
            """Apply one control to both hosts, prompts open or not."""
            self._control(action)

        @rule(action=st.one_of(fence_actions, actions))
        @_traced
        def control_while_open(self, action: Action) -> None:
            """Apply one control while a prompt is held open, the fence's controls likeliest
            (with none held, it is a plain control)."""
            self._control(action)

        def _noted(self, action: Action) -> None:
            """Keep the user's permissions as the last control applied left them."""
            if action[0] == "set_permissions":
                self.user = (action[1], tuple(action[2]))

        def _control(self, action: Action) -> None:
            failing = self.config is not None and self.config.policy_store == "failing"
            if failing and action[0] == "save_rule":
                return
            controls.apply(context.host.control(), action)
            controls.apply(context.model.control(), action)
            self._noted(action)
            for entry in self.open:
                entry.call.events.append(controls.event(action))
            self._compare(None)

        # --- comparing ----------------------------------------------------------------------

        def _finished(self, call: Call, host: CallResult, model: CallResult) -> None:
            self.calls.append((call.tool, host))
            # Over MCP the text items are read joined by newlines, which the cap does not count
            # (decisions R9): there the MCP checks judge the cap (MCP-005).
            if exact_raw and len(host.text) > world.RESULT_CAP:
                fail(
                    "CAP-001",
                    f"call {call.step} to {call.tool}: the agent read {len(host.text)} "
                    f"characters, over the cap of {world.RESULT_CAP}",
                )
            compare.dispositions(call, host, model, self.held)
            if (
                call.bearing
                and call.answer == Answer.TRUST_SESSION.value
                and model.disposition == "APPROVED_ONCE"
                and sees["control.trust-session"]
            ):
                # APPR-007 is EITHER: both hosts trust the tool for reference-free calls from
                # here on, whichever alternative the host took.
                context.host.control().trust_session(call.tool)
                context.model.control().trust_session(call.tool)
            self._compare(call)

        def _compare(self, call: Call | None) -> None:
            if self.held.off_model:
                return
            mine, theirs = context.host.observe(), context.model.observe()
            ours, model_cursor = self.cursors
            if sees["observe.requests"]:
                compare.prompts(
                    call,
                    mine.approval_requests[ours.prompts :],
                    theirs.approval_requests[model_cursor.prompts :],
                    exact_raw=exact_raw,
                )
                if self._off_model():
                    return
                ours.prompts = len(mine.approval_requests)
                model_cursor.prompts = len(theirs.approval_requests)
            if sees["observe.receipts"] and call is not None:
                compare.receipts(
                    call,
                    mine.receipts[ours.receipts :],
                    theirs.receipts[model_cursor.receipts :],
                    exact_raw=exact_raw,
                )
            ours.receipts, model_cursor.receipts = len(mine.receipts), len(theirs.receipts)
            if sees["observe.vault-reads"]:
                compare.vault_reads(
                    call, mine.vault_reads[ours.reads :], theirs.vault_reads[model_cursor.reads :]
                )
                ours.reads, model_cursor.reads = len(mine.vault_reads), len(theirs.vault_reads)
            if sees["observe.ledger"]:
                host_records, model_records = ledger_records(mine), ledger_records(theirs)
                compare.ledger(
                    call,
                    host_records[ours.records :],
                    model_records[model_cursor.records :],
                    self.held,
                    exact_raw=exact_raw,
                )
                ours.records, model_cursor.records = len(host_records), len(model_records)
            if not self.batched:
                self._sweep(mine)

        def _off_model(self) -> bool:
            return self.held.off_model

        def _sweep(self, seen: Any) -> None:
            assert self.config is not None
            records = [CallRecord(t, r.text, r.is_error, r.disposition) for t, r in self.calls]
            found = self.detector.sweep(
                records, seen, scrubbing=scrubbing_of(self.config), visible=visible
            )
            if found.leaks:
                first = found.leaks[0]
                ids = tuple(dict.fromkeys(r for f in found.leaks for r in f.requirements))
                raise LeakError(ids, f"step {self.steps}: value leaked: {first.describe()}")
            if self.own_message:
                # Only a kind of failure may reach a refusal, never the failure's own message.
                shown = self.own_message.sweep(records, seen, visible=visible)
                if shown.leaks:
                    fail(
                        "MSG-009",
                        f"step {self.steps}: the vault failure's own message reached a surface: "
                        f"{shown.leaks[0].describe()}",
                    )

        def teardown(self) -> None:
            """Let every held prompt go, denied, and wait for its call."""
            for entry in self.open:
                for pending, operator in (entry.host, entry.model):
                    operator.answers.put(Answer.DENY)
                    try:
                        pending.result(WAIT_SECONDS)
                    except Exception:  # noqa: S112 - the example is over; the next reset starts afresh
                        continue
            self.open.clear()
            for requirement, alternative in self.held.taken.items():
                context.noted.add((requirement, alternative))

    return ModelMachine


#: The observation capabilities the comparison reads.
_SURFACES: Final = (
    "observe.requests",
    "observe.receipts",
    "observe.vault-reads",
    "observe.ledger",
)


def model_command() -> list[str]:
    """Return the command that starts the model: the reference driver, in a process of its own
    so that nothing patched into this process (a mutant under self-test) reaches it, and from
    the unmutated copy :data:`MODEL_PATH_ENV` names, when set, so that no mutant written into
    the judged copy (mutation testing) does."""
    where = os.environ.get(MODEL_PATH_ENV)
    if not where:
        return [sys.executable, "-m", "reference_impl.driver"]
    start = (
        "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
        "runpy.run_module('reference_impl.driver', run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", start, where]


def run_model(host: RecordingHost, *, verdict_only: bool = False) -> Context:
    """Run the model check against ``host``; raise the first divergence, shrunk.

    Args:
        host: The host under test, recorded for the sweep.
        verdict_only: The caller needs only the verdict: the smaller budget.

    Returns:
        What the run shared, with every EITHER alternative the host took.
    """
    chosen_settings, chosen_seed = budget(verdict_only)
    model = SubprocessHost(model_command())
    context = Context(host, model, seed=chosen_seed)
    machine = seed(CI_SEED if chosen_seed is None else chosen_seed)(machine_for(context))
    run: Callable[..., None] = run_state_machine_as_test
    try:
        try:
            run(machine, settings=chosen_settings)
        except Exception as raised:
            error = _unflaked(raised)
            if verdict_only or not context.tally.failing or isinstance(error, SuiteError):
                if error is raised:
                    raise
                raise error from None
            raise _shrunk(context, machine, error) from None
    except RequirementError as error:
        notes = [context.tally.found()]
        if chosen_seed is not None:
            notes.append(f"campaign seed {chosen_seed}")
        error.detail = f"{error.detail} ({'; '.join(notes)})"
        error.args = (f"{error.args[0]} ({'; '.join(notes)})",)
        raise
    finally:
        model.close()
    for requirement, alternative in sorted(context.noted):
        accept(requirement, alternative)
    return context


def _unflaked(error: Exception) -> Exception:
    """Return what a run's error says about the host, once Hypothesis's own verdicts on it are
    taken off.

    A failure that did not come back when Hypothesis ran its example again (``FlakyFailure``)
    was still seen: the host broke the requirement once, and that is the failure. Any other of
    Hypothesis's flakiness errors says that the same draws met different rules or ends in two
    examples. No rule's availability turns on what a host did, so this should not arise; if it
    does, nothing was judged, and the check ends as the suite's error, failing no requirement.
    """
    if isinstance(error, FlakyFailure):
        seen = [e for e in error.exceptions if isinstance(e, RequirementError)]
        if seen:
            seen[0].add_note("It did not fail again when its example was run a second time.")
            return seen[0]
    if isinstance(error, Flaky):
        return SuiteError(f"the model check's draws were not repeatable: {type(error).__name__}")
    return error


def _shrunk(
    context: Context, machine: type[RuleBasedStateMachine], error: BaseException
) -> BaseException:
    """Return the first failure with its steps shrunk (:func:`conformance.model.budget.shrink`)
    and attached as the reproducer."""
    tally = context.tally
    failing = tally.failing

    def replay(steps: Sequence[Step]) -> BaseException | None:
        tally.replaying = True
        state: Any = machine()
        try:
            for name, arguments in steps:
                getattr(state, name)(**arguments)
        except Exception as failure:
            return failure
        finally:
            state.teardown()
            tally.replaying = False
        return None

    started = time.monotonic()
    steps, shrunk = shrink(failing, error, replay, SHRINK_BUDGET_S)
    took = time.monotonic() - started
    shrunk.add_note(
        f"Reproducer: {len(steps)} of the failing example's {len(failing)} steps, shrunk in "
        f"{took:.0f} s (at most {SHRINK_BUDGET_S:.0f} s):"
    )
    for step in steps:
        shrunk.add_note(step_line(step))
    if isinstance(shrunk, LeakError):
        # The plugin's own sweep rebuilds a leak's error, without its notes: the reproducer
        # goes to the check's captured output as well.
        sys.stderr.write("\n".join(getattr(shrunk, "__notes__", ())) + "\n")
    return shrunk


__all__ = ["Context", "budget", "machine_for", "run_model", "should"]
