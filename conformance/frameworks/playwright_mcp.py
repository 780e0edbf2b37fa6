"""Playwright MCP as a placeholder host: ``python -m conformance.frameworks.playwright_mcp``.

This module owns the adapter for Playwright MCP (the npm package ``@playwright/mcp``, pinned
``0.0.83``, whose tools live in ``playwright-core``'s ``lib/coreBundle.js``). The model writes a
secret's bare name as the whole ``value`` of a ``browser_fill_form`` field (or the ``text`` of
``browser_type``); ``Context.lookupSecret`` hands the tool the value when the text is exactly a
name of the configured secrets, and the text itself otherwise. Every response's text is masked
by ``Context.redactSecrets``: each value, exactly as stored, is replaced by
``<secret>NAME</secret>``. The package says of its secrets that they are "a convenience and not
a security feature" (``config.d.ts``).

The tool under test is a page. The adapter serves it on 127.0.0.1 (an ``http.server`` on an
ephemeral port) and starts Playwright MCP from a local npm install (``node
<prefix>/node_modules/@playwright/mcp/cli.js --config <file>``) as a stdio MCP server, with
Debian's chromium as its browser, and talks to it with the official ``mcp`` SDK's client. One
call of the suite is what a model does with a form: ``browser_navigate`` to a page that has one
text area per string of the call's arguments, ``browser_fill_form`` with each string as the
value of its field, ``browser_click`` on the form's button, and ``browser_snapshot`` to read
the page. The page's script sends the text each field was given (taken from its ``beforeinput``
events, since a text area folds a carriage return into a line feed) to the local server, which
puts it back in the call's argument tree (keys and non-string members are the page's own: the
model names no member the page receives), records that tree as the receipt, runs the standard
handler on it (:class:`conformance.frameworks.base.Handlers`) and answers with the handler's
text, or status 500 and the exception's text, which the page shows in place of its form.

What the model reads (result and failure text) is the text of the three responses after the
navigation: the fill, the click, the snapshot. Playwright MCP does not tell the model that a
page failed, so a failing handler's text is a result. Surfaces beyond it: the server's debug log
(``DEBUG`` set to every namespace its own code writes, ``pw:mcp:*`` and ``pw:tools:*``; or every
``pw:*`` namespace, Playwright's protocol trace included, with ``--debug-all``), read from its
standard error and reported record by record; and what it persists: every file it writes under
its output directory (``outputDir``; it writes each automatic page snapshot there and hands the
model a link to it), ``observe.ledger``.

The secrets are given in the configuration file's ``secrets`` member (documented in
``config.d.ts``), not in a ``--secrets`` dotenv file: the dotenv parser folds a carriage return
into a line feed, so it cannot carry every value the checks use.

``--mutant`` loads the package with a preload script that makes ``redactSecrets`` return its
text unchanged: a broken masking step the checks must catch.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import html
import json
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from conformance.frameworks.base import Framework, HandlerFailed, Outcome, main

#: The release this adapter was written against.
PINNED: Final = "0.0.83"

#: Debian's chromium: no browser is downloaded.
CHROMIUM: Final = "/usr/bin/chromium"

#: The flags chromium needs to start quietly here, as root, headless and offline.
CHROMIUM_ARGS: Final = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: The namespaces of the server's debug log: its own, or every one of Playwright's.
OWN_LOG: Final = "pw:mcp:*,pw:tools:*"
ALL_LOG: Final = "pw:*"

#: The logger the server's debug records are handed to, one record each.
LOGGER: Final = "playwright_mcp"

#: The line a ``debug`` record of the server opens with: a timestamp, then its namespace.
_RECORD: Final = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z ", re.MULTILINE)

#: The masking step the mutant removes, as the bundle spells it.
_MASKING: Final = r"redactSecrets\((\w+)\) \{"

#: A call's read timeout, beyond the handler's own.
CALL_TIMEOUT_S: Final = 60.0


def _option(flag: str, default: str) -> str:
    """Return the value after ``flag`` on the command line, or ``default``."""
    argv = sys.argv[1:]
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else default


#: The npm prefix the package is installed under (``<prefix>/node_modules/@playwright/mcp``).
PREFIX = Path(_option("--prefix", os.environ.get("SECREF_PLAYWRIGHT_MCP", "playwright-mcp")))

#: The path under test, from the command line.
DEBUG_ALL = "--debug-all" in sys.argv[1:]
MUTANT = "--mutant" in sys.argv[1:]


class PlaywrightMcp(Framework):
    """Playwright MCP's form tools and masking, driven over MCP without a model."""

    name = "playwright-mcp (DEBUG=pw:*)" if DEBUG_ALL else "playwright-mcp"
    spelling = "{name}"
    loggers = (LOGGER, "mcp")
    capabilities = ("observe.log", "observe.receipts", "observe.ledger")

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._page: _Page | None = None
        self._client: _Client | None = None
        self._read = 0

    def describe(self) -> dict[str, Any]:
        """The host description, with the framework's own language."""
        described = super().describe()
        described["language"] = "javascript"
        return described

    def build(self) -> None:
        """Serve the page, write the configuration and start the server and its browser."""
        _close_live()
        self._scratch = tempfile.TemporaryDirectory(prefix="secref-playwright-mcp-")
        root = Path(self._scratch.name)
        self._output = root / "workspace" / "output"
        self._stderr = root / "stderr.log"
        self._output.parent.mkdir()
        config = root / "config.json"
        config.write_text(json.dumps(self._config()), "utf-8")
        self._page = _Page(self)
        env = {"DEBUG": ALL_LOG if DEBUG_ALL else OWN_LOG, "DEBUG_COLORS": "0"}
        argv = [str(PREFIX / "node_modules" / "@playwright" / "mcp" / "cli.js")]
        if MUTANT:
            preload = root / "no-redact.js"
            preload.write_text(_NO_REDACT, "utf-8")
            argv = ["--require", str(preload), *argv]
        self._client = _Client(
            ["node", *argv, "--config", str(config)], env, self._output.parent, self._stderr
        )
        _LIVE.append(self)
        # The browser starts with the first tool call: here, so that no call is timed with it.
        self._client.call("browser_navigate", {"url": self._page.url("ready")})

    def _config(self) -> dict[str, Any]:
        return {
            "browser": {
                "browserName": "chromium",
                "isolated": True,
                "launchOptions": {
                    "executablePath": _option("--executable-path", CHROMIUM),
                    "headless": True,
                    "args": list(CHROMIUM_ARGS),
                },
            },
            "secrets": dict(self.secrets),
            "outputDir": str(self._output),
        }

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Fill the page's form with the call's strings, submit it, read the page."""
        assert self._client is not None
        assert self._page is not None
        if not isinstance(arguments, dict):
            return Outcome("the page's form takes an object of members", True, True)
        leaves = list(_leaves(arguments, ""))
        number = self._page.open(self.tools[tool], arguments, [path for path, _ in leaves])
        self._client.call("browser_navigate", {"url": self._page.url(f"call/{number}")})
        texts: list[str] = []
        failed = False
        steps: list[tuple[str, dict[str, Any]]] = []
        if leaves:
            fields = [
                {"name": path or "value", "type": "textbox", "target": f"#f{i}", "value": text}
                for i, (path, text) in enumerate(leaves)
            ]
            steps.append(("browser_fill_form", {"fields": fields}))
        steps.append(("browser_click", {"element": "Run", "target": "#run"}))
        for name, params in steps:
            text, error = self._client.call(name, params)
            texts.append(text)
            failed = failed or error
            if error:
                break
        if not failed:
            self._page.wait(number, self.execution_timeout + 5.0)
            for _ in range(5):
                text, error = self._client.call("browser_snapshot", {})
                texts.append(text)
                failed = failed or error
                if error or "Page Title: secref: " in text:
                    break
        self._forward()
        return Outcome("\n".join(texts), failed)

    def _forward(self) -> None:
        """Hand every debug record the server wrote since the last call to :data:`LOGGER`."""
        with self._stderr.open("rb") as log:
            log.seek(self._read)
            chunk = log.read()
        # Only whole records: the last one may still be written.
        end = chunk.rfind(b"\n") + 1
        self._read += end
        logger = logging.getLogger(LOGGER)
        logger.propagate = False  # captured once, on this logger, not again on the root's
        for record in _records(chunk[:end].decode("utf-8", "replace")):
            logger.debug("%s", record)

    def persisted(self) -> bytes:
        """Return every file the server wrote under its output directory, in path order."""
        if self._scratch is None:
            return b""
        root = self._output.parent
        files = sorted(p for p in root.rglob("*") if p.is_file())
        return b"\n".join(p.read_bytes() for p in files)

    def close(self) -> None:
        """Stop the server, its browser and the page."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._page is not None:
            self._page.close()
            self._page = None
        if self._scratch is not None:
            with contextlib.suppress(OSError):
                self._scratch.cleanup()
            self._scratch = None


