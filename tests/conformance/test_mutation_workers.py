"""Tests of mutation runs on cosmic-ray http workers: the configuration, the URLs, the answers.

These check the tooling rather than a host, so they cite no requirement. The slow test starts
two local workers, runs two mutants through them and the same two here, and requires the same
outcomes and the same table from both.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from conformance.selftest import (
    mutation,
    mutation_draw,
    mutation_judge,
    mutation_local_workers,
    mutation_report,
    mutation_workers,
)

REPO = Path(__file__).resolve().parents[2]

#: Mutants the slow test runs each way: two, so that both workers have one at the same time.
SLOW_SAMPLE = 2


def test_worker_urls_become_the_http_distributor_config(tmp_path: Path) -> None:
    """The written configuration names cosmic-ray's http distributor, the URLs and the judge."""
    from cosmic_ray.config import load_config

    urls = ["http://127.0.0.1:9876", "http://127.0.0.1:9877"]
    path = mutation_workers.write_config(tmp_path / "m.toml", ["_cap", "_scan"], urls, 90.0)
    config = load_config(str(path))
    assert config.distributor_name == "http"
    assert config.distributor_config["worker-urls"] == urls
    assert config["module-path"] == ["reference_impl/_cap.py", "reference_impl/_scan.py"]
    assert config.test_command == "python -m conformance.selftest.mutation judge --timeout 90"
    assert config.timeout == 90.0 + mutation_workers.BACKSTOP


def test_worker_urls_may_repeat_the_option_or_be_a_comma_list() -> None:
    """Both spellings give the same URLs, in order, without a trailing slash."""
    given = ["http://127.0.0.1:9876/", "http://10.0.0.2:9876, https://build-3:9877"]
    assert mutation_workers.parse_worker_urls(given) == [
        "http://127.0.0.1:9876",
        "http://10.0.0.2:9876",
        "https://build-3:9877",
    ]
    assert mutation_workers.parse_worker_urls([]) == []


@pytest.mark.parametrize(
    "url",
    [
        "127.0.0.1:9876",
        "ftp://127.0.0.1:9876",
        "http://127.0.0.1",
        "http://127.0.0.1:99999",
        "http://:9876",
        "http://127.0.0.1:9876/run",
        "http://user:pw@127.0.0.1:9876",
        "http://127.0.0.1:9876,",
        "http://127.0.0.1:9876,http://127.0.0.1:9876",
    ],
)
def test_malformed_worker_url_is_refused(url: str) -> None:
    """A URL a run cannot use, or one worker named twice, is refused."""
    with pytest.raises(mutation_workers.WorkerUrlError):
        mutation_workers.parse_worker_urls([url])


def test_malformed_worker_url_ends_the_run_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """The run refuses a bad URL before it copies or runs anything, and says which and why."""
    assert mutation.main(["run", "--worker-url", "localhost:9876"]) == 2
    err = capsys.readouterr().err
    assert "not a worker URL: 'localhost:9876'" in err
    assert "expected http://HOST:PORT" in err


def test_a_timeout_longer_than_a_request_ends_the_run_with_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With workers, a mutant's run must fit in one request to a worker."""
    code = mutation.main(["run", "--worker-url", "http://127.0.0.1:9876", "--timeout", "600"])
    assert code == 2
    assert "--timeout may be at most" in capsys.readouterr().err


def _result(**fields: Any) -> Any:
    from cosmic_ray.work_item import WorkResult

    return WorkResult(**{"worker_outcome": "normal", "diff": "d", **fields})


