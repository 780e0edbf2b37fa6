"""Tests of the mutation-testing tooling: its filter, its data files, and the fixed CI sample.

These check the tooling rather than a host, so they cite no requirement. The slow test runs the
conformance suite against each mutant of the fixed sample and fails when one is not killed: it
is the part of mutation testing that runs in CI (the full run is ``tox -e mutation``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from conformance import _stop
from conformance.outcomes import Outcome as CheckOutcome
from conformance.selftest import (
    mutation,
    mutation_draw,
    mutation_judge,
    mutation_report,
    mutation_sample,
)

REPO = Path(__file__).resolve().parents[2]
SAMPLE = mutation_sample.load_sample()
TRIAGE = mutation_report.load_triage()

#: Fewest mutants the CI sample may hold: the task sets about twenty.
MIN_SAMPLE = 15

_SOURCE = '''"""Module docstring."""
from __future__ import annotations
import logging
log = logging.getLogger(__name__)
LIMIT: int = 3


def f(x: int | None, y: list[str]) -> int | bool:
    """Docstring."""
    log.debug("x is %d", x + 1)
    return x + 1
'''


def _position(source: str, needle: str, line: int) -> tuple[tuple[int, int], tuple[int, int]]:
    col = source.splitlines()[line - 1].index(needle)
    return (line, col), (line, col + len(needle))


@pytest.mark.parametrize(
    ("needle", "line"),
    [
        ('"""Module docstring."""', 1),
        ("int | None", 8),
        ("int | bool", 8),
        ("int", 5),
        ('"""Docstring."""', 9),
        ("x + 1", 10),
        ("logging.getLogger(__name__)", 4),
    ],
)
def test_filter_drops_annotations_docstrings_and_logging(needle: str, line: int) -> None:
    """A mutant inside an annotation, a docstring or a logging call is dropped."""
    spans = mutation_draw.ignored_spans(_SOURCE)
    start, end = _position(_SOURCE, needle, line)
    assert mutation_draw.is_ignored(start, end, spans)


@pytest.mark.parametrize(("needle", "line"), [("x + 1", 11), ("3", 5), ("return", 11)])
def test_filter_keeps_code(needle: str, line: int) -> None:
    """A mutant of code that runs, an annotated assignment's value included, is kept."""
    spans = mutation_draw.ignored_spans(_SOURCE)
    start, end = _position(_SOURCE, needle, line)
    assert not mutation_draw.is_ignored(start, end, spans)


def test_apply_line_mutation_finds_the_line_by_text() -> None:
    """A recorded mutant applies where its text is, nearest the recorded line, indent kept."""
    source = "a = 1\nif x:\n    a = 1\n"
    assert (
        mutation_sample.apply_line_mutation(source, "a = 1", "a = 2", 3)
        == "a = 1\nif x:\n    a = 2\n"
    )
    with pytest.raises(LookupError):
        mutation_sample.apply_line_mutation(source, "b = 1", "b = 2", 1)


def test_triage_file_is_well_formed() -> None:
    """Every triage entry names a core module, a known verdict and a reason, once each."""
    keys = [entry.key for entry in TRIAGE]
    assert len(keys) == len(set(keys)), "a survivor is triaged twice"
    for entry in TRIAGE:
        assert entry.module in mutation_draw.CORE_MODULES
        assert entry.verdict in mutation_report.VERDICTS
        assert entry.before
        assert entry.after
        assert entry.reason


def test_triage_arguments_hold_for_every_input_and_cite_their_rulings() -> None:
    """Every either-choice survivor cites its ruling; no equivalence leans on a bound."""
    assert mutation_report.hygiene(TRIAGE) == []


@pytest.mark.parametrize(
    ("verdict", "reason"),
    [
        ("either-choice", "Both are legal under GRAM-007 (EITHER)."),
        ("either-choice", "The alternative of FENCE-005 (R3.4, v1.2)."),
        ("equivalent", "Identity and equality agree for any pending limit up to 256."),
        ("equivalent", "The two agree below 64 references."),
    ],
)
def test_triage_hygiene_finds_a_bad_argument(verdict: str, reason: str) -> None:
    """An either-choice without a ruling, or an equivalence up to a bound, is found."""
    entry = mutation_report.TriageEntry("_scan", "core/AddNot", "a", "b", verdict, reason)
    assert len(mutation_report.hygiene([entry])) == 1


