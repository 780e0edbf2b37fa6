"""The properties every fuzzer checks, written once for Hypothesis and atheris alike.

This module owns the checks (plain functions that raise ``AssertionError`` on a violation) and
their Hypothesis forms: each ``*_property`` is a ``@given`` test that ``tests/fuzz`` runs under
the loaded settings profile and that an atheris target drives through
``.hypothesis.fuzz_one_input``. A check compares the reference host with the ground truth the
strategies planted or with the naive oracles; it must never print a value: messages name
references, offsets and lengths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_impl as host
from fuzz import rig as rig_module
from fuzz.oracles import naive_scrub, own_forms, own_scan, surviving_forms
from fuzz.strategies import (
    ArgCase,
    ScrubCase,
    arbitrary_text,
    argument_cases,
    carries_marker,
    expected_value,
    ordered,
    own_unescape,
    scrub_cases,
    value_text,
)
from reference_impl import (
    MALFORMED_PREFIX,
    NOT_OBJECT_MESSAGE,
    REASON_BAD_FIELD,
    REASON_BAD_ID,
    REASON_KEY,
    REASON_UNTERMINATED,
    Disposition,
    ParsedArguments,
    Reference,
    Refusal,
    SecretValue,
)

#: The only outcomes a parse may have besides success (decisions R2.2, R1.8).
REASONS: Final = (REASON_BAD_ID, REASON_BAD_FIELD, REASON_UNTERMINATED, REASON_KEY)
_LOCATED_RE: Final = re.compile(
    re.escape(MALFORMED_PREFIX) + r" at (?P<pointer>(?:/[^/]*)*) offset (?P<offset>\d+) "
    r"length (?P<length>\d+): (?P<reason>.*)\Z",
    re.DOTALL,
)
_KIND_REASON: Final = {
    "id": REASON_BAD_ID,
    "field": REASON_BAD_FIELD,
    "unterminated": REASON_UNTERMINATED,
}

#: Settings for properties driven by atheris: no example database, no deadline, no health check.
FUZZ_SETTINGS: Final = settings(
    database=None, deadline=None, suppress_health_check=list(HealthCheck)
)


def check_documented(outcome: ParsedArguments | Refusal) -> None:
    """Check that a parse ended in success or in one of the documented refusals."""
    if isinstance(outcome, ParsedArguments):
        return
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED, (
        "a parse refusal is SECRET_UNRESOLVED"
    )
    if outcome.message == NOT_OBJECT_MESSAGE:
        return
    located = _LOCATED_RE.match(outcome.message)
    assert located is not None, "a malformed-reference message has the located form"
    assert located["reason"] in REASONS, "the reason is one of the four static reasons"


# --- parse ----------------------------------------------------------------------------------


def check_parse(case: ArgCase) -> None:
    """Every planted reference is found with its identity; every malformed one is refused with
    its reason, located, and with none of its text; text with no marker is never refused."""
    marker = host.has_marker(case.raw)
    assert carries_marker(case.raw) == case.marker, "strategy self-check: planted markers"
    assert marker or not case.marker, "the scan missed a planted marker (a false 'no')"
    if not marker:
        return  # the registry passes such arguments through unparsed
    outcome = host.parse_arguments(case.raw)
    check_documented(outcome)
    if case.shape != "object":
        if case.marker:
            assert isinstance(outcome, Refusal), "non-object arguments with a marker are refused"
            assert outcome.message == NOT_OBJECT_MESSAGE, "the non-object refusal wins"
        return
    if case.problem is None:
        assert isinstance(outcome, ParsedArguments), "no malformed candidate, yet refused"
        found = [ref.name for ref in outcome.references]
        planted = [ref.name for ref in case.references]
        assert found == planted, f"references {found} differ from those planted {planted}"
        return
    assert isinstance(outcome, Refusal), f"the malformed candidate {case.problem} was accepted"
    problem = case.problem
    expected = (
        f"{MALFORMED_PREFIX} at {problem.pointer} offset {problem.offset} "
        f"length {problem.length}: {problem.reason}"
    )
    assert outcome.message == expected, f"refusal {outcome.reason!r} does not locate {problem}"
    without_pointer = outcome.message.replace(problem.pointer, "")
    for canary in case.canaries:
        assert canary not in without_pointer, "a refusal quotes a malformed candidate's body"


def check_text(text: str) -> None:
    """On arbitrary text: the scan never says a false 'no', a parse ends only in documented
    outcomes, text with no marker is never refused, and one string scans as by hand."""
    check_raw_text(text)
    check_scan(text)


def check_raw_text(text: str) -> None:
    """Arbitrary argument text: no false 'no' from the scan, documented outcomes only, and no
    refusal without a marker."""
    marker = carries_marker(text)
    flagged = host.has_marker(text)
    assert flagged or not marker, "the scan missed a marker (a false 'no')"
    if flagged:
        outcome = host.parse_arguments(text)
        check_documented(outcome)
        if not marker:
            assert not isinstance(outcome, Refusal), "text with no marker was refused"


def check_scan(text: str) -> None:
    """One decoded string: the host's scan agrees with the hand-written scan (R1.1 to R1.4)."""
    found, bad = host.scan_string(text)
    want_found, want_bad = own_scan(text)
    got = [(o.reference, o.start, o.end) for o in found]
    if got != want_found:
        names = [(ref.name, start, end) for ref, start, end in got]
        want = [(ref.name, start, end) for ref, start, end in want_found]
        raise AssertionError(f"references {names} differ from the hand scan's {want}")
    if want_bad is None:
        assert bad is None, (
            f"a malformed candidate reported at offset {bad and bad.offset} is valid"
        )
        return
    assert bad is not None, f"the malformed candidate at offset {want_bad[0]} was not reported"
    offset, length, kind = want_bad
    assert (bad.offset, bad.length, bad.reason) == (offset, length, _KIND_REASON[kind]), (
        f"candidate at {bad.offset}+{bad.length} ({bad.reason}) differs from "
        f"{offset}+{length} ({_KIND_REASON[kind]})"
    )


