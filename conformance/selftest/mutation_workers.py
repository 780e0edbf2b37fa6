"""Mutation runs spread over cosmic-ray http workers, each working in its own copy of the tree.

This module owns what ``python -m conformance.selftest.mutation`` needs to run mutants on
workers rather than one at a time here: it checks the worker URLs it is given, writes the
cosmic-ray configuration that names them, asks every worker before the run whether it holds
the same tree (``fingerprint``), hands the drawn mutants to cosmic-ray's ``http`` distributor,
and turns each worker's answer back into the outcome a local run would have given (``judge`` is
the test command a worker runs, and judges with :mod:`~conformance.selftest.mutation_judge`
exactly as the local run does). Starting workers on this machine is
:mod:`~conformance.selftest.mutation_local_workers`'s. It never lets a worker mutate the working
tree or a copy another worker uses, never sends a mutant to a worker whose tree differs from
the run's, never counts a mutant a worker failed to run as judged, and never prints a value: a
worker's suite output is neither returned nor echoed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

from conformance.selftest.mutation_draw import Mutant
from conformance.selftest.mutation_judge import (
    HARNESS_ERROR,
    Outcome,
    Scratch,
    check_imports,
    run_suite,
)

#: The line a worker's test command prints for the run to read, followed by JSON.
MARK: Final = "secref-mutation: "

#: Seconds cosmic-ray's own timeout adds to ``--timeout``. The judge stops a suite run at
#: ``--timeout`` itself and reports it as timed out; cosmic-ray's timeout is only a backstop for
#: a judge that does not answer, so it must not fire first.
BACKSTOP: Final = 30.0

#: Seconds a request to a worker may take before aiohttp gives up on it (its default total
#: timeout, which cosmic-ray's http distributor keeps). A mutant's run plus the backstop must fit.
REQUEST_LIMIT: Final = 300.0

#: Seconds a worker may take to describe its tree before the run starts.
PREFLIGHT_TIMEOUT: Final = 60.0

#: Rounds of handing out mutants: a mutant whose worker stopped answering goes to the workers
#: that still answer, at most this many times in all.
MAX_ROUNDS: Final = 3

#: Paths named when a worker's tree differs from the run's; the count is always given.
_SHOWN_PATHS: Final = 3

#: The packages a worker's tree must hold exactly as the run's copy does.
_PACKAGES: Final = ("reference_impl", "conformance")


class WorkerError(RuntimeError):
    """A worker could not be started, did not answer, or holds another tree."""


class WorkerUrlError(ValueError):
    """A worker URL given on the command line is not one a run can use."""


# --- the command line's worker URLs ---------------------------------------------------------------


def parse_worker_urls(values: Sequence[str]) -> list[str]:
    """Check and normalise the ``--worker-url`` values (each one URL or a comma list).

    Args:
        values: the values as given.

    Returns:
        The URLs, ``http://HOST:PORT`` (or ``https``), in the order given; empty for a local run.

    Raises:
        WorkerUrlError: a value is empty, is not an http(s) URL with a host and a port, carries
            a path, query, fragment or credentials, or names a worker twice (two mutants at once
            in one copy would spoil both).
    """
    urls: list[str] = []
    seen: set[str] = set()
    for value in values:
        for raw in value.split(","):
            text = raw.strip()
            problem = _url_problem(text)
            if problem is not None:
                raise WorkerUrlError(
                    f"not a worker URL: {text!r} ({problem}; expected http://HOST:PORT)"
                )
            parts = urlsplit(text)
            url = f"{parts.scheme.lower()}://{parts.netloc}"
            if url.lower() in seen:
                raise WorkerUrlError(
                    f"worker URL given twice: {url} (a worker runs one mutant at a time)"
                )
            seen.add(url.lower())
            urls.append(url)
    return urls


def _url_problem(text: str) -> str | None:
    if not text:
        return "empty"
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "no host"
    if parts.username is not None or parts.password is not None:
        return "credentials have no place in a worker URL"
    try:
        port = parts.port
    except ValueError:
        return "the port is not a number from 0 to 65535"
    if port is None or port == 0:
        return "no port"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "a worker URL has no path, query or fragment"
    return None


def check_timeout(timeout: float) -> None:
    """Check that a mutant's run fits in one request to a worker.

    Args:
        timeout: ``--timeout``, seconds per mutant.

    Raises:
        ValueError: the run and the backstop would outlast a request.
    """
    if timeout + BACKSTOP > REQUEST_LIMIT:
        raise ValueError(
            f"with workers, --timeout may be at most {REQUEST_LIMIT - BACKSTOP:.0f} s "
            f"(a request to a worker ends after {REQUEST_LIMIT:.0f} s)"
        )


# --- the configuration ----------------------------------------------------------------------------


def judge_command(timeout: float) -> str:
    """The test command every worker runs for a mutant, in the worker's copy of the tree.

    ``python`` is the worker's: the one first on the ``PATH`` of the environment the worker was
    started in, which must have the ``mutation`` extra installed.

    Args:
        timeout: seconds the judge lets the suite run.

    Returns:
        The command line (cosmic-ray splits it with ``shlex``).
    """
    return f"python -m conformance.selftest.mutation judge --timeout {timeout:g}"


def fingerprint_test_command() -> str:
    """The command a worker runs, with no mutant in place, to describe its tree."""
    return "python -m conformance.selftest.mutation fingerprint"


def write_config(path: Path, modules: Sequence[str], urls: Sequence[str], timeout: float) -> Path:
    """Write the cosmic-ray configuration of a run on workers.

    Module paths are relative: a worker applies a mutant to the file of that name in its own
    working directory, its copy of the tree, never to the run's copy or the working tree.

    Args:
        path: the file to write (beside the session; ``reports/mutation.toml`` by default).
        modules: the core modules of the run.
        urls: the workers, as ``parse_worker_urls`` returned them.
        timeout: ``--timeout``; cosmic-ray's own timeout is ``BACKSTOP`` longer.

    Returns:
        ``path``.
    """
    from cosmic_ray.config import ConfigDict, serialize_config

    config = ConfigDict(
        {
            "module-path": [f"reference_impl/{name}.py" for name in modules],
            "timeout": timeout + BACKSTOP,
            "excluded-modules": [],
            "test-command": judge_command(timeout),
            "distributor": {"name": "http", "http": {"worker-urls": list(urls)}},
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize_config(config), "utf-8")
    return path


# --- what a worker runs ---------------------------------------------------------------------------


def fingerprint(root: Path) -> dict[str, str]:
    """Digest every file of the two packages under ``root``.

    Args:
        root: a tree's root, holding ``reference_impl`` and ``conformance``.

    Returns:
        SHA-256 hex digest per path relative to ``root`` (``/``-separated); caches left out.
    """
    digests: dict[str, str] = {}
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digests[path.relative_to(root).as_posix()] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return digests


def fingerprint_command(root: Path, out: TextIO | None = None) -> int:
    """Print this tree's fingerprint and whether a suite run here judges this tree.

    Args:
        root: the worker's working directory.
        out: where the line goes; standard output (what cosmic-ray returns) by default.

    Returns:
        0.
    """
    try:
        check_imports(Scratch(root))
        imports = "ok"
    except (RuntimeError, subprocess.CalledProcessError):
        imports = "a suite run here would not import reference_impl and conformance from here"
    payload = {"imports": imports, "files": fingerprint(root)}
    print(MARK + json.dumps(payload), file=out or sys.stdout, flush=True)
    return 0


def judge(root: Path, timeout: float, out: TextIO | None = None) -> int:
    """Judge the mutant a worker has put in place, as a local run judges one.

    The suite's output is not shown; one line with the status, exit code and seconds is.

    Args:
        root: the worker's working directory, its copy of the tree.
        timeout: seconds before the suite run is killed (it then counts as timed out).
        out: where the line goes; standard output (what cosmic-ray returns) by default.

    Returns:
        0 when the mutant survived, else 1: cosmic-ray's own killed or survived then agrees.
    """
    parent = os.getppid()
    scratch = Scratch(root)
    # A worker that is stopped mid-run takes the suite run with it.
    status, code, seconds = run_suite(scratch, timeout, alive=lambda: os.getppid() == parent)
    payload = {"status": status, "exit_code": code, "seconds": round(seconds, 1)}
    print(MARK + json.dumps(payload), file=out or sys.stdout, flush=True)
    return 0 if status == "survived" else 1


def _payload(output: str | None) -> dict[str, Any] | None:
    for line in reversed((output or "").splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


# --- the run --------------------------------------------------------------------------------------


def _ask(urls: Sequence[str], command: str, timeout: float) -> list[Any]:
    """Have each worker run ``command`` with no mutant in place; a result or an error each."""
    from cosmic_ray.distribution.http import send_request
    from cosmic_ray.work_item import WorkItem

    async def ask_all() -> list[Any]:
        asks = [send_request(url, WorkItem("preflight", ()), command, timeout) for url in urls]
        return list(await asyncio.gather(*asks, return_exceptions=True))

    return asyncio.run(ask_all())


def preflight(scratch: Scratch, urls: Sequence[str]) -> str | None:
    """Check that every worker answers, judges its own copy, and holds the run's tree.

    Args:
        scratch: the run's copy of the tree.
        urls: the workers.

    Returns:
        None when all hold, else one line per worker that does not.
    """
    local = fingerprint(scratch.root)
    problems = []
    for url, answer in zip(
        urls, _ask(urls, fingerprint_test_command(), PREFLIGHT_TIMEOUT), strict=True
    ):
        if isinstance(answer, BaseException):
            problems.append(f"worker {url} does not answer ({type(answer).__name__}: {answer})")
            continue
        data = _payload(answer.output)
        if data is None:
            problems.append(
                f"worker {url} could not run `{fingerprint_test_command()}`: start it in the "
                "root of a copy of the tree, in an environment with the `mutation` extra"
            )
            continue
        if data.get("imports") != "ok":
            problems.append(f"worker {url}: {data.get('imports')}")
        remote = data.get("files") or {}
        differ = sorted(p for p in set(local) | set(remote) if local.get(p) != remote.get(p))
        if differ:
            problems.append(
                f"worker {url} holds another tree: {len(differ)} file(s) differ, such as "
                f"{', '.join(differ[:_SHOWN_PATHS])} (give it a copy of this tree and restart it)"
            )
    return "\n".join(problems) or None


def _relative(item: Any, root: Path) -> Any:
    """The work item with its module path relative to the tree's root, as a worker needs it."""
    import attrs
    from cosmic_ray.work_item import WorkItem

    spec = item.mutations[0]
    relative = Path(spec.module_path).resolve().relative_to(root.resolve())
    return WorkItem(item.job_id, (attrs.evolve(spec, module_path=relative),))


