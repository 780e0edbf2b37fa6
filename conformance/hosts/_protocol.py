"""Driver protocol v1 as data: its version, its errors, its schemas, and host text quoted safely.

This module owns what the suite's side of the protocol (docs/driver-protocol.md) agrees on
before any process runs: the version number, which must be the integer 1; the exceptions that
say how a host failed (each ends the running check as errored, never as a verdict); the JSON
Schemas of every message, for ``--validate-protocol``; and :func:`quote`, which makes text
the host sent inert before it is put into an error message: control characters shown escaped,
long text cut. It never reads from or writes to a process, and never quotes host text unquoted.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, Final

from _pytest.outcomes import Failed

from conformance.hosts import HostSelectionError
from conformance.inert import escape_controls

#: The protocol version the suite speaks.
PROTOCOL_VERSION: Final = 1

#: Characters of an offending line quoted in an error (the issue's figure).
LINE_EXCERPT_CHARS: Final = 200

#: Characters of the host's standard error quoted when it crashes.
STDERR_TAIL_CHARS: Final = 600

#: Bytes of standard error kept for the ``printed`` surface of one check; older text is dropped.
PRINTED_LIMIT_BYTES: Final = 8 * 1024 * 1024

#: Seconds the host has to exit after ``shutdown`` before it is killed.
SHUTDOWN_GRACE_SECONDS: Final = 5.0

#: Checks in a row that may end with the host failed (it could not be started again, crashed,
#: hung or wrote garbage) before the host is abandoned for the run (decisions S1.10: "after three
#: consecutive failures to start or to answer"), so a host that fails on everything costs three
#: failures, not one per check.
MAX_CONSECUTIVE_FAILURES: Final = 3

#: The same bound under its earlier name, from when only hangs were counted.
MAX_CONSECUTIVE_HANGS: Final = MAX_CONSECUTIVE_FAILURES

#: Default seconds for the handshake and for each request (``--host-start-timeout``,
#: ``--host-timeout``). The handshake's bound keeps a host that never answers under the ten
#: seconds a broken adapter may cost before the run ends with its one error line.
DEFAULT_START_TIMEOUT: Final = 8.0
DEFAULT_CALL_TIMEOUT: Final = 30.0

SUITE: Final = {"name": "secref-suite", "version": "0.1.0"}

#: Names of the announced capabilities a refusal quotes; the rest are counted.
SHOWN_NAMES: Final = 5

#: Characters of one refused capability name quoted in an error.
NAME_EXCERPT_CHARS: Final = 60


def _published_capabilities() -> frozenset[str]:
    """Return the protocol's published capability list, from its one source: the schema."""
    text = (
        resources.files("conformance")
        .joinpath("schemas", "protocol", "common.schema.json")
        .read_text(encoding="utf-8")
    )
    return frozenset(str(name) for name in json.loads(text)["$defs"]["capability"]["enum"])


#: The capabilities an adapter may announce at ``start``: the protocol's published list
#: (docs/driver-protocol.md, "Capabilities"), read from the ``capability`` definition of the
#: protocol schema, its one source (decisions S1.8). Any other name is refused at ``start``.
PUBLISHED_CAPABILITIES: Final = _published_capabilities()


class HarnessError(HostSelectionError):
    """The run cannot go on: the adapter cannot be started, or speaks another protocol version.

    The console script exits with status 2; nothing about conformance was learned.
    """


class HostError(Exception):
    """The host failed at the protocol level during a check, which ends as errored.

    Never a pass and never a conformance failure: the check learned nothing.
    """


class HostCrashedError(HostError):
    """The adapter exited, or closed its standard output, before it was asked to."""


class HostHungError(HostError):
    """The adapter did not answer a request within its timeout."""


class HostAbandonedError(HostError, Failed):
    """The host failed too many checks in a row and is not started again for this run.

    Every later check ends as errored at once with this error, which names the last cause. It
    is also a pytest failure without a traceback (``pytrace`` false), so that ending each of a
    run's remaining checks costs no traceback rendering: the check's report is its message.
    """

    def __init__(self, message: str) -> None:
        Failed.__init__(self, message, pytrace=False)


class ProtocolViolationError(HostError):
    """A line that is not protocol, or (with validation) a message that fails its schema."""


class UnpublishedCapabilityError(ProtocolViolationError):
    """The handshake announced a capability outside the protocol's published list.

    Refused at ``start`` with the names quoted (decisions S1.8): the suite never runs against a
    host whose description it would have to guess at, and never lets a host name the suite's own
    state, such as the path under test. At the first start it ends the run (exit status 2); at a
    restart it is a host that changed (:class:`HostChangedError`).
    """


class HostChangedError(HostError):
    """The adapter, started again, described another host: a harness error for the run.

    Its name, version, language or capabilities differ from the first handshake's (decisions
    S1.8). The running check ends as errored, never failed, the host is abandoned, and the run's
    verdict is ``harness-error`` whatever the expectations file says.
    """


class HostRefusedError(HostError):
    """The adapter answered a request with an error response.

    Attributes:
        code: The error code, e.g. ``unsupported``.
    """

    def __init__(self, method: str, code: str, message: str) -> None:
        super().__init__(f"the host refused {method}: {code}: {message}")
        self.code = code