def test_triage_page_is_current() -> None:
    """docs/mutation-triage.md is what render-triage makes of the triage file."""
    page = (REPO / mutation.DEFAULT_TRIAGE_MD).read_text("utf-8")
    assert page == mutation_report.render_triage(TRIAGE), (
        "run `python -m conformance.selftest.mutation render-triage`"
    )


def test_sample_still_applies() -> None:
    """Each sampled mutant's line is still in its module, so the slow test mutates something."""
    assert len(SAMPLE) >= MIN_SAMPLE
    for entry in SAMPLE:
        path = REPO / "reference_impl" / f"{entry['module']}.py"
        source = path.read_text("utf-8")
        mutated = mutation_sample.apply_line_mutation(
            source, entry["before"], entry["after"], entry["line"]
        )
        assert mutated != source


@pytest.mark.slow
@pytest.mark.parametrize(
    "entry",
    SAMPLE,
    ids=[f"{e['module']}-{e['line']}-{e['operator'].removeprefix('core/')}" for e in SAMPLE],
)
def test_sampled_mutant_is_killed(entry: dict[str, object], tmp_path: Path) -> None:
    """The conformance suite alone finds the reference host with this mutant not conformant."""
    scratch = mutation_judge.make_scratch(REPO, tmp_path)
    path = scratch.root / "reference_impl" / f"{entry['module']}.py"
    source = path.read_text("utf-8")
    path.write_text(
        mutation_sample.apply_line_mutation(
            source, str(entry["before"]), str(entry["after"]), int(str(entry["line"]))
        ),
        "utf-8",
    )
    status, code, _ = mutation_judge.run_suite(scratch, mutation_judge.DEFAULT_TIMEOUT)
    assert (status, code) == ("killed", 1), f"the suite did not catch the mutant ({status})"


def _mutant(n: int) -> mutation_draw.Mutant:
    return mutation_draw.Mutant(
        str(n), "_scan", "core/NumberReplacer", n, n, f"x = {n}", f"x = {n + 1}"
    )


def test_tabulate_keeps_should_misses_apart_and_rates_every_mutant() -> None:
    """A SHOULD miss is no kill; the plain rate is over all, equivalent ones included."""
    mutants = [_mutant(n) for n in range(6)]
    statuses = ["killed", "reported", "timeout", "survived", "survived", "survived"]
    outcomes = [mutation_judge.Outcome(m, s, 0) for m, s in zip(mutants, statuses, strict=True)]
    triage = [
        mutation_report.TriageEntry(*mutants[3].key, verdict="equivalent", reason="r"),
        mutation_report.TriageEntry(*mutants[4].key, verdict="internal-only", reason="r"),
    ]
    generated = mutation_draw.Generated({"_scan": 6}, {"_scan": 0}, {"_scan": 0}, {"_scan": []})
    row = mutation_report.tabulate(generated, outcomes, triage)["modules"][0]
    assert (row["killed"], row["reported"], row["timeout"]) == (1, 1, 1)
    assert (row["survived"], row["equivalent"], row["internal"]) == (2, 1, 1)
    assert (row["all"], row["kills"], row["should_misses"]) == (6, 2, 1)
    assert row["rate_plain"] == round(2 / 6, 4)
    assert row["rate_nonequivalent"] == round(2 / 5, 4)
    assert row["should_miss_share"] == round(1 / 6, 4)
    # The secondary figure that leans on the triage: SHOULD misses caught, unkillable aside.
    assert row["kill_rate_observable"] == round(3 / 4, 4)


def test_a_harness_error_is_a_kill_shown_apart_from_the_verdicts() -> None:
    """A run that exited 2 counts as a kill, in a column of its own, and not among the kills
    a verdict decided (exit 1)."""
    mutants = [_mutant(n) for n in range(4)]
    statuses = ["killed", "harness-error", "timeout", "survived"]
    codes = [1, 2, None, 0]
    outcomes = [
        mutation_judge.Outcome(m, s, c) for m, s, c in zip(mutants, statuses, codes, strict=True)
    ]
    generated = mutation_draw.Generated(
        {"_scan": 4}, {"_scan": 0}, {"_scan": 0}, {"_scan": mutants}
    )
    table = mutation_report.tabulate(generated, outcomes, [])
    row = table["modules"][0]
    assert (row["killed"], row["harness-error"], row["timeout"], row["kills"]) == (1, 1, 1, 3)
    assert (row["rate_plain"], row["rate_by_verdict"]) == (0.75, 0.25)
    assert table["weighted"]["rate_by_verdict"] == 0.25
    assert table["total"]["harness-error"] == 1
    assert "(25.0% by a verdict, exit 1)" in mutation_report.headline(table)
    page = mutation_report.render_md(
        table, {"seed": 1, "command": "c", "per_module": 4, "timeout": 1.0, "seconds": 1.0}
    )
    assert "| Harness errors |" in page
    assert "| `_scan` | 4 | 100.0% | 4 | 1 | 1 | 1 | 0 | 1 | 0 | 75.0% |" in page