def _expected_diff(root: Path, item: Any) -> str | None:
    """The diff a worker holding the run's tree returns for ``item`` (a relative work item)."""
    from cosmic_ray import mutating
    from cosmic_ray.plugins import get_operator

    make_diff = getattr(mutating, "_make_diff", None)
    if make_diff is None:
        return None
    spec = item.mutations[0]
    source = (root / spec.module_path).read_text("utf-8")
    operator = get_operator(spec.operator_name)(**(spec.operator_args or {}))
    mutated = mutating.mutate_code(source, operator, spec.occurrence)
    if mutated is None:
        return None
    return "\n".join(make_diff(source, mutated, spec.module_path))


def read_result(result: Any, mutant: Mutant, expected_diff: str | None) -> tuple[Outcome, float]:
    """Turn a worker's answer for one mutant into the outcome a local run would have given.

    Args:
        result: cosmic-ray's ``WorkResult`` for the mutant.
        mutant: the mutant.
        expected_diff: the diff of the mutant in the run's tree, or None to skip that check.

    Returns:
        The outcome and the seconds the suite ran; ``error`` when the worker could not apply
        the mutant, applied another one, or could not judge it.
    """
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    error = Outcome(mutant, "error", None), 0.0
    if result.worker_outcome != WorkerOutcome.NORMAL:
        return error
    if expected_diff is not None and result.diff != expected_diff:
        return error
    if result.test_outcome == TestOutcome.KILLED and result.output == "timeout":
        return Outcome(mutant, "timeout", None), 0.0
    data = _payload(result.output)
    if data is None or data.get("status") not in (
        "killed",
        HARNESS_ERROR,
        "reported",
        "survived",
        "timeout",
    ):
        return error
    code = data.get("exit_code")
    return Outcome(mutant, str(data["status"]), code if isinstance(code, int) else None), float(
        data.get("seconds") or 0.0
    )


