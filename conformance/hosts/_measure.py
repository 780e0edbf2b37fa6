"""Measuring an adapter: the median round trip of each driver-protocol request.

This module owns ``python -m conformance.hosts.subprocess``, which prints the median
milliseconds per ``invoke`` (without and with a prompt), ``observe`` and ``configure``, for the
in-process reference host and for an adapter command, so an adapter's cost can be read against
the reference's. It measures only; it judges nothing.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.host import Answer, HostConfig
from conformance.hosts.subprocess import SubprocessHost


def _round_trips(host: Any, calls: int) -> dict[str, float]:
    """Return the median milliseconds per request of ``host`` over five rounds of ``calls``."""
    import statistics

    from conformance.host import HandlerKind, ToolSpec

    config = HostConfig(
        tools=(
            ToolSpec("free", "plugin.bench", HandlerKind.RECORDER),
            ToolSpec("asked", "plugin.bench", HandlerKind.RECORDER),
        ),
        policy={"tools": {"free": "ALLOW"}},
    )

    def approve(_request: Mapping[str, Any], _control: Any) -> Answer:
        return Answer.APPROVE

    def warm() -> None:
        for _ in range(10):
            host.invoke("free", '{"a":"b"}')

    def median(step: Callable[[], object], count: int, warm_up: bool = True) -> float:
        samples = []
        for _ in range(5):
            host.reset(config)
            if warm_up:
                warm()
            started = time.perf_counter()
            for _ in range(count):
                step()
            samples.append((time.perf_counter() - started) / count * 1e3)
        return statistics.median(samples)

    return {
        "invoke": median(lambda: host.invoke("free", '{"a":"b"}'), calls),
        "invoke+prompt": median(lambda: host.invoke("asked", '{"a":"b"}', approve), calls),
        "observe": median(host.observe, calls),
        "configure": median(lambda: host.reset(config), max(1, calls // 2), warm_up=False),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.hosts.subprocess``: measure an adapter's per-request round trip.

    Prints the median milliseconds per ``invoke`` (without and with a prompt), ``observe`` and
    ``configure``, for the in-process reference host and for the adapter command given (the
    reference driver by default), so an adapter's cost can be read against the reference.

    Returns:
        The exit status.
    """
    import sys

    from conformance.arguments import OneLineParser

    parser = OneLineParser(
        prog="python -m conformance.hosts.subprocess",
        description="Measure the per-request round trip of a driver-protocol adapter.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        default=f"{shlex.quote(sys.executable)} -m reference_impl.driver",
        help="the adapter's command line (default: the reference driver)",
    )
    parser.add_argument(
        "--calls", type=int, default=200, help="requests per round (default: %(default)s)"
    )
    parser.add_argument("--validate", action="store_true", help="validate every message too")
    options = parser.parse_args(argv)
    from conformance.hosts.inprocess import InProcessHost

    builds: list[tuple[str, Callable[[], Any]]] = [
        ("in-process reference", InProcessHost),
        (
            "subprocess" + (", validated" if options.validate else ""),
            lambda: SubprocessHost(options.command, validate=options.validate),
        ),
    ]
    for label, build in builds:
        host = build()
        try:
            rows = _round_trips(host, options.calls)
        finally:
            host.close()
        print(f"{label:30} " + "  ".join(f"{key} {value:.2f} ms" for key, value in rows.items()))
    return 0
