"""Process supervision for a driver-protocol adapter: start it alone, end its whole tree.

This module owns the adapter as an operating-system process. It starts the adapter in a
session and process group of its own (``start_new_session``), marks its environment with a
token unique to this start so that every descendant that keeps its environment can be found
again, and on Linux makes the suite a child subreaper (``PR_SET_CHILD_SUBREAPER``) so that a
descendant orphaned by its parent is reparented to the suite rather than to PID 1. Ending the
adapter kills the process group, every descendant found through ``/proc`` and every process
that carries the token, then reaps the ones the suite became the parent of. It never sends a
signal to a process it cannot tie to an adapter it started (:func:`end_strays`, for the console
script's own process, kills its remaining children, all of which the suite started), and no wait
here is unbounded.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

#: The environment variable that marks every process of one adapter's tree.
TREE_MARKER_ENV: Final = "SECREF_ADAPTER_TREE"

#: ``PR_SET_CHILD_SUBREAPER`` from ``<linux/prctl.h>``.
_PR_SET_CHILD_SUBREAPER: Final = 36

#: Rounds of "find, then kill" when ending a tree: a process that forks while it is being killed
#: leaves a new child behind, and each round catches the children born in the one before. Five
#: rounds outlast any fork loop that is not faster than the scheduler.
KILL_ROUNDS: Final = 5

#: Seconds to wait for a killed process to be gone, per round.
KILL_WAIT_SECONDS: Final = 1.0

_PROC: Final = Path("/proc")

#: Clock ticks per second, the unit of the times in ``/proc/<pid>/stat``.
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_subreaper: bool | None = None
#: The process that asked: the setting is not inherited by a forked child (the self-test's
#: workers), which must ask again.
_subreaper_pid: int | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper, once; return whether it is one.

    On Linux a descendant whose parent exits is then reparented to this process, so the suite
    can still find and reap it. Elsewhere, or when ``prctl`` refuses, it returns ``False`` and
    the tree is still ended through its process group and its marker. A forked child asks
    again, since the setting is not inherited across ``fork``.
    """
    global _subreaper, _subreaper_pid
    if _subreaper is None or _subreaper_pid != os.getpid():
        _subreaper = False
        _subreaper_pid = os.getpid()
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def stat_fields(pid: int) -> list[str] | None:
    """Return the fields of ``/proc/<pid>/stat`` after the command name, or ``None`` if it is
    gone: the state first (the stat file's third field), then the parent, the process group,
    and so on, so that the stat file's field N is at index N - 3."""
    # Read with a bare open, not pathlib: every look at a tree reads this file for every
    # process of the machine, hundreds of them while the test jobs run side by side.
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces or parentheses itself.
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _stat(pid: int) -> tuple[int, int, str] | None:
    """Return (parent pid, process group, state) of ``pid``, or ``None`` if it is gone."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 3:
        return None
    return int(fields[1]), int(fields[2]), fields[0]


def _carries(pid: int, marker: bytes) -> bool:
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return marker in environ.split(b"\0")


def all_pids() -> list[int]:
    """Return every process id ``/proc`` lists now; none without ``/proc``."""
    try:
        return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


class Supervised:
    """One adapter process and everything it starts.

    Args:
        argv: The adapter's command.
        env: Its environment; the suite's own when ``None``. The tree marker is added.
        cwd: Its working directory.

    Raises:
        OSError: The command cannot be started.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None) -> None:
        become_subreaper()
        self.marker = secrets.token_hex(8)
        environment = dict(os.environ if env is None else env)
        environment[TREE_MARKER_ENV] = self.marker
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.process.pid
        self._killed: set[int] = set()

    def exited(self) -> bool:
        """Return whether the adapter itself has exited (its descendants may live on)."""
        return self.process.poll() is not None

    def returncode(self) -> int | None:
        """Return the adapter's exit status, or ``None`` while it runs."""
        return self.process.poll()

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the adapter to exit; return its status or ``None``."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def tree(self) -> set[int]:
        """Return every live process of the adapter's tree, the adapter included.

        A process belongs to it when it is in the adapter's process group, descends from the
        adapter, or carries the adapter's marker in its environment.
        """
        marker = f"{TREE_MARKER_ENV}={self.marker}".encode("ascii")
        me = os.getpid()
        table: dict[int, tuple[int, int, str]] = {}
        for pid in all_pids():
            if pid == me:
                continue
            stat = _stat(pid)
            if stat is not None and stat[2] != "Z":
                table[pid] = stat
        found = {pid for pid, (_, group, _) in table.items() if group == self.pid}
        if self.pid in table:
            found.add(self.pid)
        grew = True
        while grew:
            grew = False
            for pid, (parent, _, _) in table.items():
                if pid not in found and parent in found:
                    found.add(pid)
                    grew = True
        # A descendant that left the group and lost its parent was reparented: to this
        # process when it is a subreaper, so only this process's other children can be one;
        # otherwise to any ancestor subreaper or to init, so every process is asked.
        narrow = become_subreaper()
        found.update(
            pid
            for pid, (parent, _, _) in table.items()
            if pid not in found and (parent == me or not narrow) and _carries(pid, marker)
        )
        return found

    def cpu_seconds(self) -> float | None:
        """Return the processor seconds the adapter's live tree has used, or ``None`` unknown.

        The user and system time of every live process of :meth:`tree`, with the time of the
        children each has already waited for (``/proc/<pid>/stat`` fields 14 to 17), in clock
        ticks. ``None`` without ``/proc`` or once the adapter itself is gone. Unlike the wall
        clock, it does not count the time the tree waited for a processor on a busy machine.
        """
        if not _PROC.is_dir() or self.exited():
            return None
        ticks = 0
        for pid in self.tree():
            fields = stat_fields(pid)
            if fields is None or len(fields) < 15:
                continue
            ticks += sum(int(field) for field in fields[11:15])
        return ticks / _CLOCK_TICKS

    def kill_tree(self) -> int:
        """Kill the adapter and every process of its tree; return how many were left alive.

        Bounded: at most :data:`KILL_ROUNDS` rounds of :data:`KILL_WAIT_SECONDS` each.
        """
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.kill()
        left: set[int] = set()
        for _ in range(KILL_ROUNDS):
            left = self.tree()
            self._killed.update(left)
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self._reap(KILL_WAIT_SECONDS if left else 0.0)
            left = self.tree()
            if not left:
                break
        if self.pid not in left:
            # The adapter may have died between the last reap and the last look: reap it now
            # (a zombie is reaped at once), so no Popen is collected while it seems to run.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(KILL_WAIT_SECONDS)
        return len(left)

    def _reap(self, seconds: float) -> None:
        """Reap the adapter, and any orphan of its tree the suite became the parent of."""
        deadline = time.monotonic() + seconds
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(0.0)
            self._reap_orphans()
            if time.monotonic() >= deadline or not self.tree():
                # A process that died since the pass above is a zombie now: reap it too, or it
                # is left to PID 1, which in a container may never reap it.
                self._reap_orphans()
                return
            time.sleep(0.02)

    def _reap_orphans(self) -> None:
        me = os.getpid()
        for pid in sorted(self._killed - {self.pid}):
            stat = _stat(pid)
            # A killed process of the tree whose parent is now the suite (the suite is a
            # subreaper): only the suite can reap it.
            if stat is not None and stat[0] == me and stat[2] == "Z":
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
            if stat is None:
                self._killed.discard(pid)