@pytest.mark.parametrize(
    ("fields", "status", "code"),
    [
        ({"test_outcome": "killed", "output": 'x\nsecref-mutation: {"status": "killed", '
          '"exit_code": 1, "seconds": 3.0}'}, "killed", 1),
        ({"test_outcome": "killed", "output": 'secref-mutation: {"status": "harness-error", '
          '"exit_code": 2, "seconds": 3.0}'}, "harness-error", 2),
        ({"test_outcome": "killed", "output": 'secref-mutation: {"status": "reported", '
          '"exit_code": 0, "seconds": 3.0}'}, "reported", 0),
        ({"test_outcome": "survived", "output": 'secref-mutation: {"status": "survived", '
          '"exit_code": 0, "seconds": 3.0}'}, "survived", 0),
        ({"test_outcome": "killed", "output": 'secref-mutation: {"status": "timeout", '
          '"exit_code": null, "seconds": 3.0}'}, "timeout", None),
        ({"test_outcome": "killed", "output": "timeout"}, "timeout", None),
        ({"test_outcome": "survived", "output": "no judge here"}, "error", None),
        ({"worker_outcome": "no-test"}, "error", None),
        ({"worker_outcome": "exception", "test_outcome": "incompetent"}, "error", None),
        ({"test_outcome": "survived", "diff": "another mutant", "output": 'secref-mutation: '
          '{"status": "survived", "exit_code": 0, "seconds": 3.0}'}, "error", None),
    ],
)  # fmt: skip
def test_a_workers_answer_reads_as_a_local_run_would_judge(
    fields: dict[str, Any], status: str, code: int | None
) -> None:
    """The judge's line decides; an answer without one, or for another mutant, is an error."""
    mutant = mutation_draw.Mutant("1", "_cap", "core/X", 0, 3, "a", "b")
    outcome, _ = mutation_workers.read_result(_result(**fields), mutant, "d")
    assert (outcome.status, outcome.exit_code) == (status, code)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@pytest.mark.slow
def test_two_local_workers_judge_as_a_local_run_does(tmp_path: Path) -> None:
    """Two mutants run on two local workers get the outcomes and the table a local run gives."""
    scratch = mutation_judge.make_scratch(REPO, tmp_path / "run")
    generated = mutation_draw.init_session(scratch.root, tmp_path / "m.sqlite", ["_cap"])
    items = mutation_draw.draw(generated.candidates, SLOW_SAMPLE, mutation_draw.TRIAGED_SEED)[
        "_cap"
    ]
    mutants = [mutation_draw.describe(item) for item in items]
    here = [
        outcome
        for outcome, _ in mutation_judge.execute(scratch, mutants, mutation_judge.DEFAULT_TIMEOUT)
    ]

    there: list[mutation_judge.Outcome] = []
    # The workers copy the run's copy, not the working tree, which may change meanwhile.
    with mutation_local_workers.local_workers(scratch.root, _free_ports(2)) as workers:
        urls = [w.url for w in workers]
        copies = [w.copy for w in workers]
        processes = [w.process for w in workers]
        assert mutation_workers.preflight(scratch, urls) is None
        config = mutation_workers.write_config(
            tmp_path / "m.toml", ["_cap"], urls, mutation_judge.DEFAULT_TIMEOUT
        )
        mutation_workers.dispatch(
            scratch, items, mutants, config, lambda outcome, _: there.append(outcome)
        )

    def by_job(outcomes: list[mutation_judge.Outcome]) -> dict[str, tuple[str, int | None]]:
        return {o.mutant.job_id: (o.status, o.exit_code) for o in outcomes}

    assert len(here) == SLOW_SAMPLE
    assert all(o.status != "error" for o in here)
    assert by_job(there) == by_job(here)
    order = {m.job_id: i for i, m in enumerate(mutants)}
    there.sort(key=lambda o: order[o.mutant.job_id])
    triage = mutation_report.load_triage()
    assert mutation_report.tabulate(generated, there, triage) == mutation_report.tabulate(
        generated, here, triage
    )
    assert not any(copy.exists() for copy in copies)
    assert all(p is not None and p.poll() is not None for p in processes)


@pytest.mark.parametrize("command", [["workers", "--count", "1"], ["judge"], ["run"], []])
def test_a_start_outside_the_project_root_is_refused_with_exit_2(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Started where there is no tree to copy, each command says so in one line, not a trace."""
    (tmp_path / "conformance").mkdir()
    monkeypatch.chdir(tmp_path)
    assert mutation.main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m conformance.selftest.mutation {(command or ['run'])[0]}: ")
    assert "holds no reference_impl;" in err
    assert "Traceback" not in err
