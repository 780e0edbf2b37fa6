"""The reference host over driver protocol v1: ``python -m reference_impl.driver``.

This module owns the reference host's adapter for the conformance suite's subprocess path. It
reads newline-delimited JSON requests on standard input, serves ``start``, ``configure``,
``invoke``, ``control``, ``observe`` and ``shutdown`` through :class:`HarnessHost`, runs every
``invoke`` on its own thread, and asks the suite to play the operator with ``prompt`` requests
while calls wait. It uses nothing beyond what ``docs/driver-protocol.md`` describes, so it doubles
as a worked example for adapter authors. A mutant host passes a broken registry factory.

It must never write anything but protocol messages to standard output, and never print a value:
on standard error it names only the kind of an internal failure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final, NoReturn

from reference_impl._registry import Registry
from reference_impl._version import version_text
from reference_impl.harness import HarnessHost, PromptCallback, RegistryFactory

#: The protocol version this adapter speaks (docs/driver-protocol.md, "Lifecycle and handshake").
PROTOCOL_VERSION: Final = 1

#: Methods the suite may send that this adapter serves.
_METHODS: Final = frozenset({"start", "configure", "invoke", "control", "observe", "shutdown"})


def mcp_available() -> bool:
    """Return whether the MCP SDK is installed, so that capability ``mcp`` can be served."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


class _RequestError(Exception):
    """A request is answered with an error response of this code."""

    def __init__(self, code: str, message: str, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data) if data is not None else None


class _Answer:
    """The suite's answer to one prompt, awaited by the call that sent it."""

    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer = "none"


