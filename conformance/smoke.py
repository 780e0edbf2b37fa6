"""Meeting an adapter before the suite runs: the early handshake and ``secref-conformance smoke``.

This module owns the two quick looks the console script takes at a driver-protocol adapter. The
first, :func:`start_first`, starts the adapter and makes the handshake before pytest collects
anything, so an adapter that cannot be started, exits, times out or speaks another protocol
ends the run at once with one line on standard error and exit status 2; a good adapter is kept
running for the run (:func:`conformance.hosts.start_ahead`), so it is started once. The second,
:func:`main`, is ``secref-conformance smoke``: it starts the adapter, configures one secret,
makes one plain call and one secret call with an operator that approves, observes, searches the
surfaces for the secret, and prints what it saw. Both build the host with
:func:`conformance.hosts.build_host`, as a run does. Neither ever prints a value: every text
taken from the host is redacted with the canaries' detector and its controls escaped first.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from conformance.arguments import OneLineParser, add_version, positive_seconds
from conformance.hosts import HostSelectionError, build_host, is_adapter, start_ahead
from conformance.hosts._framing import DEFAULT_MAX_LINE
from conformance.hosts._protocol import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, HostError
from conformance.inert import escape_controls

#: Exit statuses of ``smoke``, the console script's own: the host answered sensibly; a call
#: misbehaved (an error, a refusal, a value where it must not be); the host could not be
#: started or handshaken.
SENSIBLE: Final = 0
MISBEHAVED: Final = 1
NOT_STARTED: Final = 2

#: Characters of a call's result text shown, after redaction: enough to recognise an error
#: message, short enough to keep one call on one line.
RESULT_EXCERPT_CHARS: Final = 80

#: What every line this module prints on standard error starts with.
PREFIX: Final = "secref-conformance"


def driver_options(
    host_timeout: float | None = None,
    host_start_timeout: float | None = None,
    validate_protocol: bool = False,
    host_max_line: int | None = None,
) -> dict[str, Any]:
    """Return the driver options a run builds its host with, from the console script's options.

    The defaults are the plugin's own (``--host-timeout``, ``--host-start-timeout``,
    ``--host-max-line``), so a host started ahead matches the one the run asks for.

    Args:
        host_timeout: ``--host-timeout``, or ``None`` for the default.
        host_start_timeout: ``--host-start-timeout``, or ``None`` for the default.
        validate_protocol: ``--validate-protocol``.
        host_max_line: ``--host-max-line``, or ``None`` for the default.

    Returns:
        Keyword arguments for :func:`conformance.hosts.build_host`.
    """
    return {
        "call_timeout": DEFAULT_CALL_TIMEOUT if host_timeout is None else float(host_timeout),
        "start_timeout": (
            DEFAULT_START_TIMEOUT if host_start_timeout is None else float(host_start_timeout)
        ),
        "validate": bool(validate_protocol),
        "max_line": DEFAULT_MAX_LINE if host_max_line is None else int(host_max_line),
    }


def one_line(cause: object) -> str:
    """Return ``cause`` as one line of terminal text: controls escaped, newlines included."""
    return escape_controls(str(cause).strip())


def start_first(options: argparse.Namespace) -> int | None:
    """Start the adapter ``--host`` names and make the handshake, before the run collects.

    Does nothing for a host in this process (``inprocess``, ``mutant:<name>``). A host that
    starts is kept for the run, which takes it instead of starting another.

    Args:
        options: The console script's parsed options (``host``, ``via``, ``host_timeout``,
            ``host_start_timeout``, ``validate_protocol``, ``host_max_line``).

    Returns:
        ``None`` when the run may go on; 2 when the host could not be started, after one line
        on standard error that says why.
    """
    if not is_adapter(options.host):
        return None
    try:
        start_ahead(
            options.host,
            options.via or "driver",
            **driver_options(
                options.host_timeout,
                options.host_start_timeout,
                options.validate_protocol,
                options.host_max_line,
            ),
        )
    except (HostSelectionError, HostError) as error:
        print(f"{PREFIX}: {one_line(error)}", file=sys.stderr)
        return NOT_STARTED
    return None


# --- smoke ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Sighting:
    """What ``smoke`` saw: the lines to print and whether any of them is a misbehaviour."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def say(self, label: str, text: str) -> None:
        """Add one line, ``label: text``."""
        self.lines.append(f"{label + ':':18} {text}")

    def fault(self, label: str, text: str) -> None:
        """Add one line that is a misbehaviour of the host."""
        self.say(label, f"{text}  [misbehaved]")
        self.problems.append(label)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=f"{PREFIX} smoke",
        description="Start a host's driver-protocol adapter, configure one secret, make one "
        "plain call and one call that references the secret (an operator approves), observe, "
        "and print what was seen: the host's name, version and capabilities, each call's "
        "disposition, whether the handler received the value, the surfaces observed and "
        "whether the secret was found where it must not be. Secret values are never printed. "
        "Exit codes: 0 the host answered sensibly, 1 a call misbehaved (an error, a refusal, "
        "a value leaked, a handler without its value), 2 the host could not be started or "
        "handshaken.",
    )
    add_version(parser)
    parser.add_argument(
        "--host",
        required=True,
        metavar="COMMAND",
        help="the command that starts the adapter, e.g. 'python -m reference_impl.driver'",
    )
    parser.add_argument(
        "--via",
        choices=("driver", "mcp"),
        default="driver",
        help="how the calls reach the adapter: its driver-protocol invoke (default) or the "
        "official MCP client to the endpoint it announces",
    )
    parser.add_argument(
        "--host-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help=f"seconds the host has to answer each request (default {DEFAULT_CALL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--host-start-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help=f"seconds the host has to answer the handshake (default {DEFAULT_START_TIMEOUT:g})",
    )
    parser.add_argument(
        "--validate-protocol",
        action="store_true",
        help="check every driver-protocol message against its JSON Schema",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``secref-conformance smoke``: start an adapter, make two calls and print what was seen.

    Args:
        argv: The arguments after ``smoke``.

    Returns:
        0 when the host answered sensibly, 1 when a call misbehaved, 2 when the host could not
        be started or handshaken.
    """
    options = _parser().parse_args(argv)
    if not is_adapter(options.host):
        print(f"{PREFIX}: smoke needs an adapter command for --host", file=sys.stderr)
        return NOT_STARTED
    began = time.monotonic()
    try:
        host = build_host(
            options.host,
            options.via,
            **driver_options(
                options.host_timeout, options.host_start_timeout, options.validate_protocol
            ),
        )
    except (HostSelectionError, HostError) as error:
        print(f"{PREFIX}: {one_line(error)}", file=sys.stderr)
        return NOT_STARTED
    try:
        seen = look(host)
    finally:
        host.close()
    for line in seen.lines:
        print(line)
    took = time.monotonic() - began
    if seen.problems:
        print(f"{PREFIX}: smoke: misbehaved ({', '.join(seen.problems)}) in {took:.1f} s")
        return MISBEHAVED
    print(f"{PREFIX}: smoke: the host answered sensibly in {took:.1f} s")
    return SENSIBLE


def look(host: Any) -> Sighting:
    """Configure ``host`` with one secret, make a plain and a secret call, observe, search.

    Args:
        host: A started :class:`conformance.host.HostUnderTest`; the caller closes it.

    Returns:
        The lines to print, every host text in them redacted, and the misbehaviours seen.
    """
    import pytest

    from conformance.canary import Detector, Mint, guarded_values, visible_surfaces
    from conformance.host import Answer
    from conformance.scenario import (
        RECORDER,
        RecordingHost,
        answering,
        args_json,
        config,
        make_secret,
        ref,
    )

    seen = Sighting()
    secret = make_secret(Mint())
    setup = config([secret])
    detector = Detector(guarded_values(setup.secrets))

    def shown(text: object) -> str:
        return one_line(detector.redact(str(text)))

    info = host.info()
    capabilities = sorted(info.capabilities)
    seen.say("host", shown(f"{info.name} {info.version} ({info.language})"))
    seen.say("capabilities", shown(", ".join(capabilities) or "none"))
    recording = RecordingHost(host)

    def attempt(label: str, step: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            return True, step()
        except HostError as error:
            seen.fault(label, f"host error: {shown(error)}")
        except pytest.skip.Exception as skipped:
            seen.fault(label, f"not possible: {shown(skipped.msg)}")
        return False, None

    if not attempt("configure", lambda: recording.reset(setup))[0]:
        return seen
    seen.say("configure", "one secret, the standard tools")
    calls = (
        ("plain call", args_json({"text": "no reference here"}), None),
        ("secret call", args_json({"password": ref(secret.id)}), answering(Answer.APPROVE)),
    )
    for label, arguments, operator in calls:
        done, outcome = attempt(
            label, functools.partial(recording.invoke, RECORDER.name, arguments, operator)
        )
        if not done:
            continue
        excerpt = shown(outcome.text)[:RESULT_EXCERPT_CHARS]
        text = f"{shown(outcome.disposition)}, isError {str(outcome.is_error).lower()}: {excerpt!r}"
        if outcome.is_error:
            seen.fault(label, text)
        else:
            seen.say(label, text)
    done, observation = attempt("observe", host.observe)
    if done:
        _surfaces(seen, observation, set(capabilities), secret.password)
    done, sweep = attempt("canary search", recording.sweep)
    if done and sweep is not None:
        searched = sorted(surface.value for surface in visible_surfaces(capabilities))
        unsearched = sorted(surface.value for surface in sweep.unsearched)
        if sweep.leaks:
            findings = "; ".join(shown(finding.describe()) for finding in sweep.leaks[:5])
            seen.fault("canary search", f"{len(sweep.leaks)} found: {findings}")
        else:
            seen.say("canary search", f"no value found on: {', '.join(searched)}")
        if unsearched:
            seen.say("not searched", f"{', '.join(unsearched)} (not announced)")
    return seen


def _surfaces(seen: Sighting, observation: Any, capabilities: set[str], value: str) -> None:
    """Describe each surface of ``observation`` the host announced, and the handler's receipt.

    Counts only: no text of a surface is printed.
    """
    from conformance.canary import Detector, Guarded
    from conformance.scenario import ledger_records

    def counted(capability: str, label: str, count: int, unit: str) -> None:
        if capability in capabilities:
            seen.say(label, f"{count} {unit}")
        else:
            seen.say(label, f"not announced ({capability})")

    ledger = observation.ledger_bytes
    counted(
        "observe.ledger",
        "ledger",
        len(ledger_records(observation)),
        f"records, {len(ledger)} bytes",
    )
    counted("observe.log", "host log", len(observation.log_records), "records")
    counted("observe.requests", "approval requests", len(observation.approval_requests), "asked")
    counted("observe.receipts", "receipts", len(observation.receipts), "handler calls")
    if "observe.vault-reads" in capabilities:
        seen.say("vault reads", f"pages {list(observation.vault_reads)}")
    else:
        seen.say("vault reads", "not announced (observe.vault-reads)")
    seen.say("printed", f"{len(observation.printed)} characters on standard error")
    if "observe.receipts" not in capabilities:
        seen.say("handler received", "unknown: receipts not announced (observe.receipts)")
        return
    received = Detector([Guarded("the value", value)])
    got = [receipt for receipt in observation.receipts if received.find(receipt.raw)]
    if got:
        seen.say("handler received", "the value, in the secret call")
    else:
        seen.fault("handler received", "no receipt holds the value")
