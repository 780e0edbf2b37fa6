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
import dataclasses
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
from hypothesis.errors import Flaky, FlakyFailure, HypothesisException
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
    same_draws_everywhere,
    shrink,
    step_line,
)
from conformance.model.compare import Call, Held
from conformance.model.controls import Action
from conformance.outcomes import LeakError, RequirementError, SuiteError, accept, fail, should
from conformance.scenario import (
    CONTROL_CAPABILITIES,
    VAULT_PAGE,
    WAIT_SECONDS,
    RecordingHost,
    filler,
    ledger_records,
    scrubbing_of,
)
from conformance.via import MCP, mcp_host

#: How long the operator waits before a delayed answer, and past the timeout for a late one.
DELAY_S: Final = 0.05
LATE_S: Final = world.SHORT_TIMEOUT_S + 0.25

#: How much earlier than configured a host's approval timer may fire and still be on time: a
#: judgment that needs a prompt still open (or an answer still in time) is made only when the
#: call holding it started more than this before the timeout ran out.
SLACK_S: Final = 0.1

#: How long after a late-answered prompt opened the probe opens another: past the late
#: answer's excess over the timeout (0.25 s) and well before the answer (0.65 s), so that a
#: countdown every new prompt restarted would still run when the first is answered.
COUNTDOWN_GAP_S: Final = 0.35

#: How long, all told, a judgment about to fail waits for a held call to end on its own: a host
#: may close an open prompt by itself, and then its slot was free.
CLOSED_GRACE_S: Final = 1.0

#: How often a wait for the probe's running calls looks again.
POLL_S: Final = 0.01

#: The plans whose answer comes in time: with a short approval timeout their calls end by it
#: unless the machine was too slow, which a call's duration tells.
ON_TIME: Final = frozenset({"at-once", "delayed", "acting"})

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