def _module_outcomes(module: str, killed: int, survived: int) -> list[mutation_judge.Outcome]:
    mutants = [
        mutation_draw.Mutant(f"{module}{n}", module, "core/AddNot", n, n, f"x{n}", f"y{n}")
        for n in range(killed + survived)
    ]
    return [
        mutation_judge.Outcome(m, "killed" if n < killed else "survived", 1 if n < killed else 0)
        for n, m in enumerate(mutants)
    ]


def _generated(sites: dict[str, int]) -> mutation_draw.Generated:
    return mutation_draw.Generated(
        dict(sites),
        dict.fromkeys(sites, 0),
        dict.fromkeys(sites, 0),
        {m: [None] * n for m, n in sites.items()},
    )


def test_headline_weighs_each_module_by_its_sites_not_by_its_draw() -> None:
    """A small module sampled whole weighs its sites, however many of its mutants were drawn."""
    # _cap: 10 sites, all 10 drawn and killed. _scan: 90 sites, 10 drawn, 5 killed.
    outcomes = _module_outcomes("_cap", 10, 0) + _module_outcomes("_scan", 5, 5)
    table = mutation_report.tabulate(_generated({"_cap": 10, "_scan": 90}), outcomes, [])
    assert table["total"]["rate_plain"] == round(15 / 20, 4)  # pooled: the draw's proportions
    assert table["weighted"]["rate_plain"] == round((10 * 1.0 + 90 * 0.5) / 100, 4)
    assert table["weighted"]["coverage"] == 1.0
    assert "**55.0%**" in mutation_report.render_md(
        table,
        {"seed": 5, "command": "c", "per_module": 10, "timeout": 1, "seconds": 1},
    )


def test_headline_equals_the_pooled_rate_when_the_draw_is_proportional() -> None:
    """Drawn in proportion to the sites, the weighted and the pooled rates agree."""
    outcomes = _module_outcomes("_cap", 1, 1) + _module_outcomes("_scan", 9, 9)
    table = mutation_report.tabulate(_generated({"_cap": 20, "_scan": 180}), outcomes, [])
    assert table["weighted"]["rate_plain"] == table["total"]["rate_plain"] == 0.5


def test_headline_nonequivalent_rate_leaves_out_equivalents_by_module() -> None:
    """Equivalent mutants leave the non-equivalent rate, weighted like the plain one."""
    outcomes = _module_outcomes("_cap", 2, 2) + _module_outcomes("_scan", 2, 2)
    cap_equivalents = [o.mutant for o in outcomes if o.mutant.module == "_cap"][2:]
    triage = [
        mutation_report.TriageEntry(*m.key, verdict="equivalent", reason="r")
        for m in cap_equivalents
    ]
    table = mutation_report.tabulate(_generated({"_cap": 50, "_scan": 50}), outcomes, triage)
    # Kills: 0.5 of both. Non-equivalent: 0.5 of _cap, all of _scan.
    assert table["weighted"]["rate_plain"] == 0.5
    assert table["weighted"]["rate_nonequivalent"] == round(0.5 / 0.75, 4)


