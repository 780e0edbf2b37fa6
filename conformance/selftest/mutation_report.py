"""The tables of a mutation run and the triage of its survivors.

This module owns what a run's outcomes mean to a reader: the checked-in triage file
(``mutation_triage.yaml``, a verdict and a reason per survivor), the per-module counts and kill
rates (``tabulate``), and their Markdown: the run's table and the triage page
``docs/mutation-triage.md``. It never runs the suite, never counts a survivor as killed unless
the triage file says a check added since kills it (and then only in the rate that says so), and
never sets an unkillable survivor aside in the plain kill rate.
"""

from __future__ import annotations

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


def _md_cell(text: str) -> str:
    """Escape text for one Markdown table cell (source lines carry pipes and backticks)."""
    flat = text.replace("\n", " ⏎ ").replace("|", "\\|").replace("`", "'")
    return f"`{flat}`" if flat else ""


def tabulate(
    generated: Generated,
    outcomes: Sequence[Outcome],
    triage: Sequence[TriageEntry],
) -> dict[str, Any]:
    """Count, per module, what happened to the mutants, with the kill rate.

    A timed-out mutant counts as killed (a host that hangs is caught), and is shown apart; so
    does a reported one (the run exited 0, but its report lists a requirement not fully met).
    The kill rate is killed (reported and timeouts included) over the run mutants not judged
    equivalent, where equivalent means a triage entry says so. A second rate also sets aside
    the survivors triaged internal-only and counts those triaged gap-closed as killed. Mutants
    on ``# pragma: no mutate`` lines are counted as equivalent but never run.

    Args:
        generated: what ``init_session`` returned.
        outcomes: the outcomes so far.
        triage: the triage file's entries.

    Returns:
        A JSON-ready dict: ``modules`` (one row per module), ``total`` and ``survivors``.
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
        if outcome.status in ("killed", "reported", "timeout", "error"):
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
    for field in ("reported", "survived", "equivalent", "closed", "internal", "error"):
        total[field] = sum(row[field] for row in rows.values())
    for row in [*rows.values(), total]:
        judged = row["killed"] + row["reported"] + row["timeout"] + row["survived"]
        caught = row["killed"] + row["reported"] + row["timeout"]
        row["kill_rate"] = round(caught / judged, 4) if judged else None
        row["kill_rate_closed"] = round((caught + row["closed"]) / judged, 4) if judged else None
        # Unkillable survivors (internal-only, or a legal EITHER choice) are beyond any suite;
        # this rate sets them aside as well, and is shown beside the plain one, never instead.
        observable = judged - row["internal"]
        row["kill_rate_observable"] = (
            round((caught + row["closed"]) / observable, 4) if observable else None
        )
    return {"modules": list(rows.values()), "total": total, "survivors": survivors}


def render_md(table: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """Render ``tabulate``'s result as Markdown.

    Args:
        table: what ``tabulate`` returned.
        settings: the run's settings (command, seed, per-module draw, timeout, seconds).

    Returns:
        The Markdown text.
    """
    out = [
        "# Mutation testing of the reference host",
        "",
        f"Command: `{settings['command']}`. Seed {settings['seed']}, "
        f"{settings['per_module'] or 'all'} per module, timeout {settings['timeout']:.0f} s "
        f"per mutant, {settings['seconds']:.0f} s in all. The judge is the conformance suite "
        "alone (`secref-conformance -- --stop-when-decided`, in-process host), the timing "
        "checks of invariant 7 left out.",
        "",
        "| Module | Generated | Filtered | Pragma | Run | Killed | Reported | Timed out "
        "| Survived | Equivalent | Unkillable | Kill rate | Gap closed since "
        "| Kill rate with them | Observable kill rate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def percent(rate: float | None) -> str:
        return "n/a" if rate is None else f"{rate:.0%}"

    for row in [*table["modules"], table["total"]]:
        out.append(
            f"| `{row['module']}` | {row['generated']} | {row['filtered']} | {row['pragma']} "
            f"| {row['run']} | {row['killed']} | {row['reported']} | {row['timeout']} "
            f"| {row['survived']} | {row['equivalent']} | {row['internal']} "
            f"| {percent(row['kill_rate'])} | {row['closed']} "
            f"| {percent(row['kill_rate_closed'])} | {percent(row['kill_rate_observable'])} |"
        )
    out += [
        "",
        "Generated: what cosmic-ray made. Filtered: dropped, touching only an annotation, a "
        "docstring or a logging call. Pragma: on a `# pragma: no mutate` line (equivalent, not "
        "run). Run: drawn and judged. Killed: the suite failed. Reported: the suite exited 0 "
        "but its report lists a requirement as not fully met (a SHOULD the mutant broke shows "
        "as non-strict; the unmutated host has none). Kill rate: (killed + reported + timed "
        "out) / (run - equivalent). Gap closed since: survivors the triage file marks as killed "
        "by a check added after the run; the next column counts them as killed. Observable kill "
        "rate: as that column, but over run - equivalent - unkillable, where unkillable "
        "survivors are those triaged internal-only (nothing a host shows changes) or "
        "either-choice (the host moves to another behaviour an EITHER ruling allows): no "
        "conformance suite may kill them.",
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
