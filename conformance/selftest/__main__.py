"""``python -m conformance.selftest``: list the mutants, serve one behind the driver, or self-test.

This module owns only the entry point: ``list`` prints the catalog, ``driver NAME`` serves a
mutant over driver protocol v1 (the command :func:`conformance.selftest.hosts.driver_command`
returns), and ``selftest`` runs the suite against the mutants. ``driver NAME`` goes straight to
:func:`conformance.selftest.hosts.run_driver`: the self-test starts hundreds of these, and the
runner would import pytest and the suite into each for nothing. Everything else is done by
:func:`conformance.selftest.runner.main`; this module must never hold logic of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a mutant behind the driver, or hand the command line to the runner."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) == 2 and arguments[0] == "driver" and not arguments[1].startswith("-"):
        from conformance.selftest.hosts import run_driver

        return run_driver(arguments[1])
    from conformance.selftest.runner import main as run

    return run(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
