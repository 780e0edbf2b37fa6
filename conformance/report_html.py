"""One self-contained HTML page of saved reports: a matrix of hosts by requirements, then each
host's detail.

This module owns the page ``secref-conformance report --html`` writes. The page fetches nothing:
its one style sheet is inline and allowed by its hash, and its Content-Security-Policy forbids
every script, frame, form, font and image source, so a browser that opens it runs no code. Every
text that came from a report (the host's name and version, reasons, check ids) is escaped with
:func:`html.escape` after its control characters are shown as escapes, so host text stays text
(decisions S1.5). Outcomes, verdicts and exit codes are the reports' own, as the verdict kernel
wrote them (decisions S1.11); the page decides nothing.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Mapping, Sequence
from typing import Any, Final

from conformance.inert import escape_controls
from conformance.kernel import EXCLUDED, NOT_SELECTED
from conformance.report_views import (
    COLOURS,
    Layout,
    capped,
    cause_sentence,
    causes,
    count_cell,
    duration,
    outcome_counts,
    plural,
    reasons,
    short_check,
    verdict_text,
)

#: The page's only style sheet, inline; the Content-Security-Policy allows it by its hash.
STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #c8c8c8; padding: 2px 6px; text-align: left; vertical-align: top; }
td { max-width: 36em; }
th { background: #eeeeee; }
td.o { white-space: nowrap; }
.red { background: #f8d0d0; } .yellow { background: #fbefc0; } .green { background: #d3f0d3; }
.verdict { font-weight: bold; font-size: 1.05em; padding: 2px 6px; }
.muted { color: #707070; }
""".strip()

#: What the page may load: its own inline style, by hash, and nothing else.
CSP: Final = (
    "default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; "
    "base-uri 'none'; form-action 'none'; img-src 'none'; font-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()}'"
)


def text(value: object) -> str:
    """Return report text for the page: controls shown as escapes, then HTML-escaped."""
    return html.escape(escape_controls(str(value)), quote=True)


def _class(outcome: str, cell: str = "o") -> str:
    colour = COLOURS.get(outcome)
    return f' class="{cell} {colour}"' if colour else f' class="{cell} muted"'


def host_label(report: Mapping[str, Any]) -> str:
    """Return a host's name, version and path, as the page and the matrix name it."""
    host = report["host"]
    return f"{host.get('name')} {host.get('version')} via {host.get('via') or 'driver'}"


