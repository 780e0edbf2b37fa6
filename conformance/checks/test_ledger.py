"""Checks of the operation ledger and the host log (decisions R6.2 to R6.6).

The ledger is JSON Lines with the design's fields; ``secretRefs`` lists names once each in
order of first use; ``sanitizedArgs`` comes from the agent's own arguments; every call that
reaches the pre-pass is recorded, refusals included, with SECRET_FORBIDDEN and
SECRET_UNRESOLVED as dispositions of their own; malformed candidates are redacted. The host log
is swept for values by the canary detector after every check.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from conformance.canary import Kind, Mint
from conformance.host import Answer, HandlerKind
from conformance.outcomes import not_applicable, require, should, unchecked
from conformance.scenario import (
    ECHO,
    LEDGER_FIELDS,
    RECORDER,
    THROWER,
    RecordingHost,
    answering,
    args_json,
    config,
    ledger_records,
    make_secret,
    name_of,
    new_id,
    ref,
    tool,
)


@pytest.mark.req("LEDG-001")
def test_records_are_json_lines_with_every_field(host: RecordingHost, mint: Mint) -> None:
    """Each ledger line is one JSON object with every field of the design."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    host.invoke(THROWER.name, args_json({"x": "plain"}))
    host.invoke(RECORDER.name, args_json({"x": "{{secret:bad}}"}))
    data = host.observe().ledger_bytes
    lines = data.decode("utf-8").splitlines()
    require(data.endswith(b"\n"), "LEDG-001", "the ledger's last line has no newline")
    require(len(lines) == 3, "LEDG-001", f"{len(lines)} ledger lines for three calls")
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        require(isinstance(record, dict), "LEDG-001", f"ledger line {number} is not a JSON object")
        assert isinstance(record, dict)
        missing = [name for name in LEDGER_FIELDS if name not in record]
        require(not missing, "LEDG-001", f"ledger line {number} lacks {missing}")
        # durationMs is a JSON number; that it counts whole milliseconds is LEDG-021's SHOULD.
        duration = record["durationMs"]
        require(
            isinstance(record["secretRefs"], list)
            and isinstance(duration, int | float)
            and not isinstance(duration, bool)
            and isinstance(record["isError"], bool),
            "LEDG-001",
            f"ledger line {number} has a field of the wrong type",
        )


@pytest.mark.req("LEDG-002")
def test_secret_refs_once_in_order(host: RecordingHost, mint: Mint) -> None:
    """secretRefs lists each reference once, in order of first use, by name."""
    first, second = make_secret(mint), make_secret(mint)
    host.reset(config([first, second]))
    args = args_json(
        {
            "a": ref(second.id.upper(), "username"),
            "b": [ref(first.id), ref(second.id, "username")],
            "c": ref(first.id, "password") + ref(first.id, "notes"),
        }
    )
    host.invoke(RECORDER.name, args)
    refs = ledger_records(host.observe())[-1].get("secretRefs")
    expected = [name_of(second.id, "username"), name_of(first.id), name_of(first.id, "notes")]
    require(refs == expected, "LEDG-002", "secretRefs is not each name once in order of use")


@pytest.mark.req("LEDG-004")
@pytest.mark.parametrize("kind", [Kind.PLAIN, Kind.SPECIAL], ids=["plain", "special"])
def test_sanitized_args_are_the_agents(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """sanitizedArgs is built from the agent's arguments, references intact."""
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    args = args_json({"path": ".env", "content": "KEY=" + ref(secret.id)})
    host.invoke(ECHO.name, args)
    sanitized = ledger_records(host.observe())[-1].get("sanitizedArgs")
    text = sanitized if isinstance(sanitized, str) else json.dumps(sanitized)
    require(ref(secret.id) in text, "LEDG-004", "sanitizedArgs does not keep the reference")


_REFUSALS: dict[str, tuple[dict[str, Any], str | None, str]] = {
    "malformed": ({}, '{"x":"{{secret:nope}}"}', "SECRET_UNRESOLVED"),
    "feature-off": ({"secretReferencesEnabled": False}, None, "SECRET_FORBIDDEN"),
    "bearing-deny": ({"secretBearingCalls": "DENY"}, None, "SECRET_FORBIDDEN"),
    "tool-deny": ({"tools": {RECORDER.name: "DENY"}}, None, "POLICY_DENIED"),
    "unknown-id": ({}, "unknown", "SECRET_UNRESOLVED"),
}


@pytest.mark.req("LEDG-005", "LEDG-008")
@pytest.mark.parametrize("case", list(_REFUSALS))
def test_refusals_recorded(host: RecordingHost, mint: Mint, case: str) -> None:
    """A call refused in the pre-pass is recorded, with its own disposition."""
    policy, args, disposition = _REFUSALS[case]
    secret = make_secret(mint)
    host.reset(config([secret], policy=policy or None))
    if args is None:
        args = args_json({"x": ref(secret.id)})
    elif args == "unknown":
        args = args_json({"x": ref(new_id())})
    outcome = host.invoke(RECORDER.name, args)
    records = ledger_records(host.observe())
    require(len(records) == 1, "LEDG-005", f"a {case} refusal was not recorded once")
    require(
        records[0].get("approvalDisposition") == disposition == outcome.disposition,
        "LEDG-008",
        f"a {case} refusal is recorded as {records[0].get('approvalDisposition')}",
    )


@pytest.mark.req("LEDG-005")
@pytest.mark.parametrize(
    "answer", [Answer.APPROVE, Answer.DENY, Answer.NONE], ids=["approve", "deny", "timeout"]
)
def test_prompted_calls_recorded(host: RecordingHost, mint: Mint, answer: Answer) -> None:
    """Approved, denied and timed-out secret calls are each recorded once."""
    secret = make_secret(mint)
    # Only the unanswered call should time out: an answer may take a while to travel.
    host.reset(config([secret], approval_timeout_s=0.2 if answer is Answer.NONE else 30.0))
    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), answering(answer))
    records = ledger_records(host.observe())
    require(len(records) == 1, "LEDG-005", f"a call answered {answer.value} was not recorded once")


