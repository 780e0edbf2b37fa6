"""``python -m reference_impl.mcp_demo``: the transcript docs/mcp.md shows, produced again."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

from reference_impl import mcp_demo


@pytest.mark.req("MCP-007", "MCP-013")
def test_demo_shows_reference_elicitation_and_scrubbed_result() -> None:
    out = io.StringIO()
    assert mcp_demo.main(out) == 0
    text = out.getvalue()
    assert mcp_demo.DEMO_KEY not in text, "the transcript shows the demo key"
    assert "{{secret:" + mcp_demo.DEMO_ID + "}}" in text
    assert "elicitation/create" in text
    assert "Risk: HIGH" in text
    assert "[secret:" + mcp_demo.DEMO_ID + ".password]" in text
    assert '"approvalDisposition":"APPROVED_ONCE"' in text
