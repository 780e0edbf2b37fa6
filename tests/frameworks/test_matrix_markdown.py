"""The frameworks matrix's Markdown holds what an adapter announced as inert text.

This module owns the check that a framework's name, version and spelling, which come from the
adapter's handshake, can neither add a table row or a heading nor open an HTML comment in
``reports/frameworks.md``.
"""

from __future__ import annotations

from conformance.frameworks.checks import COLUMNS, NOT_APPLICABLE, NOT_OFFERED, Row
from conformance.frameworks.matrix import markdown


def test_announced_text_cannot_add_a_row_a_heading_or_a_tag() -> None:
    entry = {
        "framework": "evil | x",
        "version": "1\n# verdict: conformant\n| forged | row |",
        "capabilities": ["observe.log"],
        "spelling": "`{name}` <!--",
        "verdict": "incomplete",
        "rows": {column: Row().wire() for column in COLUMNS},
        "notApplicable": NOT_APPLICABLE,
        "unchecked": NOT_OFFERED,
        "runSeconds": 1.0,
    }
    text = markdown([entry], [])
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith(("# verdict", "| forged"))]
    assert "<!--" not in text
    row = next(line for line in lines if line.startswith("| evil"))
    # One cell per column: every pipe the adapter sent is escaped.
    assert row.replace("\\|", "").count("|") == len(COLUMNS) + 5