def _leaves(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Yield the path and text of every string of ``node``, in document order; keys are not."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _leaves(item, f"{path}[{index}]")


def _refill(node: Any, texts: Iterator[str]) -> Any:
    """Return ``node`` with each string replaced, in document order, by the next of ``texts``."""
    if isinstance(node, str):
        return next(texts)
    if isinstance(node, dict):
        return {key: _refill(value, texts) for key, value in node.items()}
    if isinstance(node, list):
        return [_refill(item, texts) for item in node]
    return node


def _records(text: str) -> list[str]:
    """Split the server's standard error into records: each opens with a timestamp."""
    starts = [match.start() for match in _RECORD.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    pieces = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return [piece.rstrip("\n") for piece in pieces if piece.strip()]


#: The page of one call: a text area per string, a button, and the script that sends what each
#: text area was given. ``{fields}``, ``{number}`` are filled in; braces of the script doubled.
_FORM: Final = """<!doctype html>
<html><head><meta charset="utf-8"><title>secref form</title></head><body>
<form id="form">
{fields}<button id="run" type="submit">Run</button>
</form>
<script>
const areas = [...document.querySelectorAll("textarea")];
const given = areas.map(() => null);
areas.forEach((area, i) => area.addEventListener("beforeinput", (event) => {{
  if (event.inputType.startsWith("delete")) given[i] = "";
  else if (event.data !== null) given[i] = (given[i] ?? "") + event.data;
}}));
document.getElementById("form").addEventListener("submit", async (event) => {{
  event.preventDefault();
  const texts = areas.map((area, i) => given[i] ?? area.value);
  const answer = await fetch("/run/{number}", {{method: "POST", body: JSON.stringify(texts)}});
  const out = document.createElement("pre");
  out.id = "out";
  out.textContent = await answer.text();
  document.getElementById("form").replaceWith(out);
  document.title = "secref: " + (answer.ok ? "done" : "failed");
}});
</script>
</body></html>
"""


class _Page:
    """The page under test, served on 127.0.0.1; each call a form of its own."""

    def __init__(self, framework: PlaywrightMcp) -> None:
        self._framework = framework
        self._calls: dict[int, tuple[Any, Any, list[str], threading.Event]] = {}
        self._lock = threading.Lock()
        page = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Nothing: the page's requests are no surface of the framework."""

            def do_GET(self) -> None:
                status, body = page.get(self.path)
                self._answer(status, body, "text/html")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                status, body = page.post(self.path, self.rfile.read(length))
                self._answer(status, body, "text/plain")

            def _answer(self, status: int, body: str, kind: str) -> None:
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", f"{kind}; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        """Return the address of one of the page's paths."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/{path}"

    def open(self, tool: Any, arguments: Any, paths: list[str]) -> int:
        """Make the form of one call; return its number."""
        with self._lock:
            number = len(self._calls)
            self._calls[number] = (tool, arguments, paths, threading.Event())
        return number

    def wait(self, number: int, seconds: float) -> None:
        """Wait until the call's handler has answered, at most ``seconds``."""
        self._calls[number][3].wait(seconds)

    def get(self, path: str) -> tuple[int, str]:
        """The page of one call, or the page the browser starts on."""
        match = re.fullmatch(r"/call/(\d+)", path)
        if match is None or int(match.group(1)) not in self._calls:
            return 200, "<!doctype html><html><head><title>ready</title></head></html>"
        _, _, paths, _ = self._calls[int(match.group(1))]
        fields = "".join(
            f'<label for="f{i}">{html.escape(p or "value")}</label>'
            f'<textarea id="f{i}"></textarea>\n'
            for i, p in enumerate(paths)
        )
        return 200, _FORM.format(fields=fields, number=match.group(1))

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        """Run the call's handler on what the form sent; answer with its text."""
        match = re.fullmatch(r"/run/(\d+)", path)
        if match is None or int(match.group(1)) not in self._calls:
            return 404, "no such call"
        tool, arguments, _, done = self._calls[int(match.group(1))]
        try:
            texts = json.loads(body.decode("utf-8", "surrogatepass"))
            received = _refill(arguments, iter(texts))
            return 200, self._framework.handlers.run(tool, received)
        except HandlerFailed as error:
            return 500, str(error)
        except (ValueError, StopIteration) as error:
            return 400, f"the form sent something else ({type(error).__name__})"
        finally:
            done.set()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


class _Client:
    """One session of the ``mcp`` SDK's stdio client with the server, on a thread of its own."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, stderr: Path) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._ready: Future[Any] = Future()
        self._stop = asyncio.Event()
        self._errlog = stderr.open("w", encoding="utf-8")
        self._held = asyncio.run_coroutine_threadsafe(
            self._hold(argv, {**os.environ, **env}, cwd), self._loop
        )
        self._session = self._ready.result(timeout=CALL_TIMEOUT_S)

    async def _hold(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._stop = asyncio.Event()
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
        try:
            async with (
                stdio_client(params, errlog=self._errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            raise

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Call one tool; return its text and whether it is an error result."""
        pending = asyncio.run_coroutine_threadsafe(
            self._session.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT_S),
            self._loop,
        )
        result = pending.result(timeout=CALL_TIMEOUT_S + 5.0)
        texts = [str(getattr(block, "text", "")) for block in getattr(result, "content", [])]
        return "\n".join(texts), bool(getattr(result, "is_error", False))

    def close(self) -> None:
        """End the session, which ends the server and its browser."""
        with contextlib.suppress(Exception):
            self._loop.call_soon_threadsafe(self._stop.set)
            self._held.result(timeout=30.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5.0)
        self._errlog.close()


#: The instances whose server runs: one at a time, each ``configure`` starting anew.
_LIVE: list[PlaywrightMcp] = []


def _close_live() -> None:
    while _LIVE:
        _LIVE.pop().close()


atexit.register(_close_live)


def _version() -> str:
    package = PREFIX / "node_modules" / "@playwright" / "mcp" / "package.json"
    try:
        return str(json.loads(package.read_text("utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return "not installed"


#: The mutant's preload script: ``redactSecrets`` returns its text unchanged. It refuses to
#: start when the bundle has no such step, so that the mutant is never the release unchanged.
_NO_REDACT: Final = (
    """
const Module = require("module");
const compile = Module.prototype._compile;
Module.prototype._compile = function (content, filename) {
  if (filename.endsWith("coreBundle.js")) {
    const masking = /"""
    + _MASKING
    + """/;
    if (!masking.test(content)) throw new Error("the masking step was not found");
    content = content.replace(masking, (found, text) => found + " return " + text + ";");
  }
  return compile.call(this, content, filename);
};
"""
)


if __name__ == "__main__":
    if MUTANT:
        PlaywrightMcp.name += " (mutant: no-redact)"
    raise SystemExit(main(PlaywrightMcp))