def dispatch(
    scratch: Scratch,
    items: Sequence[Any],
    mutants: Sequence[Mutant],
    config_path: Path,
    record: Callable[[Outcome, float], None],
    log: TextIO | None = None,
) -> None:
    """Run the mutants on the workers the configuration names, with cosmic-ray's distributor.

    Args:
        scratch: the run's copy of the tree (the mutants' paths are relative to it).
        items: the drawn cosmic-ray work items, in draw order.
        mutants: ``describe`` of each item, in the same order.
        config_path: what ``write_config`` wrote.
        record: called with each mutant's outcome and seconds as it comes in.
        log: where progress lines go (module, operator, line, outcome; never a value).

    Raises:
        WorkerError: a mutant could not be run because no worker answers any more.
    """
    from cosmic_ray.config import load_config
    from cosmic_ray.work_item import WorkerOutcome

    stream = log or sys.stderr
    by_job = {m.job_id: m for m in mutants}
    pending = []
    expected: dict[str, str | None] = {}
    for item, mutant in zip(items, mutants, strict=True):
        if not mutant.before:
            record(Outcome(mutant, "error", None), 0.0)
            continue
        relative = _relative(item, scratch.root)
        expected[item.job_id] = _expected_diff(scratch.root, relative)
        pending.append(relative)
    judged = [len(mutants) - len(pending)]
    lost: list[Any] = []
    notes: list[str] = []

    def on_task_complete(job_id: str, result: Any) -> None:
        mutant = by_job[job_id]
        if result.worker_outcome == WorkerOutcome.ABNORMAL:
            lost.append(job_id)
            notes.append(str(result.output or "")[:200])
            return
        outcome, seconds = read_result(result, mutant, expected[job_id])
        judged[0] += 1
        record(outcome, seconds)
        print(
            f"[{judged[0]}/{len(mutants)}] {mutant.module}:{mutant.line} {mutant.operator} "
            f"-> {outcome.status} ({seconds:.0f} s)",
            file=stream,
            flush=True,
        )

    config = load_config(str(config_path))
    urls = list(config.distributor_config["worker-urls"])
    # cosmic-ray logs a lost worker's traceback; the line printed below names the cause.
    quiet = logging.getLogger("cosmic_ray.distribution.http")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        _rounds(config, urls, pending, on_task_complete, lost, notes, stream)
    finally:
        quiet.setLevel(level)


