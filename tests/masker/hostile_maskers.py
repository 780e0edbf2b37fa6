"""Masker adapters that attack the harness, one attack per mode (decisions S1.5 and S1.10).

Run as ``python hostile_maskers.py MODE [PID_FILE]``. Each appends its own process id to
``PID_FILE`` when one is given (so a test can count the starts), says a valid hello, then:

- ``never-reads``: never reads its standard input, and sleeps for ten minutes.
- ``setsid-child``: starts ``setsid sleep 600`` with its standard output inherited, writes that
  child's process id to ``PID_FILE``, then answers every request with its text unchanged.
- ``crash``: exits with status 3 at the first request it reads, every time it is started.

It uses the standard library only and never writes a value anywhere but its answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

HELLO = {
    "protocol": "secref-masker/1",
    "masker": {"name": "hostile", "version": "1", "shape": "library"},
    "capabilities": ["text"],
}


def main(argv: list[str]) -> int:
    """Play the attack ``argv[0]``; ``argv[1]`` is where ``setsid-child`` writes its child's id."""
    mode = argv[0]
    if len(argv) > 1:
        with open(argv[1], "a", encoding="ascii") as handle:
            handle.write(f"adapter {os.getpid()}\n")
    print(json.dumps(HELLO), flush=True)
    if mode == "never-reads":
        time.sleep(600)
        return 0
    if mode == "setsid-child":
        # Standard output inherited; the PATH's setsid, as an attacker's adapter would use.
        child = subprocess.Popen(["setsid", "sleep", "600"])  # noqa: S607
        with open(argv[1], "a", encoding="ascii") as handle:
            handle.write(f"child {child.pid}\n")
    for line in sys.stdin:
        if mode == "crash":
            return 3
        request = json.loads(line)
        print(json.dumps({"id": request["id"], "output": request["text"]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