def end_strays() -> int:
    """Kill and reap every live descendant of this process; return how many there were.

    For the end of a run in a process that exists only to run the suite (the console script):
    as a subreaper it is the parent of every orphan of every adapter's tree, a descendant that
    cleared its environment and left its group included, so each descendant left at the end is
    one the suite started. A stray's own children are killed with it, and those it started or
    left while it was killed are the suite's a moment later: each round takes what the last
    left, for at most :data:`KILL_ROUNDS` rounds. It does nothing unless this process became a
    subreaper.
    """
    if not (_subreaper and _subreaper_pid == os.getpid()):
        return 0
    me = os.getpid()
    ended: set[int] = set()
    for _ in range(KILL_ROUNDS):
        strays = _descendants(me)
        if not strays:
            break
        ended.update(strays)
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while True:
            alive = False
            for pid in strays:
                stat = _stat(pid)
                if stat is not None and stat[2] != "Z":
                    alive = True
                elif stat is not None and stat[0] == me:
                    # Killed, and a child of this process (from the start, or reparented here
                    # when its parent died): only this process can reap it.
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(pid, os.WNOHANG)
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
    return len(ended)


def _descendants(root: int) -> set[int]:
    """Return the live (not zombie) processes that descend from ``root``, per ``/proc``."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        stat = _stat(pid)
        if stat is not None and stat[2] != "Z":
            children.setdefault(stat[0], []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found
