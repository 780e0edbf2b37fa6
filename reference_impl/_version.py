"""The ``--version`` text of the reference host's command lines.

This module owns :func:`version_text`, shared by ``secref`` (:mod:`reference_impl.cli`) and
the reference driver (:mod:`reference_impl.driver`): the program's name and the installed
secref-suite distribution's version. It reads only the installed package's metadata.
"""

from __future__ import annotations

from typing import Final

#: The distribution the reference host ships in.
DISTRIBUTION: Final = "secref-suite"


def version_text(prog: str) -> str:
    """Return ``--version``'s text: ``prog`` and the installed secref-suite's version."""
    from importlib import metadata

    try:
        number = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        number = "unknown"
    return f"{prog} ({DISTRIBUTION}) {number}"
