"""The canary sweep over the MCP wire: every surface decisions R9.3 lists, in every message.

This module owns walking what an MCP server sent during a check's calls (results, JSON-RPC
errors, progress and log notifications, elicitation requests and tool listings) and searching
each agent surface with :meth:`conformance.canary.Detector.find`. Binary content (an image's or
audio's ``data``, a resource's ``blob``) is base64, outside the contract: it is searched for the
hardening forms only. It reports which surfaces it searched. It must never print a value: a
finding names the value's label, the form, the message and the path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from conformance.canary import (
    FORM_REQUIREMENTS,
    MIN_GUARDED_CODE_POINTS,
    Detector,
    Finding,
    Guarded,
    Surface,
    Sweep,
    issued_canaries,
    required_forms,
    strings,
)
from conformance.late import LateReport, run_guarded
from conformance.mcp_tap import FROM_CLIENT, FROM_SERVER, Drained

if TYPE_CHECKING:
    from conformance.canary import Canary

#: The name the late-output barrier reports the tapped MCP session under.
SESSION_STREAM: Final = "MCP session"

#: What a leak on each MCP surface violates (decisions R9.3, R9.6, R9.7; design invariant 1).
MCP_SURFACE_REQUIREMENTS: Final = {
    Surface.MCP_RESULT: ("INV1", "MCP-003"),
    Surface.MCP_ERROR: ("INV1", "MCP-003"),
    Surface.MCP_PROGRESS: ("INV1", "MCP-003"),
    Surface.MCP_LOG: ("INV1", "MCP-004"),
    Surface.MCP_ELICITATION: ("INV1", "MCP-007"),
    Surface.MCP_LISTING: ("INV1", "MCP-010"),
}

#: Surfaces whose text is what the agent reads as a result; a leak names the form's scrub rule.
_RESULT_SURFACES: Final = frozenset({Surface.MCP_RESULT, Surface.MCP_ERROR, Surface.MCP_PROGRESS})

#: The members of a resource link the agent reads (decisions R9.3).
LINK_MEMBERS: Final = ("uri", "name", "title", "description")

#: The members of an elicitation request that carry the approval request's descriptors, where
#: a username may stand (decisions R3.2, R9.6): its message and its requested schema, every
#: string and member name of the schema at any depth. Nowhere else in the request.
DESCRIPTOR_MEMBERS: Final = ("elicitation/message", "elicitation/requestedSchema")


def in_descriptors(path: str) -> bool:
    """Whether ``path`` (as :func:`conformance.canary.strings` names it, from ``elicitation``)
    lies in a member of :data:`DESCRIPTOR_MEMBERS`."""
    return any(path == member or path.startswith(member + "/") for member in DESCRIPTOR_MEMBERS)


@dataclass(slots=True)
class McpSweep:
    """What the MCP sweep found and where it looked.

    Attributes:
        leaks: Required forms on a surface that must hold none.
        hardening: Hardening forms seen (base64 in binary content included): reported only.
        searched: The surfaces searched, each once, in the order first met.
    """

    leaks: list[Finding] = field(default_factory=list)
    hardening: list[Finding] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)


def result_surfaces(result: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """Yield (path, text, binary) for every agent surface of a ``tools/call`` result.

    ``binary`` marks base64 content, searched for hardening forms only.
    """
    content = result.get("content", ())
    for index, item in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(item, Mapping):
            continue
        where = f"content/{index}"
        kind = item.get("type")
        if kind == "text":
            yield f"{where}/text", str(item.get("text", "")), False
        elif kind in ("image", "audio"):
            yield f"{where}/data", str(item.get("data", "")), True
        elif kind == "resource":
            resource = item.get("resource")
            if isinstance(resource, Mapping):
                if "text" in resource:
                    yield f"{where}/resource/text", str(resource["text"]), False
                if "blob" in resource:
                    yield f"{where}/resource/blob", str(resource["blob"]), True
        elif kind == "resource_link":
            for member in LINK_MEMBERS:
                if isinstance(item.get(member), str):
                    yield f"{where}/{member}", str(item[member]), False
    for member in ("structuredContent", "_meta"):
        if member in result:
            for path, text in strings(result[member], member):
                yield path, text, False


class _Walker:
    def __init__(self, detector: Detector, found: McpSweep) -> None:
        self.detector = detector
        self.found = found

    def search(
        self,
        surface: Surface,
        text: str,
        where: str,
        *,
        binary: bool = False,
        allow_usernames: bool = False,
        extra: tuple[str, ...] = (),
    ) -> None:
        if surface.value not in self.found.searched:
            self.found.searched.append(surface.value)
        if not binary:
            for item, form in self.detector.find(text):
                if allow_usernames and item.is_username:
                    continue
                requirements = (*MCP_SURFACE_REQUIREMENTS[surface], *extra)
                if surface in _RESULT_SURFACES:
                    requirements = (*requirements, FORM_REQUIREMENTS[form])
                self.found.leaks.append(
                    Finding(surface, form, item.label, where, tuple(dict.fromkeys(requirements)))
                )
        for item, form in self.detector.find_hardening(text):
            self.found.hardening.append(Finding(surface, form, item.label, where, ()))


def sweep_mcp(
    detector: Detector,
    calls: Sequence[Any],
    log_messages: Iterable[Mapping[str, Any]],
    listings: Iterable[Mapping[str, Any]],
    *,
    scrubbing: bool = True,
) -> McpSweep:
    """Search every MCP surface of every message for every guarded value.

    Args:
        detector: The values to look for.
        calls: :class:`conformance.hosts.mcp.McpCall` records: each call's messages in order.
        log_messages: Every ``notifications/message`` params received, during calls or not.
        listings: Every ``tools/list`` result received.
        scrubbing: Whether ``resultScrubbingEnabled`` was on. Off, a call's result, error and
            progress may hold a value (decisions R5.5, R9.3); log notifications, elicitation
            requests and listings still may not, and leaks there also violate SCRUB-014.

    Returns:
        The leaks, the hardening forms, and the surfaces searched.
    """
    found = McpSweep()
    walk = _Walker(detector, found)
    off = () if scrubbing else ("SCRUB-014",)
    for number, call in enumerate(calls, start=1):
        label = f"call {number} to {call.tool}"
        for index, (kind, payload) in enumerate(call.messages, start=1):
            where = f"{label}, message {index}"
            if kind == "result":
                for path, text, binary in result_surfaces(payload):
                    walk.search(
                        Surface.MCP_RESULT,
                        text,
                        f"{where} {path}",
                        binary=binary or not scrubbing,
                    )
            elif kind == "error":
                walk.search(
                    Surface.MCP_ERROR,
                    str(payload.get("message", "")),
                    f"{where} message",
                    binary=not scrubbing,
                )
                if "data" in payload:
                    for path, text in strings(payload["data"], "data"):
                        walk.search(
                            Surface.MCP_ERROR, text, f"{where} {path}", binary=not scrubbing
                        )
            elif kind == "progress":
                for path, text in strings(payload, "progress"):
                    walk.search(Surface.MCP_PROGRESS, text, f"{where} {path}", binary=not scrubbing)
            elif kind == "elicitation":
                for path, text in strings(payload, "elicitation"):
                    walk.search(
                        Surface.MCP_ELICITATION,
                        text,
                        f"{where} {path}",
                        allow_usernames=in_descriptors(path),
                        extra=off,
                    )
    for number, params in enumerate(log_messages, start=1):
        for path, text in strings(params, f"log notification {number}"):
            walk.search(Surface.MCP_LOG, text, path, extra=off)
    for number, listing in enumerate(listings, start=1):
        for path, text in strings(listing, f"tools/list {number}"):
            walk.search(Surface.MCP_LISTING, text, path, extra=off)
    return found


def merge(sweep: Sweep, found: McpSweep) -> None:
    """Add the MCP sweep's leaks and hardening forms to the check's sweep."""
    sweep.leaks.extend(found.leaks)
    sweep.hardening.extend(found.hardening)


# --- every message of the session (decisions R9.3 v1.2, S1.9) ----------------------------------

#: What a value in a message no earlier list names violates: invariant 1 and the wire's rule.
SESSION_REQUIREMENTS: Final = ("INV1", "MCP-003")

#: Requirements a message not kept whole leaves unjudged, for a check that cites them: every
#: rule the session's surfaces are evidence for (decisions S1.3, S1.9).
SESSION_JUDGES: Final = (
    "INV1",
    "INV1-ECHO",
    "INV1-SHA256",
    "INV1-THROW",
    "MCP-003",
    "MCP-004",
    "MCP-007",
    "MCP-010",
    "SCRUB-014",
)

#: The message members an elicitation request's descriptors may stand in, at any depth.
_ELICITATION_DESCRIPTORS: Final = ("/params/message", "/params/requestedSchema")


@dataclass(slots=True)
class SessionIndex:
    """What the session's requests were, so that a response and a progress token are placed.

    Attributes:
        methods: (session, direction of the request, id) -> the request's method.
        tokens: (session, progress token) of every ``tools/call`` the client sent.
        windows: (session, direction of the request, id) -> the window the request was sent
            in; and (session, progress token) -> that of the ``tools/call`` that gave it.
    """

    methods: dict[tuple[int, str, str], str] = field(default_factory=dict)
    tokens: set[tuple[int, str]] = field(default_factory=set)
    windows: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def learn(self, messages: Iterable[Any]) -> None:
        """Note every request among ``messages`` (:class:`conformance.mcp_tap.Tapped`)."""
        for message in messages:
            value = message.value
            method, ident = value.get("method"), value.get("id")
            if not isinstance(method, str) or ident is None:
                continue
            asked = (message.session, message.direction, json_key(ident))
            self.methods[asked] = method
            self.windows.setdefault(asked, message.window)
            params = value.get("params")
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            if method == "tools/call" and isinstance(meta, Mapping) and "progressToken" in meta:
                token = (message.session, json_key(meta["progressToken"]))
                self.tokens.add(token)
                self.windows.setdefault(token, message.window)

    def window_of(self, message: Any) -> int:
        """Return the window of the call ``message`` belongs to: for a response, or a progress
        notification, that of the request it answers (its result may come after the next
        configuration opened a window); for any other message, the one it came in."""
        value = message.value
        if "method" not in value and "id" in value:
            asker = FROM_CLIENT if message.direction == FROM_SERVER else FROM_SERVER
            key: tuple[Any, ...] = (message.session, asker, json_key(value.get("id")))
            return self.windows.get(key, int(message.window))
        params = value.get("params")
        token = params.get("progressToken") if isinstance(params, Mapping) else None
        if token is not None:
            return self.windows.get((message.session, json_key(token)), int(message.window))
        return int(message.window)

    def answered(self, message: Any) -> str:
        """Return the method of the request ``message`` (a response) answers, or ``""``."""
        asker = FROM_CLIENT if message.direction == FROM_SERVER else FROM_SERVER
        ident = json_key(message.value.get("id"))
        return self.methods.get((message.session, asker, ident), "")


def json_key(value: object) -> str:
    """Return a JSON id or token as one comparable text (``1`` and ``"1"`` stay apart)."""
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True, slots=True)
class Place:
    """One string of a message and how the sweep judges it.

    Attributes:
        surface: Which surface it is.
        path: Where in the message.
        text: The string or member name.
        binary: Base64 binary content: hardening forms only.
        descriptor: In an approval request's descriptors: a username may stand there.
        result: Part of the call's result or progress: it may hold the call's values with
            scrubbing off (decisions R5.5).
        named: A member the earlier lists name: a leak also names the form's scrub rule.
    """

    surface: Surface
    path: str
    text: str
    binary: bool = False
    descriptor: bool = False
    result: bool = False
    named: bool = False


def _in(path: str, members: Iterable[str]) -> bool:
    return any(path == member or path.startswith(member + "/") for member in members)


def places(message: Any, index: SessionIndex) -> Iterator[Place]:
    """Yield every string and member name of ``message`` (a tapped message), judged by where
    it stands (decisions R9.3, R9.6): nothing in a message is left out."""
    value: Mapping[str, Any] = message.value
    method = value.get("method")
    if message.direction == FROM_CLIENT:
        # The suite's own messages: its answers to the server's requests (the username of an
        # elicitation's descriptors may come back in the option the form offered).
        asked = index.answered(message) if method is None else ""
        for path, text in strings(value, ""):
            descriptor = asked == "elicitation/create" and _in(path, ("/result/content",))
            yield Place(Surface.MCP_CLIENT, path, text, descriptor=descriptor)
        return
    answered = index.answered(message) if method is None else ""
    surface, named, binary = Surface.MCP_SESSION, frozenset[str](), frozenset[str]()
    result = False
    if answered == "tools/call" and isinstance(value.get("result"), Mapping):
        surface, result = Surface.MCP_RESULT, True
        surfaces = list(result_surfaces(value["result"]))
        named = frozenset("/result/" + path for path, _, _ in surfaces)
        binary = frozenset("/result/" + path for path, _, is_binary in surfaces if is_binary)
    elif answered == "tools/call" and "error" in value:
        surface, result = Surface.MCP_ERROR, True
    elif answered == "tools/list":
        surface = Surface.MCP_LISTING
    elif method == "notifications/message":
        surface = Surface.MCP_LOG
    elif method == "elicitation/create":
        surface = Surface.MCP_ELICITATION
    elif method == "notifications/progress":
        params = value.get("params")
        token = params.get("progressToken") if isinstance(params, Mapping) else None
        if (message.session, json_key(token)) in index.tokens:
            surface, result = Surface.MCP_PROGRESS, True
    for path, text in strings(value, ""):
        if surface is Surface.MCP_ERROR:
            is_named = _in(path, ("/error/message", "/error/data"))
        elif surface is Surface.MCP_PROGRESS:
            is_named = _in(path, ("/params",))
        else:
            is_named = path in named or _in(path, ("/result/structuredContent", "/result/_meta"))
        yield Place(
            surface,
            path,
            text,
            binary=path in binary,
            descriptor=surface is Surface.MCP_ELICITATION and _in(path, _ELICITATION_DESCRIPTORS),
            result=result,
            named=is_named and surface in _RESULT_SURFACES,
        )


def _requirements(place: Place, form: str, off: tuple[str, ...]) -> tuple[str, ...]:
    if place.surface is Surface.MCP_SESSION:
        base: tuple[str, ...] = SESSION_REQUIREMENTS
    elif place.surface in _RESULT_SURFACES and not place.named:
        base = SESSION_REQUIREMENTS
    else:
        base = MCP_SURFACE_REQUIREMENTS[place.surface]
    extra = (FORM_REQUIREMENTS[form],) if place.named else ()
    return tuple(dict.fromkeys((*base, *extra, *(() if place.result else off))))


@dataclass(slots=True)
class SessionSweep(McpSweep):
    """The session sweep's answer: :class:`McpSweep` and what it could not judge.

    Attributes:
        client: Values found in a message the suite's client sent: a defect of the suite.
        unsearched: A note per kind of message not kept whole (decisions S1.3).
    """

    client: list[Finding] = field(default_factory=list)
    unsearched: list[str] = field(default_factory=list)


def sweep_session(
    detector: Detector,
    messages: Sequence[Any],
    index: SessionIndex,
    *,
    scrubbing: bool = True,
) -> SessionSweep:
    """Search every string and member name of every message for the check's values.

    Args:
        detector: The check's values.
        messages: The window's tapped messages, both directions, in order.
        index: The session's requests; extended with ``messages``'.
        scrubbing: Whether ``resultScrubbingEnabled`` was on. Off, the call's result, its error
            and its own progress may hold a value (decisions R5.5, R9.3); nothing else may,
            and a leak elsewhere also violates SCRUB-014.

    Returns:
        The leaks (one per place, form and value), hardening forms, the suite's own leaks, and
        the surfaces searched.
    """
    index.learn(messages)
    found = SessionSweep()
    off = () if scrubbing else ("SCRUB-014",)
    for message in messages:
        where = f"MCP message {message.number} from the {message.direction}"
        for place in places(message, index):
            if place.surface.value not in found.searched:
                found.searched.append(place.surface.value)
            at = f"{where} at {place.path or '/'}"
            if place.surface is not Surface.MCP_CLIENT:
                for item, form in detector.find_hardening(place.text):
                    found.hardening.append(Finding(place.surface, form, item.label, at, ()))
            if place.binary or (place.result and not scrubbing):
                continue
            for item, form in detector.find(place.text):
                if place.descriptor and item.is_username:
                    continue
                finding = Finding(place.surface, form, item.label, at, ())
                if place.surface is Surface.MCP_CLIENT:
                    found.client.append(finding)
                    continue
                requirements = _requirements(place, form, off)
                found.leaks.append(Finding(place.surface, form, item.label, at, requirements))
    return found


class RunForms:
    """Every required form of many values, found in one pass over a text.

    A run's canaries are thousands; testing each form against each string would be slow, so
    the forms are indexed by their first :data:`MIN_GUARDED_CODE_POINTS` characters (every form
    of a guarded value is at least that long) and each text is read once.
    """

    def __init__(self, guarded: Iterable[Guarded] = ()) -> None:
        self._index: dict[str, list[tuple[Guarded, str, str]]] = {}
        self.add(guarded)

    def add(self, guarded: Iterable[Guarded]) -> None:
        """Index every required form of ``guarded`` too: a run's forms are indexed once each,
        as its canaries are issued, never again per check."""
        for item in guarded:
            if len(item.value) < MIN_GUARDED_CODE_POINTS:
                continue
            for name, form in required_forms(item.value).items():
                head = form[:MIN_GUARDED_CODE_POINTS]
                self._index.setdefault(head, []).append((item, name, form))

    def __bool__(self) -> bool:
        return bool(self._index)

    def find(self, text: str, exclude: frozenset[str] = frozenset()) -> list[tuple[Guarded, str]]:
        """Return (value, form name) for every form of every value but ``exclude`` in
        ``text``, each once."""
        found: dict[tuple[str, str], tuple[Guarded, str]] = {}
        index = self._index
        width = MIN_GUARDED_CODE_POINTS
        for start in range(len(text) - width + 1):
            candidates = index.get(text[start : start + width])
            if candidates is None:
                continue
            for item, name, form in candidates:
                if item.value not in exclude and text.startswith(form, start):
                    found.setdefault((item.label, name), (item, name))
        return list(found.values())


def late_search(
    messages: Sequence[Any],
    index: SessionIndex,
    forms: RunForms,
    *,
    allowed: Mapping[int, frozenset[str]] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Search tapped messages for every form in ``forms``: output no check's sweep judged.

    Args:
        messages: Tapped messages, both directions.
        index: The session's requests; extended with ``messages``'.
        forms: The values to look for (a run's canaries).
        allowed: window -> the values a call's result of that window may hold (its own, with
            scrubbing off: decisions R5.5); ``None``: none may.
        exclude: Values not looked for (the check's own, which its sweep judged).

    Returns:
        One finding per message place, value and form, naming the requirements as the
        check's sweep would; a value in a message the client sent names none (the suite's
        defect, never the host's).
    """
    index.learn(messages)
    found: list[Finding] = []
    for message in messages:
        # A result may hold the values of its own call's configuration (scrubbing off), even
        # when it arrives after the next configuration opened another window.
        may_hold = (allowed or {}).get(index.window_of(message), frozenset())
        where = f"MCP message {message.number} from the {message.direction}"
        for place in places(message, index):
            if place.binary:
                continue
            for item, form in forms.find(place.text, exclude):
                if place.descriptor and item.is_username:
                    continue
                # A value a configuration holds in an awkward shape (a line break after it,
                # a decomposed letter) holds the canary within it: any held value counts.
                if place.result and any(item.value in held for held in may_hold):
                    continue
                requirements = (
                    () if place.surface is Surface.MCP_CLIENT else _requirements(place, form, ())
                )
                found.append(
                    Finding(
                        place.surface,
                        form,
                        item.label,
                        f"{where} at {place.path or '/'}",
                        requirements,
                    )
                )
    return found


