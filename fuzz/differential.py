"""Differential fuzzing: the same generated calls to the reference host and to a host under test.

This module owns sending generated argument text to two hosts reached through
:class:`conformance.host.HostUnderTest` (the in-process reference host, a subprocess driver for
a third-party host, or any other implementation), both configured alike with the canary vault
and an echoing tool, and comparing their verdicts: resolved, passed through, or refused with its
disposition. A disagreement is shrunk by Hypothesis to a minimal input and reported with both
verdicts. The argument text is the agent's (it holds references, never values), so it may be
printed; the verdicts hold dispositions only.

Usage: ``python -m fuzz.differential --host '<command>' [--examples N]`` compares the reference
host with the host that ``<command>`` starts over the driver protocol.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from conformance.arguments import OneLineParser, add_version, positive_count
from conformance.host import (
    CallResult,
    HandlerKind,
    HostConfig,
    HostUnderTest,
    SecretSpec,
    ToolSpec,
)
from fuzz.rig import CANARIES
from fuzz.strategies import arbitrary_text, argument_cases

TOOL: Final = "echo"

#: Dispositions that mean the tool ran.
_RAN: Final = frozenset(
    {"ALLOWED", "APPROVED_ONCE", "APPROVED_ALWAYS", "APPROVED_PROVIDER", "APPROVED_SESSION"}
)


def config() -> HostConfig:
    """Return the configuration both hosts get: the canary vault, an echo tool, ALLOW by default.

    Calls without references run with no prompt; calls with references always prompt, and the
    suite's operator approves.
    """
    return HostConfig(
        secrets=tuple(
            SecretSpec(secret_id, f"site{index}.example", user, password, notes)
            for index, (secret_id, (user, password, notes)) in enumerate(CANARIES.items())
        ),
        policy={"defaultRule": "ALLOW"},
        tools=(ToolSpec(TOOL, "fuzz", HandlerKind.ECHO),),
    )


def verdict(result: CallResult) -> str:
    """Return a call's verdict: ``resolved``, ``passed``, or ``refused:<DISPOSITION>``."""
    if result.disposition == "APPROVED_ONCE":
        return "resolved"
    if result.disposition in _RAN:
        return "passed"
    return f"refused:{result.disposition}"


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A minimal argument text on which two hosts' verdicts differ."""

    args: str
    reference: str
    other: str

    def __str__(self) -> str:
        return (
            f"hosts disagree on {self.args!r} ({len(self.args)} characters): "
            f"reference {self.reference}, host under test {self.other}"
        )


def calls() -> st.SearchStrategy[str]:
    """Generated argument text: planted trees (mostly) and arbitrary text with the grammar's
    tokens."""
    return st.one_of(argument_cases(max_depth=2).map(lambda case: case.raw), arbitrary_text)


class Differ:
    """Two hosts, configured alike, compared call by call."""

    def __init__(self, reference: HostUnderTest, other: HostUnderTest) -> None:
        self.reference = reference
        self.other = other
        self.calls = 0
        for host in (reference, other):
            host.reset(config())

    def verdicts(self, args: str) -> tuple[str, str]:
        """Send one call to both hosts; return their verdicts."""
        self.calls += 1
        return (
            verdict(self.reference.invoke(TOOL, args)),
            verdict(self.other.invoke(TOOL, args)),
        )

    def disagree(self, args: str) -> bool:
        """Return whether the hosts' verdicts differ on ``args``."""
        first, second = self.verdicts(args)
        return first != second

    def search(
        self,
        examples: int = 200,
        strategy: st.SearchStrategy[str] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Disagreement | None:
        """Look for a disagreement; shrink the first one found to a minimal input.

        Args:
            examples: How many generated calls to try.
            strategy: The argument text to try; :func:`calls` by default.
            progress: Hears the number of calls made, every 100 calls.

        Returns:
            The minimal disagreement, or ``None`` when the hosts agreed on every call.
        """

        def condition(args: str) -> bool:
            if progress is not None and self.calls % 100 == 0:
                progress(self.calls)
            return self.disagree(args)

        try:
            args = find(
                strategy if strategy is not None else calls(),
                condition,
                settings=settings(
                    max_examples=examples,
                    database=None,
                    deadline=None,
                    derandomize=True,
                    suppress_health_check=list(HealthCheck),
                ),
            )
        except NoSuchExample:
            return None
        first, second = self.verdicts(args)
        return Disagreement(args, first, second)


def main(argv: list[str] | None = None) -> int:
    """Compare the reference host with a host under test; return 1 on a disagreement, and 2
    when the host cannot be started or fails at the protocol level (no verdict to compare)."""
    parser = OneLineParser(
        prog="python -m fuzz.differential",
        description="Send the same generated calls to the reference host and to the host that "
        "COMMAND starts over the driver protocol, and compare their verdicts: resolved, passed "
        "through, or refused with its disposition. A disagreement is shrunk to a minimal "
        "argument text and printed with both verdicts (exit 1); a host that cannot be started "
        "or fails at the protocol level ends the run with one line (exit 2); values are never "
        "printed.",
    )
    add_version(parser)
    parser.add_argument(
        "--host",
        required=True,
        metavar="COMMAND",
        help="the command that starts the host's driver-protocol adapter",
    )
    parser.add_argument(
        "--examples",
        type=positive_count,
        default=500,
        metavar="N",
        help="calls to generate (default: %(default)s)",
    )
    options = parser.parse_args(argv)
    from conformance.hosts._protocol import HarnessError, HostError
    from conformance.hosts._supervise import end_strays
    from conformance.hosts.inprocess import InProcessHost
    from conformance.hosts.subprocess import SubprocessHost
    from conformance.inert import escape_controls

    reference = InProcessHost()
    try:
        try:
            other = SubprocessHost(options.host)
        except HarnessError as error:
            reference.close()
            print(f"fuzz.differential: {escape_controls(str(error))}", file=sys.stderr)
            return 2
        try:
            differ = Differ(reference, other)
            found = differ.search(
                options.examples, progress=lambda n: print(f"  {n} calls", flush=True)
            )
        except HostError as error:
            # The host failed at the protocol level (crash, hang, garbage): no verdict was
            # compared, so this is not a disagreement (exit 1) but a harness error (exit 2).
            # The error's text is quoted host text, already cleaned of every value it was given.
            print(f"fuzz.differential: the host under test failed: {error}", file=sys.stderr)
            return 2
        finally:
            reference.close()
            other.close()
    finally:
        # As the console script does: this process runs only the fuzzer, and as a subreaper
        # it is the parent of every orphan the adapter's tree left (decisions S1.10).
        end_strays()
    if found is None:
        print(f"no disagreement in {differ.calls} calls")
        return 0
    print(found)
    return 1


if __name__ == "__main__":
    sys.exit(main())
