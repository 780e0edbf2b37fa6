"""The tables of a mutation run and the triage of its survivors.

This module owns what a run's outcomes mean to a reader: the checked-in triage file
(``mutation_triage.yaml``, a verdict and a reason per survivor, each either-choice citing the
ruling that allows it), the per-module counts and rates, the headline weighted by each module's
mutation sites (``tabulate``, ``weighted``), and their Markdown: the run's table and the triage
page ``docs/mutation-triage.md``. It never runs the suite, never counts a SHOULD miss or a
survivor as a kill in the plain rates, and leans on the triage file only for equivalence there;
the figures that lean on it further are printed below them, labelled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

from conformance.selftest.mutation_draw import CORE_MODULES, Generated
from conformance.selftest.mutation_judge import Outcome

#: The checked-in triage file, shipped with the package.
TRIAGE_FILE: Final = "mutation_triage.yaml"

#: The verdicts a survivor may be given in the triage file.
VERDICTS: Final = (
    "equivalent",
    "internal-only",
    "either-choice",
    "should-only",
    "gap-closed",
    "open-gap",
)

#: Survivors no conformance suite may kill: the change shows on no surface of a host, or it
#: moves the host to another behaviour an EITHER ruling allows. The observable rate sets them
#: aside; the plain rate does not.
UNKILLABLE: Final = frozenset({"internal-only", "either-choice"})

#: How an either-choice entry cites the ruling that allows the behaviour: ``decisions R3.4``.
RULING_CITATION: Final = re.compile(r"\bdecisions R\d+\.\d+\b")

#: An argument of equivalence that leans on a bound ("up to 256", "below 64", "at most 16")
#: holds for part of the input range only: equivalence is argued for all of it.
BOUNDED_ARGUMENT: Final = re.compile(
    r"\b(?:up to|below|under|at most|no more than|as long as)\s+(?:[a-z-]+\s+){0,3}\d",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TriageEntry:
    """One survivor's verdict from the checked-in triage file.

    Attributes:
        module: the core module.
        operator: cosmic-ray's operator name.
        before: the changed line(s), stripped.
        after: the mutated line(s), stripped.
        verdict: one of ``VERDICTS``.
        reason: why; for ``gap-closed`` and ``open-gap`` the check that does or would close it.
    """

    module: str
    operator: str
    before: str
    after: str
    verdict: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The identity shared with ``Mutant.key``."""
        return (self.module, self.operator, self.before, self.after)


def load_triage(path: Path | None = None) -> list[TriageEntry]:
    """Read the triage file (the packaged one unless ``path`` is given).

    Args:
        path: another triage file to read.

    Returns:
        Its entries, in file order.

    Raises:
        ValueError: an entry lacks a field, has an unknown verdict or an empty reason.
    """
    if path is None:
        text = resources.files("conformance.selftest").joinpath(TRIAGE_FILE).read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    data = yaml.safe_load(text) or {}
    entries: list[TriageEntry] = []
    for raw in data.get("survivors", []):
        try:
            entry = TriageEntry(
                module=str(raw["module"]),
                operator=str(raw["operator"]),
                before=str(raw["before"]).strip(),
                after=str(raw["after"]).strip(),
                verdict=str(raw["verdict"]),
                reason=str(raw["reason"]).strip(),
            )
        except KeyError as exc:
            raise ValueError(f"triage entry lacks {exc.args[0]!r}: {raw!r}") from exc
        if entry.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {entry.verdict!r} in the triage file")
        if not entry.reason:
            raise ValueError(f"a triage entry for {entry.module} has no reason")
        entries.append(entry)
    return entries


def hygiene(triage: Sequence[TriageEntry]) -> list[str]:
    """What is wrong with the triage file's arguments, beyond its form.

    An either-choice entry must cite the ruling that allows the behaviour
    (``RULING_CITATION``); an equivalent entry may not lean on a bound of the input range or of
    a configuration (``BOUNDED_ARGUMENT``), since a host configured past the bound differs.

    Args:
        triage: the triage file's entries.

    Returns:
        One line per problem, naming the module, the operator and the line; empty when none.
    """
    problems: list[str] = []
    for e in triage:
        where = f"{e.module} {e.operator} `{e.before}`"
        if e.verdict == "either-choice" and not RULING_CITATION.search(e.reason):
            problems.append(f"{where}: either-choice cites no ruling (e.g. decisions R3.4)")
        if e.verdict == "equivalent" and (bound := BOUNDED_ARGUMENT.search(e.reason)):
            problems.append(f"{where}: equivalence argued only {bound.group(0)!r}")
    return problems