def _ended(pending: PendingCall) -> bool:
    """Return whether a started call has ended, after a short look."""
    try:
        pending.result(POLL_S)
    except TimeoutError:
        return False
    return True


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
class _Started:
    """A call started on both hosts, its operators playing one plan."""

    call: Call
    host: tuple[PendingCall, _Operator]
    model: tuple[PendingCall, _Operator]

    def results(self) -> tuple[CallResult, CallResult]:
        """Wait for the call's end on both hosts; note whether the model prompted."""
        host = self.host[0].result(WAIT_SECONDS)
        model = self.model[0].result(WAIT_SECONDS)
        self.call.prompted = self.model[1].opened.is_set()
        return host, model


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
    any_action = st.one_of(fence_actions, actions)
    acting = st.builds(
        Plan,
        when=st.just("acting"),
        answer=st.sampled_from((Answer.APPROVE, *ANSWERS)),
        actions=st.lists(any_action, min_size=1, max_size=3).map(tuple),
    )
    # With no control announced nothing can act while a prompt is open: no such plan is drawn.
    acts = () if any_action.is_empty else (acting, acting)
    plans = st.one_of(
        answered,
        answered,
        st.builds(Plan, when=st.sampled_from(("never", "late"))),
        *acts,
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
            self.example: HostConfig | None = None
            self.setup: world.Setup | None = None
            self.unsure = False
            self.deferred = False
            self.was_deferred = False
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
            # A host that announces no control meets none before its first call: a list of
            # nothing() cannot be drawn at all (an error of the suite, never the host's).
            before=st.just(()) if actions.is_empty else st.lists(actions, max_size=2).map(tuple),
        )
        @_traced
        def configure(
            self, setup: world.Setup, probe: world.Probe, before: tuple[Action, ...]
        ) -> None:
            """Configure both hosts afresh with one drawn configuration, make the calls of
            ``probe``, then apply ``before``: the controls a host meets before its first call."""
            mint = Mint()
            self.failure_text = setup.failure_text(mint)
            self.setup = setup
            many = world.many(probe.count, probe.offset, filler=False)
            configured = world.with_forms(setup.config(mint, self.failure_text), many)
            if context.host.path == MCP:
                configured = dataclasses.replace(configured, tools=(*configured.tools, world.RICH))
            self.example = self.config = configured
            self.detector = Detector(guarded_values(self.config.secrets))
            self.own_message = Detector(())
            if self.failure_text is not None:
                self._guard_failure_text(self.failure_text)
            self.user = (setup.admin, setup.permissions)
            self._restart(self.example)
            self._probe(probe, many)
            for action in before:
                self._control(action)

        def _probe(self, probe: world.Probe, echoed: tuple[world.Item, ...]) -> None:
            """Walk the open alphabets a little further in each example, so that the CI budget
            meets every name of both, and meet the moments no short draw reaches, in calls the
            comparison judges like any other:

            - the call of ``probe.count`` references ``echoed`` (256, 17, 33 or 65,
              :func:`world.many`, which the configuration's forms tool was built from) to the
              echo, whose result holds the passwords more than 500 times with 256, in the raw
              arguments and four forms; one to the forms tool
              (:func:`world.with_forms`), whose text holds the suite's own forms of every value
              named, every class of character among them (:data:`world.WIDE_TEXTS`); one to
              the tool of the forms that stand apart (:data:`world.APART_FORMS_NAME`); and one to
              the thrower, whose failure text quotes them all, with 256 followed by a filler
              past the result cap: counts past any plausible fixed limit, forms as the design
              writes them, and a failure text longer than the cap, through scrub and cap
              (decisions R5, R6.1);
            - four calls, each with one reference naming a field the contract does not have,
              the next four of :data:`world.UNKNOWN_FIELDS` from ``probe.fields``: each is
              malformed whatever the field is called (decisions R1.2); then the calls of the
              generated grammar's features on the model's vault (:meth:`_spelled_calls`);
            - a DENY saved for ``send_mail`` (:data:`world.RULED`), then calls to three of the
              tools registered under its near names, from ``probe.names``, each approved at
              once: a tool keeps its own rule whatever its name is close to (POL-004);
            - a call with both unknown ids among three known references, one of them between
              two, in the order opposite to the sorted one (:func:`world.attribution`): all or
              nothing, and the ids named in order of first use (INV2, MSG-007);
            - a call to the recorder's name in capitals, which no configuration registers
              (:data:`world.UNREGISTERED`): a tool is looked up by its exact name (ORD-006);
            - the calls of resolution (:meth:`_resolution_calls`): an AI provider key's field
              among known references, a key tagged ``billing`` and ``ai-provider``, six unknown
              ids, and an empty field asked after another field of its entry; then every
              awkward value of the example and a value spelling a reference, delivered
              (SUBST-005); an echo of the entry the vault lists in upper case, named in both
              cases, whose password holds ``<>&'=`` (GRAM-004, SCRUB-004); every field of the
              entry whose values are white space only, delivered (SUBST-005); a call whose prompt
              meets the loss of ``secret.read`` and its return before the answer (FENCE-003);
              and, off MCP, a malformed candidate 100 levels down (GRAM-041);
            - in the first example and one in six of the others (``probe.full``), where the
              host can start a call and return: a call naming an AI provider key and an unknown
              id at once; the calls of a full queue, prompts held open
              (:meth:`_probe_queue`); calls that run past the execution timeout while another
              prompts (:meth:`_probe_running`); and prompts that time out, are answered late,
              or meet a full queue after timeouts (:meth:`_probe_timeouts`); and, on any host,
              every relaxing control against RBAC, a missing ``secret.read``, an invalid policy
              file and the file's secret switches (:meth:`_probe_authority`), the calls whose
              results may hold values with scrubbing off (:meth:`_probe_unscrubbed`), then a
              walk past the tenth page and a vault failing from its second
              (:meth:`_probe_walks`).

            Ten calls an example walk the 64 fields and the 24 names from a drawn start (the
            first example from the first of each). The calls of many come first, and once they
            are judged both hosts start afresh, configured alike, so that their long records
            and texts do not come back with every later observation; the calls after them run
            with the approval timeout long, and those that need a short one or an execution
            timeout on hosts configured afresh for them. Drawn as rules of their own,
            Hypothesis now and then spent most of a run's steps on one of them, and the other
            rules met too few calls.
            """
            assert self.example is not None
            assert self.setup is not None
            with self._batch():
                self._invoke(world.ECHO_NAME, echoed, Plan("at-once", Answer.APPROVE))
                self._invoke(world.FORMS_NAME, echoed, Plan("at-once", Answer.APPROVE))
                self._invoke(world.APART_FORMS_NAME, echoed, Plan("at-once", Answer.APPROVE))
                if context.host.path == MCP:
                    rich = tuple(world.Item("ref", secret) for secret in world.RICH_SECRETS)
                    self._invoke(world.RICH.name, rich, Plan("at-once", Answer.APPROVE))
                long = probe.count == world.MANY_COUNTS[0]
                quoted = world.many(probe.count, probe.offset, filler=long)
                self._invoke(world.THROWER_NAME, quoted, Plan("at-once", Answer.APPROVE))
            # Their records, prompts and texts are long, and every later step would read them
            # again: both hosts start afresh, configured alike, once they are judged.
            steady = self.example
            if self.short:
                steady = dataclasses.replace(steady, approval_timeout_s=world.LONG_TIMEOUT_S)
            self._restart(steady)
            approve = Plan("at-once", Answer.APPROVE)
            with self._batch():
                for number in range(4):
                    name = world.UNKNOWN_FIELDS[(probe.fields + number) % len(world.UNKNOWN_FIELDS)]
                    member = world.Item("malformed", probe.secret, name)
                    self._invoke(world.RECORDER_NAME, (member,), approve)
                self._spelled_calls(probe)
                if sees["control.save-rule"]:
                    self._control(("save_rule", "tool", world.RULED.name, "DENY"))
                members = (world.Item("ref", probe.secret),) if probe.bearing else ()
                for number in range(3):
                    name = world.TWIN_NAMES[(probe.names + number) % len(world.TWIN_NAMES)]
                    self._invoke(name, members, approve)
                attribution = world.attribution(probe.unknown_at, probe.secret)
                self._invoke(world.RECORDER_NAME, attribution, approve)
                self._invoke(world.UNREGISTERED, (world.Item("ref", probe.secret),), approve)
                self._resolution_calls(probe)
                if probe.full:
                    self._invoke(world.RECORDER_NAME, world.both_call(), approve)
                empty = tuple(bare for bare, _spaced in self.setup.secrets)
                self._invoke(world.RECORDER_NAME, world.awkward_call(empty), approve)
                self._invoke(world.ECHO_NAME, world.upper_call(probe.secret), approve)
                self._invoke(world.RECORDER_NAME, world.blank_call(probe.secret), approve)
                self._invoke(world.RECORDER_NAME, world.plain_call(), approve)
                if sees["control.set-permissions"]:
                    self._given_back(probe)
                if context.host.path != MCP:
                    deep = (world.Item("deep"),)
                    self._invoke(world.RECORDER_NAME, deep, approve)
            if can_start and probe.full:
                self._probe_queue(probe)
                self._probe_running(probe, steady)
                self._probe_timeouts(probe)
            if probe.full:
                self._probe_authority(probe)
                self._probe_unscrubbed(probe)
                self._probe_walks(probe)
            if self.config is not self.example:
                self._restart(self.example)

        def _spelled_calls(self, probe: world.Probe) -> None:
            """Make the calls of the generated grammar's features (:data:`world.SPELLED`),
            written on the model's vault: in the full examples (``probe.full``, the first
            among them), one call holding every spelling of a reference (the word in any case,
            characters as ``\\u`` escapes, surplus braces, look-alikes beside a reference),
            each resolved (GRAM-001, GRAM-002, GRAM-012, GRAM-040), and one holding every
            string that only looks like a reference, passed on byte for byte (GRAM-040, INV5):
            the same two calls each time, long and judged on every surface; and in every
            example :data:`world.MALFORMED_PER_EXAMPLE` malformed candidates, each alone, from
            ``probe.fields`` on, one group after another, each refusing its call (GRAM-003,
            GRAM-008, GRAM-009). Keys as well: in the full examples, one call holding every
            look-alike as a key, passed on byte for byte; and in every example
            :data:`world.KEYED_PER_EXAMPLE` spellings of a marker, each alone as a key at one of
            four places, each refusing its call as a malformed reference (GRAM-014)."""
            approve = Plan("at-once", Answer.APPROVE)
            if probe.full:
                refs = world.SPELLED_REFS
                members = tuple(each.member for each in refs if each.member is not None)
                self._invoke(world.RECORDER_NAME, members, approve, refs)
                self._invoke(world.RECORDER_NAME, (), approve, world.SPELLED_LITERALS)
                self._invoke(world.RECORDER_NAME, (), approve, world.SPELLED_LITERAL_KEYS)
            malformed = world.SPELLED_MALFORMED
            for number in range(world.MALFORMED_PER_EXAMPLE):
                one = malformed[(probe.fields + number) % len(malformed)]
                self._invoke(world.RECORDER_NAME, (), approve, (one,))
            keyed = world.SPELLED_KEYED
            for number in range(world.KEYED_PER_EXAMPLE):
                one = keyed[(probe.fields * world.KEYED_PER_EXAMPLE + number) % len(keyed)]
                self._invoke(world.RECORDER_NAME, (), approve, (one,))

        def _resolution_calls(self, probe: world.Probe) -> None:
            """Make the calls each refused at resolution for a refusal whose words name the
            right secrets (decisions R2): the AI provider key's field ``probe.ai_field``, after
            the first ``1 + probe.ai_at`` known passwords (MSG-011); six unknown ids (MSG-007);
            the bare entry's empty notes asked after its field ``probe.earlier`` (MSG-008)."""
            approve = Plan("at-once", Answer.APPROVE)
            ai = world.ai_call(probe.ai_at, probe.ai_field, probe.secret)
            self._invoke(world.RECORDER_NAME, ai, approve)
            self._invoke(world.RECORDER_NAME, world.tagged_call(probe.secret), approve)
            self._invoke(world.RECORDER_NAME, world.unknown_call(probe.secret), approve)
            empty = world.empty_call(probe.earlier, probe.secret)
            self._invoke(world.RECORDER_NAME, empty, approve)

        def _relaxing(self, tool: str) -> tuple[Action, ...]:
            """The controls the host announces that relax what a tool may do: a reset, a
            revocation of the tool's rule, a saved ALLOW for it, session trust for it, YOLO."""
            offered: tuple[Action, ...] = (
                ("reset",),
                ("revoke", "tool", tool),
                ("save_rule", "tool", tool, "ALLOW"),
                ("trust_session", tool),
                ("set_yolo", True),
            )
            return tuple(a for a in offered if sees[CONTROL_CAPABILITIES[str(a[0])]])

        def _probe_authority(self, probe: world.Probe) -> None:
            """On hosts configured afresh with a present vault, apply each relaxing control
            (:meth:`_relaxing`) in turn and make a call after each, where no control may lift
            what authorization and the policy file decided (decisions R2.3, R7.2):

            - a user without the gated tool's permission calls it, with a reference and
              without: RBAC comes first, whatever the trust (ORD-004);
            - a user without ``secret.read`` makes a secret-bearing call to the recorder:
              refused before the vault and the prompt (MSG-004);
            - an invalid policy file (where the host takes ``policyText``): every tool stays
              DENY (POL-002);
            - the file's ``secretBearingCalls`` DENY, then its ``secretReferencesEnabled``
              false: a secret-bearing call is refused after every control (MSG-006, MSG-003);
            - last, a secret-bearing call whose open prompt meets the kill switch for its tool,
              then approved: refused as KILL_SWITCHED or run once (FENCE-006, an EITHER).

            Each call is approved at once if it prompts; the model decides what it must end as.
            """
            assert self.example is not None
            present = dataclasses.replace(
                self.example, vault="present", vault_failure_message=None, admin=False
            )
            bearing = (world.Item("ref", probe.secret),)
            approve = Plan("at-once", Answer.APPROVE)
            cases: list[tuple[HostConfig, str, tuple[tuple[world.Item, ...], ...]]] = [
                (
                    dataclasses.replace(present, policy=None, permissions=(world.READ,)),
                    world.GATED.name,
                    (bearing, ()),
                ),
                (
                    dataclasses.replace(present, policy=None, permissions=()),
                    world.RECORDER_NAME,
                    (bearing,),
                ),
            ]
            if "policy.text" in capabilities:
                invalid = dataclasses.replace(present, policy=None, policy_text="{not json")
                cases.append((invalid, world.RECORDER_NAME, (bearing, ())))
            for switch in ({"secretBearingCalls": "DENY"}, {"secretReferencesEnabled": False}):
                cases.append(
                    (dataclasses.replace(present, policy=switch), world.RECORDER_NAME, (bearing,))
                )
            # Each case starts on hosts configured afresh: a host that parted from the model in
            # the one before (taking an alternative a ruling allows, such as running the call
            # whose prompt met the kill switch) is compared again from there, and the example's
            # own steps after the probe are compared as they were before it.
            entered = self.held.off_model
            for config, tool_name, calls in cases:
                self.held.off_model = entered
                self._restart(config)
                self.user = (config.admin, config.permissions)
                with self._batch():
                    for action in self._relaxing(tool_name):
                        self._control(action)
                        for members in calls:
                            self._invoke(tool_name, members, approve)
            if sees["control.kill"]:
                # Last, since the tool stays kill-switched: refused as KILL_SWITCHED or run
                # once, either held to for the rest of the run (FENCE-006).
                self.held.off_model = entered
                self._restart(dataclasses.replace(present, policy=None, permissions=(world.READ,)))
                self.user = (False, (world.READ,))
                killed = Plan("acting", Answer.APPROVE, (("kill", world.RECORDER_NAME),))
                self._invoke(world.RECORDER_NAME, bearing, killed)
            self.held.off_model = entered
            self.user = (self.example.admin, self.example.permissions)

        def _probe_unscrubbed(self, probe: world.Probe) -> None:
            """On hosts configured afresh with a present vault and a policy file that turns
            scrubbing off, make the calls whose results may then hold values, every other
            surface staying clean (the sweep; SCRUB-014): the forms tool with one reference
            whose value's forms its text holds, whose result arrives as the tool wrote it, every
            corner character included (SCRUB-012, CAP-003); the echo of that reference with a
            filler past the cap, which stays on (CAP-001); and, over MCP, the rich call, whose
            log and further notifications and requests to the client may hold no value, all
            three after the client asked for debug logging (MCP-004)."""
            assert self.example is not None
            unscrubbed = dataclasses.replace(
                self.example,
                vault="present",
                vault_failure_message=None,
                admin=False,
                permissions=(world.READ,),
                policy={"resultScrubbingEnabled": False},
            )
            entered = self.held.off_model
            self._restart(unscrubbed)
            self.user = (False, (world.READ,))
            members = (world.Item("ref", probe.secret),)
            approve = Plan("at-once", Answer.APPROVE)
            # Over MCP the client asks for debug logging first, as a client may: what the
            # host then logs of these calls, whose results hold values, is searched with the
            # rest (MCP-004). A host that refuses the request is asked nothing more.
            mcp = mcp_host(context.host) if context.host.path == MCP else None
            # The client whose logging level is to be set back: one that took the request.
            debugged = mcp if mcp is not None and mcp.set_log_level("debug") else None
            with self._batch():
                self._invoke(world.FORMS_NAME, members, approve)
                self._invoke(world.ECHO_NAME, (*members, world.Item("filler")), approve)
                if mcp is not None:
                    rich = tuple(world.Item("ref", secret) for secret in world.RICH_SECRETS)
                    self._invoke(world.RICH.name, rich, approve)
            if debugged is not None:
                debugged.set_log_level("info")
            self.held.off_model = entered
            self.user = (self.example.admin, self.example.permissions)

        def _probe_walks(self, probe: world.Probe) -> None:
            """On hosts configured afresh with a large vault, make a call whose references
            stand on its fourteenth page: a walk goes on until every id is found or a page comes
            back short, however many pages that takes (VAULT-002). Then, where the host can
            fail its vault from a page on, the example's entries on the third page and the
            second page failing: a page that could not be read is no end of the vault, and the
            call is refused as a vault failure, not for ids the vault does not hold, named by a
            kind alone: where the host takes a failure's own message, it is a fresh canary no
            surface may show, whatever the kind is called (MSG-009). Last, where the host can be
            built without a vault, the same call on such a host (MSG-010).
            """
            assert self.example is not None
            assert self.setup is not None
            entered = self.held.off_model
            present = self._plain_host()
            bearing = (world.Item("ref", probe.secret),)
            approve = Plan("at-once", Answer.APPROVE)
            large = (*filler(world.FILLER_IDS), *present.secrets)
            self._restart(dataclasses.replace(present, secrets=large))
            self.user = (present.admin, present.permissions)
            self._invoke(world.RECORDER_NAME, bearing, approve)
            if "vault.failing-from-page" in capabilities:
                # A kind of the open alphabet: the drawn configurations meet the known ones.
                kind = world.OPEN_FAILURE_KINDS[probe.fields % len(world.OPEN_FAILURE_KINDS)]
                own: str | None = None
                if "vault.failure-message" in capabilities:
                    own = world.failure_words(Mint())
                    self._guard_failure_text(own)
                failing = dataclasses.replace(
                    present,
                    secrets=(*filler(world.FILLER_IDS[: 2 * VAULT_PAGE]), *present.secrets),
                    vault=f"failing:{kind}",
                    vault_failing_from_page=1,
                    vault_failure_message=own,
                )
                self._vault_call(failing, entered, bearing)
            if "vault.absent" in capabilities:
                self._vault_call(dataclasses.replace(present, vault="absent"), entered, bearing)
            self.held.off_model = entered
            self.user = (self.example.admin, self.example.permissions)

        def _plain_host(self) -> HostConfig:
            """Return the example's configuration with a present vault, no policy file and a
            user who is no admin and holds only ``secret.read``."""
            assert self.example is not None
            return dataclasses.replace(
                self.example,
                vault="present",
                vault_failure_message=None,
                policy=None,
                admin=False,
                permissions=(world.READ,),
            )

        def _vault_call(
            self, config: HostConfig, entered: bool, members: tuple[world.Item, ...]
        ) -> None:
            """On hosts configured afresh with ``config``, call the recorder with ``members``."""
            self.held.off_model = entered
            self._restart(config)
            self._invoke(world.RECORDER_NAME, members, Plan("at-once", Answer.APPROVE))

        def _guard_failure_text(self, text: str) -> None:
            """Search every surface for the failing vault's own message ``text`` too, from now
            until the next configuration: only a kind of failure may reach a refusal."""
            own = Guarded("the vault failure's own message", text)
            self.own_message = Detector((*self.own_message.guarded, own))

        def _given_back(self, probe: world.Probe) -> None:
            """Make a call whose prompt meets the loss of ``secret.read`` and its return, then
            approve it: a loss while the prompt is open refuses the call whatever follows it
            (decisions R3.4, FENCE-003)."""
            admin, permissions = self.user
            lost = tuple(name for name in permissions if name != world.READ)
            actions = (("set_permissions", admin, lost), ("set_permissions", admin, permissions))
            plan = Plan("acting", Answer.APPROVE, actions)
            self._invoke(world.RECORDER_NAME, (world.Item("ref", probe.secret),), plan)

        def _probe_queue(self, probe: world.Probe) -> None:
            """Hold the pending limit's worth of prompts open (the approval timeout is long),
            the first of a reference-free call and the others of secret-bearing calls, all to
            the recorder; then make the calls of a full queue, each of which must end
            QUEUE_FULL and be recorded so (APPR-009, LEDG-001, LEDG-005): a secret-bearing call
            to another tool of another provider, then a reference-free one; with two prompts or
            more, the last is then denied and a username-only call's prompt takes its slot, and
            the secret-bearing call is made again (a username prompt counts); then the calls of
            resolution, each refused for its own refusal before the queue is consulted
            (ORD-003); then a reset while the prompts are open, and one more call. The prompts
            are then denied."""
            assert self.config is not None
            bearing = (world.Item("ref", probe.secret),)
            held: list[_Open] = []
            with self._batch():
                for number in range(self.config.pending_limit):
                    entry = self._hold(world.RECORDER_NAME, bearing if number else ())
                    if entry is not None:
                        held.append(entry)
                self._beyond(world.AUX.name, bearing, held)
                self._beyond(world.RECORDER_NAME, (), held)
                if len(held) >= 2:
                    # The last slot held by a username-only prompt instead: it counts as any.
                    self._release((held.pop(),), Answer.DENY)
                    usernames = (world.Item("ref", probe.secret, "username"),)
                    entry = self._hold(world.RECORDER_NAME, usernames)
                    if entry is not None:
                        held.append(entry)
                        self._beyond(world.AUX.name, bearing, held)
                self._resolution_calls(probe)
                if sees["control.reset"]:
                    self._control(("reset",))
                    self._beyond(world.RECORDER_NAME, bearing, held)
                for entry in held:
                    self._release((entry,), Answer.DENY)

        def _probe_running(self, probe: world.Probe, steady: HostConfig) -> None:
            """On hosts configured afresh with the slow tool (:data:`world.SLOW`) and an
            execution timeout (:data:`world.EXECUTION_TIMEOUT_S`), start the pending limit's
            worth of calls to it, each approved at once; once each handler has been called on
            both hosts (their prompts closed), make a call that must prompt and run: an
            approved call keeps no slot while it runs (APPR-009). Each slow call ends as the
            execution timeout leaves it, recorded as approved, never TIMEOUT (LEDG-005)."""
            running = dataclasses.replace(
                steady,
                tools=(*steady.tools, world.SLOW),
                execution_timeout_s=world.EXECUTION_TIMEOUT_S,
            )
            self._restart(running)
            bearing = (world.Item("ref", probe.secret),)
            approve = Plan("at-once", Answer.APPROVE)
            with self._batch(), self._deferred():
                started = [
                    self._start(world.SLOW.name, bearing, approve)
                    for _ in range(running.pending_limit)
                ]
                self._until_handled(started)
                self._invoke(world.RECORDER_NAME, bearing, approve)
                ended = [(entry, *entry.results()) for entry in started]
                for entry, host, model in ended:
                    self._finished(entry.call, host, model)

        def _probe_timeouts(self, probe: world.Probe) -> None:
            """On hosts configured afresh with the short approval timeout, after the recorder
            was granted an ALLOW rule (or session trust):

            - a reference-free call to the echo answered after its timeout (APPR-008), and,
              with a limit of two or more, a secret-bearing call to the recorder whose prompt
              opens :data:`COUNTDOWN_GAP_S` after the first and is never answered: each prompt
              keeps its own countdown, and no rule or trust answers a secret-bearing prompt
              that timed out (APPR-001, APPR-008); with a limit of one, that call is made after
              the first ends;
            - once both ended, the limit's worth of secret-bearing prompts held open and one
              more call: after timeouts the limit is exact, and the call beyond it ends
              QUEUE_FULL (APPR-009). It is judged only when it was decided before the first of
              those prompts could have timed out; they are then left to time out.

            The surfaces are compared once every call has ended: the order in which calls that
            time out are recorded is the hosts' timing."""
            assert self.example is not None
            short = dataclasses.replace(self.example, approval_timeout_s=world.SHORT_TIMEOUT_S)
            self._restart(short)
            self._grant()
            bearing = (world.Item("ref", probe.secret),)
            limit = self.example.pending_limit
            with self._batch(), self._deferred():
                late = self._start(world.ECHO_NAME, (), Plan("late", Answer.APPROVE))
                prompted = self._opened(late)
                second = None
                if prompted is not None and limit >= 2:
                    time.sleep(max(0.0, prompted + COUNTDOWN_GAP_S - time.monotonic()))
                    second = self._hold(world.RECORDER_NAME, bearing)
                    if second is not None:
                        for _pending, operator in (second.host, second.model):
                            operator.answers.put(Answer.NONE)
                self._finished(late.call, *late.results())
                if second is not None:
                    self._release((second,), Answer.NONE, answered=True)
                else:
                    self._invoke(world.RECORDER_NAME, bearing, Plan("never"))
                self._window(limit, bearing)

        def _window(self, limit: int, bearing: tuple[world.Item, ...]) -> None:
            """Hold ``limit`` prompts open under the short approval timeout, then make one more
            call, judged only if decided before the first prompt could have timed out; then
            let the prompts time out."""
            if self.unsure or self.held.off_model:
                return
            first = time.monotonic()
            held: list[_Open] = []
            for _ in range(limit):
                entry = self._hold(world.RECORDER_NAME, bearing)
                if entry is None:
                    break
                held.append(entry)
            if len(held) == limit:
                window = first + world.SHORT_TIMEOUT_S - SLACK_S
                self._beyond(world.RECORDER_NAME, bearing, held, window=window)
            self._release(tuple(held), Answer.NONE)

        def _grant(self) -> None:
            """Grant the recorder an ALLOW rule, or session trust where no rule can be saved."""
            assert self.config is not None
            if sees["control.save-rule"] and self.config.policy_store != "failing":
                self._control(("save_rule", "tool", world.RECORDER_NAME, "ALLOW"))
            elif sees["control.trust-session"]:
                self._control(("trust_session", world.RECORDER_NAME))

        def _restart(self, config: HostConfig | None = None) -> None:
            """Configure both hosts afresh with ``config`` (by default the one they have), and
            compare and sweep from there."""
            config = config or self.config
            assert config is not None
            if self.held.off_model:
                return
            context.host.reset(config)
            context.model.reset(config)
            self.config = config
            if self.setup is not None and self.setup.vault != config.vault:
                # The model's refusals of resolution follow the vault the hosts now have.
                self.setup = dataclasses.replace(self.setup, vault=config.vault)
            self.short = config.approval_timeout_s <= world.SHORT_TIMEOUT_S
            self.cursors = (_Cursor(), _Cursor())
            self.calls = []
            self.unsure = False

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

        def _invoke(
            self,
            tool: str,
            members: tuple[world.Item, ...],
            plan: Plan,
            spelled: tuple[world.Spelled, ...] | None = None,
        ) -> None:
            if self.held.off_model:
                return
            if plan.when == "held" and (self.short or len(self.open) >= 3):
                plan = Plan("at-once")
            if plan.when in ("never", "late") and not self.short:
                plan = Plan("delayed", Answer.DENY)
            call, args = self._call(tool, members, plan, spelled)
            if plan.when == "held":
                self._start_held(call, tool, args)
                return
            began = time.monotonic()
            outcome, model_outcome = self._run(call, tool, args, plan)
            if self._raced(plan, outcome, model_outcome, time.monotonic() - began):
                self.unsure = True
            try:
                self._finished(call, outcome, model_outcome)
            except RequirementError as error:
                if spelled is None:
                    raise
                raise self._attributed(error, spelled) from None

        def _attributed(
            self, error: RequirementError, spelled: tuple[world.Spelled, ...]
        ) -> RequirementError:
            """Return ``error`` naming, first, the requirements of the generated grammar's
            strings it came from: the one the call held, or those whose members the handler
            received otherwise than in the model."""
            chosen = list(spelled) if len(spelled) == 1 else []
            mine, theirs = context.host.observe().receipts, context.model.observe().receipts
            if not chosen and mine and theirs and mine[-1].tool == theirs[-1].tool:
                chosen = world.spelled_at(spelled, mine[-1].raw, theirs[-1].raw)
            if not chosen:
                return error
            ids = dict.fromkeys((*(r for e in chosen for r in e.requirements), *error.requirements))
            names = ", ".join(each.name for each in chosen[:3])
            more = f" and {len(chosen) - 3} more" if len(chosen) > 3 else ""
            detail = f"{error.detail}; the generated grammar's {names}{more}"
            return type(error)(tuple(ids), detail)

        def _call(
            self,
            tool: str,
            members: tuple[world.Item, ...],
            plan: Plan,
            spelled: tuple[world.Spelled, ...] | None = None,
        ) -> tuple[Call, str]:
            """Number a call and note what the comparison needs to know of it: of ``members``,
            or of the generated grammar's strings ``spelled``, ``members`` then naming what
            their references name."""
            assert self.setup is not None
            self.steps += 1
            if spelled is None:
                args, quoted = world.arguments(members), world.quoted_texts(members)
            else:
                args = world.spelled_arguments(spelled)
                quoted = frozenset(text for each in spelled for text in each.quoted)
            call = Call(
                self.steps,
                tool,
                world.carries_reference(members) or world.spelled_bearing(spelled or ()),
                answer=plan.answer.value,
                short=len(args) <= compare.KEPT_CHARS,
                resolution=world.resolution(members, self.setup),
                empty=world.empty_fields(members, self.setup),
                deep=world.is_deep(members),
                quoted=quoted,
            )
            return call, args

        def _run(
            self, call: Call, tool: str, args: str, plan: Plan
        ) -> tuple[CallResult, CallResult]:
            """Make one call on both hosts, the host's and the model's prompt each answered by
            ``plan``, and return both outcomes."""
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
            return outcome, model_outcome

        def _raced(self, plan: Plan, host: CallResult, model: CallResult, took: float) -> bool:
            """Return whether a call answered in time under the short approval timeout ended
            TIMEOUT on one host only when it took so long that the machine, not the host, may
            have made the answer late: such a call is not judged."""
            if not self.short or plan.when not in ON_TIME:
                return False
            if (host.disposition == "TIMEOUT") == (model.disposition == "TIMEOUT"):
                return False
            return took >= world.SHORT_TIMEOUT_S - SLACK_S

        def _start(self, tool: str, members: tuple[world.Item, ...], plan: Plan) -> _Started:
            """Start one call on both hosts, each prompt answered by ``plan``."""
            call, args = self._call(tool, members, plan)
            host_op, model_op = _Operator(plan), _Operator(plan)
            host_pending = context.host.start(tool, args, host_op)
            model_pending = context.model.start(tool, args, model_op)
            return _Started(call, (host_pending, host_op), (model_pending, model_op))

        def _opened(self, started: _Started) -> float | None:
            """Wait until a started call prompted or ended on both hosts; return when both
            prompts had opened, or ``None`` if either host ended the call without one.

            A reference-free call one host asks about and the other does not took another
            usual meaning than the model's (APPR-013, a SHOULD): reported, and the rest of the
            example is not compared.
            """
            host = _settled(*started.host)
            model = _settled(*started.model)
            if (host is None) != (model is None) and not started.call.bearing:
                should(
                    False,
                    "APPR-013",
                    f"call {started.call.step} to {started.call.tool}: a reference-free call "
                    "was asked about on one host only",
                )
                self.held.off_model = True
            return time.monotonic() if host is None and model is None else None

        def _hold(self, tool: str, members: tuple[world.Item, ...]) -> _Open | None:
            """Start a call whose prompt is held open; return it if both hosts prompted."""
            if self.held.off_model:
                return None
            call, args = self._call(tool, members, Plan("held"))
            return self._start_held(call, tool, args)

        def _start_held(self, call: Call, tool: str, args: str) -> _Open | None:
            host_op, model_op = _Operator(Plan("held")), _Operator(Plan("held"))
            host_pending = context.host.start(tool, args, host_op)
            model_pending = context.model.start(tool, args, model_op)
            host_done = _settled(host_pending, host_op)
            model_done = _settled(model_pending, model_op)
            call.prompted = model_done is None
            if host_done is None and model_done is None:
                entry = _Open(call, (host_pending, host_op), (model_pending, model_op))
                self.open.append(entry)
                self._compare(call)
                return entry
            if host_done is not None and model_done is not None:
                self._finished(call, host_done, model_done)
                return None
            # One host prompted and the other did not: the prompts decide it.
            for operator in (host_op, model_op):
                operator.answers.put(Answer.DENY)
            self._queue_differs(call, host_done, model_done)
            self._compare(call)
            self.held.off_model = True
            return None

        def _queue_differs(
            self, call: Call, host: CallResult | None, model: CallResult | None
        ) -> None:
            """Judge a held call one host refused QUEUE_FULL while the other prompted.

            Every earlier call has ended on both hosts or holds its prompt open on both, so
            both count the same prompts open: a host that refused with fewer open than the
            limit, or prompted with the limit's worth open, broke the limit (APPR-009); unless
            it closed a held prompt by itself, which frees its slot.
            """
            if self.unsure or self.held.off_model:
                return
            refused = host if host is not None else model
            if refused is None or refused.disposition != "QUEUE_FULL":
                return
            if host is None and self._closed_alone(self.open):
                self.unsure = True
                return
            did = "ended QUEUE_FULL where the model prompted" if host else "prompted past the limit"
            fail("APPR-009", f"call {call.step} to {call.tool} {did}")

        def _closed_alone(self, held: Sequence[_Open]) -> bool:
            """Return whether the host ended one of the ``held`` calls by itself (a prompt no
            one answered yet), within :data:`CLOSED_GRACE_S` all told."""
            grace = CLOSED_GRACE_S / max(1, len(held))
            for entry in held:
                try:
                    entry.host[0].result(grace)
                except TimeoutError:
                    continue
                return True
            return False

        def _beyond(
            self,
            tool: str,
            members: tuple[world.Item, ...],
            held: Sequence[_Open],
            window: float | None = None,
        ) -> None:
            """Make a call, answered at once, while ``held`` prompts are open: it is judged
            only if decided before ``window`` (when the first of them could time out), and a
            host that ran it where the model's queue was full, only if it closed none of them
            by itself."""
            if self.held.off_model:
                return
            plan = Plan("at-once", Answer.APPROVE)
            call, args = self._call(tool, members, plan)
            outcome, model_outcome = self._run(call, tool, args, plan)
            if outcome.disposition != model_outcome.disposition:
                late = window is not None and time.monotonic() >= window
                full = model_outcome.disposition == "QUEUE_FULL"
                self.unsure = late or (full and self._closed_alone(held))
            self._finished(call, outcome, model_outcome)

        def _release(
            self, held: Sequence[_Open], answer: Answer, *, answered: bool = False
        ) -> None:
            """Answer each held prompt ``answer`` (unless ``answered`` already), then wait for
            every call to end on both hosts, and judge them in order."""
            for entry in held:
                if entry in self.open:
                    self.open.remove(entry)
                entry.call.answer = answer.value
                if not answered:
                    for _pending, operator in (entry.host, entry.model):
                        operator.answers.put(answer)
            ended = [
                (entry, entry.host[0].result(WAIT_SECONDS), entry.model[0].result(WAIT_SECONDS))
                for entry in held
            ]
            for entry, host, model in ended:
                self._finished(entry.call, host, model)

        def _until_handled(self, started: Sequence[_Started]) -> None:
            """Wait until, on each host, every started call reached its handler (its receipt,
            by the tool's name) or ended."""
            deadline = time.monotonic() + WAIT_SECONDS
            tools = {entry.call.tool for entry in started}
            for index, side in ((0, context.host), (1, context.model)):
                pending = [(entry.host, entry.model)[index][0] for entry in started]
                while time.monotonic() < deadline:
                    ended = sum(1 for call in pending if _ended(call))
                    handled = sum(1 for r in side.observe().receipts if r.tool in tools)
                    if ended == len(pending) or handled >= len(pending):
                        break
                    time.sleep(POLL_S)

        @contextlib.contextmanager
        def _deferred(self) -> Iterator[None]:
            """Compare each call's disposition at once and the surfaces once, after the last
            call has ended: calls that end by a timeout are recorded in the order the hosts'
            timers run out, which only that last comparison, in no order, can judge."""
            self.deferred = True
            try:
                yield
            finally:
                self.deferred = False
            self.was_deferred = True
            try:
                self._compare(Call(self.steps, "the calls since the last comparison", True))
            finally:
                self.was_deferred = False

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
            entry = self.open[index % len(self.open)]
            if delayed:
                time.sleep(DELAY_S)
            for _pending, operator in (entry.host, entry.model):
                operator.answers.put(answer)
                if twice:
                    operator.answers.put(answer)
            self._release((entry,), answer, answered=True)

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
            if self.unsure or self.held.off_model:
                return
            # Over MCP the text items are read joined by newlines, which the cap does not count
            # (decisions R9): there the MCP checks judge the cap (MCP-005).
            if exact_raw and len(host.text) > world.RESULT_CAP:
                fail(
                    "CAP-001",
                    f"call {call.step} to {call.tool}: the agent read {len(host.text)} "
                    f"characters, over the cap of {world.RESULT_CAP}",
                )
            compare.dispositions(call, host, model, self.held)
            if exact_raw and call.tool in (world.FORMS_NAME, world.APART_FORMS_NAME):
                # Over MCP a host may send the text in several items, read joined by newlines.
                assert self.config is not None
                compare.scrubbed_text(call, host, model, scrubbing=scrubbing_of(self.config))
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
            if not self.deferred:
                self._compare(call)

        def _compare(self, call: Call | None) -> None:
            if self.held.off_model or self.deferred:
                return
            if self.unsure:
                # Nothing more is judged until both hosts start afresh; the sweep still is.
                if not self.batched:
                    self._sweep(context.host.observe())
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
                    ordered=not self.was_deferred,
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
            # Over MCP every message since the last step is searched too, so that a value left on
            # an MCP surface fails this step, not only the sweep as the check ends.
            leaks = [*found.leaks, *context.host.sweep_messages()]
            if leaks:
                ids = tuple(dict.fromkeys(r for f in leaks for r in f.requirements))
                raise LeakError(ids, f"step {self.steps}: value leaked: {leaks[0].describe()}")
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
            with same_draws_everywhere():
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
    So does any other error Hypothesis raises about the machine itself.
    """
    if isinstance(error, FlakyFailure):
        seen = [e for e in error.exceptions if isinstance(e, RequirementError)]
        if seen:
            seen[0].add_note("It did not fail again when its example was run a second time.")
            return seen[0]
    if isinstance(error, Flaky):
        return SuiteError(f"the model check's draws were not repeatable: {type(error).__name__}")
    if isinstance(error, HypothesisException):
        # Hypothesis refused the machine itself (a strategy with nothing to draw, a bad
        # setting): the suite's own defect, whatever the host announced or did.
        return SuiteError(f"the model check could not draw its steps: {type(error).__name__}")
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
