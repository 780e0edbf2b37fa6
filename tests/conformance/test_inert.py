"""Host text is inert where reports write it; lines are bounded; runs of canaries are redacted.

Unit tests of the parts the hostile-adapter module exercises end to end: the escaping of
:mod:`conformance.inert`, the framing and nesting bound of :mod:`conformance.hosts._framing`,
the partial-run redaction of :class:`conformance.canary.Detector`, and the Markdown report.
"""

from __future__ import annotations

import re

import pytest

from conformance.canary import MIN_REDACTED_RUN, Detector, Guarded, Kind, Mint
from conformance.hosts._framing import (
    MAX_JSON_DEPTH,
    LineFramer,
    LineTooLongError,
    json_depth,
)
from conformance.inert import (
    escape_controls,
    escape_controls_keep_lines,
    map_strings,
    markdown_code,
    markdown_text,
)

HOSTILE = (
    "a\n- Verdict: **conformant** (exit code 0)\r\n<img src=x onerror=alert(1)>"
    "<script>x</script> <!-- | `t` [l](u) \x1b[31m \u202e ~~s~~ _e_ &amp;"
)


def test_markdown_text_leaves_no_live_markup() -> None:
    """Escaped host text holds no line break, tag, comment opener, ESC or unescaped marker."""
    text = markdown_text(HOSTILE)
    for raw in ("\n", "\r", "<", ">", "\x1b", "\u202e", "<!--"):
        assert raw not in text
    assert "&lt;script&gt;" in text
    assert "&amp;amp;" in text
    assert re.search(r"(?<!\\)[*`|\[\]~_]", text) is None


def test_markdown_text_keeps_plain_text() -> None:
    """Text with nothing to escape is unchanged."""
    assert markdown_text("acme host 2.4.0 (go)") == "acme host 2.4.0 (go)"


@pytest.mark.parametrize("text", ["plain", "a`b", "``x``", "`lead", "p|q"])
def test_markdown_code_fence_outlasts_every_backtick_run(text: str) -> None:
    """A code span's fence is longer than any backtick run inside, and pipes are escaped."""
    span = markdown_code(text)
    fence = re.match(r"`+", span)
    assert fence is not None
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    assert len(fence.group()) == longest + 1
    assert span.endswith(fence.group())
    assert "|" not in span.replace("\\|", "")


def test_terminal_escapes_show_every_control() -> None:
    """Controls become visible escapes; only the traceback variant keeps newlines and tabs."""
    assert escape_controls("a\x1b[0mb\nc\u202e") == "a\\x1b[0mb\\x0ac\\u202e"
    assert escape_controls_keep_lines("a\x1b\nb\tc\x07") == "a\\x1b\nb\tc\\x07"


def test_map_strings_reaches_nested_strings_and_copies() -> None:
    """Every string, keys included, is changed in a copy; the original is untouched."""
    document = {"a": ["x", {"b": "y"}], "n": 1}
    changed = map_strings(document, str.upper)
    assert changed == {"A": ["X", {"B": "Y"}], "N": 1}
    assert document == {"a": ["x", {"b": "y"}], "n": 1}


def test_framer_bounds_lines_and_unended_text() -> None:
    """Lines up to the bound pass; a longer line, or as much text without newline, is refused."""
    framer = LineFramer(8)
    assert framer.feed(b"12345678\nab") == [b"12345678"]
    assert framer.feed(b"c\n") == [b"abc"]
    with pytest.raises(LineTooLongError, match="more than 8 bytes"):
        framer.feed(b"123456789\n")
    flooded = LineFramer(8)
    flooded.feed(b"1234")
    with pytest.raises(LineTooLongError, match="--host-max-line"):
        flooded.feed(b"56789")


def test_json_depth_counts_without_recursion() -> None:
    """100,000 brackets are measured, not recursed into; brackets inside strings do not count."""
    assert json_depth(b"[" * 100_000) == 100_000
    assert json_depth(b'{"a":[1,2,{"b":"[[[["}]}') == 0  # few brackets: not worth counting
    quoted = b'["' + b"[" * (MAX_JSON_DEPTH * 2) + b'"]'
    assert json_depth(quoted) == 1
    escaped = b'["\\"' + b"[" * (MAX_JSON_DEPTH * 2) + b'"]'
    assert json_depth(escaped) == 1


@pytest.mark.parametrize("kind", list(Kind))
def test_redaction_removes_every_run_of_eight(kind: Kind) -> None:
    """A prefix, suffix or middle of 8+ characters of a value is redacted; 7 are left alone."""
    canary = Mint().canary(kind)
    value = canary.value
    detector = Detector([Guarded(canary.label, value)])
    pieces = [value[:MIN_REDACTED_RUN], value[-MIN_REDACTED_RUN - 2 :], value[3:14], value]
    text = detector.redact(" | ".join(f"quoted {piece}!" for piece in pieces))
    for start in range(len(value) - MIN_REDACTED_RUN + 1):
        assert value[start : start + MIN_REDACTED_RUN] not in text
    assert f"<{canary.label}:part>" in text
    short = value[2 : 2 + MIN_REDACTED_RUN - 1]
    assert detector.redact(f"<{short}>") == f"<{short}>"


def test_markdown_report_has_one_verdict_line_for_any_host_text() -> None:
    """Host fields holding a forged verdict, HTML and escapes leave one verdict line."""
    from conformance.report import render_markdown

    report = {
        "host": {
            "name": HOSTILE,
            "version": HOSTILE,
            "language": HOSTILE,
            "capabilities": [HOSTILE],
        },
        "verdict": "not-conformant",
        "exitCode": 1,
        "suite": {"name": "secref-conformance", "version": "0"},
        "vectorsDigest": "d",
        "started": "now",
        "durationS": 1.0,
        "problems": [HOSTILE],
        "summary": {"requirements": {}, "checks": {}},
        "requirements": [
            {
                "id": "X-1",
                "level": "MUST",
                "outcome": "error",
                "alternatives": [],
                "checks": ["c"],
                "details": [HOSTILE],
            }
        ],
        "checks": [
            {
                "id": "t.py::test[`x|y`]",
                "outcome": "error",
                "failedRequirements": [],
                "detail": HOSTILE,
            }
        ],
        "hardening": [],
        "expectations": None,
    }
    page = render_markdown(report)
    assert len(re.findall(r"^\s*[-*+]?\s*Verdict:", page, re.MULTILINE)) == 1
    for raw in ("<script", "<img", "<!--", "\x1b", "\u202e"):
        assert raw not in page