class Driver:
    """One reference host served over driver protocol v1.

    Args:
        registry_factory: Builds the registry; a mutant host passes a broken one.
        name: The host name the handshake announces; the harness's own by default.
        stdin: Where requests arrive (binary); the process's standard input by default.
        stdout: Where messages go (binary); the process's standard output by default.
        stderr: The host's free-form log; the process's standard error by default.
    """

    def __init__(
        self,
        registry_factory: RegistryFactory = Registry,
        *,
        name: str | None = None,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
        stderr: IO[str] | None = None,
    ) -> None:
        self._harness = HarnessHost(registry_factory)
        self._name = name
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._err = stderr if stderr is not None else sys.stderr
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._prompts: dict[str, _Answer] = {}
        self._prompt_ids = itertools.count(1)
        self._configured = False
        self._approval_timeout = 45.0
        self._mcp: Any = None

    # --- the wire ----------------------------------------------------------------------------

    def _send(self, message: Mapping[str, Any]) -> None:
        # ASCII with \u escapes: a lone surrogate in a result is still one valid line.
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        with self._write_lock:
            self._out.write(line.encode("ascii"))
            self._out.flush()

    def _note(self, text: str) -> None:
        self._err.write(f"reference driver: {text}\n")
        self._err.flush()

    def _reply(self, request_id: object, result: Mapping[str, Any]) -> None:
        self._send({"id": request_id, "result": dict(result)})

    def _fail(self, request_id: object, error: _RequestError) -> None:
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.data is not None:
            body["data"] = error.data
        self._send({"id": request_id, "error": body})

    # --- the loop ----------------------------------------------------------------------------

    def serve(self) -> int:
        """Serve requests until ``shutdown`` or the end of standard input.

        Returns:
            The exit status: 0.
        """
        try:
            for raw in self._in:
                try:
                    message = json.loads(raw.decode("utf-8", "surrogatepass"))
                except (ValueError, RecursionError):
                    # RecursionError: the decoder gives up on a line nested too deeply.
                    self._note("ignored a line that is not JSON")
                    continue
                if not isinstance(message, dict):
                    self._note("ignored a line that is not a JSON object")
                    continue
                if "method" in message:
                    if self._request(message):
                        return 0
                else:
                    self._response(message)
            return 0
        finally:
            if self._mcp is not None:
                self._mcp.stop()
            self._harness.close()

    def _response(self, message: Mapping[str, Any]) -> None:
        """Hand the suite's answer to the call waiting on that prompt."""
        with self._lock:
            slot = self._prompts.get(str(message.get("id")))
        if slot is None:
            self._note("ignored a response to no open prompt")
            return
        result = message.get("result")
        # An error answer, or one this adapter cannot read, approves nothing.
        answer = result.get("answer") if isinstance(result, dict) else "deny"
        slot.answer = answer if isinstance(answer, str) else "deny"
        slot.done.set()

    def _request(self, message: Mapping[str, Any]) -> bool:
        """Serve one request; return whether it was ``shutdown``."""
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params", {})
        if not isinstance(params, dict):
            self._fail(request_id, _RequestError("bad-request", "params must be an object"))
            return False
        if method not in _METHODS:
            self._fail(request_id, _RequestError("unknown-method", f"no method {method!r}"))
            return False
        if method == "invoke":
            self._start_invoke(request_id, params)
            return False
        try:
            result = self._serve_inline(str(method), params)
        except _RequestError as error:
            self._fail(request_id, error)
            return False
        self._reply(request_id, result)
        return bool(method == "shutdown")

    def _serve_inline(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if method == "start":
            return self._start(params)
        if method == "configure":
            return self._configure(params)
        if method == "shutdown":
            return {}
        if not self._configured:
            raise _RequestError("not-configured", f"{method} before the first configure")
        if method == "control":
            return self._control(params)
        return self._harness.observe()

    # --- the requests ------------------------------------------------------------------------

    def _start(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if params.get("protocol") != PROTOCOL_VERSION:
            raise _RequestError(
                "unsupported-protocol",
                f"this host speaks driver protocol {PROTOCOL_VERSION} only",
                {"supported": [PROTOCOL_VERSION]},
            )
        host = self._harness.info()
        if self._name is not None:
            host["name"] = self._name
        result: dict[str, Any] = {"protocol": PROTOCOL_VERSION, "host": host}
        if mcp_available():
            host["capabilities"] = [*host["capabilities"], "mcp"]
            if params.get("mcp") is True:
                result["mcp"] = self._serve_mcp()
        return result

    def _serve_mcp(self) -> dict[str, Any]:
        """Serve this session's host over Streamable HTTP on loopback; return the endpoint."""
        if self._mcp is None:
            from reference_impl import mcp_server

            server = mcp_server.build_server(mcp_server.HarnessBackend(self._harness))
            http = mcp_server.HttpServer(server, "127.0.0.1", 0)
            http.start()
            self._mcp = http
        return {
            "transport": "streamable-http",
            "url": self._mcp.url,
            "dispositionMeta": "io.secref/disposition",
        }

    def _configure(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            self._harness.configure(params)
            self._approval_timeout = float(params.get("approvalTimeoutS", 45.0))
        except (ValueError, KeyError, TypeError) as error:
            self._configured = False
            raise _RequestError(
                "bad-request", f"the configuration does not fit ({type(error).__name__})"
            ) from error
        self._configured = True
        return {}

    def _control(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        op = params.get("op")
        if not isinstance(op, str):
            raise _RequestError("bad-request", "control needs an op")
        rest = {key: value for key, value in params.items() if key != "op"}
        try:
            self._harness.control(op, rest)
        except (ValueError, KeyError, TypeError) as error:
            raise _RequestError(
                "bad-request", f"control {op} does not fit ({type(error).__name__})"
            ) from error
        return {}

    def _start_invoke(self, request_id: object, params: Mapping[str, Any]) -> None:
        tool, args = params.get("tool"), params.get("args")
        if not isinstance(tool, str) or not isinstance(args, str):
            self._fail(request_id, _RequestError("bad-request", "invoke needs tool and args"))
            return
        if not self._configured:
            self._fail(request_id, _RequestError("not-configured", "invoke before configure"))
            return
        callback = self._operator(request_id)
        thread = threading.Thread(
            target=self._invoke, args=(request_id, tool, args, callback), daemon=True
        )
        thread.start()

    def _invoke(self, request_id: object, tool: str, args: str, callback: PromptCallback) -> None:
        try:
            result = self._harness.invoke(tool, args, callback)
        except Exception as error:  # the call's failure is reported, never its text
            self._note(f"invoke failed inside the host ({type(error).__name__})")
            self._fail(request_id, _RequestError("internal", "the host failed during invoke"))
            return
        ledger_error = result.pop("ledgerError", None)
        if ledger_error is not None:
            # A call whose record could not be written is never a plain success (R6.7).
            self._note(f"a call was not recorded: {ledger_error}")
            self._fail(
                request_id,
                _RequestError(
                    "internal",
                    f"the call's ledger record could not be written: {ledger_error}",
                    {"disposition": result["disposition"], "ledgerError": ledger_error},
                ),
            )
            return
        self._reply(request_id, result)

    def _operator(self, invoke_id: object) -> PromptCallback:
        """Return the operator for one call: each prompt is a request to the suite."""
        timeout = self._approval_timeout

        def on_prompt(request: dict[str, Any]) -> str:
            prompt_id = f"p{next(self._prompt_ids)}"
            slot = _Answer()
            with self._lock:
                self._prompts[prompt_id] = slot
            try:
                self._send(
                    {
                        "id": prompt_id,
                        "method": "prompt",
                        "params": {"invoke": invoke_id, "request": request},
                    }
                )
                # No answer within the approval timeout is no answer: the call times out.
                slot.done.wait(timeout)
                return slot.answer
            finally:
                with self._lock:
                    self._prompts.pop(prompt_id, None)

        return on_prompt


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage error is one line on standard error and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def main(
    argv: Sequence[str] | None = None,
    registry_factory: RegistryFactory = Registry,
    name: str | None = None,
) -> int:
    """Serve the reference host on standard input and output.

    Args:
        argv: Command-line arguments (none are taken but ``--help``).
        registry_factory: Builds the registry; a mutant host passes a broken one.
        name: The host name the handshake announces.

    Returns:
        The exit status.
    """
    parser = _OneLineParser(
        prog="python -m reference_impl.driver",
        description="The secref reference host over driver protocol v1 (NDJSON on stdio).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=version_text(parser.prog),
        help="print the program's name and version, then exit",
    )
    parser.parse_args(argv)
    return Driver(registry_factory, name=name).serve()


if __name__ == "__main__":
    raise SystemExit(main())
