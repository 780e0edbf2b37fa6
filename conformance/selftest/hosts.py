"""Serving a mutant as a host: in this process, or behind the reference driver.

This module owns the two ways a mutant of :mod:`conformance.selftest.catalog` becomes the host
under test: :func:`inprocess_host`, the in-process reference host with the mutant applied until
it closes (``--host mutant:<name>``), and :func:`run_driver`, the reference driver serving it
over driver protocol v1 (``python -m conformance.selftest driver <name>``, the command
:func:`driver_command` returns), so a mutant can be checked through the subprocess path too;
the driver serves a legal variant (:mod:`conformance.selftest.variants`) the same way. It
applies a mutant and undoes it, and nothing more: it must never run the suite nor import what
does (:mod:`conformance.selftest.runner`, :mod:`conformance.cli`), and never print a value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any, Final

from conformance.host import HostUnderTest
from conformance.selftest.base import Mutant, applied
from conformance.selftest.catalog import get

#: The module that serves a mutant behind the reference driver (``... driver <name>``).
DRIVER_MODULE: Final = "conformance.selftest"


class _MutantHost:
    """The in-process reference host with a mutant applied while it is open."""

    def __init__(self, mutant: Mutant) -> None:
        from conformance.hosts.inprocess import InProcessHost

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(applied(mutant))
        self._inner = InProcessHost()
        self._mutant = mutant

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def info(self) -> Any:
        info = self._inner.info()
        return dataclasses.replace(info, name=f"{info.name} (mutant {self._mutant.name})")

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._stack.close()


def inprocess_host(name: str) -> HostUnderTest:
    """Return the in-process reference host with mutant ``name`` applied until it closes.

    Raises:
        KeyError: No mutant has that name.
    """
    host: HostUnderTest = _MutantHost(get(name))
    return host


def driver_command(name: str) -> str:
    """Return the ``--host`` command that serves mutant ``name`` behind the reference driver."""
    return f"{sys.executable} -m {DRIVER_MODULE} driver {name}"


def run_driver(name: str) -> int:
    """Serve mutant (or legal variant) ``name`` over driver protocol v1 on standard input and
    output.

    Raises:
        KeyError: No mutant or variant has that name.
    """
    from conformance.selftest.variants import BY_NAME as VARIANTS

    variant = VARIANTS.get(name)
    changed = variant if variant is not None else get(name)
    kind = "mutant" if variant is None else "variant"
    from reference_impl import driver

    with applied(changed):
        return driver.main([], name=f"secref reference host ({kind} {changed.name})")
