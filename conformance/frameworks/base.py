"""A real agent framework served over driver protocol v1: the base of every framework adapter.

This module owns what the framework adapters share (decisions R11): the protocol loop (``start``,
``configure``, ``invoke``, ``observe``, ``shutdown``; ``control`` is refused as unsupported,
since no framework here has an approval step or saved rules), the mapping of the suite's
references to the framework's own placeholder (``{{secret:<id>.<field>}}`` to a secret name
the framework's store holds, announced at ``start`` under ``host.placeholder``, R11.1), the
suite's standard handlers written as plain functions a framework registers as its own tools,
their receipts, and a capture of the framework's loggers at every level. A framework adapter
subclasses :class:`Framework` and drives the framework's own tool-execution path, with no
model, no network and no account.

It imports nothing but the standard library and the suite's own form oracles
(:mod:`conformance.canary`), so it runs inside a framework's venv. It never writes anything but
protocol messages to standard output, and never prints a value.
"""

from __future__ import annotations

import abc
import hashlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final

from conformance.canary import json_escape, url_form

#: The protocol version every adapter speaks (docs/driver-protocol.md).
PROTOCOL_VERSION: Final = 1

#: A suite reference, in the canonical spelling the suite writes it (R1.2): an id, a field.
REFERENCE: Final = re.compile(
    r"\{\{secret:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"(?:\.(password|username|notes))?\}\}",
    re.IGNORECASE,
)

#: The handlers an adapter registers as the framework's own tools.
HANDLERS: Final = ("echo", "sha256", "thrower", "timeout", "static", "recorder")

#: The fields of a vault entry a reference can name.
FIELDS: Final = ("password", "username", "notes")


def secret_name(secret_id: str, field_name: str = "password") -> str:
    """Return the name under which an adapter stores one field of one vault entry.

    Letters, digits and underscores only, so every framework here can spell it.
    """
    return f"secref_{secret_id.lower().replace('-', '')}_{field_name}"


class Refused(Exception):  # noqa: N818 - the framework refused the call: not an adapter error
    """The framework refused the call before its tool ran; the message is the framework's."""


class HandlerFailed(Exception):  # noqa: N818 - the thrower handler's ordinary exception
    """The ``thrower`` handler's exception: ``handler failed with`` and the string values."""