class SessionLate:
    """What the MCP session sent that no check's sweep judged, for the end-of-run barrier.

    At each sweep the messages of earlier windows are searched for every canary of the run,
    and the check's own window for every canary but the check's; the findings are kept until
    :meth:`report`, which searches what came after the last sweep (decisions R9.3, S1.9). The
    run's forms are indexed as its canaries are issued, each once (:class:`RunForms`).

    Attributes:
        index: The session's requests (:class:`SessionIndex`).
        may_hold: window -> the values its calls' results may hold (scrubbing off, decisions
            R5.5).
    """

    def __init__(self) -> None:
        self.index = SessionIndex()
        self.may_hold: dict[int, frozenset[str]] = {}
        self._kept = LateReport()
        self._forms = RunForms()
        self._known = 0

    def search(self, messages: Sequence[Any], exclude: frozenset[str] = frozenset()) -> None:
        """Search ``messages`` for every canary issued so far but ``exclude``; keep the
        findings for :meth:`report`."""
        fresh = issued_canaries(self._known)
        self._known += len(fresh)
        self._forms.add(run_guarded(fresh))
        if messages and self._forms:
            self._kept.findings.extend(
                late_search(
                    messages, self.index, self._forms, allowed=self.may_hold, exclude=exclude
                )
            )

    def unsearched(self, notes: Iterable[str]) -> None:
        """Keep ``notes`` on messages of earlier windows not kept whole (decisions S1.3)."""
        self._kept.unsearched.extend((SESSION_STREAM, note) for note in notes)

    def report(self, drained: Drained, canaries: Sequence[Canary]) -> LateReport:
        """Return the barrier's report on the session: ``drained`` (what came after the last
        sweep) searched for every form of ``canaries``, with what the sweeps kept."""
        report = LateReport()
        forms = RunForms(run_guarded(canaries))
        if forms and drained.messages:
            report.findings.extend(
                late_search(drained.messages, self.index, forms, allowed=self.may_hold)
            )
        report.extend(self._kept)
        self._kept = LateReport()
        report.searched.append(SESSION_STREAM)
        report.unsearched.extend((SESSION_STREAM, note) for note in drained.unsearched())
        return report