#: Malformed candidates, and whether text follows them, as the redaction checks write them.
_MALFORMED = [
    ("{{hunter2}}", ""),
    ("{{hunter2}}", "tail-kept"),
    ("zz-canary-body", "tail-kept"),
    ("6f1d2c3e.totp-canary", ""),
]
_MALFORMED_IDS = ["braced-body", "braced-body-then-text", "text-after", "bad-field"]


def _malformed_args(body: str, tail: str) -> str:
    return args_json({"x": "head " + "{{secret:" + body + "}}" + tail})


def _judge_redaction(sanitized: str, body: str, tail: str, where: str) -> None:
    """Report, as LEDG-007 (a SHOULD), how ``sanitized`` kept the candidate ``body``."""
    hidden = body.strip("{}").split(".")[-1]
    should(hidden not in sanitized, "LEDG-007", f"sanitizedArgs keeps a malformed body ({where})")
    should(
        "{{secret:[REDACTED]}}" in sanitized,
        "LEDG-007",
        f"the candidate is not redacted as ruled ({where})",
    )
    if tail:
        should(
            tail in sanitized,
            "LEDG-007",
            f"the text after a redacted candidate was lost ({where})",
        )
    try:
        member = json.loads(sanitized).get("x")
    except (ValueError, AttributeError):
        member = None  # not the agent's JSON object any more: nothing exact to compare
    if isinstance(member, str):
        should(
            member == "head {{secret:[REDACTED]}}" + tail,
            "LEDG-007",
            "the redacted member is not exactly the text before, the redaction, and the text "
            f"after ({len(member)} characters, {where})",
        )


@pytest.mark.req("LEDG-007")
@pytest.mark.parametrize(("body", "tail"), _MALFORMED, ids=_MALFORMED_IDS)
def test_malformed_redacted(host: RecordingHost, mint: Mint, body: str, tail: str) -> None:
    """A malformed candidate is redacted to {{secret:[REDACTED]}}, both its closing braces
    included, and the text before and after it is kept exactly."""
    host.reset(config([make_secret(mint)]))
    host.invoke(RECORDER.name, _malformed_args(body, tail))
    sanitized = str(ledger_records(host.observe())[-1].get("sanitizedArgs", ""))
    _judge_redaction(sanitized, body, tail, "a refused call")


#: A candidate closed by one brace, then text holding a brace of its own: the redaction ends at
#: the first brace that closes the candidate, and the brace after the text is the agent's.
_ONE_BRACE_BODY = "zz-canary-body"
_ONE_BRACE_TEXT = " middle} tail-kept"


@pytest.mark.req("LEDG-007")
def test_redaction_ends_at_the_first_closing_brace(host: RecordingHost, mint: Mint) -> None:
    """A candidate closed by a single brace is redacted up to that brace: a later brace in the
    text after it is not the candidate's, and the text up to it and past it is kept exactly. A
    host that counts the candidate's braces from one, or closes at the last brace of the
    string, hides the agent's text."""
    host.reset(config([make_secret(mint)]))
    member = "head {{secret:" + _ONE_BRACE_BODY + "}" + _ONE_BRACE_TEXT
    host.invoke(RECORDER.name, args_json({"x": member}))
    sanitized = str(ledger_records(host.observe())[-1].get("sanitizedArgs", ""))
    _judge_redaction(sanitized, _ONE_BRACE_BODY, _ONE_BRACE_TEXT, "a candidate closed by one brace")