def test_a_run_without_a_seed_draws_a_fresh_one_and_prints_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --seed means a new seed each run, printed before any work, never the triaged one."""

    class StopError(Exception):
        pass

    def stop(*_: object) -> None:
        raise StopError

    monkeypatch.setattr(mutation, "make_scratch", stop)
    seeds = []
    for _ in range(2):
        with pytest.raises(StopError):
            mutation.main(["run", "--modules", "_cap"])
        err = capsys.readouterr().err
        assert err.startswith("seed ")
        seed = int(err.split()[1].rstrip(";"))
        assert f"--seed {seed}" in err
        seeds.append(seed)
    assert seeds[0] != seeds[1]
    assert mutation_draw.TRIAGED_SEED not in seeds
    with pytest.raises(StopError):
        mutation.main(["run", "--modules", "_cap", "--seed", "42"])
    assert capsys.readouterr().err.startswith("seed 42;")


def test_missed_reads_shortfalls_and_never_invents_one(tmp_path: Path) -> None:
    """missed() lists requirements not fully met, and nothing for a missing or broken report."""
    scratch = mutation_judge.Scratch(tmp_path)
    assert mutation_judge.missed(scratch) == []
    (tmp_path / "conformance.json").write_text("{not json", "utf-8")
    assert mutation_judge.missed(scratch) == []
    rows = [
        {"id": "LEDG-007", "outcome": "non-strict"},
        {"id": "GRAM-001", "outcome": "pass"},
        {"id": "LOG-001", "outcome": "unchecked"},
        {"id": "APPR-002", "outcome": "accepted-alternative"},
    ]
    (tmp_path / "conformance.json").write_text(json.dumps({"requirements": rows}), "utf-8")
    assert mutation_judge.missed(scratch) == ["LEDG-007", "LOG-001"]


def test_stratified_draw_takes_every_module_first() -> None:
    """The CI sample's draw holds every module that has kills before any module's second."""
    records = [{"module": m, "n": n} for m in ("_scan", "_ledger", "_cap") for n in range(5)]
    records += [{"module": "_scrub", "n": 0}]
    drawn = mutation_sample.stratified(records, 5, seed=3)
    assert {r["module"] for r in drawn[:4]} == {"_scan", "_ledger", "_cap", "_scrub"}
    assert len(drawn) == 5
    assert drawn == mutation_sample.stratified(records, 5, seed=3)


def test_the_judge_stops_once_decided_not_at_the_first_failure(tmp_path: Path) -> None:
    """Each mutant is judged with ``--stop-when-decided``, never ``-x``, the timing checks out."""
    parts = shlex.split(mutation_judge.suite_command(tmp_path))
    suite = parts[parts.index("--") + 1 :]
    assert "-x" not in parts
    assert "--exitfirst" not in parts
    assert suite.count(mutation_judge.STOP) == 1
    assert mutation_judge.STOP == "--stop-when-decided"
    # No requirement IDs follow it: the run ends once the whole verdict is decided.
    after = suite[suite.index(mutation_judge.STOP) + 1]
    assert after.startswith("-")
    assert _stop.targets_of(_stop.VERDICT) == ()
    selection = suite[suite.index("-k") + 1]
    assert all(f"not {name}" in selection for name in mutation_judge.TIMING_CHECKS)
    assert parts[parts.index("--report-json") + 1] == str(tmp_path / "conformance.json")


def test_a_should_miss_does_not_stop_the_judge() -> None:
    """A SHOULD missed is a non-strict pass: the run goes on, exits 0 and reports the miss.

    The judge counts such a mutant as reported from the full report of a clean exit; were a
    non-strict check a decision, the run would stop, exit 1, and the SHOULD miss would be
    counted as a kill instead.
    """
    assert CheckOutcome.NON_STRICT not in _stop.DECIDING
    assert {CheckOutcome.FAIL, CheckOutcome.ERROR} <= _stop.DECIDING


def test_stopped_reads_the_reason_and_never_invents_one(tmp_path: Path) -> None:
    """stopped() gives the report's reason, and None for a run to the end or no report."""
    scratch = mutation_judge.Scratch(tmp_path)
    assert mutation_judge.stopped(scratch) is None
    report = tmp_path / "conformance.json"
    report.write_text("{not json", "utf-8")
    assert mutation_judge.stopped(scratch) is None
    report.write_text(json.dumps({"stopped": None, "requirements": []}), "utf-8")
    assert mutation_judge.stopped(scratch) is None
    reason = "stopped early, the verdict decided: the MUST LOG-001 is unchecked"
    report.write_text(json.dumps({"stopped": reason, "requirements": []}), "utf-8")
    assert mutation_judge.stopped(scratch) == reason


def _scripted_runs(
    monkeypatch: pytest.MonkeyPatch,
    runs: list[tuple[str, int | None, float]],
    mcp: bool = True,
    shortfalls: dict[str, list[str]] | None = None,
) -> list[str]:
    """Replace the judge's suite runs with ``runs``, in order; return the commands asked for."""
    asked: list[str] = []

    def run_once(_scratch: object, command: str, timeout: float, _alive: object) -> object:
        asked.append(command)
        return runs[len(asked) - 1]

    monkeypatch.setattr(mutation_judge, "_run_once", run_once)
    monkeypatch.setattr(mutation_judge, "mcp_available", lambda: mcp)
    found = shortfalls or {}
    monkeypatch.setattr(
        mutation_judge, "missed", lambda _s, report=mutation_judge.REPORT: found.get(report, [])
    )
    return asked


