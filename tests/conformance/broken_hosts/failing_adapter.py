"""A tiny driver-protocol adapter that fails early on purpose, to test how fast the suite gives up.

Run as ``python failing_adapter.py <mode> [<starts file>]``. With a starts file, it appends one
line to it each time it is started, so a test can count the starts. Modes:

- ``garbage``: answers the handshake with a line that is not protocol.
- ``crash``: passes the handshake and ``configure``, answers ``observe`` with empty surfaces,
  and exits with status 4 at the first ``invoke``.
- ``once``: behaves as ``crash`` the first time it is started, and exits with status 5 before
  the handshake every later time (counted in the starts file), as an adapter that cannot be
  started again.
- ``stuck``: behaves as ``crash`` the first time it is started, and every later time (counted
  in the starts file) never answers the handshake, as an adapter that hangs after a restart.
- ``rename`` and ``recapable``: behave as ``crash`` the first time they are started; every later
  time (counted in the starts file) they answer every call, but announce another name, or
  another capability, than at their first start (decisions S1.8).

It uses only the standard library and nothing of the suite, as a third-party adapter would.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HOST = {"name": "failing adapter", "version": "0", "language": "python", "capabilities": ["start"]}

EMPTY = {"ledgerBase64": "", "log": [], "requests": [], "receipts": [], "vaultReads": []}


def send(message: dict[str, object]) -> None:
    """Write one protocol message."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(mode: str, starts: Path | None) -> int:
    """Serve the protocol until told to stop, failing as ``mode`` says."""
    earlier = 0
    if starts is not None:
        earlier = starts.read_text(encoding="utf-8").count("\n") if starts.exists() else 0
        with starts.open("a", encoding="utf-8") as file:
            file.write("started\n")
        if mode == "once" and earlier:
            sys.stderr.write("failing adapter: cannot start again\n")
            return 5
    host = dict(HOST)
    changed = mode in ("rename", "recapable") and earlier > 0
    if changed and mode == "rename":
        host["name"] = "another adapter"
    if changed and mode == "recapable":
        host["capabilities"] = ["start", "observe.ledger"]
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "start":
            if mode == "stuck" and earlier:
                time.sleep(3600)
            if mode == "garbage":
                sys.stdout.write("hello, this is not the protocol\n")
                sys.stdout.flush()
                continue
            send({"id": request_id, "result": {"protocol": 1, "host": host}})
        elif method == "observe":
            send({"id": request_id, "result": EMPTY})
        elif method == "invoke":
            if changed:
                result = {"disposition": "ALLOWED", "text": "ok", "isError": False}
                send({"id": request_id, "result": result})
                continue
            sys.stderr.write("failing adapter: exiting at invoke\n")
            return 4
        elif method == "shutdown":
            send({"id": request_id, "result": {}})
            return 0
        else:
            send({"id": request_id, "result": {}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], Path(sys.argv[2]) if len(sys.argv) > 2 else None))