# --- substitute -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SubstCase:
    """Arguments without malformed candidates, and a value for each of their references."""

    case: ArgCase
    values: tuple[str, ...]

    def __repr__(self) -> str:
        return f"SubstCase({self.case!r}, value lengths={[len(v) for v in self.values]})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def subst_cases(draw: st.DrawFn) -> SubstCase:
    """Draw a case with references only, and a value (any Unicode) for each reference."""
    case = draw(argument_cases(malformed=False, objects_only=True))
    values = draw(
        st.lists(value_text, min_size=len(case.references), max_size=len(case.references))
    )
    return SubstCase(case, tuple(values))


def check_substitute(subst: SubstCase) -> None:
    """All or nothing; no reference text survives; raw and per-key views agree; with no
    reference, the arguments are kept byte for byte."""
    case = subst.case
    outcome = host.parse_arguments(case.raw)
    assert isinstance(outcome, ParsedArguments), "arguments without malformed candidates refused"
    pairs = [
        (reference, SecretValue(value))
        for reference, value in zip(case.references, subst.values, strict=True)
    ]
    if pairs:
        try:
            host.substitute(outcome, pairs[1:])
        except KeyError:
            pass
        else:
            raise AssertionError("substitution with a value missing did not fail as a whole")
    arguments = host.substitute(outcome, pairs)
    if not case.references:
        assert arguments.raw == case.raw, "arguments without references were rewritten"
        return
    values = dict(zip(case.references, subst.values, strict=True))
    decoded = rig_module.decoded(arguments.raw)
    want = expected_value(case.template, values)
    assert ordered(decoded) == want, "the substituted tree differs from the planted one"
    view = arguments.view()
    assert ordered(view) == want, "the per-key view differs from the planted tree"
    for key in view:
        assert arguments.get(key) == view[key], "the per-key view disagrees with itself"


# --- scrub ----------------------------------------------------------------------------------


def check_scrub(case: ScrubCase) -> None:
    """No form of a value of 8 or more code points survives, and the scrubber matches the
    leftmost-longest oracle exactly."""
    for reference, value in case.resolved:
        assert host.forms(value) == own_forms(value), f"forms of {reference.name} differ from R5.2"
    scrubber = host.Scrubber((reference, SecretValue(value)) for reference, value in case.resolved)
    scrubbed = scrubber.scrub(case.text)
    left = surviving_forms(case.resolved, scrubbed)
    assert not left, f"forms survived scrubbing: {left}"
    want = naive_scrub(case.resolved, case.text)
    assert scrubbed == want, (
        f"scrubbed text ({len(scrubbed)} characters) differs from the leftmost-longest "
        f"oracle ({len(want)} characters)"
    )


# --- sanitizer ------------------------------------------------------------------------------


class _Members(list[tuple[str, Any]]):
    """An object decoded as its members, in order, repeated keys and all."""


def every_string(raw: str) -> list[str] | None:
    """Return every key and string value of JSON text, repeated keys included.

    Redaction can make two keys equal (two malformed keys both read ``{{secret:[REDACTED]}}``),
    and a dict keeps only the last of them; decoding each object as its list of members keeps
    every member's text.

    Returns:
        The strings in document order, or ``None`` when ``raw`` is not JSON.
    """
    try:
        tree = json.loads(raw, object_pairs_hook=_Members)
    except (ValueError, RecursionError):
        return None
    found: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, _Members):
            for key, value in reversed(item):
                stack.extend((value, key))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def check_sanitize(case: ArgCase) -> None:
    """No malformed candidate's body survives sanitizing, and valid references stay legible.

    The sanitized text is read raw, ``\\u``-unescaped, and decoded member by member: keys
    that redaction made equal are all read, since the sanitizer keeps every member.
    """
    sanitized = host.sanitize_arguments(case.raw, limit=1 << 30)
    readings = [sanitized, own_unescape(sanitized)]
    decoded = every_string(sanitized)
    if decoded is not None:
        readings.append("\n".join(decoded))
    for canary in case.canaries:
        assert all(canary not in reading for reading in readings), (
            f"a malformed body of {len(canary)} characters survived sanitizing"
        )
    if case.shape == "object" and decoded is not None:
        for spelling in case.spellings:
            assert spelling in readings[-1], "a valid reference was not kept legible"


