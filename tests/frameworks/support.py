"""What the tests of real frameworks share: where Playwright MCP is, or why they are skipped."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from conformance.frameworks.playwright_mcp import CHROMIUM


def playwright_prefix() -> str:
    """The npm prefix of Playwright MCP, or a skip naming what is missing."""
    prefix = os.environ.get("SECREF_PLAYWRIGHT_MCP", "")
    package = Path(prefix, "node_modules", "@playwright", "mcp", "package.json")
    if not prefix or not package.exists():
        pytest.skip("SECREF_PLAYWRIGHT_MCP names no npm install of @playwright/mcp")
    if shutil.which("node") is None or not Path(CHROMIUM).exists():
        pytest.skip("Playwright MCP needs node and Debian's chromium (/usr/bin/chromium)")
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the mcp SDK is not installed in this env")
    return prefix
