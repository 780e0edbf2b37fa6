"""Checks of invariant 1 (non-disclosure) with the adversarial handlers, and invariant 7.

The echo handler returns its raw arguments and forms a to d of every value; the SHA-256
handler returns each value's hash; the thrower raises with every value in its message. Each is
run over canary shapes, fields and policies (scrubbing on and off), and the plugin's canary
sweep then searches every surface. Invariant 7 is checked by timing adversarial inputs of two
sizes: linear work grows with the input, quadratic work with its square.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import pytest

from conformance.canary import Kind, Mint, required_forms
from conformance.host import CallResult
from conformance.outcomes import require, unchecked
from conformance.scenario import (
    ECHO,
    SHA256,
    THROWER,
    RecordingHost,
    args_json,
    config,
    make_secret,
    name_of,
    placeholder,
    ref,
    value_of,
)
from conformance.timing import growth_ratio
from conformance.via import INPROCESS

FIELDS = ("password", "username", "notes")
KINDS = tuple(Kind)
POLICIES = {
    "default": None,
    "scrubbing-off": {"resultScrubbingEnabled": False},
    "explicit-ask": {"secretBearingCalls": "ASK", "secretReferencesEnabled": True},
}


def _two_secrets(mint: Mint, kind: Kind) -> tuple[Any, Any]:
    return make_secret(mint, kind=kind), make_secret(mint, kind=kind)


@pytest.mark.req("INV1", "INV1-ECHO", "SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006")
@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
@pytest.mark.parametrize("field_name", FIELDS)
@pytest.mark.parametrize("kind", KINDS, ids=[kind.value for kind in KINDS])
def test_echo_leaks_nothing(
    host: RecordingHost, mint: Mint, kind: Kind, field_name: str, policy: str
) -> None:
    """An echo of raw arguments and every form of every value leaks to no surface."""
    first, second = _two_secrets(mint, kind)
    host.reset(config([first, second], policy=POLICIES[policy]))
    args = args_json(
        {
            "a": ref(first.id, field_name),
            "nested": {"list": ["x " + ref(second.id, field_name) + " y", 1.5, None]},
            "again": "prefix-" + ref(first.id.upper(), field_name),
        }
    )
    outcome = host.invoke(ECHO.name, args)
    require(not outcome.is_error, "INV1-ECHO", f"the echo call ended {outcome.disposition}")
    if POLICIES[policy] is None or policy == "explicit-ask":
        require(
            placeholder(first.id, field_name) in outcome.text,
            "SCRUB-007",
            "the scrubbed result has no [secret:<id>.<field>] placeholder",
        )
    else:
        require(
            value_of(first, field_name) in outcome.text,
            "SCRUB-012",
            "with resultScrubbingEnabled false the echoed value was still scrubbed",
        )


@pytest.mark.req("INV1", "INV1-SHA256")
@pytest.mark.parametrize("field_name", FIELDS)
@pytest.mark.parametrize("kind", KINDS, ids=[kind.value for kind in KINDS])
def test_sha256_returns_the_hash_only(
    host: RecordingHost, mint: Mint, kind: Kind, field_name: str
) -> None:
    """The SHA-256 of a value comes back exactly, and the plaintext appears nowhere."""
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    outcome = host.invoke(SHA256.name, args_json({"v": ref(secret.id, field_name)}))
    value = value_of(secret, field_name)
    expected = hashlib.sha256(value.encode("utf-8")).hexdigest()
    require(not outcome.is_error, "INV1-SHA256", f"the call ended {outcome.disposition}")
    require(
        outcome.text.strip() == expected,
        "INV1-SHA256",
        "the hash the handler returned did not reach the agent exactly",
    )


@pytest.mark.req("INV1", "INV1-THROW", "SCRUB-010")
@pytest.mark.parametrize("policy", ["default", "scrubbing-off"])
@pytest.mark.parametrize("field_name", FIELDS)
@pytest.mark.parametrize("kind", KINDS, ids=[kind.value for kind in KINDS])
def test_thrower_leaks_nothing(
    host: RecordingHost, mint: Mint, kind: Kind, field_name: str, policy: str
) -> None:
    """A handler that raises with the value in its message leaks it to no surface."""
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret], policy=POLICIES[policy]))
    outcome = host.invoke(THROWER.name, args_json({"v": ref(secret.id, field_name)}))
    require(outcome.is_error, "INV1-THROW", "a handler that raised did not end in failure text")
    if policy == "default":
        forms = required_forms(value_of(secret, field_name))
        require(
            not any(form in outcome.text for form in forms.values()),
            "SCRUB-010",
            "the failure text kept a form of the value",
        )


@pytest.mark.req("INV1", "LEDG-004", "LOG-001", "APPR-005")
def test_every_surface_names_references_only(host: RecordingHost, mint: Mint) -> None:
    """The ledger and the approval request carry the reference names, not the values."""
    secret = make_secret(mint, kind=Kind.SPECIAL)
    host.reset(config([secret]))
    args = args_json({"p": ref(secret.id), "u": ref(secret.id, "username")})
    host.invoke(ECHO.name, args)
    seen = host.observe()
    ledger = seen.ledger_bytes.decode("utf-8", "replace")
    require(
        name_of(secret.id) in ledger or ref(secret.id) in ledger,
        "LEDG-004",
        "the ledger does not name the reference",
    )
    require(len(seen.approval_requests) == 1, "APPR-001", "the call did not prompt once")


#: Adversarial argument texts, as functions of a repeat count (design, invariant 7).
_ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "many-markers": lambda n: args_json({"a": "{{secret:" * n}),
    "open-braces": lambda n: args_json({"a": "{" * (4 * n) + "secret:"}),
    "long-body": lambda n: args_json({"a": "{{secret:" + "a" * (8 * n) + "}"}),
    "near-misses": lambda n: args_json({"a": "{{secre" * n}),
    "deep": lambda n: '{"a":' + "[" * n + "]" * n + "}",
}

#: Growth allowed when the input grows eightfold: linear work grows about 8 times, quadratic
#: about 64 times; the bound sits far enough from both that a slow runner does not flap.
_GROWTH_BOUND = 24.0


def _echoed(args: str, outcome: CallResult) -> bool:
    """Return whether the echo handler sent ``args`` back, as its first line.

    An MCP layer may re-serialize the arguments (decisions R9.2), so whitespace is not compared;
    these shapes hold none inside their strings.
    """
    first = outcome.text.split("\n", 1)[0]
    return "".join(first.split()) == "".join(args.split())


@pytest.mark.req("INV7")
@pytest.mark.parametrize("shape", list(_ADVERSARIAL))
def test_bounded_work(host: RecordingHost, mint: Mint, shape: str) -> None:
    """Parsing adversarial input takes time linear in its size, not quadratic."""
    host.reset(config([make_secret(mint)], approval_timeout_s=5.0))
    build = _ADVERSARIAL[shape]
    calls: list[tuple[str, CallResult]] = []

    def call(args: str) -> CallResult:
        calls.append((args, host.invoke(ECHO.name, args)))
        return calls[-1][1]

    # In process the host works on this thread: its CPU time, which other processes on a
    # loaded machine do not stretch, measures the work; another path is timed by the wall clock.
    clock = time.thread_time if host.path == INPROCESS else time.perf_counter
    growth = growth_ratio(call, build(2_000), build(16_000), _GROWTH_BOUND, clock)
    # Only time that went into the work counts: a marker-bearing text must have been refused
    # by the parser, and a marker-free one must have reached the echo handler.
    if not calls or not all(
        outcome.disposition == "SECRET_UNRESOLVED" if "secret:" in args else _echoed(args, outcome)
        for args, outcome in calls
    ):
        unchecked("INV7", "the host did not do the work being timed (refuse or echo the input)")
        return
    require(
        growth < _GROWTH_BOUND,
        "INV7",
        f"eightfold input took {growth:.1f} times as long (bound {_GROWTH_BOUND:g})",
    )


@pytest.mark.req("INV7", "SCRUB-009")
def test_scrubbing_is_linear(host: RecordingHost, mint: Mint) -> None:
    """Scrubbing a result full of near-matches takes time linear in its size."""
    secret = make_secret(mint)
    value = value_of(secret, "password")
    near = value[:-1]
    host.reset(config([secret], tools=(ECHO,)))

    outcomes: list[CallResult] = []

    def echo_with(filler: str) -> object:
        outcomes.append(host.invoke(ECHO.name, args_json({"v": ref(secret.id), "filler": filler})))
        return outcomes[-1]

    # Sizes large enough that a quadratic scrub outweighs each call's fixed cost, even on a
    # loaded runner where that cost grows. In process the host scrubs on this thread, timed by
    # its CPU time as the parse is (the wall clock flapped under load: 25.4 against 24).
    clock = time.thread_time if host.path == INPROCESS else time.perf_counter
    growth = growth_ratio(
        echo_with, (near + " ") * 2_000, (near + " ") * 16_000, _GROWTH_BOUND, clock
    )
    if not outcomes or placeholder(secret.id) not in outcomes[-1].text:
        # No placeholder came back: nothing was scrubbed, so nothing scrubbing does was timed.
        unchecked(("INV7", "SCRUB-009"), "the echoed value came back without its placeholder")
        return
    require(
        growth < _GROWTH_BOUND,
        "INV7",
        f"eightfold result took {growth:.1f} times as long to scrub (bound {_GROWTH_BOUND:g})",
    )
