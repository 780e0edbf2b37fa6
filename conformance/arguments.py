"""The pytest arguments every run of the conformance suite starts with.

This module owns :func:`base_arguments`, shared by the console script (:mod:`conformance.cli`)
and the self-test (:mod:`conformance.selftest.runner`), so that neither has to import the other.
It must stay a leaf: it imports nothing of the suite beyond the ``conformance`` package itself,
runs nothing, and prints nothing.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import conformance

#: The package whose modules are the suite's checks.
CHECKS: Final = "conformance.checks"


def base_arguments(modules: Sequence[str] = (CHECKS,)) -> list[str]:
    """Return the pytest arguments every run of the suite starts with.

    The suite brings its own settings rather than those of the directory it is run from: no
    ini file and no conftest is read (the plugin provides every fixture), the root is the
    directory that holds the ``conformance`` package so check ids are the same everywhere, and
    markers and warnings are strict, as in the project's own configuration.

    Args:
        modules: What to collect: the whole check package by default; a run narrowed to some
            requirements may name only the check modules that cite them.
    """
    return [
        "--pyargs",
        *modules,
        "-c",
        os.devnull,
        "--rootdir",
        str(Path(conformance.__file__).resolve().parent.parent),
        "--noconftest",
        "--strict-markers",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",
        # The checks state verdicts with require(), so plain asserts lose nothing, and without
        # rewriting the check modules load from their bytecode instead of being parsed and
        # compiled again at every run's start.
        "--assert=plain",
        # The host log is a surface the suite observes itself; pytest's own log capture only
        # formatted every record of every check into a report section to be redacted again.
        "-p",
        "no:logging",
    ]


def process_count(text: str) -> int:
    """Parse a count of processes to run side by side (``--workers``, ``selftest --jobs``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a whole number of at least 1 (a usage error,
            exit 2).
    """
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of processes: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"at least 1 process is needed, not {count}")
    return count