def _rounds(
    config: Any,
    urls: list[str],
    pending: list[Any],
    on_task_complete: Callable[[str, Any], None],
    lost: list[Any],
    notes: list[str],
    stream: TextIO,
) -> None:
    """Hand ``pending`` to the workers until none is lost, at most ``MAX_ROUNDS`` times."""
    from cosmic_ray.plugins import get_distributor

    for _ in range(MAX_ROUNDS):
        lost.clear()
        distributor_config = dict(config.distributor_config)
        distributor_config["worker-urls"] = list(urls)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            get_distributor(config.distributor_name)(
                pending,
                config.test_command,
                config.timeout,
                distributor_config,
                on_task_complete=on_task_complete,
            )
        finally:
            asyncio.set_event_loop(None)
            loop.close()
        if not lost:
            return
        answers = _ask(urls, fingerprint_test_command(), PREFLIGHT_TIMEOUT)
        urls = [u for u, a in zip(urls, answers, strict=True) if not isinstance(a, BaseException)]
        print(
            f"{len(lost)} mutant(s) not run: a worker stopped answering ({notes[-1]}); "
            f"{len(urls)} worker(s) still answer",
            file=stream,
            flush=True,
        )
        if not urls:
            break
        pending = [item for item in pending if item.job_id in set(lost)]
    raise WorkerError(f"{len(lost)} mutant(s) could not be run: their workers stopped answering")
