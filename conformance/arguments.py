"""The pytest arguments every run of the conformance suite starts with.

This module owns :func:`base_arguments`, shared by the console script (:mod:`conformance.cli`)
and the self-test (:mod:`conformance.selftest.runner`), so that neither has to import the other,
and what every command line of the project has alike: :class:`OneLineParser` (a usage error is
one line on standard error and exit status 2), :func:`version` for ``--version``, and the
argument types :func:`process_count` and :func:`positive_seconds`. It must stay a leaf: it
imports nothing of the suite beyond the ``conformance`` package itself, runs nothing, and prints
nothing but a usage error.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

import conformance

#: The package whose modules are the suite's checks.
CHECKS: Final = "conformance.checks"

#: The distribution every console script and ``python -m`` tool of the project belongs to.
DISTRIBUTION: Final = "secref-suite"


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error and exit status 2.

    argparse's own ``error`` prints the whole usage first, which buries the message; the line
    names the program and points at ``--help``. Subparsers are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def version(prog: str) -> str:
    """Return the ``--version`` text of ``prog``: its name and the installed distribution's."""
    from importlib import metadata

    try:
        number = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        number = "unknown"
    return f"{prog} ({DISTRIBUTION}) {number}"


def add_version(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` a ``--version`` option that prints :func:`version` and exits 0."""
    parser.add_argument(
        "--version",
        action="version",
        version=version(parser.prog),
        help="print the program's name and version, then exit",
    )


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
        # pytest's own cleanup of numbered temporary directories can stop part way through a
        # listing when another pytest session on the machine removes the same directories;
        # the listing's iterator is then closed by the garbage collector, whose warning must
        # not end the run as an error: it says nothing about the host.
        "-W",
        "ignore:unclosed scandir iterator:ResourceWarning",
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


def positive_seconds(text: str) -> float:
    """Parse a time limit in seconds (``--host-timeout``, the masker's ``--timeout``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a finite number above 0 (a usage error,
            exit 2).
    """
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"seconds must be a number above 0, not {text}")
    return seconds


def positive_count(text: str) -> int:
    """Parse a whole number of at least 1 (``--host-max-line``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a whole number of at least 1.
    """
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"at least 1 is needed, not {count}")
    return count
