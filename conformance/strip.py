"""A driver-protocol proxy that hides capabilities of the adapter behind it.

``python -m conformance.strip CAP[,CAP...] -- <adapter command>`` starts the adapter and relays
driver protocol v1 between it and the suite, taking the named capabilities out of the
handshake and everything that depends on them out of the traffic: the ``observe`` members they
cover are dropped from each answer, and ``control`` actions or ``configure`` features they
cover are answered ``unsupported`` without reaching the adapter. ``ALL`` strips every capability
the adapter announces. It shows what the suite makes of a host that announces less than it
has, which is how the self-test proves that a check never passes or fails on a surface the
host did not announce (decisions S1.1). It relays lines it cannot read unchanged, changes
nothing else, and never prints what it relays.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Final, NoReturn

from conformance.arguments import OneLineParser, add_version
from conformance.hosts._protocol import PUBLISHED_CAPABILITIES
from conformance.hosts.wire import configure_needs
from conformance.inert import escape_controls

#: Strip every capability the adapter announces.
ALL: Final = "ALL"

#: The most the proxy reads of the adapter's output at once; longer lines pass through in pieces.
CHUNK: Final = 1 << 20

#: The ``observe`` result member each observation capability covers (docs/driver-protocol.md).
OBSERVE_MEMBERS: Final = {
    "observe.ledger": "ledgerBase64",
    "observe.log": "log",
    "observe.requests": "requests",
    "observe.receipts": "receipts",
    "observe.vault-reads": "vaultReads",
    "observe.ledger-read": "ledgerRead",
}

#: The capability each ``control`` operation needs.
CONTROL_OPS: Final = {
    "revoke": "control.revoke",
    "reset": "control.reset",
    "saveRule": "control.save-rule",
    "setPermissions": "control.set-permissions",
    "trustSession": "control.trust-session",
    "setYolo": "control.set-yolo",
    "kill": "control.kill",
}


class Stripper:
    """Rewrites the traffic of one session; thread-safe between its two directions.

    Args:
        stripped: The capabilities to hide, or ``{"ALL"}``.
    """

    def __init__(self, stripped: Iterable[str]) -> None:
        self._stripped = set(stripped)
        self._pending: dict[object, str] = {}
        self._lock = threading.Lock()

    def hides(self, capability: str) -> bool:
        """Return whether ``capability`` is hidden from the suite."""
        return ALL in self._stripped or capability in self._stripped

    def from_suite(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Note a suite request; return the answer to send back instead of relaying, if any."""
        method = message.get("method")
        if not isinstance(method, str) or "id" not in message:
            return None
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        needs: set[str] = set()
        if method == "control":
            needs.add(CONTROL_OPS.get(str(params.get("op")), ""))
        elif method == "configure":
            needs |= configure_needs(params)
        hidden = sorted(need for need in needs if need and self.hides(need))
        if hidden:
            return {
                "id": message["id"],
                "error": {
                    "code": "unsupported",
                    "message": f"capability {', '.join(hidden)} is stripped",
                },
            }
        with self._lock:
            self._pending[_key(message["id"])] = method
        return None

    def from_host(self, message: dict[str, Any]) -> bool:
        """Take the hidden capabilities out of a host message, in place; return whether it
        changed."""
        if "method" in message or "id" not in message:
            return False  # a request of the host's own (a prompt): relayed as it is
        with self._lock:
            method = self._pending.pop(_key(message["id"]), None)
        result = message.get("result")
        if not isinstance(result, dict):
            return False
        if method == "start":
            host = result.get("host")
            if isinstance(host, dict) and isinstance(host.get("capabilities"), list):
                host["capabilities"] = [
                    item for item in host["capabilities"] if not self.hides(str(item))
                ]
                return True
        elif method == "observe":
            for capability, member in OBSERVE_MEMBERS.items():
                if self.hides(capability):
                    result.pop(member, None)
            return True
        return False


def _key(identifier: object) -> object:
    return json.dumps(identifier, sort_keys=True)


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _encode(message: Mapping[str, Any]) -> bytes:
    # ASCII escapes keep lone surrogates, which a host may legally send, encodable.
    return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def relay(
    stripper: Stripper, child: subprocess.Popen[bytes], suite_in: IO[bytes], suite_out: IO[bytes]
) -> int:
    """Relay one session between the suite's streams and ``child`` until the child exits.

    Returns:
        The child's exit status.
    """
    assert child.stdin is not None
    assert child.stdout is not None
    to_child, from_child = child.stdin, child.stdout
    write_lock = threading.Lock()

    def to_suite(data: bytes) -> None:
        with write_lock:
            suite_out.write(data)
            suite_out.flush()

    def upstream() -> None:
        try:
            for line in iter(suite_in.readline, b""):
                message = _decode(line)
                answer = stripper.from_suite(message) if message is not None else None
                if answer is not None:
                    to_suite(_encode(answer))
                    continue
                to_child.write(line)
                to_child.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                to_child.close()

    threading.Thread(target=upstream, name="strip-upstream", daemon=True).start()
    # Read in bounded pieces: a piece without its newline is part of an over-long line, relayed
    # as it is for the suite's own line limit to judge.
    for line in iter(lambda: from_child.readline(CHUNK), b""):
        message = _decode(line) if line.endswith(b"\n") else None
        try:
            changed = message is not None and stripper.from_host(message)
            to_suite(_encode(message) if changed and message is not None else line)
        except (BrokenPipeError, OSError):
            break
    return child.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m conformance.strip CAP[,CAP] -- <adapter command>``."""
    parser = OneLineParser(
        prog="python -m conformance.strip",
        description="Run a driver-protocol adapter with some of its capabilities hidden from "
        "the suite: taken out of the handshake, out of every observe answer, and answered "
        "'unsupported' when asked for. ALL hides every capability.",
    )
    add_version(parser)
    parser.add_argument(
        "capabilities",
        help="comma-separated capabilities of the protocol's published list to strip, or ALL",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the adapter command")
    options = parser.parse_args(argv)
    command = list(options.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("give the adapter command after --")
    stripped = [part.strip() for part in options.capabilities.split(",") if part.strip()]
    if not stripped:
        parser.error("name at least one capability to strip, or ALL")
    unknown = sorted(set(stripped) - PUBLISHED_CAPABILITIES - {ALL})
    if unknown:
        # A misspelt name would hide nothing while its author believes otherwise.
        parser.error(
            f"{escape_controls(', '.join(unknown))[:200]} is not a capability of the protocol's "
            "published list (docs/driver-protocol.md, Capabilities)"
        )
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as error:
        print(f"conformance.strip: cannot start the adapter ({error.strerror})", file=sys.stderr)
        return 2
    return relay(Stripper(stripped), child, sys.stdin.buffer, sys.stdout.buffer)


def _exit(status: int) -> NoReturn:
    """End the process with ``status`` once its streams are flushed, without finalizing the
    interpreter: the relay's reader of the suite's stream is a daemon thread, still blocked in a
    read of stdin when the adapter ends first (a client that keeps the pipe open after its
    ``shutdown``), and finalizing under it aborts the process ("could not acquire lock for
    <stdin> at interpreter shutdown"), exit -6, in place of the adapter's own status."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    _exit(main())