@pytest.mark.parametrize(
    ("runs", "mcp", "shortfalls", "want", "asked"),
    [
        # Killed in process: the MCP run is never made.
        ([("exited", 1, 10.0)], True, None, "killed", 1),
        # Let through in process, caught over MCP.
        ([("exited", 0, 10.0), ("exited", 1, 30.0)], True, None, "killed", 2),
        # Let through both ways.
        ([("exited", 0, 10.0), ("exited", 0, 30.0)], True, None, "survived", 2),
        # A SHOULD missed over MCP only.
        (
            [("exited", 0, 10.0), ("exited", 0, 30.0)],
            True,
            {mutation_judge.MCP_REPORT: ["LEDG-007"]},
            "reported",
            2,
        ),
        # The MCP run out of time: the in-process status stands, never a timeout.
        ([("exited", 0, 10.0), ("timeout", None, 110.0)], True, None, "survived", 2),
        # No MCP SDK: the in-process judgement alone.
        ([("exited", 0, 10.0)], False, None, "survived", 1),
        # Too little time left for an MCP run: none is started.
        ([("exited", 0, 105.0)], True, None, "survived", 1),
        # A timed-out in-process run is a timeout, as before.
        ([("timeout", None, 120.0)], True, None, "timeout", 1),
        # A harness error, in process or over MCP: no verdict judged the mutant.
        ([("exited", 2, 10.0)], True, None, "harness-error", 1),
        ([("exited", 0, 10.0), ("exited", 2, 30.0)], True, None, "harness-error", 2),
    ],
)
def test_a_survivor_is_judged_again_over_mcp(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    runs: list[tuple[str, int | None, float]],
    mcp: bool,
    shortfalls: dict[str, list[str]] | None,
    want: str,
    asked: int,
) -> None:
    """Only what the in-process run lets through is run over MCP, and only a failed MCP run
    turns it into a kill: a slow one never does."""
    commands = _scripted_runs(monkeypatch, runs, mcp, shortfalls)
    status, _, _ = mutation_judge.run_suite(mutation_judge.Scratch(tmp_path), 120.0)
    assert status == want
    assert len(commands) == asked
    assert all("--via" not in shlex.split(command) for command in commands[:1])
    if asked == 2:
        second = shlex.split(commands[1])
        assert second[second.index("--via") + 1] == "mcp"
        assert second[second.index("--report-json") + 1].endswith(mutation_judge.MCP_REPORT)


def test_self_check_refuses_an_mcp_run_that_fails_the_unmutated_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An MCP run that fails the unmutated host would count every survivor as killed."""
    (tmp_path / "reference_impl").mkdir()
    (tmp_path / "reference_impl" / "_registry.py").write_text("", "utf-8")
    _scripted_runs(monkeypatch, [("exited", 0, 10.0), ("exited", 2, 5.0)])
    problem = mutation_judge.self_check(mutation_judge.Scratch(tmp_path), 120.0)
    assert problem is not None
    assert "over MCP" in problem


def test_a_scratch_copy_keeps_an_unmutated_model(tmp_path: Path) -> None:
    """The model check's model runs from a copy no mutant is written into: a mutant that breaks
    the reference driver on some input must fail the host's checks, not end the run as a
    harness error (which would count as a kill)."""
    from conformance.model import MODEL_PATH_ENV

    scratch = mutation_judge.make_scratch(REPO, tmp_path)
    assert (scratch.model / "reference_impl" / "driver.py").is_file()
    env = scratch.env()
    assert env[MODEL_PATH_ENV] == str(scratch.model)
    assert scratch.model != scratch.root


def test_the_model_command_names_the_unmutated_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.model import MODEL_PATH_ENV
    from conformance.model.machine import model_command

    monkeypatch.delenv(MODEL_PATH_ENV, raising=False)
    assert model_command()[1:] == ["-m", "reference_impl.driver"]
    monkeypatch.setenv(MODEL_PATH_ENV, "/elsewhere")
    started = model_command()
    assert started[1] == "-c"
    assert started[-1] == "/elsewhere"
