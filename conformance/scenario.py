"""What a check uses to set a host up, drive it and read it back, cheaply.

This module owns the recording wrapper every check's ``host`` is (it keeps each call's result
for the leak detector and sweeps every surface before each reset and after the check), builders
for secrets, tools and configurations, operator scripts, and readers for the ledger and the
approval requests. It never prints a value: secrets are canaries from :mod:`conformance.canary`,
and every helper names them by label.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Any, Final

import pytest

from conformance.canary import (
    FORM_REQUIREMENTS,
    SURFACE_CAPABILITIES,
    CallRecord,
    Detector,
    Finding,
    Kind,
    Mint,
    Sweep,
    guarded_values,
    required_forms,
    visible_surfaces,
)
from conformance.host import (
    Answer,
    CallResult,
    Control,
    HandlerKind,
    HostConfig,
    HostInfo,
    HostUnderTest,
    LogRecord,
    Observation,
    OperatorScript,
    PendingCall,
    Receipt,
    SecretSpec,
    ToolSpec,
)
from conformance.hosts.wire import config_to_wire, configure_needs
from conformance.outcomes import accept, fail, require, should, unchecked
from conformance.via import DRIVER, PATHS

#: The capability a host announces when it is the reference implementation itself; checks of
#: ``reference-only`` requirements need it.
REFERENCE_CAPABILITY: Final = "reference"

#: The provider every standard tool is served by unless a check says otherwise.
PROVIDER: Final = "plugin.canary"

#: Entries per page of the vault walk (decisions R7.1).
VAULT_PAGE: Final = 200

#: Seconds a check waits for a started call before calling the host hung.
WAIT_SECONDS: Final = 20.0

#: The control capability behind each :class:`conformance.host.Control` method.
CONTROL_CAPABILITIES: Final = {
    "revoke": "control.revoke",
    "reset": "control.reset",
    "save_rule": "control.save-rule",
    "set_permissions": "control.set-permissions",
    "trust_session": "control.trust-session",
    "set_yolo": "control.set-yolo",
    "kill": "control.kill",
}


# --- secrets and arguments ------------------------------------------------------------------


def new_id() -> str:
    """Return a fresh secret id, a lower-case UUID."""
    return str(uuid.uuid4())


def filler(ids: Sequence[str]) -> tuple[SecretSpec, ...]:
    """Return one vault entry per id of short plain values, under the eight code points a value
    needs to be guarded, so that a large vault's bulk is never searched for: ``bulk-<n>``."""
    return tuple(
        SecretSpec(sid, f"bulk-{n}.example", f"u{n}", f"p{n}") for n, sid in enumerate(ids)
    )


def ids_out_of_order(count: int) -> tuple[str, ...]:
    """Return ``count`` fresh, distinct secret ids in descending order.

    A check that uses them in the order given is certain to see a host that sorts ids (or the
    names built from them) reorder them: the discriminating order is chosen, never left to two
    random ids.
    """
    ids: set[str] = set()
    while len(ids) < count:
        ids.add(new_id())
    return tuple(sorted(ids, reverse=True))


def canary_holding(mint: Mint, role: str, characters: str) -> str:
    """Return a fresh canary's letters around ``characters``: a value the leak detector knows,
    holding characters no draw would give it."""
    core = mint.canary(Kind.PLAIN, role).value
    return core[:6] + characters + core[6:]


def make_secret(
    mint: Mint,
    *,
    kind: Kind = Kind.PLAIN,
    website: str | None = None,
    notes: bool = True,
    username: str | None = None,
    tags: Sequence[str] = (),
    secret_id: str | None = None,
) -> SecretSpec:
    """Return a vault entry whose fields are fresh canaries.

    Args:
        mint: Where the canaries come from.
        kind: The password's and the notes' shape; usernames are always plain.
        website: The website; by default one derived from the id.
        notes: Whether the entry has notes.
        username: A fixed username instead of a canary (for short-value checks).
        tags: The entry's tags.
        secret_id: The id; a fresh UUID by default.
    """
    sid = secret_id or new_id()
    return SecretSpec(
        id=sid,
        website=website or f"site-{sid[:8]}.example",
        username=mint.canary(Kind.PLAIN, "username").value if username is None else username,
        password=mint.canary(kind, "password").value,
        notes=mint.canary(kind, "notes").value if notes else "",
        tags=tuple(tags),
    )