def _md_cell(text: str) -> str:
    """Escape text for one Markdown table cell (source lines carry pipes and backticks)."""
    flat = text.replace("\n", " ⏎ ").replace("|", "\\|").replace("`", "'")
    return f"`{flat}`" if flat else ""


def tabulate(
    generated: Generated,
    outcomes: Sequence[Outcome],
    triage: Sequence[TriageEntry],
) -> dict[str, Any]:
    """Count, per module, what happened to the mutants, with its rates and the weighted ones.

    A timed-out mutant counts as killed (a host that hangs is caught), and is shown apart. A
    reported one (the run exited 0, but its report lists a requirement not fully met, a SHOULD
    miss) is counted apart and never as a kill. The plain rate is kills over every judged
    mutant; the non-equivalent rate leaves out the survivors a triage entry calls equivalent
    (``_rates``). The headline weighs the modules' rates by their sites (``weighted``). Mutants
    on ``# pragma: no mutate`` lines are never run.

    Args:
        generated: what ``init_session`` returned.
        outcomes: the outcomes so far.
        triage: the triage file's entries.

    Returns:
        A JSON-ready dict: ``modules`` (one row per module), ``total`` (pooled, unweighted),
        ``weighted`` (the headline) and ``survivors``.
    """
    verdicts = {entry.key: entry for entry in triage}
    rows: dict[str, dict[str, Any]] = {}
    for name in generated.generated:
        rows[name] = {
            "module": name,
            "generated": generated.generated[name],
            "filtered": generated.filtered[name],
            "pragma": generated.pragma[name],
            "candidates": len(generated.candidates[name]),
            "run": 0,
            "killed": 0,
            "harness-error": 0,
            "reported": 0,
            "timeout": 0,
            "survived": 0,
            "internal": 0,
            "equivalent": 0,
            "closed": 0,
            "error": 0,
        }
    survivors: list[dict[str, Any]] = []
    for outcome in outcomes:
        row = rows[outcome.mutant.module]
        row["run"] += 1
        if outcome.status in ("killed", "harness-error", "reported", "timeout", "error"):
            row[outcome.status] += 1
            continue
        entry = verdicts.get(outcome.mutant.key)
        if entry is not None and entry.verdict == "equivalent":
            row["equivalent"] += 1
        else:
            row["survived"] += 1
            if entry is not None and entry.verdict == "gap-closed":
                row["closed"] += 1
            if entry is not None and entry.verdict in UNKILLABLE:
                row["internal"] += 1
        survivors.append(
            {
                "module": outcome.mutant.module,
                "operator": outcome.mutant.operator,
                "line": outcome.mutant.line,
                "before": outcome.mutant.before,
                "after": outcome.mutant.after,
                "verdict": entry.verdict if entry else "untriaged",
                "reason": entry.reason if entry else "",
            }
        )
    total: dict[str, Any] = {"module": "all"}
    for field in ("generated", "filtered", "pragma", "candidates", "run", "killed", "timeout"):
        total[field] = sum(row[field] for row in rows.values())
    for field in ("harness-error",):
        total[field] = sum(row[field] for row in rows.values())
    for field in ("reported", "survived", "equivalent", "closed", "internal", "error"):
        total[field] = sum(row[field] for row in rows.values())
    for row in [*rows.values(), total]:
        _rates(row)
    return {
        "modules": list(rows.values()),
        "total": total,
        "weighted": weighted(list(rows.values())),
        "survivors": survivors,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _rates(row: dict[str, Any]) -> None:
    """Set a row's rates: the plain ones first, the triage-dependent ones after.

    A kill is a run that failed (exit 1 or 2) or timed out; ``rate_by_verdict`` counts the
    exit-1 kills alone, the ones a verdict decided, without harness errors or timeouts. A SHOULD
    miss (``reported``: a clean exit whose report lists a requirement not fully met) is counted
    apart, never as a kill. ``all`` is every judged mutant, equivalent ones included; the
    non-equivalent rate leaves out the survivors the triage file calls equivalent.
    """
    kills = row["killed"] + row["harness-error"] + row["timeout"]
    every = kills + row["reported"] + row["survived"] + row["equivalent"]
    row["all"] = every
    row["kills"] = kills
    row["rate_by_verdict"] = _ratio(row["killed"], every)
    row["should_misses"] = row["reported"]
    row["rate_plain"] = _ratio(kills, every)
    row["rate_nonequivalent"] = _ratio(kills, every - row["equivalent"])
    row["should_miss_share"] = _ratio(row["reported"], every)
    judged = every - row["equivalent"]
    caught = kills + row["reported"]
    # Secondary figures, each leaning on the triage file: caught counts SHOULD misses in;
    # the observable rate also sets aside survivors triaged unkillable and counts those
    # triaged gap-closed as killed, so it reaches 100% by construction once every survivor of
    # a run is triaged. Shown below the plain rates, never in their place.
    row["kill_rate"] = _ratio(caught, judged)
    row["kill_rate_closed"] = _ratio(caught + row["closed"], judged)
    row["kill_rate_observable"] = _ratio(caught + row["closed"], judged - row["internal"])


def weighted(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The headline: each module's rates weighted by its mutation sites, stratified by module.

    A module's mutation sites are its candidates: the mutants cosmic-ray generates there, less
    those the filter drops and those on a ``# pragma: no mutate`` line, which is the population
    its sample is drawn from. Each module's sample estimates its own rates; weighting them by
    its share of the sites estimates the rates over every candidate of the modules judged, so a
    module of 13 sites sampled whole weighs no more than its 13 sites, however many of its
    mutants were drawn. The non-equivalent rate is the ratio of the weighted kill share to the
    weighted non-equivalent share. Modules with no judged mutant are left out; ``coverage`` is
    the share of all sites the figures stand for.

    Args:
        rows: ``tabulate``'s per-module rows, rates set.

    Returns:
        ``rate_plain``, ``rate_by_verdict`` (the exit-1 kills alone), ``rate_nonequivalent``,
        ``should_miss_share``, ``rate_with_should``,
        ``coverage`` and ``modules`` (the modules weighed); a rate is None when nothing is judged.
    """
    judged = [row for row in rows if row["all"]]
    sites = sum(row["candidates"] for row in rows)
    weight: int = sum(row["candidates"] for row in judged)
    if not weight:
        return {
            "rate_plain": None,
            "rate_by_verdict": None,
            "rate_nonequivalent": None,
            "should_miss_share": None,
            "rate_with_should": None,
            "coverage": 0.0,
            "modules": 0,
        }

    def share(field: str) -> float:
        total: float = sum(row["candidates"] * row[field] / row["all"] for row in judged)
        return total / weight

    kills = share("kills")
    nonequivalent = 1.0 - share("equivalent")
    return {
        "rate_plain": round(kills, 4),
        "rate_by_verdict": round(share("killed"), 4),
        "rate_nonequivalent": round(kills / nonequivalent, 4) if nonequivalent else None,
        "should_miss_share": round(share("reported"), 4),
        "rate_with_should": round(kills + share("reported"), 4),
        "coverage": round(weight / sites, 4) if sites else 0.0,
        "modules": len(judged),
    }


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def headline(table: Mapping[str, Any]) -> str:
    """One line with the headline rates, for the end of a run.

    Args:
        table: what ``tabulate`` returned.

    Returns:
        The weighted plain rate (with the share a verdict decided), the weighted rate over
        non-equivalent mutants, and the SHOULD misses apart.
    """
    w = table["weighted"]
    return (
        f"weighted kill rate {_percent(w['rate_plain'])} of all "
        f"({_percent(w['rate_by_verdict'])} by a verdict, exit 1), "
        f"{_percent(w['rate_nonequivalent'])} of non-equivalent; "
        f"SHOULD misses {_percent(w['should_miss_share'])} apart"
    )


def render_md(table: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """Render ``tabulate``'s result as Markdown: the headline first, then the table.

    Args:
        table: what ``tabulate`` returned.
        settings: the run's settings (command, seed, per-module draw, timeout, seconds, and
            how many of the drawn mutants are done).

    Returns:
        The Markdown text.
    """
    w = table["weighted"]
    total = table["total"]
    done = settings.get("done", total["run"])
    drawn = settings.get("drawn", total["run"])
    out = [
        "# Mutation testing of the reference host",
        "",
        f"Seed **{settings['seed']}**. Replay: `{settings['command']}`. "
        f"{settings['per_module'] or 'all'} per module, {done} of {drawn} drawn mutants judged, "
        f"timeout {settings['timeout']:.0f} s per mutant, {settings['seconds']:.0f} s in all. "
        "The judge is the conformance suite alone (`secref-conformance -- --stop-when-decided`, "
        "in-process host), the timing checks of invariant 7 left out.",
        "",
        "## Headline: weighted by each module's mutation sites, stratified by module",
        "",
        f"- Kill rate: **{_percent(w['rate_plain'])}** (killed / all judged, equivalent "
        "mutants included).",
        f"- Of which decided by a verdict (exit 1): {_percent(w['rate_by_verdict'])}; the rest "
        "are harness errors (exit 2, such as a host that cannot start) and timeouts.",
        f"- Kill rate over non-equivalent mutants: **{_percent(w['rate_nonequivalent'])}** "
        "(equivalence from the triage file).",
        f"- SHOULD misses, apart from kills: {_percent(w['should_miss_share'])} of the mutants "
        f"(caught with them: {_percent(w['rate_with_should'])}).",
        f"- The {w['modules']} modules judged hold {_percent(w['coverage'])} of the sites.",
        "",
        f"Unweighted, over the {total['all']} judged: kill rate {_percent(total['rate_plain'])}, "
        f"over non-equivalent {_percent(total['rate_nonequivalent'])}, "
        f"{total['should_misses']} SHOULD misses.",
        "",
        "| Module | Sites | Weight | Judged | Killed | Harness errors | Timed out "
        "| SHOULD misses | Survived | Equivalent | Kill rate | Non-equivalent kill rate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sites = total["candidates"] or 1
    for row in [*table["modules"], total]:
        out.append(
            f"| `{row['module']}` | {row['candidates']} | {row['candidates'] / sites:.1%} "
            f"| {row['all']} | {row['killed']} | {row['harness-error']} | {row['timeout']} "
            f"| {row['should_misses']} "
            f"| {row['survived']} | {row['equivalent']} | {_percent(row['rate_plain'])} "
            f"| {_percent(row['rate_nonequivalent'])} |"
        )
    counts: dict[str, int] = {}
    for survivor in table["survivors"]:
        counts[survivor["verdict"]] = counts.get(survivor["verdict"], 0) + 1
    by_verdict = ", ".join(f"{verdict}: {n}" for verdict, n in sorted(counts.items()))
    out += [
        "",
        "Sites: the module's mutants after the filter and the pragmas, the population its sample "
        "is drawn from; its weight is its share of them. Killed: the suite's verdict was not "
        "conformant (exit 1). Harness errors: the suite exited 2 (a host that cannot start or "
        "answer), counted as a kill and shown apart, since no verdict judged the mutant. "
        "Timed out: the run went past the timeout (a host that hangs) or held more than "
        "the memory bound (a host that grows without end), counted as a kill. "
        "SHOULD misses: the suite exited 0 but its report lists a requirement as not fully met "
        "(a SHOULD the mutant broke shows as non-strict), never counted as a kill. Survived: "
        "the suite passed with a clean report, equivalent mutants set apart.",
        "",
        f"Survivors by verdict: {by_verdict or 'none'}.",
        "",
        "Secondary, leaning on the triage file (it reaches 100% by construction once every "
        "survivor of the run is triaged, so it measures the triage, not the suite): observable "
        f"rate {_percent(total['kill_rate_observable'])}, counting SHOULD misses and "
        f"survivors triaged gap-closed ({total['closed']}) as caught, over the non-equivalent "
        f"mutants less those triaged internal-only or either-choice ({total['internal']}).",
        "",
        "## Survivors",
        "",
    ]
    if not table["survivors"]:
        out.append("None.")
    else:
        out += [
            "| Module | Line | Operator | Before | After | Verdict |",
            "|---|---|---|---|---|---|",
        ]
        for s in table["survivors"]:
            out.append(
                f"| `{s['module']}` | {s['line']} | {s['operator'].removeprefix('core/')} "
                f"| {_md_cell(s['before'])} | {_md_cell(s['after'])} | {s['verdict']} |"
            )
    return "\n".join(out) + "\n"


def render_triage(triage: Sequence[TriageEntry]) -> str:
    """Render the triage file as the Markdown page ``docs/mutation-triage.md``.

    Args:
        triage: the triage file's entries.

    Returns:
        The Markdown text.
    """
    out = [
        "# Mutation survivors, triaged",
        "",
        "Generated from `conformance/selftest/mutation_triage.yaml` by "
        "`python -m conformance.selftest.mutation render-triage`; edit the YAML, not this page. "
        "How to triage: [mutation.md](mutation.md).",
        "",
    ]
    counts = {verdict: sum(1 for e in triage if e.verdict == verdict) for verdict in VERDICTS}
    out.append(", ".join(f"{verdict}: {count}" for verdict, count in counts.items()) + ".")
    out.append("")
    for module in CORE_MODULES:
        entries = [e for e in triage if e.module == module]
        if not entries:
            continue
        out += [f"## `{module}`", "", "| Operator | Before | After | Verdict | Reason |"]
        out.append("|---|---|---|---|---|")
        for e in entries:
            reason = e.reason.replace("\n", " ").replace("|", "\\|")
            out.append(
                f"| {e.operator.removeprefix('core/')} | {_md_cell(e.before)} "
                f"| {_md_cell(e.after)} | {e.verdict} | {reason} |"
            )
        out.append("")
    return "\n".join(out)
