"""Cosmic-ray http workers started on this machine, each in a temporary copy of the tree.

This module owns ``python -m conformance.selftest.mutation workers``: it copies the tree once
per worker, starts cosmic-ray's own http worker in each copy (listening on one address, never
on every interface unless told), prints their URLs, and keeps them until Ctrl-C, SIGTERM or
SIGHUP. On the way out it stops every process it started, with any judge or suite run a worker
had going, and removes the copies. It never lets two workers share a copy, never mutates the
working tree, and never stops a process it did not start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from conformance.selftest.mutation_judge import Scratch, make_scratch
from conformance.selftest.mutation_workers import WorkerError

#: Seconds a local worker may take to start listening.
START_TIMEOUT: Final = 30.0

#: Seconds a stopped local worker (or a suite run it started) gets to end before it is killed.
STOP_GRACE: Final = 5.0

#: The local worker: cosmic-ray's own http worker (the handler ``cosmic-ray http-worker``
#: serves), bound to one address rather than to every interface, which ends when the process
#: that started it ends.
_SERVE: Final = """\
import os, sys, threading, time
from aiohttp import web
from cosmic_ray.distribution.http import handle_mutate_and_test
host, port, parent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
threading.Thread(target=watch, daemon=True).start()
app = web.Application()
app.add_routes([web.post("/", handle_mutate_and_test)])
web.run_app(app, host=host, port=port, print=None)
"""


@dataclass(slots=True)
class LocalWorker:
    """A cosmic-ray http worker started here, in a temporary copy of the tree.

    Attributes:
        copy: the copy it works in (and mutates).
        host: the address it listens on.
        port: its port.
        process: its process, once started.
    """

    copy: Path
    host: str
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL to pass to ``--worker-url``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As the worker's server does: a port a stopped worker left in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _start(worker: LocalWorker) -> None:
    env = Scratch(worker.copy).env()
    # The judge is run as ``python``: make it this interpreter, which has the mutation extra.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    with open(worker.copy / "worker.log", "wb") as log:
        worker.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, worker.host, str(worker.port), str(os.getpid())],
            cwd=worker.copy,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            tail = (worker.copy / "worker.log").read_text("utf-8", errors="replace")[-400:]
            raise WorkerError(f"the worker on port {worker.port} ended at start: {tail.strip()}")
        try:
            socket.create_connection((worker.host, worker.port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise WorkerError(f"the worker on port {worker.port} did not listen within {START_TIMEOUT} s")


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid``, read from ``/proc`` (none where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return True
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return True
    return False


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _stop(worker: LocalWorker) -> None:
    """End the worker, then whatever it started (a judge, a suite run), then remove its copy."""
    process = worker.process
    if process is not None:
        below = _descendants(process.pid)
        _kill_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid, signal.SIGKILL)
            process.wait()
        # A judge ends its suite run and itself once its worker has gone; wait for that.
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline and not all(_gone(pid) for pid in below):
            time.sleep(0.1)
        for pid in below:
            if not _gone(pid):
                # cosmic-ray and the judge each start their child in a group of its own.
                _kill_group(pid, signal.SIGKILL)
    shutil.rmtree(worker.copy, ignore_errors=True)


@contextlib.contextmanager
def local_workers(
    root: Path, ports: Sequence[int], host: str = "127.0.0.1"
) -> Iterator[list[LocalWorker]]:
    """Start one cosmic-ray http worker per port, each in a temporary copy of the tree.

    Args:
        root: the project's root, holding ``reference_impl`` and ``conformance``.
        ports: one port per worker.
        host: the address they listen on.

    Yields:
        The workers, listening. On leaving, every one is stopped, with what it started, and its
        copy removed.

    Raises:
        WorkerError: a port is in use, or a worker did not start.
    """
    workers: list[LocalWorker] = []
    try:
        for port in ports:
            if not _port_free(host, port):
                raise WorkerError(f"port {port} on {host} is in use")
            copy = Path(tempfile.mkdtemp(prefix="secref-mutation-worker-"))
            workers.append(LocalWorker(copy, host, port))
            make_scratch(root, copy)
            _start(workers[-1])
        yield workers
    finally:
        for worker in workers:
            _stop(worker)


class _StopSignalError(Exception):
    """Raised by the signal handler so that ``serve`` cleans up as it does on Ctrl-C."""


def serve(root: Path, count: int, base_port: int, host: str, out: TextIO | None = None) -> int:
    """Start ``count`` local workers and keep them until Ctrl-C (SIGINT), SIGTERM or SIGHUP.

    Args:
        root: the project's root; each worker gets its own copy of it.
        count: how many workers.
        base_port: the first worker's port; the others follow it.
        host: the address they listen on (127.0.0.1 unless other machines must reach them).
        out: where the URLs go, one a line; standard output by default.

    Returns:
        0 when stopped by a signal, 1 when a worker ended on its own, 2 when they could not start.
    """
    if count < 1 or base_port < 1 or base_port + count - 1 > 65535:
        print("--count must be at least 1 and every port from 1 to 65535", file=sys.stderr)
        return 2

    def stop(signum: int, frame: Any) -> None:
        raise _StopSignalError

    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, stop) for sig in signals}
    try:
        with local_workers(root, range(base_port, base_port + count), host) as workers:
            for worker in workers:
                print(worker.url, file=out or sys.stdout, flush=True)
            print(
                "workers ready; pass each URL as --worker-url to the run; Ctrl-C stops them",
                file=sys.stderr,
                flush=True,
            )
            while True:
                for worker in workers:
                    if worker.process is not None and worker.process.poll() is not None:
                        print(f"the worker at {worker.url} ended", file=sys.stderr)
                        return 1
                time.sleep(1.0)
    except WorkerError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _StopSignalError):
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