def value_of(secret: SecretSpec, field_name: str) -> str:
    """Return the value of ``secret``'s field ``field_name`` (``password`` by default)."""
    return str(getattr(secret, field_name or "password"))


def ref(secret_id: str, field_name: str | None = None, prefix: str = "secret") -> str:
    """Return the marker text ``{{<prefix>:<id>[.<field>]}}``."""
    suffix = f".{field_name}" if field_name else ""
    return "{{" + prefix + ":" + secret_id + suffix + "}}"


def name_of(secret_id: str, field_name: str | None = None) -> str:
    """Return a reference's name, ``<lower-case id>.<field>``."""
    return f"{secret_id.lower()}.{field_name or 'password'}"


def placeholder(secret_id: str, field_name: str | None = None) -> str:
    """Return the text that replaces a scrubbed value, ``[secret:<id>.<field>]``."""
    return f"[secret:{name_of(secret_id, field_name)}]"


#: A vault failure's refusal (decisions R2): the ruled words, then only a kind of failure in
#: parentheses, a short plain phrase; a failure's own text or repr brings quotes or colons.
_VAULT_FAILURE_RE: Final = re.compile(r"the vault could not be read \([\w .-]+\)")


def names_vault_failure(text: str) -> bool:
    """Return whether ``text`` refuses a call as a vault failure named by its kind alone."""
    return _VAULT_FAILURE_RE.fullmatch(text.rstrip()) is not None


def args_json(members: Mapping[str, Any]) -> str:
    """Return compact JSON for an argument object, non-ASCII kept as written."""
    return json.dumps(dict(members), ensure_ascii=False, separators=(",", ":"))


# --- tools and configurations -----------------------------------------------------------------


def tool(
    name: str,
    handler: HandlerKind,
    *,
    provider: str = PROVIDER,
    risk: str = "MEDIUM",
    permission: str | None = None,
    **options: Any,
) -> ToolSpec:
    """Return a tool bound to a standard handler."""
    return ToolSpec(name, provider, handler, risk, permission, dict(options))


ECHO: Final = tool("echo", HandlerKind.ECHO)
RECORDER: Final = tool("recorder", HandlerKind.RECORDER)
SHA256: Final = tool("sha256", HandlerKind.SHA256)
THROWER: Final = tool("thrower", HandlerKind.THROWER)

#: The tools most checks need, registered together so one configuration serves many calls.
STANDARD_TOOLS: Final = (ECHO, RECORDER, SHA256, THROWER)


