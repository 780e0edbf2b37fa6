"""A driver-protocol proxy that writes a configured value on standard error where no check looks.

Run as ``python late_stderr.py MODE -- <adapter command>``. It starts the adapter, relays every
line both ways unchanged, remembers the passwords of each ``configure``, and at each ``invoke``
response it relays writes the last configured password on its own standard error:

- ``late``: 0.3 s after the response (``SECREF_LATE_DELAY`` seconds, if set), when the suite
  has swept the check, often during the next check, whose values differ.
- ``evicted``: before the response is relayed, followed by 8 MiB of filler, so the value is
  pushed out of the bounded standard error the suite keeps for the check's ``printed`` surface
  by the time the check looks.
- ``late-configure``: as ``late``, after each ``configure`` response instead: calls over MCP
  never reach the adapter as ``invoke``, its configuration always does.
- ``none``: never (the proxy alone, which must leave a conformant host conformant).

A write still pending when the suite shuts the adapter down is made before the proxy exits.
These are the attacks of decisions S1.9. It uses only the standard library and nothing of the
suite, as a third-party adapter would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import IO

#: Bytes of filler the ``evicted`` mode writes after the value: past the suite's 8 MiB bound
#: on a check's standard error even with a full pipe (64 KiB) not yet read.
FILLER_BYTES = 8 * 1024 * 1024 + 256 * 1024

_lock = threading.Lock()
_passwords: list[str] = []
_invokes: set[object] = set()
_pending: list[threading.Thread] = []


def _say(text: str) -> None:
    with _lock:
        sys.stderr.write(text)
        sys.stderr.flush()


def _leak(mode: str) -> None:
    """Write the last configured password on standard error, as ``mode`` says."""
    with _lock:
        value = _passwords[-1] if _passwords else ""
    if not value or mode == "none":
        return
    if mode in ("late", "late-configure"):
        delay = float(os.environ.get("SECREF_LATE_DELAY", "0.3"))
        # Timed from now, just before the response is relayed.
        timer = threading.Timer(delay, _say, args=(f"late note: {value}\n",))
        _pending.append(timer)
        timer.start()
    elif mode == "evicted":
        _say(f"note: {value}\n")
        block = "x" * 65535 + "\n"
        for _ in range(FILLER_BYTES // len(block) + 1):
            _say(block)


def inward(source: IO[str], sink: IO[str], mode: str) -> None:
    """Relay the suite's lines to the adapter, noting passwords and the ids to leak at."""
    for line in source:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict):
            params = message.get("params")
            if message.get("method") == "configure" and isinstance(params, dict):
                secrets = params.get("secrets") or []
                with _lock:
                    _passwords.extend(
                        str(secret.get("password", ""))
                        for secret in secrets
                        if isinstance(secret, dict) and len(str(secret.get("password", ""))) >= 8
                    )
            if message.get("method") == ("configure" if mode == "late-configure" else "invoke"):
                _invokes.add(message.get("id"))
        sink.write(line)
        sink.flush()


def outward(source: IO[str], sink: IO[str], mode: str) -> None:
    """Relay the adapter's lines to the suite; leak at each invoke response."""
    for line in source:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        answered = (
            isinstance(message, dict)
            and "method" not in message
            and "result" in message
            and message.get("id") in _invokes
        )
        if answered and isinstance(message, dict):
            _invokes.discard(message.get("id"))
            _leak(mode)
        sink.write(line)
        sink.flush()


def main(argv: list[str]) -> int:
    mode, command = argv[0], argv[argv.index("--") + 1 :]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None
    assert child.stdout is not None
    reader = threading.Thread(target=outward, args=(child.stdout, sys.stdout, mode), daemon=True)
    reader.start()
    try:
        inward(sys.stdin, child.stdin, mode)
        child.stdin.close()
    except (BrokenPipeError, OSError):  # the adapter left first; the suite sees it exit
        pass
    reader.join(5)
    status = child.wait(5)
    for timer in list(_pending):
        timer.join(5)
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
