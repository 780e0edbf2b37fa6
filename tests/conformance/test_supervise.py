"""The adapter's process tree is ended and its adapter reaped, every time.

A ``Popen`` collected while its process seems to run warns (``ResourceWarning``), and the
suite's runs make every warning an error: an adapter killed but not reaped turned a later,
unrelated check into an error at its teardown, on a loaded machine only.
"""

from __future__ import annotations

import sys

from conformance.hosts._supervise import Supervised

#: Adapters killed in a row: the race lost about once in forty on a loaded machine.
ROUNDS = 40


def test_a_killed_adapter_is_always_reaped() -> None:
    """After ``kill_tree`` the adapter has an exit status, however soon it died."""
    unreaped = 0
    for _ in range(ROUNDS):
        supervised = Supervised([sys.executable, "-c", "import time; time.sleep(60)"], None, None)
        try:
            assert supervised.kill_tree() == 0
            if supervised.process.returncode is None:
                unreaped += 1
                supervised.process.wait(5)
        finally:
            for stream in (
                supervised.process.stdin,
                supervised.process.stdout,
                supervised.process.stderr,
            ):
                if stream is not None:
                    stream.close()
    assert unreaped == 0, f"{unreaped} of {ROUNDS} killed adapters were left unreaped"
