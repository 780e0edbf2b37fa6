"""The child command a wrapper masker runs: it writes the suite's text to standard output.

This module owns what a wrapped program does during a masker check: read a JSON file naming the
pieces of text to write (the file, not the command line, carries them, so no value shows in a
process listing), write each piece as UTF-8 with a flush, pausing between pieces so that they
reach the masker as separate writes, and exit 0. It imports only the standard library, because
it runs under whatever interpreter the suite gives it, and must never write anything but the
pieces.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    """Write the pieces named by the JSON file ``argv[0]`` to standard output.

    Args:
        argv: One path: a JSON object with ``pieces`` (strings) and ``pause`` (seconds).

    Returns:
        0 once every piece is written.
    """
    plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = sys.stdout.buffer
    for number, piece in enumerate(plan["pieces"]):
        if number:
            time.sleep(float(plan["pause"]))
        out.write(piece.encode("utf-8", "surrogatepass"))
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
