"""Hosts the suite can check, each behind :class:`conformance.host.HostUnderTest`.

This module owns the one function that turns the ``--host`` option into a host under test, so
a new kind of host is one branch here and nothing else changes: no option means the reference
host in this process; ``mutant:<name>`` is a broken reference host from the mutant catalog, in
this process; anything else is a command that starts a driver-protocol adapter
(:mod:`conformance.hosts.subprocess`). It must never start a host it was not asked for.
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
        A host ready for :meth:`HostUnderTest.reset`.

    Raises:
        HostSelectionError: The selector names no host this suite can build.
    """
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
        from conformance.mutants import inprocess_host

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


def describe(selector: str | None) -> str:
    """Return a printable description of a ``--host`` value."""
    text = (selector or "").strip()
    return "inprocess" if text in IN_PROCESS else text