def rows(reports: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Return (ID, title) of every requirement some report lists, in catalog order: those
    outside every run's selection, and the non-goals, are left out."""
    seen: dict[str, str] = {}
    for report in reports:
        for item in report["requirements"]:
            if item["outcome"] not in (NOT_SELECTED, EXCLUDED):
                seen.setdefault(item["id"], item.get("title", ""))
    order = [item["id"] for item in reports[0]["requirements"]] if reports else []
    ranked = {rid: index for index, rid in enumerate(order)}
    return sorted(seen.items(), key=lambda entry: (ranked.get(entry[0], len(ranked)), entry[0]))


def page(reports: Sequence[Mapping[str, Any]]) -> str:
    """Return the HTML page of ``reports``: hosts, the matrix, then each host's detail."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP)}">',
        '<meta name="referrer" content="no-referrer">',
        "<title>Secret-reference conformance</title>",
        f"<style>{STYLE}</style>",
        "</head><body>",
        "<h1>Secret-reference conformance</h1>",
        "<table><tr><th>Host</th><th>Verdict</th><th>Exit code</th><th>Took</th>"
        "<th>Requirements</th></tr>",
    ]
    for index, report in enumerate(reports, 1):
        out.append(
            f'<tr><td><a href="#host-{index}">H{index}</a> {text(host_label(report))}</td>'
            f'<td{_class(str(report["verdict"]), "v")}><span class="verdict">'
            f"{text(verdict_text(report))}</span></td><td>{int(report['exitCode'])}</td>"
            f"<td>{text(duration(report))}</td>"
            f"<td>{text(outcome_counts(report['summary']['requirements']))}</td></tr>"
        )
    out.append("</table>")
    out += _matrix(reports)
    for index, report in enumerate(reports, 1):
        out += _detail(index, report)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _matrix(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    outcomes = [{item["id"]: item for item in report["requirements"]} for report in reports]
    head = "".join(
        f'<th title="{text(host_label(report))}">H{index}</th>'
        for index, report in enumerate(reports, 1)
    )
    out = [
        "<h2>Requirements by host</h2>",
        f"<table><tr><th>ID</th><th>Title</th>{head}</tr>",
    ]
    for rid, title in rows(reports):
        cells = []
        for found in outcomes:
            item = found.get(rid)
            outcome = str(item["outcome"]) if item is not None else "-"
            cells.append(f"<td{_class(outcome)}>{text(outcome)}</td>")
        out.append(f"<tr><td>{text(rid)}</td><td>{text(title)}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    return out


def _detail(index: int, report: Mapping[str, Any]) -> list[str]:
    layout = Layout.of(report)
    out = [
        f'<h2 id="host-{index}">H{index}: {text(host_label(report))}</h2>',
        f'<p><span class="verdict {COLOURS.get(str(report["verdict"]), "")}">verdict: '
        f"{text(verdict_text(report))} (exit code {int(report['exitCode'])})</span> "
        f"took {text(duration(report))} for {len(report['checks']):,} checks; started "
        f"{text(report['started'])}</p>",
    ]
    out += [
        f'<p class="red">harness problem: {text(problem)}</p>' for problem in report["problems"]
    ]
    for cause, ids in layout.collapsed:
        out.append(
            f'<p class="red">{len(ids)} requirements errored, each for one cause: {text(cause)}: '
            f"{text(capped(ids, 12))}</p>"
        )
    if layout.attention:
        out.append(
            "<table><tr><th>ID</th><th>Title</th><th>Outcome</th><th>p/f/e/s/u</th>"
            "<th>Why</th><th>Checks</th></tr>"
        )
        for item in layout.attention:
            out.append(
                f"<tr><td>{text(item['id'])}</td><td>{text(item.get('title', ''))}</td>"
                f"<td{_class(item['outcome'])}>{text(item['outcome'])}</td>"
                f"<td>{count_cell(item)}</td><td>{text(reasons(item))}</td>"
                f"<td>{text(capped(layout.checks_of(item)))}</td></tr>"
            )
        out.append("</table>")
    elif not layout.collapsed:
        out.append('<p class="green">No requirement failed, errored or went unchecked.</p>')
    grouped = causes(report["checks"])
    if grouped:
        out.append("<ul>")
        for outcome, cause, ids, _rids in grouped:
            named = capped([short_check(name) for name in ids])
            out.append(
                f"<li>{text(cause_sentence(outcome, cause, len(ids)))}"
                f' <span class="muted">{text(named)}</span></li>'
            )
        out.append("</ul>")
    if not layout.rest:
        out.append('<p class="muted">No other requirement in this run.</p>')
    else:
        out.append(
            f"<details><summary>{plural(len(layout.rest), 'other requirement')}: "
            f"{text(outcome_counts(_counts(layout.rest)) or 'none')}</summary>"
        )
        out.append("<table><tr><th>ID</th><th>Title</th><th>Outcome</th><th>p/f/e/s/u</th></tr>")
        for item in layout.rest:
            out.append(
                f"<tr><td>{text(item['id'])}</td><td>{text(item.get('title', ''))}</td>"
                f"<td{_class(item['outcome'])}>{text(item['outcome'])}</td>"
                f"<td>{count_cell(item)}</td></tr>"
            )
        out.append("</table></details>")
    if layout.not_selected:
        out.append(
            f'<p class="muted">Not listed: {plural(layout.not_selected, "requirement")} outside '
            "this run's selection (excluded ones included); none of them is passed.</p>"
        )
    return out


def _counts(items: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    found: dict[str, int] = {}
    for item in items:
        found[item["outcome"]] = found.get(item["outcome"], 0) + 1
    return found