# --- the whole path -------------------------------------------------------------------------

_RIG: rig_module.Rig | None = None


def shared_rig() -> rig_module.Rig:
    """Return the process's fuzzing registry (one, so worker threads are reused)."""
    global _RIG
    if _RIG is None:
        _RIG = rig_module.build_rig()
    return _RIG


def _typed_a_value(raw: str) -> bool:
    texts = (raw, own_unescape(raw))
    return any(
        form in text
        for _, value in rig_module.canary_values()
        for form in own_forms(value)
        for text in texts
    )


def check_pipeline_text(raw: str, tool: str = "echo") -> Disposition:
    """Run one call through the whole governed path and check every surface.

    No exception escapes ``invoke``; a refused or unprompted-for call never reaches the
    handler; a call without a marker reaches it byte for byte with no vault read; and no form
    of any vault value appears in the result, the ledger, the approval requests or the log.

    Returns:
        The call's disposition.
    """
    rig = shared_rig()
    rig.clear()
    outcome = rig.registry.invoke(tool, raw)
    ran = bool(rig.receipts)
    if outcome.refusal is not None or outcome.disposition in (
        Disposition.DENIED,
        Disposition.TIMEOUT,
    ):
        assert not ran, f"the handler ran for a call ended as {outcome.disposition.value}"
    if not carries_marker(raw):
        assert outcome.disposition is Disposition.ALLOWED, (
            "a call without a marker was not let through"
        )
        assert rig.receipts == [raw], "a call without a marker did not arrive byte for byte"
        assert not rig.vault.reads, "a call without a marker read the vault"
    assert len(rig.ledger.records) == 1, "the call was not recorded exactly once"
    if not _typed_a_value(raw):
        leaks = rig.leaks(outcome.text)
        assert not leaks, f"values leaked: {leaks}"
    return outcome.disposition


def check_pipeline(case: ArgCase) -> None:
    """Run a generated call through the governed path and compare it with the ground truth."""
    rig = shared_rig()
    disposition = check_pipeline_text(case.raw)
    known = set(rig_module.CANARIES)
    if not case.marker:
        return
    if case.shape != "object" or case.problem is not None:
        assert disposition is Disposition.SECRET_UNRESOLVED, "a malformed call was not refused"
        return
    if not case.references:
        return
    if any(reference.id not in known for reference in case.references):
        assert disposition is Disposition.SECRET_UNRESOLVED, "an unknown id was not refused"
        return
    assert disposition is Disposition.APPROVED_ONCE, "a resolvable call was not approved once"
    values = dict(rig_module.canary_values())
    received = rig_module.decoded(rig.receipts[0])
    assert ordered(received) == expected_value(case.template, values), (
        "the handler did not receive the planted tree with every value substituted"
    )


# --- Hypothesis forms -----------------------------------------------------------------------


def _given(strategy: st.SearchStrategy[Any], check: Callable[[Any], object]) -> Any:
    def run(case: Any) -> None:
        check(case)

    run.__name__ = check.__name__.replace("check_", "") + "_property"
    run.__qualname__ = run.__name__
    return given(strategy)(run)


#: Each property's strategy and check; :func:`prop` builds a fresh Hypothesis test from them.
PROPERTIES: Final[dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], object]]]] = {
    "parse": (argument_cases(), check_parse),
    "text": (arbitrary_text, check_text),
    "substitute": (subst_cases(), check_substitute),
    "scrub": (scrub_cases(), check_scrub),
    "sanitize": (argument_cases(), check_sanitize),
    "pipeline": (argument_cases(), check_pipeline),
}


def prop(name: str, with_settings: settings | None = None) -> Any:
    """Return a fresh Hypothesis test of the named property, under ``with_settings`` if given.

    A fresh test per call keeps settings applied by one caller (a planted-bug test, a fuzz
    target) from leaking into another.
    """
    strategy, check = PROPERTIES[name]
    test = _given(strategy, check)
    return with_settings(test) if with_settings is not None else test


def fuzz_one_input(name: str) -> Callable[[bytes], object]:
    """Return the named property's ``fuzz_one_input``, for an atheris target."""
    test = prop(name, FUZZ_SETTINGS)
    one: Callable[[bytes], object] = test.hypothesis.fuzz_one_input
    return one


__all__ = [
    "PROPERTIES",
    "Reference",
    "SubstCase",
    "check_parse",
    "check_pipeline",
    "check_pipeline_text",
    "check_sanitize",
    "check_scan",
    "check_scrub",
    "check_substitute",
    "check_text",
    "every_string",
    "fuzz_one_input",
    "prop",
    "shared_rig",
    "subst_cases",
]