def split_command(command: str | Sequence[str]) -> list[str]:
    """Return the adapter's command as an argument list, split as a POSIX shell would."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def is_protocol_version(value: object) -> bool:
    """Return whether ``value`` is the protocol version the suite speaks: the integer 1.

    ``True``, ``1.0`` and ``"1"`` compare or convert equal to 1 in Python and are refused.
    """
    return type(value) is int and value == PROTOCOL_VERSION


def quote(text: str, limit: int = LINE_EXCERPT_CHARS) -> str:
    """Return host text fit for an error message: cut to ``limit`` characters, controls escaped.

    Redact values before quoting: cutting could otherwise split a value out of reach.
    """
    text = text.rstrip("\r\n")
    cut = text if len(text) <= limit else text[:limit] + "…"
    return escape_controls(cut)


# --- the host's description -------------------------------------------------------------------


def _shown_names(names: Sequence[str]) -> str:
    shown = ", ".join(f"'{quote(name, NAME_EXCERPT_CHARS)}'" for name in names[:SHOWN_NAMES])
    more = len(names) - SHOWN_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def is_suite_name(name: str) -> bool:
    """Return whether ``name`` is a name of the suite's own, such as ``via.mcp``.

    The path under test (in process, driver, MCP) is known to the suite alone (decisions S1.8).
    """
    return name.split(".", 1)[0] == "via"


def published_capabilities(announced: object) -> frozenset[str]:
    """Return the capabilities a handshake announced, each one of the published list.

    Args:
        announced: The ``capabilities`` member of the host's description, as the host sent it.

    Returns:
        The names, as a set.

    Raises:
        UnpublishedCapabilityError: ``announced`` is not a list of strings, or names a capability
            outside :data:`PUBLISHED_CAPABILITIES`. The message names the cause on one line:
            the offending names, quoted inert and cut, a name of the suite's own first.
    """
    if not isinstance(announced, list):
        raise UnpublishedCapabilityError(
            f"the host announces its capabilities as {type(announced).__name__}, not as a list "
            "of the protocol's names (docs/driver-protocol.md#capabilities)"
        )
    odd = [type(name).__name__ for name in announced if not isinstance(name, str)]
    if odd:
        raise UnpublishedCapabilityError(
            f"the host announces a capability that is not a string ({odd[0]}); each must be one "
            "of the protocol's names (docs/driver-protocol.md#capabilities)"
        )
    names = list(dict.fromkeys(str(name) for name in announced))
    own = [name for name in names if is_suite_name(name)]
    if own:
        raise UnpublishedCapabilityError(
            f"the host announces {_shown_names(own)}, a name of the suite's own: the path under "
            "test (in process, driver or MCP) is known to the suite alone, never announced by a "
            "host (decisions S1.8)"
        )
    unknown = [name for name in names if name not in PUBLISHED_CAPABILITIES]
    if unknown:
        raise UnpublishedCapabilityError(
            f"the host announces capabilities the driver protocol does not publish: "
            f"{_shown_names(unknown)}; announce only names of the published list "
            "(docs/driver-protocol.md#capabilities, decisions S1.8)"
        )
    return frozenset(names)


def _announced_in(message: Mapping[str, Any]) -> None:
    """Refuse a ``start`` response whose host description announces an unpublished name."""
    result = message.get("result")
    host = result.get("host") if isinstance(result, Mapping) else None
    if isinstance(host, Mapping) and "capabilities" in host:
        published_capabilities(host["capabilities"])


# --- schemas ----------------------------------------------------------------------------------


class ProtocolSchemas:
    """The JSON Schemas of every message, for ``--validate-protocol``."""

    def __init__(self) -> None:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource

        folder = resources.files("conformance").joinpath("schemas", "protocol")
        documents: dict[str, Any] = {}
        for entry in folder.iterdir():
            if entry.name.endswith(".schema.json"):
                documents[entry.name] = json.loads(entry.read_text(encoding="utf-8"))
        registry: Registry[Any] = Registry().with_resources(
            (document["$id"], Resource.from_contents(document)) for document in documents.values()
        )
        self._validators = {
            name.removesuffix(".schema.json"): Draft202012Validator(document, registry=registry)
            for name, document in documents.items()
        }

    def names(self) -> frozenset[str]:
        """Return the schema names, e.g. ``invoke.request``."""
        return frozenset(self._validators)

    def check(self, name: str, message: Mapping[str, Any], sender: str) -> None:
        """Check ``message`` against the schema ``name``.

        Args:
            name: The schema, e.g. ``prompt.request`` or ``error.response``.
            message: The decoded message.
            sender: ``"host"`` or ``"suite"``, for the error text.

        Raises:
            ProtocolViolationError: The message does not match. The text names the schema, the path
                and the failing keyword, never the instance's content; a ``start`` response
                that announces an unpublished capability is refused first, with the name quoted
                (:class:`UnpublishedCapabilityError`).
        """
        if name == "start.response":
            # Judged by name first, so that the refusal names the capability (decisions S1.8).
            _announced_in(message)
        error = next(iter(self._validators[name].iter_errors(message)), None)
        if error is None:
            return
        pointer = "/" + "/".join(str(part) for part in error.absolute_path)
        rule = "/".join(str(part) for part in error.absolute_schema_path)
        raise ProtocolViolationError(
            f"the {sender} sent a message that does not match {name}.schema.json: "
            f"at {pointer} it fails {error.validator!r} ({rule})"
        )
