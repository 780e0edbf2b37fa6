"""``python -m conformance.selftest``: list the mutants, serve one behind the driver, or self-test.

This module owns only the entry point: ``list`` prints the catalog, ``driver NAME`` serves a
mutant over driver protocol v1 (the command :func:`conformance.selftest.hosts.driver_command`
returns), and ``selftest`` runs the suite against the mutants. Everything is done by
:func:`conformance.selftest.runner.main`; this module must never hold logic of its own.
"""

from __future__ import annotations

from conformance.selftest.runner import main

if __name__ == "__main__":
    raise SystemExit(main())