@pytest.mark.req("LEDG-007")
@pytest.mark.parametrize(("body", "tail"), _MALFORMED, ids=_MALFORMED_IDS)
@pytest.mark.parametrize("stop", ["kill-switch", "rbac"])
def test_malformed_redacted_on_withheld_calls(
    host: RecordingHost, mint: Mint, stop: str, body: str, tail: str
) -> None:
    """A call withheld before the reference pre-pass (the kill switch, RBAC) never reaches the
    host's scan for markers; when the host records it (decisions R6: either is allowed), its
    sanitizedArgs are redacted all the same. A host that does not record such calls has nothing
    here to judge (LEDG-006)."""
    if stop == "kill-switch":
        host.need("control.kill")
        host.reset(config([make_secret(mint)], tools=(RECORDER,)))
        host.control().kill(RECORDER.name)
        host.invoke(RECORDER.name, _malformed_args(body, tail))
    else:
        guarded = tool("guarded", HandlerKind.RECORDER, permission="tool.guarded")
        host.reset(config([make_secret(mint)], tools=(guarded,)))
        host.invoke(guarded.name, _malformed_args(body, tail))
    records = ledger_records(host.observe())
    control = "the kill switch" if stop == "kill-switch" else "RBAC"
    if not records:
        not_applicable(f"the host records no call {control} withholds (LEDG-006 allows it)")
    sanitized = str(records[-1].get("sanitizedArgs", ""))
    _judge_redaction(sanitized, body, tail, f"a call {control} withheld")


@pytest.mark.req("LOG-001")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_log_holds_no_value(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """The host log, at every level, holds no value after approved, failed and refused calls."""
    host.need("observe.log")
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    args = args_json({"x": ref(secret.id), "y": ref(secret.id, "username")})
    host.invoke(ECHO.name, args)
    host.invoke(THROWER.name, args)
    host.invoke(ECHO.name, args, answering(Answer.DENY))
    detector = host.detector()
    leaked = [
        record.level for record in host.observe().log_records if detector.find(record.message)
    ]
    require(not leaked, "LOG-001", f"host log records at {sorted(set(leaked))} hold a value")


#: The execution timeout of the duration check, in seconds, and how long its handler would run:
#: long enough that a duration of 0 cannot be rounding, short enough to keep the check quick.
_EXECUTION_TIMEOUT_S = 0.4
_HANDLER_SLEEP_S = 3.0

#: How far a recorded durationMs may pass the time the suite's invoke took (milliseconds): a
#: host's clock may tick coarser than the suite's, but a call is never longer than its invoke.
_DURATION_SLACK_MS = 100


@pytest.mark.req("LEDG-021")
def test_duration_counts_the_call(host: RecordingHost, mint: Mint) -> None:
    """A call its tool held until the execution timeout records a durationMs of at least half
    that timeout and no more than the invoke took: the field measures the call, it is not a
    constant nor another clock's reading."""
    slow = tool("slow", HandlerKind.TIMEOUT, seconds=_HANDLER_SLEEP_S)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(slow,), execution_timeout_s=_EXECUTION_TIMEOUT_S))
    started = time.monotonic()
    outcome = host.invoke(slow.name, args_json({"x": ref(secret.id)}))
    # The call cannot have taken longer than the invoke that ran it; the slack covers another
    # clock's granularity and rounding, not a constant added to every duration.
    ceiling = int((time.monotonic() - started) * 1000) + _DURATION_SLACK_MS
    records = ledger_records(host.observe())
    if not outcome.is_error or len(records) != 1:
        # The call did not end as the timeout ends it, or left no single record to read: other
        # checks judge those; what durationMs says of this call cannot be read.
        unchecked("LEDG-021", "the held call did not end failed with one ledger record")
        return
    duration = records[0].get("durationMs")
    floor = int(_EXECUTION_TIMEOUT_S * 1000 / 2)
    should(
        isinstance(duration, int) and duration >= floor,
        "LEDG-021",
        f"a call held for the {_EXECUTION_TIMEOUT_S * 1000:.0f} ms execution timeout recorded "
        f"durationMs {duration!r}, under {floor}",
    )
    should(
        isinstance(duration, int) and duration <= ceiling,
        "LEDG-021",
        f"a call that took under {ceiling} ms to invoke recorded durationMs {duration!r}",
    )
