"""A tiny driver-protocol adapter that misbehaves on purpose, to test the suite's harness.

Run as ``python broken_host.py <mode>``. It speaks just enough of protocol v1 to pass the
handshake and ``configure``, answers ``observe`` with empty surfaces, and then, on the first
``invoke``, does what its mode says: ``hang`` never answers, ``crash`` exits with status 3,
``garbage`` writes a long line that is not JSON, ``malformed`` answers with a result that breaks
the schema. Three modes misbehave earlier: ``version`` claims protocol 2 at the handshake,
``silent`` never answers the handshake, ``stall`` never answers ``configure``. ``good`` answers
every call with a plain result. It uses only the standard library
and nothing of the suite, as a third-party adapter would.
"""

from __future__ import annotations

import json
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(mode: str) -> int:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "start":
            if mode == "silent":
                continue
            host = {
                "name": f"broken host ({mode})",
                "version": "0",
                "language": "python",
                "capabilities": ["start"],
            }
            send(
                {
                    "id": request_id,
                    "result": {"protocol": 2 if mode == "version" else 1, "host": host},
                }
            )
        elif method == "configure" and mode == "stall":
            time.sleep(3600)
        elif method in ("configure", "control"):
            send({"id": request_id, "result": {}})
        elif method == "observe":
            send(
                {
                    "id": request_id,
                    "result": {
                        "ledgerBase64": "",
                        "log": [],
                        "requests": [],
                        "receipts": [],
                        "vaultReads": [],
                    },
                }
            )
        elif method == "shutdown":
            send({"id": request_id, "result": {}})
            return 0
        elif method == "invoke":
            if mode == "hang":
                time.sleep(3600)
            elif mode == "crash":
                sys.stderr.write("broken host: giving up on purpose\n")
                sys.stderr.flush()
                return 3
            elif mode == "garbage":
                sys.stdout.write("this is not protocol " + "#" * 500 + "\n")
                sys.stdout.flush()
            elif mode == "malformed":
                send(
                    {"id": request_id, "result": {"disposition": 5, "text": "ok", "isError": "no"}}
                )
            else:
                send(
                    {
                        "id": request_id,
                        "result": {"disposition": "ALLOWED", "text": "ok", "isError": False},
                    }
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "good"))
