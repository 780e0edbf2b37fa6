"""Fitting a check's short approval timeout to the host it talks to.

This module owns one measurement: how long a prompted call takes on the host under test, from
the call's start, through its prompt reaching the suite's operator, to its result coming back.
A host behind an adapter in another language, or over a pipe on a loaded machine, may take a
few tenths of a second for that where the in-process reference host takes a millisecond, and
the driver protocol lets it (docs/driver-protocol.md, "Timeouts, crashes and garbage": only the
call timeout bounds a request). A check whose judgment needs several prompts to open, and calls
to be made beside them, all within one short approval timeout, takes that timeout from
:func:`fitted_timeout`: the check's own short timeout on a fast host, a longer one on a slower
host, so that the judgment is made on every legal host rather than left unchecked. The verdict
never depends on the measurement: only how long the check waits does. It never prints a value.
"""

from __future__ import annotations

import time
from typing import Final

from conformance.host import Answer, HostConfig
from conformance.scenario import RecordingHost, answering

#: Round trips of a prompted call a fitted timeout leaves room for: the held prompts to open
#: and the calls beside them to be decided, with room to spare on a loaded machine.
TRIPS: Final = 6

#: The longest fitted timeout, in seconds: a host slower than this leaves the judgment
#: unchecked, as before, rather than holding the run.
LONGEST_S: Final = 5.0


def prompted_round_trip(
    host: RecordingHost, configuration: HostConfig, tool: str, args: str
) -> float:
    """Configure ``host`` with ``configuration`` and return the seconds one call of ``tool``
    with ``args`` takes, its prompt denied as soon as it shows.

    The configuration's approval timeout should be long, so that the call cannot time out; the
    check configures the host afresh afterwards, so nothing of this call is judged.
    """
    host.reset(configuration)
    started = time.monotonic()
    host.invoke(tool, args, answering(Answer.DENY))
    return time.monotonic() - started


def fitted_timeout(short: float, round_trip: float) -> float:
    """Return the approval timeout a check that wants ``short`` seconds uses on a host whose
    prompted call takes ``round_trip`` seconds: ``short`` when that leaves room for
    :data:`TRIPS` round trips, else room for them, at most :data:`LONGEST_S`."""
    return max(short, min(LONGEST_S, TRIPS * round_trip))
