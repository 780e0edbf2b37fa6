"""Hosts the suite can check, each behind :class:`conformance.host.HostUnderTest`.

This module owns the one function that turns the ``--host`` option into a host under test, so
a new kind of host is one branch here and nothing else changes: no option means the reference
host in this process; ``mutant:<name>`` is a broken reference host from the mutant catalog, in
this process; anything else is a command that starts a driver-protocol adapter
(:mod:`conformance.hosts.subprocess`). It also keeps a host started ahead of the run (the console
script's handshake before collection) until the run's own :func:`build_host` asks for the same
host, so a good adapter is started once. It must never start a host it was not asked for, and
never hand a host started ahead to a build that asked for another.
"""

from __future__ import annotations

import importlib
import shlex
from typing import Any, Final

from conformance.host import HostUnderTest

#: ``--host`` values that mean the embedded reference host.
IN_PROCESS: Final = ("", "inprocess", "in-process", "reference")

#: The ``--host`` prefix that selects a mutant of the reference host, in process.
MUTANT_PREFIX: Final = "mutant:"


class HostSelectionError(RuntimeError):
    """The ``--host`` value names no host the suite can start: a harness error."""


#: How a host was asked for: its selector, its path and its driver options, in order.
_BuildKey = tuple[str, str, tuple[tuple[str, Any], ...]]

#: Hosts started ahead by :func:`start_ahead`, each waiting for the build that asks for it.
_STARTED: dict[_BuildKey, HostUnderTest] = {}


def _build_key(selector: str | None, via: str, driver_options: dict[str, Any]) -> _BuildKey:
    return ((selector or "").strip(), via, tuple(sorted(driver_options.items())))


def is_adapter(selector: str | None) -> bool:
    """Return whether ``selector`` names an adapter command, not a host in this process."""
    text = (selector or "").strip()
    return not (text in IN_PROCESS or text.startswith(MUTANT_PREFIX))


def start_ahead(selector: str | None, via: str = "driver", **driver_options: Any) -> HostUnderTest:
    """Build the host ``selector`` names now, and keep it for the run's own :func:`build_host`.

    The next :func:`build_host` call with the same arguments returns this host instead of
    starting another; :func:`release_started` closes it if no call did.

    Args:
        selector: As for :func:`build_host`.
        via: As for :func:`build_host`.
        driver_options: As for :func:`build_host`.

    Returns:
        The host, started and handshaken.

    Raises:
        HostSelectionError: As :func:`build_host` raises it, a failed handshake included.
    """
    host = build_host(selector, via, **driver_options)
    key = _build_key(selector, via, driver_options)
    earlier = _STARTED.pop(key, None)
    if earlier is not None:
        earlier.close()
    _STARTED[key] = host
    return host


def release_started() -> None:
    """Close every host started ahead that no build asked for."""
    while _STARTED:
        _, host = _STARTED.popitem()
        host.close()


def build_host(selector: str | None, via: str = "driver", **driver_options: Any) -> HostUnderTest:
    """Return the host under test that ``selector`` names.

    Args:
        selector: The ``--host`` option: ``None`` or ``"inprocess"`` for the reference host in
            this process, ``"mutant:<name>"`` for a mutant of it, or a command line that starts
            a driver-protocol adapter.
        via: ``"driver"`` (calls as driver-protocol ``invoke`` requests) or ``"mcp"`` (calls
            through the MCP client to the adapter's endpoint, :mod:`conformance.hosts.mcp`).
        driver_options: Keyword arguments for :class:`conformance.hosts.subprocess.SubprocessHost`
            (``call_timeout``, ``start_timeout``, ``validate``, ``max_line``); ignored by
            in-process hosts.

    Returns:
        A host ready for :meth:`HostUnderTest.reset`: the one :func:`start_ahead` started with
        the same arguments, if it is waiting, or a new one.

    Raises:
        HostSelectionError: The selector names no host this suite can build.
    """
    kept = _STARTED.pop(_build_key(selector, via, driver_options), None)
    if kept is not None:
        return kept
    text = (selector or "").strip()
    if via not in ("driver", "mcp"):
        raise HostSelectionError(f"--via {via!r}: the paths are driver and mcp")
    if via == "mcp":
        if text in IN_PROCESS or text.startswith(MUTANT_PREFIX):
            raise HostSelectionError(
                "--via mcp needs an adapter command, e.g. --host 'python -m reference_impl.driver'"
            )
        from conformance.hosts.mcp import McpHost

        return McpHost(shlex.split(text), **driver_options)
    if text in IN_PROCESS:
        from conformance.hosts.inprocess import InProcessHost

        return InProcessHost()
    if text.startswith(MUTANT_PREFIX):
        from conformance.selftest.hosts import inprocess_host

        try:
            return inprocess_host(text[len(MUTANT_PREFIX) :])
        except KeyError as error:
            raise HostSelectionError(f"no mutant named {error.args[0]!r}") from error
    command = shlex.split(text)
    try:
        module = importlib.import_module("conformance.hosts.subprocess")
    except ImportError as error:
        raise HostSelectionError("the subprocess driver client is not available") from error
    factory = getattr(module, "SubprocessHost", None)
    if factory is None:
        raise HostSelectionError("conformance.hosts.subprocess has no SubprocessHost")
    built: HostUnderTest = factory(command, **driver_options)
    return built


def path_of(selector: str | None, via: str | None = "driver") -> str:
    """Return the path under test that the suite's own options choose (decisions S1.8).

    Never anything a host announces: the path is known to the suite alone.

    Args:
        selector: The ``--host`` option.
        via: The ``--via`` option (``driver`` or ``mcp``); a host in this process has no other.

    Returns:
        ``inprocess``, ``driver`` or ``mcp`` (:data:`conformance.via.PATHS`).
    """
    from conformance.via import DRIVER, INPROCESS, MCP

    if not is_adapter(selector):
        return INPROCESS
    return MCP if via == MCP else DRIVER


def describe(selector: str | None) -> str:
    """Return a printable description of a ``--host`` value."""
    text = (selector or "").strip()
    return "inprocess" if text in IN_PROCESS else text
