"""Mutants that break operating the host from its command line (the design: operating it).

This module owns the broken reference hosts whose ``secref`` commands mislead the operator: a
listing with its columns swapped, a prompt that stays silent without a terminal. Each entry is a
:class:`~conformance.selftest.base.Mutant`. It changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant


def _list_columns_swapped(original: Callable[..., int]) -> Callable[..., int]:
    """secref list prints username before website."""
    from reference_impl import cli

    @functools.wraps(original)
    def listing(options: Any, stdout: Any) -> int:
        for record in cli.load_vault_file(options.vault).records():
            fields = (record.id, record.username.reveal(), record.website)
            stdout.write("\t".join(cli.printable(field) for field in fields) + "\n")
        return 0

    return listing


def _silent_without_terminal(original: Callable[..., Any]) -> Callable[..., Any]:
    """Without a terminal to answer from, the CLI denies without showing the request."""
    from reference_impl import cli
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any, timeout: float) -> Any:
        if self._in is None or not cli._isatty(self._in):
            return Answer.DENY
        return original(self, request, timeout)

    return ask


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "list-columns-swapped",
        "OPS-001",
        "secref list prints id, username, website.",
        (("reference_impl.cli", "_list", _list_columns_swapped),),
        driver=False,
    ),
    Mutant(
        "cli-prompt-hidden",
        "OPS-002",
        "secref invoke denies without showing the request when no terminal is attached.",
        (("reference_impl.cli", "TerminalOperator.ask", _silent_without_terminal),),
        driver=False,
    ),
)