def string_values(node: object) -> Iterator[str]:
    """Yield every string value of ``node``, depth first in document order; keys are not."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, Mapping):
        for value in node.values():
            yield from string_values(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from string_values(item)


def every_form(value: str) -> list[str]:
    """Return forms a to d of ``value`` (R5.2), in order, duplicates kept."""
    form_c = url_form(value)
    return [value, json_escape(value), form_c, form_c.replace("+", "%20")]


@dataclass
class Receipt:
    """What one handler was handed: the arguments as the framework gave them to the tool."""

    tool: str
    raw: str
    view: Any

    def wire(self) -> dict[str, Any]:
        """Return the receipt as ``observe`` reports it."""
        return {"tool": self.tool, "raw": self.raw, "view": self.view}


@dataclass
class Tool:
    """One tool of a ``configure``: its name, the standard handler it binds, its options."""

    name: str
    handler: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """What the model would read back from one call, and whether it is told it failed."""

    text: str
    is_error: bool
    refused: bool = False


class Handlers:
    """The standard handlers (docs/driver-protocol.md) for one configuration, with receipts.

    A framework adapter calls :meth:`run` from inside the tool it registered, with the
    arguments exactly as the framework handed them to the tool (a mapping of parameters).
    """

    def __init__(self) -> None:
        self.receipts: list[Receipt] = []
        self._lock = threading.Lock()

    def run(self, tool: Tool, arguments: Mapping[str, Any]) -> str:
        """Record the receipt, then act as ``tool.handler``; return its text or raise."""
        view = json.loads(json.dumps(dict(arguments)))
        raw = json.dumps(view, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self.receipts.append(Receipt(tool.name, raw, view))
        values = list(string_values(view))
        kind = tool.handler
        if kind == "echo":
            return "\n".join([raw, *(form for value in values for form in every_form(value))])
        if kind == "sha256":
            return "\n".join(hashlib.sha256(v.encode("utf-8")).hexdigest() for v in values)
        if kind == "thrower":
            if tool.options.get("forms") is True:
                shown = [form for value in values for form in every_form(value)]
                raise HandlerFailed("handler failed with " + " ".join(shown))
            raise HandlerFailed("handler failed with " + " ".join(values))
        if kind == "timeout":
            time.sleep(float(tool.options.get("seconds", 30)))
            return "\n".join(values)
        if kind == "static":
            return str(tool.options.get("text", ""))
        return "ok"


class LogCapture(logging.Handler):
    """Every record of the framework's loggers, at every level, fully formatted."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[dict[str, str]] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record's whole text, exception and stack included."""
        try:
            message = self.format(record)
        except Exception as error:  # a record that cannot be formatted is kept as its kind
            message = f"unformattable record ({type(error).__name__})"
        self.records.append({"level": record.levelname, "message": message})

    def attach(self, names: Sequence[str]) -> None:
        """Capture ``names`` (and the root logger) at the most verbose level."""
        for name in ("", *names):
            logger = logging.getLogger(name)
            logger.setLevel(logging.DEBUG)
            if self not in logger.handlers:
                logger.addHandler(self)


class Framework(abc.ABC):
    """One agent framework as a host of the design with another spelling (decisions R11).

    Subclasses set the class attributes and implement :meth:`build` and :meth:`call`. A
    mutant passes a ``patch`` that breaks the framework's own substitution or masking step.
    """

    #: The host's name and the framework's pinned version, as the report shows them.
    name: str = ""
    version: str = ""
    #: How a reference is written in this framework, ``{name}`` standing for a secret's name.
    spelling: str = "{name}"
    #: The loggers the framework writes to.
    loggers: Sequence[str] = ()
    #: Surfaces beyond the result: ``observe.log`` and ``observe.receipts`` always; a
    #: framework that persists what it did adds ``observe.ledger``.
    capabilities: Sequence[str] = ("observe.log", "observe.receipts")
    #: Whether the framework can hold more than one value per entry (username, notes).
    fields: bool = True
    #: Every other way the framework lets a placeholder be written, ``{name}`` standing for
    #: the name; announced so that the bounded-work check tries each (R8).
    variants: Sequence[str] = ()

    def __init__(self) -> None:
        self.handlers = Handlers()
        self.secrets: dict[str, str] = {}
        self.tools: dict[str, Tool] = {}
        self.execution_timeout = 5.0

    @abc.abstractmethod
    def build(self) -> None:
        """Build a fresh framework from :attr:`secrets` and :attr:`tools`."""

    @abc.abstractmethod
    def call(self, tool: str, arguments: Any) -> Outcome:
        """Run one call through the framework's tool-execution path; return what the model reads.

        ``arguments`` is the call's JSON value, references already in the framework's spelling.
        """

    def persisted(self) -> bytes:
        """Return what the framework persisted since :meth:`build` (``observe.ledger``)."""
        return b""

    def placeholder(self, secret_id: str, field_name: str) -> str:
        """Return the framework's placeholder for one reference."""
        return self.spelling.format(name=secret_name(secret_id, field_name))

    def describe(self) -> dict[str, Any]:
        """Return the host description the handshake announces."""
        return {
            "name": self.name,
            "version": self.version,
            "language": "python",
            "capabilities": list(self.capabilities),
            "placeholder": {
                "from": "{{secret:<id>.<field>}}",
                "spelling": self.spelling.format(name="{name}"),
                "name": "secref_<id without hyphens>_<field>",
                "fields": list(FIELDS) if self.fields else ["password"],
                "variants": [v.format(name="{name}") for v in self.variants],
                "rules": "R1 and R2 are not applicable to this spelling (decisions R11.1)",
            },
        }