def config(
    secrets: Sequence[SecretSpec] = (),
    *,
    tools: Sequence[ToolSpec] = STANDARD_TOOLS,
    policy: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> HostConfig:
    """Return a host configuration; keyword arguments override :class:`HostConfig` fields."""
    base = HostConfig(secrets=tuple(secrets), tools=tuple(tools), policy=policy)
    return replace(base, **overrides) if overrides else base


def scrubbing_of(host_config: HostConfig) -> bool:
    """Return whether result scrubbing is on under ``host_config``."""
    if host_config.policy is None:
        return True
    return host_config.policy.get("resultScrubbingEnabled", True) is not False


# --- operator scripts ---------------------------------------------------------------------------


def answering(answer: Answer) -> OperatorScript:
    """Return an operator script that gives ``answer`` to every prompt."""

    def script(_request: Mapping[str, Any], _control: Control) -> Answer:
        return answer

    return script


def acting(action: Callable[[Control], None], answer: Answer = Answer.APPROVE) -> OperatorScript:
    """Return an operator script that acts on the host while the prompt is open, then answers."""

    def script(_request: Mapping[str, Any], control: Control) -> Answer:
        action(control)
        return answer

    return script


class HeldOperator:
    """An operator that keeps every prompt open until :meth:`release`, then approves.

    Attributes:
        seen: How many prompts it has been shown.
    """

    def __init__(self, answer: Answer = Answer.APPROVE) -> None:
        self._answer = answer
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.seen = 0

    def __call__(self, _request: Mapping[str, Any], _control: Control) -> Answer:
        with self._lock:
            self.seen += 1
        self._released.wait(WAIT_SECONDS)
        return self._answer

    def release(self) -> None:
        """Let every held prompt be answered."""
        self._released.set()

    def wait_seen(self, count: int, timeout: float = WAIT_SECONDS) -> bool:
        """Wait until ``count`` prompts are open; return whether they are."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.seen >= count:
                    return True
            time.sleep(0.005)
        return False


# --- reading surfaces -------------------------------------------------------------------------


#: The fields every ledger record carries (decisions R6.2).
LEDGER_FIELDS: Final = (
    "id",
    "timestamp",
    "toolName",
    "providerId",
    "policyApplied",
    "approvalDisposition",
    "durationMs",
    "isError",
    "sanitizedArgs",
    "errorSnippet",
    "secretRefs",
)


def ledger_records(observation: Observation | Seen) -> list[dict[str, Any]]:
    """Return the ledger's records, one per whole line that decodes to an object.

    Lines that do not decode are returned as ``{"_undecodable": line number}``, so a check that
    counts records sees them.
    """
    records: list[dict[str, Any]] = []
    text = observation.ledger_bytes.decode("utf-8", "replace")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            decoded = json.loads(line)
        except ValueError:
            decoded = None
        records.append(decoded if isinstance(decoded, dict) else {"_undecodable": number})
    return records


def judge_free_call_after_broad_answer(answer: Answer, free_prompted: bool, what: str) -> None:
    """Judge a reference-free call made after a broad answer to a secret-bearing one
    (decisions R3.3): it must prompt, since the answer granted nothing durable (APPR-006),
    except after "trust for the session", where either is legal (APPR-007, recorded as the
    alternative taken). ``what`` names the answered call in the details."""
    if answer is Answer.TRUST_SESSION:
        accept("APPR-007", "does-not-trust" if free_prompted else "trusts")
        return
    require(
        free_prompted,
        "APPR-006",
        f"{answer.value} on {what} let a reference-free call run without a prompt",
    )


def require_lost_read_refusal(outcome: CallResult, what: str) -> None:
    """Require the disposition of an approved call whose user lost ``secret.read`` while its
    prompt was open (decisions R3.4): SECRET_FORBIDDEN or POLICY_DENIED (FENCE-003), the first
    being the SHOULD (FENCE-004). ``what`` names the call in the details."""
    require(
        outcome.disposition in ("SECRET_FORBIDDEN", "POLICY_DENIED"),
        "FENCE-003",
        f"{what} ended {outcome.disposition}",
    )
    should(
        outcome.disposition == "SECRET_FORBIDDEN",
        "FENCE-004",
        f"{what} was refused as {outcome.disposition}, not SECRET_FORBIDDEN",
    )


def require_lost_read_refused(host: RecordingHost, outcome: CallResult, what: str) -> None:
    """Require an approved call whose user lost ``secret.read`` while its prompt was open to be
    refused, as :func:`require_lost_read_refusal` says, and never run. ``what`` names the call
    in the details."""
    require(outcome.is_error, "FENCE-003", f"{what} ran")
    require_lost_read_refusal(outcome, what)
    require(host.observe().receipts == (), "FENCE-003", f"the tool ran for {what}")


def require_every_form_scrubbed(host: RecordingHost, secret: SecretSpec, held: str) -> None:
    """Reset ``host`` with ``secret`` and tools returning each form (decisions R5.2) of its
    password and its notes alone, and all of them together; require every result scrubbed of
    every form (SCRUB-003 to SCRUB-006, SCRUB-009) and holding a placeholder (SCRUB-010).

    ``held`` says what the values hold, for the details, which name forms and fields, never a
    value. A call the host refuses leaves the forms unchecked.
    """
    values = {"password": secret.password, "notes": secret.notes}
    forms = {field: required_forms(value) for field, value in values.items()}
    texts = {
        f"{field}-{name}": f"head {form} tail"
        for field, named in forms.items()
        for name, form in named.items()
    }
    texts["together"] = "\n".join(
        f"{field} {name}: {form} ."
        for field, named in forms.items()
        for name, form in named.items()
    )
    tools = {
        label: tool(f"static-{label}", HandlerKind.STATIC, text=text)
        for label, text in texts.items()
    }
    host.reset(config([secret], tools=tuple(tools.values())))
    args = args_json({"p": ref(secret.id), "n": ref(secret.id, "notes")})
    for label, static in tools.items():
        outcome = host.invoke(static.name, args)
        if outcome.is_error:
            unchecked(
                tuple(FORM_REQUIREMENTS.values()),
                f"the call returning {label} ended {outcome.disposition}: no result to judge",
            )
            continue
        survived = sorted(
            (field, name)
            for field, named in forms.items()
            for name, form in named.items()
            if form in outcome.text
        )
        if survived:
            fail(
                (*dict.fromkeys(FORM_REQUIREMENTS[name] for _, name in survived), "SCRUB-009"),
                f"in the result holding {label}, form(s) "
                + ", ".join(f"{name} of the {field}" for field, name in survived)
                + f" of a value {held} survived scrubbing",
            )
        require(
            placeholder(secret.id) in outcome.text
            or placeholder(secret.id, "notes") in outcome.text,
            "SCRUB-010",
            f"the result holding {label} came back without a placeholder",
        )


def require_record_says_how_it_ended(
    case: str, record: Mapping[str, Any], outcome: CallResult
) -> None:
    """Require a call's ledger record to carry the disposition and ``isError`` the agent was
    given (LEDG-005, LEDG-008, LEDG-001); ``case`` names the call in the failure."""
    require(
        record.get("approvalDisposition") == outcome.disposition,
        ("LEDG-005", "LEDG-008"),
        f"a {case} call ended {outcome.disposition} but was recorded as "
        f"{record.get('approvalDisposition')}",
    )
    require(
        record.get("isError") is outcome.is_error,
        "LEDG-001",
        f"a {case} call ended with isError {outcome.is_error} but was recorded with isError "
        f"{record.get('isError')}",
    )


def first_difference(got: str, expected: str) -> int:
    """Return the first index at which two texts differ."""
    limit = min(len(got), len(expected))
    low, high = 0, limit
    # Bisect on equal prefixes: a slice comparison runs in C, so this stays fast at a megabyte.
    while low < high:
        middle = (low + high + 1) // 2
        if got[:middle] == expected[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def require_snippet_fits(case: str, snippet: object, *, failed: bool, raised: bool = False) -> None:
    """Require a ledger record's ``errorSnippet`` to fit how its call ended (LEDG-001): text or
    nothing, nothing when the call did not fail (``failed``), and some when its handler raised
    (``raised``). Whether a refusal or a timeout carries one is not ruled; ``case`` names the
    call in the failure."""
    require(
        snippet is None or isinstance(snippet, str),
        "LEDG-001",
        f"{case}'s errorSnippet is not text",
    )
    if not failed:
        require(
            not snippet, "LEDG-001", f"{case} that did not fail was recorded with an errorSnippet"
        )
    elif raised:
        require(
            bool(snippet),
            "LEDG-001",
            f"{case} whose handler failed was recorded without an errorSnippet",
        )


def receipts_for(observation: Observation | Seen, tool_name: str) -> list[Any]:
    """Return the receipts of ``tool_name``'s handler, in call order."""
    return [receipt for receipt in observation.receipts if receipt.tool == tool_name]


def call_surfaces(outcome: CallResult, seen: Seen) -> Iterator[tuple[str, str]]:
    """Yield (surface, text) for every surface a call's text can reach: the result, the ledger,
    the host log, the approval requests and what the host printed."""
    yield "result", outcome.text
    yield "ledger", seen.ledger_bytes.decode("utf-8", "replace")
    for record in seen.log_records:
        yield "host log", record.message
    for request in seen.approval_requests:
        yield "approval request", json.dumps(request, ensure_ascii=False)
    yield "printed output", seen.printed


# --- the recording host -----------------------------------------------------------------------


class Seen:
    """What a check reads of a host's surfaces: an observation that never shows what is unseen.

    Reading a surface the host did not announce skips the check with the missing capability as
    its reason (decisions S1.1): an empty ledger or log from such a host is not evidence of
    anything. A check that can judge some of its requirements without that surface asks
    :meth:`judges` first, which leaves the others recorded as unchecked instead.

    Args:
        inner: The host's observation.
        owner: The recording host, which keeps what was read and what could not be.
    """

    __slots__ = ("_inner", "_owner")

    def __init__(self, inner: Observation, owner: RecordingHost) -> None:
        self._inner = inner
        self._owner = owner

    @property
    def ledger_bytes(self) -> bytes:
        """The ledger file's bytes (``observe.ledger``)."""
        self._owner.read("observe.ledger")
        return self._inner.ledger_bytes

    @property
    def log_records(self) -> tuple[LogRecord, ...]:
        """Every host log record since the reset (``observe.log``)."""
        self._owner.read("observe.log")
        return self._inner.log_records

    @property
    def approval_requests(self) -> tuple[Mapping[str, Any], ...]:
        """Every approval request (``observe.requests``)."""
        self._owner.read("observe.requests")
        return self._inner.approval_requests

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Every handler call (``observe.receipts``)."""
        self._owner.read("observe.receipts")
        return self._inner.receipts

    @property
    def vault_reads(self) -> tuple[int, ...]:
        """The vault pages read (``observe.vault-reads``)."""
        self._owner.read("observe.vault-reads")
        return self._inner.vault_reads

    @property
    def ledger_read(self) -> tuple[Mapping[str, Any], ...] | None:
        """The ledger as the host's own reader decodes it (``observe.ledger-read``)."""
        self._owner.read("observe.ledger-read")
        return self._inner.ledger_read

    @property
    def printed(self) -> str:
        """What the host printed besides the protocol; the suite reads it itself."""
        return self._inner.printed

    def judges(self, capability: str, requirements: str | Sequence[str]) -> bool:
        """Return whether ``capability`` is announced; if not, mark ``requirements`` unchecked.

        Args:
            capability: The observation capability a part of the check needs.
            requirements: What that part would judge.
        """
        if self._owner.has(capability):
            return True
        unchecked(requirements, f"the host did not announce {capability}")
        return False


class _GuardedControl:
    """The control surface an operator script gets: an action the host did not announce is not
    sent, and the check that asked for it ends skipped (decisions S1.1)."""

    def __init__(self, inner: Control, owner: RecordingHost) -> None:
        self._inner = inner
        self._owner = owner

    def _allowed(self, method: str) -> bool:
        capability = CONTROL_CAPABILITIES[method]
        if self._owner.has(capability):
            self._owner.reads.add(capability)
            return True
        self._owner.blind.append(f"the host did not announce {capability}")
        return False

    def revoke(self, kind: str, name: str) -> None:
        if self._allowed("revoke"):
            self._inner.revoke(kind, name)

    def reset(self) -> None:
        if self._allowed("reset"):
            self._inner.reset()

    def save_rule(self, kind: str, name: str, rule: str) -> None:
        if self._allowed("save_rule"):
            self._inner.save_rule(kind, name, rule)

    def set_permissions(self, admin: bool, permissions: Sequence[str]) -> None:
        if self._allowed("set_permissions"):
            self._inner.set_permissions(admin, permissions)

    def trust_session(self, tool: str) -> None:
        if self._allowed("trust_session"):
            self._inner.trust_session(tool)

    def set_yolo(self, enabled: bool) -> None:
        if self._allowed("set_yolo"):
            self._inner.set_yolo(enabled)

    def kill(self, tool: str | None = None) -> None:
        if self._allowed("kill"):
            self._inner.kill(tool)


def _config_needs(config: HostConfig) -> list[str]:
    """Return what ``config`` needs the host to announce (docs/driver-protocol.md)."""
    return sorted(configure_needs(config_to_wire(config)))


class _RecordingPending:
    def __init__(self, inner: PendingCall, owner: RecordingHost, tool_name: str) -> None:
        self._inner = inner
        self._owner = owner
        self._tool = tool_name

    def result(self, timeout: float = WAIT_SECONDS) -> CallResult:
        outcome = self._inner.result(timeout)
        self._owner._note(self._tool, outcome)
        return outcome


@dataclass(slots=True)
class _Segment:
    """The calls made under one configuration, and what the MCP messages searched before the
    segment's sweep held (:meth:`RecordingHost.sweep_messages`)."""

    config: HostConfig
    calls: list[CallRecord]
    messages: Sweep = dataclass_field(default_factory=Sweep)


class RecordingHost:
    """A :class:`HostUnderTest` that remembers every call, for the leak detector.

    Every check's ``host`` fixture is one. Before each reset and once the check ends, the
    plugin sweeps every surface the host announced for every value of the configuration's
    vault. It also keeps the check honest about what it can see: a surface, control, call mode
    or configuration feature the host did not announce is never used, and the check that
    wanted it ends skipped (decisions S1.1).

    Args:
        inner: The host under test.
        path: The path under test (:data:`conformance.via.PATHS`), as the suite's options chose
            it (:func:`conformance.hosts.path_of`); never read from what the host announces
            (decisions S1.8).

    Attributes:
        sweeps: Every sweep made, in order.
        reads: The capabilities the check used, announced or not.
        blind: Why the check could not see what it needed; any entry makes it skipped.
    """

    def __init__(self, inner: HostUnderTest, path: str = DRIVER) -> None:
        if path not in PATHS:
            raise ValueError(f"no path under test named {path!r}")
        self._inner = inner
        self._path = path
        self._info: HostInfo | None = None
        self._segment: _Segment | None = None
        self._lock = threading.Lock()
        self.sweeps: list[Sweep] = []
        self.reads: set[str] = set()
        #: The capabilities the canary sweep read on the check's behalf (:meth:`sweep`).
        self.swept: set[str] = set()
        self.blind: list[str] = []

    # --- HostUnderTest --------------------------------------------------------------------

    def info(self) -> HostInfo:
        """Return the host's description, asked once."""
        if self._info is None:
            self._info = self._inner.info()
        return self._info

    def reset(self, config: HostConfig) -> None:
        """Sweep what the last configuration left, then start afresh with ``config``.

        Raises:
            pytest.skip.Exception: ``config`` needs a feature the host did not announce.
        """
        self.sweep()
        for capability in _config_needs(config):
            self.read(capability)
        self._inner.reset(config)
        self._segment = _Segment(config, [])

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        """Run one call and keep its result for the sweep."""
        outcome = self._inner.invoke(tool, args, self._guarded(operator))
        self._note(tool, outcome)
        return outcome

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> PendingCall:
        """Start one call; its result is kept once a check waits for it.

        Raises:
            pytest.skip.Exception: The host did not announce ``start``.
        """
        self.read("start")
        inner = self._inner.start(tool, args, self._guarded(operator))
        return _RecordingPending(inner, self, tool)

    def observe(self) -> Seen:
        """Return every surface; reading one the host did not announce skips the check."""
        return Seen(self._inner.observe(), self)

    def control(self) -> Control:
        """Return the operator's control surface, to act on the host outside any prompt.

        An action the host did not announce is not sent, and the check ends skipped; a check
        calls :meth:`need` for the ``control.<op>`` capability first to skip before acting.
        """
        guarded: Control = _GuardedControl(self._inner.control(), self)
        return guarded

    def close(self) -> None:
        """Do nothing: the session owns the host under test."""

    # --- for checks -----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The path under test: the suite's own knowledge, never the host's (decisions S1.8)."""
        return self._path

    @property
    def config(self) -> HostConfig:
        """The configuration of the last reset."""
        if self._segment is None:
            raise RuntimeError("the check has not reset the host")
        return self._segment.config

    def has(self, capability: str) -> bool:
        """Return whether the host announces ``capability``."""
        return capability in self.info().capabilities

    def need(self, *capabilities: str) -> None:
        """Skip the check, with the reason, unless the host has every capability named.

        Asked from another thread (an operator script the host calls back), it only notes
        what is missing: the check still ends skipped, once its body returns.
        """
        self.reads.update(capabilities)
        missing = [name for name in capabilities if not self.has(name)]
        if missing:
            reason = f"the host did not announce {', '.join(missing)}"
            self.blind.append(reason)
            if threading.current_thread() is threading.main_thread():
                pytest.skip(reason)

    def read(self, capability: str) -> None:
        """Note that the check uses ``capability``; skip it when the host did not announce it.

        Raises:
            pytest.skip.Exception: The host did not announce ``capability``.
        """
        self.need(capability)

    def _guarded(self, operator: OperatorScript | None) -> OperatorScript | None:
        if operator is None:
            return None

        def script(request: Mapping[str, Any], control: Control) -> Answer:
            return operator(request, _GuardedControl(control, self))

        return script

    def _note(self, tool: str, outcome: CallResult) -> None:
        with self._lock:
            if self._segment is not None:
                self._segment.calls.append(
                    CallRecord(tool, outcome.text, outcome.is_error, outcome.disposition)
                )

    def sweep(self) -> Sweep | None:
        """Sweep every surface for the current configuration's values; keep and return it."""
        segment = self._segment
        if segment is None:
            return None
        self._segment = None
        detector = Detector(guarded_values(segment.config.secrets))
        if not detector:
            return None
        visible = visible_surfaces(self.info().capabilities)
        # The sweep reads these surfaces on the check's behalf: they are part of its evidence,
        # kept apart from what the check's body read (a failure of the body alone never rested
        # on them).
        self.swept.update(
            capability
            for surface in visible
            if (capability := SURFACE_CAPABILITIES[surface]) is not None
        )
        result = detector.sweep(
            segment.calls,
            self._inner.observe(),
            scrubbing=scrubbing_of(segment.config),
            visible=visible,
        )
        # A host reached over MCP adds every MCP surface of every message (conformance.mcp_sweep),
        # those searched earlier a step at a time first.
        mcp_sweep = getattr(self._inner, "mcp_sweep", None)
        if mcp_sweep is not None:
            mcp_sweep(detector, result, scrubbing_of(segment.config))
            result.leaks[:0] = segment.messages.leaks
            result.hardening[:0] = segment.messages.hardening
            searched = tuple(self._inner.take_searched())  # type: ignore[attr-defined]
            result.calls.append(("every MCP message of these calls", searched))
        self.sweeps.append(result)
        return result

    def sweep_messages(self) -> list[Finding]:
        """Search the MCP messages since the last search for the current configuration's values
        now, not once the configuration ends, and return the leaks found; the segment's sweep
        reports them with the rest (:meth:`sweep`). A host not reached over MCP has none.

        The model check calls it after each step, so that a value left on an MCP surface fails
        the step that put it there, with a shrunk reproducer.
        """
        segment = self._segment
        mcp_sweep = getattr(self._inner, "mcp_sweep", None)
        if segment is None or mcp_sweep is None:
            return []
        detector = self.detector()
        if not detector:
            return []
        before = len(segment.messages.leaks)
        mcp_sweep(detector, segment.messages, scrubbing_of(segment.config))
        return segment.messages.leaks[before:]

    def detector(self) -> Detector:
        """Return a detector for the current configuration's values."""
        return Detector(guarded_values(self.config.secrets))


# --- the grammar vectors' vault ---------------------------------------------------------------


def vector_vault(mint: Mint, vector_secrets: Sequence[Any]) -> tuple[SecretSpec, ...]:
    """Return the grammar vectors' vault entries, each field a fresh canary.

    Args:
        mint: Where the canaries come from.
        vector_secrets: :data:`conformance.vectors.VECTOR_SECRETS`.
    """
    return tuple(
        make_secret(
            mint,
            secret_id=secret.id,
            website=secret.website,
            notes=secret.has_notes,
            tags=secret.tags,
        )
        for secret in vector_secrets
    )


_ORACLE_RE: Final = re.compile(r"\{\{secret:([^{}]*)\}\}", re.IGNORECASE | re.ASCII)

#: The same, with a marker whose letters case-fold to ``secret`` outside ASCII too (the long s,
#: U+017F): what a host that reads such a marker as one substitutes (decisions R1.3).
_ORACLE_FOLDED_RE: Final = re.compile(r"\{\{secret:([^{}]*)\}\}", re.IGNORECASE)


def substitute_oracle(
    node: Any, secrets_by_id: Mapping[str, SecretSpec], *, folded_markers: bool = False
) -> Any:
    """Return the parsed argument tree with every valid reference replaced by its value.

    The suite's own model of a correct substitution (decisions R1, R4), for argument trees in
    which every candidate is a valid reference.

    Args:
        node: A parsed JSON tree.
        secrets_by_id: The vault, by lower-case id.
        folded_markers: Read a marker spelled with non-ASCII letters that case-fold to
            ``secret`` as a marker, the alternative of decisions R1.3 that reads it so; by
            default it is plain text, the reference host's choice.
    """
    pattern = _ORACLE_FOLDED_RE if folded_markers else _ORACLE_RE

    def replace_one(match: re.Match[str]) -> str:
        secret_id, _, field_name = match.group(1).partition(".")
        return value_of(secrets_by_id[secret_id.lower()], field_name or "password")

    if isinstance(node, str):
        return pattern.sub(replace_one, node)
    if isinstance(node, dict):
        return {
            key: substitute_oracle(child, secrets_by_id, folded_markers=folded_markers)
            for key, child in node.items()
        }
    if isinstance(node, list):
        return [
            substitute_oracle(child, secrets_by_id, folded_markers=folded_markers) for child in node
        ]
    return node
