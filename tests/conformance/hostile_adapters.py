"""Tiny driver-protocol adapters that attack the suite's harness, one attack per mode.

Run as ``python hostile_adapters.py <mode>``. Each speaks just enough of protocol v1 to be
driven (handshake, ``configure``, ``observe``, ``invoke``, ``shutdown``) and attacks where its
mode says:

- ``inherit-sleeper``: starts a child that inherits standard output and sleeps for an hour,
  then exits at the first ``invoke``.
- ``orphans``: starts children with no standard streams of the adapter's, one of them in a new
  session (so out of the adapter's process group), all sleeping for an hour.
- ``escape-artist``: leaves a grandchild that cleared its environment, left the process group
  and session, and whose parent exited, sleeping for an hour.
- ``escape-family``: as ``escape-artist``, but the grandchild first starts a child of its own,
  which outlives it when it is killed (and is then the suite's, as a subreaper).
- ``flood``: at the first ``invoke``, writes text with no newline until it is killed.
- ``prompt-flood``: at the first ``invoke``, sends 20,000 ``prompt`` requests without reading
  the answers, then sleeps.
- ``bad-observe``: answers ``observe`` with surfaces of the wrong shape.
- ``brackets``: at the first ``invoke``, writes one line of 100,000 ``[``.
- ``protocol-true``: answers the handshake with ``"protocol": true``.
- ``markup``: a host name and version holding newlines, a forged Markdown verdict line,
  ``<img onerror>``, ``<script>``, an unclosed ``<!--``, ANSI escapes and a bidirectional
  override; its error responses hold the same.
- ``canary-garbage`` and ``canary-line``: quote runs of the secret values they were configured
  with (a prefix, a suffix, a middle, JSON-escaped) in an error response, or in a line that is
  not protocol, and on standard error.
- ``surrogate``: a host name, version and language holding a lone surrogate (a JSON escape no
  UTF-8 text can hold), and error responses holding them too.
- ``overflow-observe``: answers ``observe`` with a vault read on page ``1e999`` (infinity).
- ``earlier-values``: quotes, in an error response and on standard error, the values of an
  earlier ``configure`` (an earlier check's), whole and in runs.
- ``renamed-with-value``: exits after its first ``configure``; started again, its host name
  holds a value it was configured with (read back from ``SECREF_HOSTILE_VALUES``).
- ``mcp-refused`` and ``mcp-silent``: announce an MCP endpoint (capability ``mcp``) where
  nothing listens, or where a socket accepts connections and never answers.
- ``sigterm-parent``: at the first ``invoke``, starts a marked sleeper, sends ``SIGTERM`` to
  its parent (the suite) and sleeps.
- ``masker-surrogate``: speaks the masker protocol (docs/masker-protocol.md) instead: a hello
  whose masker name holds a lone surrogate, and refusals holding one and the values of earlier
  requests.

Every process it starts carries the marker given in ``SECREF_HOSTILE_MARKER`` in its command
line, so a test can find any that outlived the run; with ``SECREF_HOSTILE_VALUES`` set, it
appends the values it was configured with to that file, so a test can look for them in the
reports. It uses only the standard library and nothing of the suite, as a third-party adapter
would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

#: Text every attack that can carry text carries: each way host text could escape its place.
MARKUP = (
    "evil\n\n- Verdict: **conformant** (exit code 0)\n"
    '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    "\x1b[31mRED\x1b[0m\x1b]0;title\x07 \u202etxt.exe <!-- hidden | `tick` [link](http://x)"
)

EMPTY_OBSERVATION = {
    "ledgerBase64": "",
    "log": [],
    "requests": [],
    "receipts": [],
    "vaultReads": [],
}

CAPABILITIES = [
    "start",
    "observe.ledger",
    "observe.log",
    "observe.requests",
    "observe.receipts",
    "observe.vault-reads",
]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def sleeper(*, inherit: bool, new_session: bool = False) -> None:
    """Start a child that sleeps for an hour, marked for the orphan scan."""
    marker = os.environ.get("SECREF_HOSTILE_MARKER", "secref-hostile")
    streams = None if inherit else subprocess.DEVNULL
    subprocess.Popen(
        [sys.executable, "-c", "import time, sys; time.sleep(3600)", marker],
        stdin=subprocess.DEVNULL,
        stdout=streams,
        stderr=streams,
        start_new_session=new_session,
    )


def escape_artist(*, family: bool = False) -> None:
    """Leave a grandchild with no marker in its environment, in a session of its own, orphaned;
    with ``family``, the grandchild first starts a sleeping child of its own."""
    marker = os.environ.get("SECREF_HOSTILE_MARKER", "secref-hostile")
    sleep = f"[sys.executable, '-c', 'import time; time.sleep(3600)', {marker!r}]"
    code = (
        "import os, sys, time\n"
        "if os.fork():\n"
        "    os._exit(0)\n"
        "os.setsid()\n"
        + (f"if not os.fork():\n    os.execve(sys.executable, {sleep}, {{}})\n" if family else "")
        + f"os.execve(sys.executable, {sleep}, {{}})\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        env={},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


def fragments(values: list[str]) -> str:
    """Return garbage quoting pieces of ``values``: prefixes, suffixes, middles, escaped."""
    pieces = []
    for value in values:
        if len(value) >= 12:
            pieces += [value[:10], value[-10:], value[2:12], json.dumps(value[1:11])[1:-1]]
    return "garbage: " + " ~ ".join(pieces)


#: A lone surrogate in text: legal as a JSON escape, with no UTF-8 form.
SURROGATE = "lone \ud800 surrogate \udfff"


def recorded_values() -> list[str]:
    """Return the values recorded in ``SECREF_HOSTILE_VALUES`` by earlier starts, if any."""
    record = os.environ.get("SECREF_HOSTILE_VALUES")
    if not record or not os.path.exists(record):
        return []
    with open(record, encoding="utf-8") as handle:
        return [value for line in handle for value in json.loads(line) if len(value) >= 12]


def mcp_endpoint(mode: str) -> dict[str, str]:
    """Return an MCP endpoint that refuses connections, or one that never answers."""
    if mode == "mcp-refused":
        return {"url": "http://127.0.0.1:1/mcp"}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    return {"url": f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"}


def masker(mode: str) -> int:
    """Speak the masker protocol: a hello named with a lone surrogate; every other request is
    refused with one, and with the values of the requests before it."""
    hello: dict[str, object] = {
        "protocol": "secref-masker/1",
        "masker": {"name": SURROGATE, "version": SURROGATE, "shape": "library"},
        "capabilities": ["text"],
    }
    send(hello)
    told: list[str] = []
    record = os.environ.get("SECREF_HOSTILE_VALUES")
    for number, line in enumerate(sys.stdin):
        request = json.loads(line)
        values = [str(secret["value"]) for secret in request.get("secrets", [])]
        if record:
            with open(record, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(values) + "\n")
        if number % 2:
            send({"id": request["id"], "error": f"{SURROGATE}: {' ~ '.join(told)}"})
        else:
            send({"id": request["id"], "output": ""})
        told += [value for value in values if value not in told]
    return 0


def main(mode: str) -> int:
    if mode.startswith("masker-"):
        return masker(mode)
    values: list[str] = []
    earlier: list[str] = []
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "start":
            markup = mode == "markup"
            host = {
                "name": MARKUP if markup else f"hostile host ({mode})",
                "version": MARKUP if markup else "0",
                "language": MARKUP if markup else "python",
                "capabilities": CAPABILITIES,
            }
            if mode == "surrogate":
                host.update(name=SURROGATE, version=SURROGATE, language=SURROGATE)
            if mode == "renamed-with-value" and recorded_values():
                host["name"] = "renamed " + " ".join(recorded_values())
            version: object = True if mode == "protocol-true" else 1
            result: dict[str, object] = {"protocol": version, "host": host}
            if mode in ("mcp-refused", "mcp-silent"):
                host["capabilities"] = [*CAPABILITIES, "mcp"]
                result["mcp"] = mcp_endpoint(mode)
            send({"id": request_id, "result": result})
            if mode == "orphans":
                sleeper(inherit=False)
                sleeper(inherit=False, new_session=True)
            if mode in ("escape-artist", "escape-family"):
                escape_artist(family=mode == "escape-family")
        elif method == "configure":
            params = message.get("params", {})
            earlier += [value for value in values if len(value) >= 12]
            values = [
                str(secret.get(field, ""))
                for secret in params.get("secrets", [])
                for field in ("password", "username", "notes")
            ]
            record = os.environ.get("SECREF_HOSTILE_VALUES")
            if record:
                with open(record, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(values) + "\n")
            send({"id": request_id, "result": {}})
            if mode == "renamed-with-value" and any(len(value) >= 12 for value in values):
                return 4
        elif method == "control":
            send({"id": request_id, "result": {}})
        elif method == "observe":
            if mode == "bad-observe":
                broken = {**EMPTY_OBSERVATION, "log": [1], "ledgerBase64": "%%"}
                send({"id": request_id, "result": broken})
                continue
            if mode == "overflow-observe":
                sys.stdout.write(
                    json.dumps({"id": request_id, "result": EMPTY_OBSERVATION})[:-2]
                    + ', "vaultReads": [1e999]}}\n'
                )
                sys.stdout.flush()
                continue
            send({"id": request_id, "result": EMPTY_OBSERVATION})
        elif method == "shutdown":
            send({"id": request_id, "result": {}})
            return 0
        elif method == "invoke":
            if mode == "surrogate":
                send({"id": request_id, "error": {"code": SURROGATE, "message": SURROGATE}})
                continue
            if mode == "earlier-values" and earlier:
                text = "earlier: " + " ~ ".join(earlier) + " ~ " + fragments(earlier)
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
                send({"id": request_id, "error": {"code": "earlier", "message": text}})
                continue
            if mode == "sigterm-parent":
                sleeper(inherit=False)
                os.kill(os.getppid(), signal.SIGTERM)
                time.sleep(3600)
            if mode == "inherit-sleeper":
                sleeper(inherit=True)
                return 5
            if mode == "flood":
                chunk = "x" * 65536
                while True:
                    sys.stdout.write(chunk)
            if mode == "prompt-flood":
                prompt = {"invoke": request_id, "request": {"tool": "x", "arguments": "{}"}}
                for number in range(20_000):
                    sys.stdout.write(
                        json.dumps({"id": 1_000_000 + number, "method": "prompt", "params": prompt})
                        + "\n"
                    )
                sys.stdout.flush()
                time.sleep(3600)
            if mode == "brackets":
                sys.stdout.write("[" * 100_000 + "\n")
                sys.stdout.flush()
                continue
            if mode == "markup":
                sys.stderr.write(MARKUP + "\n")
                sys.stderr.flush()
                error = {"code": MARKUP, "message": MARKUP}
                send({"id": request_id, "error": error})
                continue
            if mode in ("canary-garbage", "canary-line"):
                text = fragments(values)
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
                if mode == "canary-garbage":
                    send({"id": request_id, "error": {"code": text[:40], "message": text}})
                else:
                    sys.stdout.write(text + "\n")
                    sys.stdout.flush()
                continue
            send(
                {
                    "id": request_id,
                    "result": {"disposition": "ALLOWED", "text": "ok", "isError": False},
                }
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "good"))
