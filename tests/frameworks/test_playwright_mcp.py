"""The Playwright MCP adapter's own parts, without Playwright MCP: fast, in the ordinary tests.

This module owns the checks of :mod:`conformance.frameworks.playwright_mcp` that need neither
the npm package nor a browser: the page's server puts what its form sent back into the call's
argument tree and records it as the receipt, a failing handler answers with status 500 and its
text, the server's debug log is split into records, and the mutant's preload script removes a
masking step written as the bundle writes it (and refuses a bundle without one). Against the
real package (the npm prefix named by ``SECREF_PLAYWRIGHT_MCP``, with node and Debian's
chromium; skipped otherwise): a plain word that names a member of ``Object.prototype`` makes
the call fail. The mutant against the real package is ``test_frameworks.py``'s.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conformance.frameworks import playwright_mcp as adapter
from conformance.frameworks.base import Tool
from tests.frameworks.support import playwright_prefix


def _fetch(page: adapter._Page, path: str, body: bytes | None = None) -> tuple[int, str]:
    """GET (or, with a body, POST) one of the page's paths; return the status and the text."""
    where = urlsplit(page.url(path))
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    try:
        connection.request("GET" if body is None else "POST", where.path, body=body)
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8")
    finally:
        connection.close()


def test_the_form_sends_each_string_back_into_the_tree() -> None:
    framework = adapter.PlaywrightMcp()
    framework.tools = {"echo": Tool("echo", "recorder")}
    arguments = {"z": "a", "l": [1.5, {"deep": ["b", None]}], "k": {"n": True, "s": ""}}
    leaves = list(adapter._leaves(arguments, ""))
    assert leaves == [("z", "a"), ("l[1].deep[0]", "b"), ("k.s", "")]
    page = adapter._Page(framework)
    try:
        number = page.open(framework.tools["echo"], arguments, [path for path, _ in leaves])
        _, form = _fetch(page, f"call/{number}")
        assert form.count("<textarea") == 3
        assert 'for="f1">l[1].deep[0]<' in form
        sent = json.dumps(["x\r\ny", "é", "q"]).encode("utf-8")
        assert _fetch(page, f"run/{number}", sent) == (200, "ok")
    finally:
        page.close()
    wanted = {"z": "x\r\ny", "l": [1.5, {"deep": ["é", None]}], "k": {"n": True, "s": "q"}}
    assert [receipt.view for receipt in framework.handlers.receipts] == [wanted]


def test_a_failing_handler_answers_500_with_its_text() -> None:
    framework = adapter.PlaywrightMcp()
    tool = Tool("thrower", "thrower")
    page = adapter._Page(framework)
    try:
        number = page.open(tool, {"k": "v"}, ["k"])
        assert _fetch(page, f"run/{number}", b'["w"]') == (500, "handler failed with w")
    finally:
        page.close()


def test_the_debug_log_is_split_into_records() -> None:
    text = (
        "Session: x\n"
        "2026-12-02T16:50:33.070Z pw:mcp:server callTool {\n  name: 'a'\n}\n"
        "2026-12-02T16:50:33.072Z pw:mcp:test create browser\n"
    )
    assert adapter._records(text) == [
        "Session: x",
        "2026-12-02T16:50:33.070Z pw:mcp:server callTool {\n  name: 'a'\n}",
        "2026-12-02T16:50:33.072Z pw:mcp:test create browser",
    ]


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="the preload script needs node")
def test_the_mutant_preload_removes_the_masking_step(tmp_path: Path) -> None:
    node = str(NODE)
    preload = tmp_path / "no-redact.js"
    preload.write_text(adapter._NO_REDACT, "utf-8")
    bundle = tmp_path / "coreBundle.js"
    bundle.write_text(
        "exports.mask = { redactSecrets(text2) { return text2.replaceAll('v', 'M'); } };\n"
    )
    script = f"console.log(require({json.dumps(str(bundle))}).mask.redactSecrets('vv'))"
    plain = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
    assert plain.stdout.strip() == "MM"
    mutant = [node, "--require", str(preload), "-e", script]
    assert subprocess.run(mutant, capture_output=True, text=True, check=True).stdout == "vv\n"
    bundle.write_text("exports.mask = {};\n")
    refused = subprocess.run(mutant, capture_output=True, text=True, check=False)
    assert refused.returncode != 0
    assert "the masking step was not found" in refused.stderr


def test_a_plain_word_of_object_prototype_fails_the_call() -> None:
    """``lookupSecret`` reads the secrets as a plain object, inherited members included: a
    field whose text is ``constructor`` (no placeholder at all) is "found", its "value" is a
    function, and the call fails before the page receives anything."""
    from conformance.canary import Mint
    from conformance.hosts.subprocess import SubprocessHost
    from conformance.scenario import RECORDER, config, make_secret

    prefix = playwright_prefix()
    host = SubprocessHost(
        f"{sys.executable} -m conformance.frameworks.playwright_mcp --prefix {prefix}",
        call_timeout=60.0,
        start_timeout=60.0,
    )
    try:
        host.reset(config([make_secret(Mint())]))
        plain = host.invoke(RECORDER.name, json.dumps({"k": "plain"}))
        inherited = host.invoke(RECORDER.name, json.dumps({"k": "constructor"}))
        seen = host.observe()
    finally:
        host.close()
    assert not plain.is_error
    assert inherited.is_error
    assert "expected string, got function" in inherited.text
    assert [receipt.view for receipt in seen.receipts] == [{"k": "plain"}]
