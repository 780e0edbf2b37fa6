"""A driver-protocol proxy that adds names to the capabilities its adapter announces.

Run as ``python announcing_proxy.py NAME[,NAME...] -- <adapter command>``. It starts the adapter
and relays every line both ways unchanged, except the answer to ``start``, whose
``host.capabilities`` gets the given names added. It is the attack of decisions S1.8: a proxy
that adds ``via.mcp`` so that checks would judge "by value" as if the run were over MCP, or any
name the protocol does not publish. It uses only the standard library and nothing of the suite,
as a third-party adapter would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO


def relay(source: IO[str], sink: IO[str], added: list[str] | None) -> None:
    """Copy lines from ``source`` to ``sink``; with ``added``, extend the start answer."""
    for line in source:
        if added is not None:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            host = (
                message.get("result", {}).get("host")
                if isinstance(message, dict) and isinstance(message.get("result"), dict)
                else None
            )
            if isinstance(host, dict) and isinstance(host.get("capabilities"), list):
                host["capabilities"] = [*host["capabilities"], *added]
                line = json.dumps(message) + "\n"
        sink.write(line)
        sink.flush()


def main(argv: list[str]) -> int:
    names, command = argv[0].split(","), argv[argv.index("--") + 1 :]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None
    assert child.stdout is not None
    outward = threading.Thread(target=relay, args=(child.stdout, sys.stdout, names), daemon=True)
    outward.start()
    try:
        relay(sys.stdin, child.stdin, None)
        child.stdin.close()
    except (BrokenPipeError, OSError):  # the adapter left first; the suite sees it exit
        pass
    outward.join(5)
    return child.wait(5)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