class Adapter:
    """Driver protocol v1 for one :class:`Framework` on standard input and output."""

    def __init__(
        self,
        framework: Callable[[], Framework],
        *,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
    ) -> None:
        self._factory = framework
        self._framework = framework()
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._configured = False
        self._capture = LogCapture()
        self._capture.attach(self._framework.loggers)

    def _send(self, message: Mapping[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        self._out.write(line.encode("ascii"))
        self._out.flush()

    def serve(self) -> int:
        """Serve requests until ``shutdown`` or the end of standard input; return 0."""
        for raw in self._in:
            try:
                message = json.loads(raw.decode("utf-8", "surrogatepass"))
            except (ValueError, RecursionError):
                continue
            if not isinstance(message, dict) or "method" not in message:
                continue
            request_id = message.get("id")
            method = str(message.get("method"))
            params = message.get("params")
            try:
                result = self._serve(method, params if isinstance(params, dict) else {})
            except _Error as error:
                self._send({"id": request_id, "error": {"code": error.code, "message": str(error)}})
                continue
            self._send({"id": request_id, "result": result})
            if method == "shutdown":
                return 0
        return 0

    def _serve(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "start":
            if params.get("protocol") != PROTOCOL_VERSION:
                raise _Error("unsupported-protocol", "this adapter speaks driver protocol 1")
            return {"protocol": PROTOCOL_VERSION, "host": self._framework.describe()}
        if method == "shutdown":
            return {}
        if method == "configure":
            return self._configure(params)
        if method not in ("invoke", "observe", "control"):
            raise _Error("unknown-method", f"no method {method!r}")
        if not self._configured:
            raise _Error("not-configured", f"{method} before the first configure")
        if method == "control":
            raise _Error("unsupported", "this framework has no approval step and no saved rules")
        if method == "observe":
            return self._observe()
        return self._invoke(params)

    def _configure(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if params.get("vault", "present") != "present":
            raise _Error("unsupported", "the framework's secret store cannot be absent or failing")
        framework = self._factory()
        for secret in params.get("secrets", ()):
            for field_name in FIELDS if framework.fields else ("password",):
                value = secret.get(field_name)
                if isinstance(value, str) and value:
                    framework.secrets[secret_name(str(secret["id"]), field_name)] = value
        for spec in params.get("tools", ()):
            handler = str(spec.get("handler"))
            if handler not in HANDLERS:
                raise _Error("unsupported", "this adapter registers the standard handlers only")
            framework.tools[str(spec["name"])] = Tool(
                str(spec["name"]), handler, dict(spec.get("options") or {})
            )
        framework.execution_timeout = float(params.get("executionTimeoutS", 5.0))
        framework.build()
        self._framework = framework
        self._capture.records.clear()
        self._capture.attach(framework.loggers)
        self._configured = True
        return {}

    def _map(self, text: str) -> str:
        """Rewrite each suite reference into the framework's placeholder (R11.1)."""
        framework = self._framework

        def one(match: re.Match[str]) -> str:
            return framework.placeholder(match.group(1), (match.group(2) or "password").lower())

        return REFERENCE.sub(one, text)

    def _invoke(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tool, args = params.get("tool"), params.get("args")
        if not isinstance(tool, str) or not isinstance(args, str):
            raise _Error("bad-request", "invoke needs tool and args")
        if tool not in self._framework.tools:
            return {"disposition": "UNKNOWN_TOOL", "text": f"no tool {tool}", "isError": True}
        try:
            arguments = json.loads(self._map(args))
        except ValueError as error:
            raise _Error("unsupported", "the framework takes JSON arguments only") from error
        try:
            outcome = self._framework.call(tool, arguments)
        except Exception as error:  # the framework itself broke: its kind, never its text
            raise _Error("internal", f"the framework raised {type(error).__name__}") from error
        disposition = "SECRET_UNRESOLVED" if outcome.refused else "ALLOWED"
        return {"disposition": disposition, "text": outcome.text, "isError": outcome.is_error}

    def _observe(self) -> dict[str, Any]:
        import base64

        seen: dict[str, Any] = {
            "log": list(self._capture.records),
            "receipts": [receipt.wire() for receipt in self._framework.handlers.receipts],
        }
        if "observe.ledger" in self._framework.capabilities:
            seen["ledgerBase64"] = base64.b64encode(self._framework.persisted()).decode("ascii")
        return seen


class _Error(Exception):
    """A request answered with an error response of this code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def main(framework: Callable[[], Framework]) -> int:
    """Serve ``framework`` on standard input and output; return the exit status."""
    # The framework's own console output goes to standard error, never among the messages.
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr
    return Adapter(framework, stdout=stdout).serve()
