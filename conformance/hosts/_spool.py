"""Everything an adapter writes on standard error, kept for the whole run (decisions S1.9).

This module owns the spool behind the late-output barrier: every byte of every adapter start's
standard error, appended to one anonymous temporary file as it is read, so memory stays bounded
however much a host writes, and the barrier can search all of it once the run is over. The file
holds at most :data:`SPOOL_LIMIT_BYTES`; what a host writes beyond that is counted, never kept,
and reported as not searched. Each start of the adapter is a segment of its own, so no form is
ever matched across two processes' output. Anything the suite could not read whole (a reader
that did not finish, processes still writing when reading stopped) is noted the same way: a
stream not read whole is never a clean one. It never decodes, quotes or prints what it keeps.
"""

from __future__ import annotations

import itertools
import operator
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Final

from conformance.canary import Surface
from conformance.late import (
    MAX_STRIDE,
    STDERR_REQUIREMENTS,
    FormSearch,
    LateReport,
    decoded,
    present,
    run_guarded,
    stream_findings,
)

if TYPE_CHECKING:
    from conformance.canary import Canary

#: Bytes of standard error kept for the late-output barrier over a whole run (256 MiB). A normal
#: run writes a few kilobytes; a host that writes more than this has the rest reported as not
#: searched.
SPOOL_LIMIT_BYTES: Final = 256 * 1024 * 1024

#: Bytes read back from the spool at a time when it is searched.
SPOOL_READ_BYTES: Final = 1024 * 1024


class Spool:
    """A bounded, append-only record of standard error across every start of an adapter.

    Args:
        limit: Bytes kept at most; later bytes are counted as dropped.

    Safe to write from the reader threads of several connections; :meth:`seal` ends writing,
    after which every write counts as dropped.
    """

    def __init__(self, limit: int = SPOOL_LIMIT_BYTES) -> None:
        if limit < 0:
            raise ValueError("the spool limit cannot be negative")
        self.limit = limit
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._size = 0
        #: (start offset, bytes) of each segment, in order.
        self._segments: list[list[int]] = []
        self._dropped = 0
        self._unread: list[str] = []
        self._sealed = False
        self._release: weakref.finalize[[], Spool] | None = None

    def segment(self) -> int:
        """Begin the segment of a new start of the adapter; return its number (from 1)."""
        with self._lock:
            self._segments.append([self._size, 0])
            return len(self._segments)

    def write(self, segment: int, data: bytes) -> None:
        """Append ``data``, read from the standard error of ``segment``'s process."""
        if not data:
            return
        with self._lock:
            if self._sealed or segment != len(self._segments):
                # Writing is over, or an earlier start's reader is still draining: its bytes
                # would land inside a later segment, so they are counted and not kept.
                self._dropped += len(data)
                return
            room = max(0, self.limit - self._size)
            kept = data[:room]
            if kept:
                if self._file is None:
                    # Open for the run; released by close, or when the spool is dropped (a
                    # host the barrier never searched).
                    self._file = tempfile.TemporaryFile(prefix="secref-stderr-")  # noqa: SIM115
                    self._release = weakref.finalize(self, self._file.close)
                self._file.seek(self._size)
                self._file.write(kept)
                self._size += len(kept)
                self._segments[-1][1] += len(kept)
            self._dropped += len(data) - len(kept)

    def unread(self, why: str) -> None:
        """Note that part of a stream could not be read, and why (static text, no host text)."""
        with self._lock:
            if why not in self._unread:
                self._unread.append(why)

    def seal(self) -> None:
        """Stop keeping what is written; later writes count as dropped."""
        with self._lock:
            self._sealed = True

    @property
    def size(self) -> int:
        """Bytes kept."""
        return self._size

    @property
    def dropped(self) -> int:
        """Bytes written beyond the limit (or after :meth:`seal`), not kept."""
        return self._dropped

    def gaps(self) -> list[str]:
        """Return why the spool does not hold every byte the host wrote; empty when it does."""
        with self._lock:
            found = list(self._unread)
            if self._dropped:
                found.append(
                    f"{self._dropped} bytes beyond the {self.limit} kept were not searched"
                )
            return found

    def read(self, chunk: int = SPOOL_READ_BYTES) -> Iterator[tuple[int, bytes]]:
        """Yield (segment number, bytes) for everything kept, in order, ``chunk`` at most."""
        with self._lock:
            segments = [tuple(each) for each in self._segments]
            handle = self._file
        for number, (start, length) in enumerate(segments, start=1):
            done = 0
            while done < length:
                with self._lock:
                    assert handle is not None
                    handle.seek(start + done)
                    data = handle.read(min(chunk, length - done))
                if not data:
                    break
                done += len(data)
                yield number, data

    def close(self) -> None:
        """Release the temporary file; nothing kept can be read afterwards."""
        with self._lock:
            self._sealed = True
            if self._release is not None:
                self._release()
            self._file = None
            self._segments.clear()


#: The name the barrier gives this stream in its report.
STREAM: Final = "standard error"

#: Bytes kept above which the search strides over the text (:class:`FormSearch`): a wider
#: stride costs more to index and less per byte, which pays only for a long stream.
STRIDE_FROM_BYTES: Final = 1024 * 1024

#: Bytes kept up to which the canaries are first narrowed to those a form of which begins in
#: the text (:func:`~conformance.late.present`), rather than every form of every canary indexed.
PREFILTER_BYTES: Final = 256 * 1024


def _segments(spool: Spool) -> Iterator[Iterator[tuple[int, bytes]]]:
    """Yield, for each adapter start, the (segment, bytes) pieces ``spool`` kept of it."""
    for _, group in itertools.groupby(spool.read(), key=operator.itemgetter(0)):
        yield group


def search_spool(
    spool: Spool, canaries: Sequence[Canary], chunk: int = SPOOL_READ_BYTES
) -> LateReport:
    """Search everything ``spool`` kept for every required form of every one of ``canaries``,
    read back ``chunk`` bytes at a time.

    Returns:
        The findings, on the ``printed`` surface with :data:`STDERR_REQUIREMENTS`, by label,
        form and adapter start; standard error as searched whole, or as not searched, with
        why, when the spool does not hold every byte the host wrote.
    """
    report = LateReport()
    search: FormSearch | None = None
    if 0 < spool.size <= PREFILTER_BYTES:
        # Short: keep only the canaries a form of which begins in the text, then search those.
        text = "\0".join("".join(decoded(data for _, data in group)) for group in _segments(spool))
        search = FormSearch(run_guarded(present(canaries, text)))
    elif spool.size:
        search = FormSearch(
            run_guarded(canaries), MAX_STRIDE if spool.size > STRIDE_FROM_BYTES else 1
        )
    # Nothing kept, nothing to index: a host that wrote nothing costs nothing.
    if search:
        segments = (
            (f"{STREAM} of adapter start {number}", decoded(data for _, data in group))
            for number, group in itertools.groupby(spool.read(chunk), key=operator.itemgetter(0))
        )
        report.findings = stream_findings(search, segments, Surface.PRINTED, STDERR_REQUIREMENTS)
    gaps = spool.gaps()
    if gaps:
        report.unsearched.append((STREAM, "; ".join(gaps)))
    else:
        report.searched.append(STREAM)
    return report
