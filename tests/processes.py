"""Finding the processes a test's adapter left behind, by a marker on their command line.

This module owns the one scan of ``/proc`` the orphan tests share: a hostile adapter starts
children whose command line holds a marker unique to the test, and the test asks which of them
are still alive once the run under test has ended.
"""

from __future__ import annotations

import os
from pathlib import Path


def marked(marker: str) -> list[int]:
    """Return the live processes (zombies excepted) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found
