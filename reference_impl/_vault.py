"""The vault port and its in-memory default.

This module owns how the host reads secrets: one page at a time, 200 entries a page, as the
design's ``get_user_secrets`` does. The in-memory vault counts every page it serves, can be told
to fail, and is what tests and the CLI use. A vault failure is reported by kind only; its own
message may quote anything and never leaves this module.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Protocol

from reference_impl._types import SecretRecord


class VaultError(Exception):
    """The vault could not be read.

    Attributes:
        kind: A short static description such as ``"signed out"``, ``"offline"`` or
            ``"rpc failure"``; the only part of the failure that reaches a message.
    """

    def __init__(self, kind: str, message: str | None = None) -> None:
        # The failure's own message (a backend's text) may quote anything; only ``kind`` may
        # reach a refusal.
        super().__init__(kind if message is None else message)
        self.kind = kind


class Vault(Protocol):
    """Reads the signed-in user's own secrets, one page at a time."""

    def read_page(self, page: int, page_size: int) -> Sequence[SecretRecord]:
        """Return page ``page`` (from 0) of at most ``page_size`` records.

        Raises:
            VaultError: The vault could not be read.
        """
        ...


class InMemoryVault:
    """A vault held in memory, in insertion order.

    Attributes:
        reads: Each page number served, in order, across all calls.
        fail_with: When set, every read from page :attr:`fail_from_page` on raises
            :class:`VaultError` of this kind.
        fail_message: The raised failure's own message, when set (a test's canary).
        fail_from_page: The first page that fails when :attr:`fail_with` is set; the pages
            before it are served (0, the default: every read fails).
    """

    def __init__(self, records: Iterable[SecretRecord] = ()) -> None:
        self._records: list[SecretRecord] = list(records)
        self._lock = threading.Lock()
        self.reads: list[int] = []
        self.fail_with: str | None = None
        self.fail_message: str | None = None
        self.fail_from_page = 0

    def add(self, record: SecretRecord) -> None:
        """Store one more record."""
        with self._lock:
            self._records.append(record)

    def records(self) -> tuple[SecretRecord, ...]:
        """Return every record, in order."""
        with self._lock:
            return tuple(self._records)

    def read_page(self, page: int, page_size: int) -> Sequence[SecretRecord]:
        """Serve one page, counting the read."""
        with self._lock:
            self.reads.append(page)
            if self.fail_with is not None and page >= self.fail_from_page:
                raise VaultError(self.fail_with, self.fail_message)
            return self._records[page * page_size : (page + 1) * page_size]
