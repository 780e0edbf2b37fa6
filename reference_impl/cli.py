"""The ``secref`` command: the governed path of the reference host, from a terminal.

This module owns the command line. ``secref invoke <tool> --args '<json>'`` runs one call
through a small host configured from a vault file and a policy file, with a few demo tools, and
asks the operator in the terminal (design, "Operating it"). ``secref list`` prints the vault's
ids as ``id<TAB>website<TAB>username``. Bad flags, an unreadable or invalid file and bad JSON
end with one line on stderr and exit code 2, never a traceback.

It must never print a value: results reach stdout only after the registry has scrubbed and
capped them, prompts show sanitized arguments and descriptors, and an error about a file names
the entry and the field, never its text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from reference_impl._arguments import ToolArguments
from reference_impl._execute import Tool
from reference_impl._files import InputFileError, parse_json, read_input_file, unknown_member
from reference_impl._ledger import JsonlLedger, Ledger, MemoryLedger
from reference_impl._limits import APPROVAL_TIMEOUT_SECONDS
from reference_impl._operator import Operator
from reference_impl._policy import Policy, PolicyError, parse_policy
from reference_impl._registry import Registry
from reference_impl._types import (
    SECRET_READ,
    Answer,
    ApprovalRequest,
    Risk,
    SecretRecord,
    SecretValue,
    ToolResult,
    User,
)
from reference_impl._vault import InMemoryVault
from reference_impl._version import version_text

#: Exit codes: the call ran and succeeded; it was refused or its tool failed; the command line,
#: a file or the arguments were unusable.
EXIT_OK: Final = 0
EXIT_CALL_FAILED: Final = 1
EXIT_USAGE: Final = 2
#: The call's ledger record could not be written (decisions R6.7): never a silent success.
EXIT_LEDGER_FAILED: Final = 3

_UUID_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_NOTE_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
_SECRET_FIELDS: Final = frozenset({"id", "website", "username", "password", "notes", "tags"})

#: What the operator may type, and what each means.
ANSWERS: Final = {
    "approve": Answer.APPROVE,
    "a": Answer.APPROVE,
    "y": Answer.APPROVE,
    "yes": Answer.APPROVE,
    "deny": Answer.DENY,
    "d": Answer.DENY,
    "n": Answer.DENY,
    "no": Answer.DENY,
    "": Answer.DENY,
    "always": Answer.ALWAYS_ALLOW,
    "provider": Answer.TRUST_PROVIDER,
    "session": Answer.TRUST_SESSION,
}


class UsageError(Exception):
    """The command cannot run; the message is one line and quotes no file content."""


# --- terminal output ---------------------------------------------------------------------------


def printable(text: str) -> str:
    """Escape characters that could move the cursor or rewrite the terminal.

    Argument text comes from the agent: an escape sequence in it must not be able to redraw the
    prompt the operator reads.
    """
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


class TerminalOperator:
    """Asks the operator in the terminal: shows the request, reads one answer with a timeout.

    Answers are read only from a terminal. When the input is not a TTY (a pipe, a file,
    ``/dev/null``) every request is denied, so a script cannot approve by piping "approve"; the
    end of input denies too. A request left unanswered past the timeout ends as TIMEOUT.

    Args:
        stdin: Where answers come from.
        stdout: Where the prompt is written (the CLI uses stderr, keeping stdout for results).
    """

    def __init__(self, stdin: IO[str] | None, stdout: IO[str]) -> None:
        self._in = stdin
        self._out = stdout
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    def _say(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def _start_reader(self, stream: IO[str]) -> None:
        # One reader for the operator's life: a line typed after a timeout is not lost to a
        # thread that nobody waits for any more.
        with self._lock:
            if self._reader is not None:
                return

            def read() -> None:
                try:
                    while line := stream.readline():
                        self._lines.put(line)
                except (OSError, ValueError):
                    pass
                self._lines.put("")  # end of input

            self._reader = threading.Thread(target=read, name="operator-input", daemon=True)
            self._reader.start()

    def show(self, request: ApprovalRequest, timeout: float) -> None:
        """Write the request as the operator sees it."""
        lines = [
            "",
            "secref: approval requested",
            f"  tool:      {printable(request.tool_name)}"
            f" (provider {printable(request.provider_id)})",
            f"  risk:      {request.risk.name}",
        ]
        if request.descriptors:
            for descriptor in request.descriptors:
                lines.append(f"  secret:    {printable(descriptor)}")
        else:
            lines.append("  secrets:   none")
        lines.append(f"  arguments: {printable(request.arguments)}")
        lines.append(
            f"Answer approve, deny, always, provider or session "
            f"(Enter denies; times out in {timeout:g} s): "
        )
        self._say("\n".join(lines))

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """Show ``request`` and return the operator's answer."""
        self.show(request, timeout)
        stream = self._in
        if stream is None or not _isatty(stream):
            self._say("\nsecref: no terminal to answer from; the call is denied\n")
            return Answer.DENY
        self._start_reader(stream)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(0.0, remaining))
            except queue.Empty:
                self._say("\nsecref: no answer in time\n")
                return Answer.TIMEOUT
            if not line:
                self._say("\nsecref: end of input; the call is denied\n")
                return Answer.DENY
            answer = ANSWERS.get(line.strip().lower())
            if answer is not None:
                return answer
            self._say("Please answer approve, deny, always, provider or session: ")


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


# --- files -------------------------------------------------------------------------------------


def _read(path: str, what: str) -> str:
    # A regular file of at most 16 MiB only: a FIFO or /dev/zero is refused, not waited on or
    # read until memory runs out (decisions R7.3).
    try:
        return read_input_file(path, f"{what} {path}")
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None
    except InputFileError as error:
        raise UsageError(str(error)) from None


def _json(text: str, what: str) -> Any:
    def refuse_constant(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{what} is not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        ) from None
    except (ValueError, RecursionError):
        raise UsageError(f"{what} is not valid JSON") from None


def parse_vault(text: str, what: str = "the vault file") -> list[SecretRecord]:
    """Read vault file text: ``{"secrets": [{"id", "website", "username", "password", "notes",
    "tags"}, ...]}``.

    Args:
        text: The file's content.
        what: How errors name the file.

    Returns:
        The records, in file order.

    Raises:
        UsageError: The text is not a valid vault file. The message names the entry and the
            field, never a value.
    """
    try:
        # A member written twice is refused: which of the two is the value is ambiguous.
        data = parse_json(text, what)
    except InputFileError as error:
        raise UsageError(str(error)) from None
    if (
        not isinstance(data, dict)
        or set(data) != {"secrets"}
        or not isinstance(data["secrets"], list)
    ):
        raise UsageError(f'{what} must be an object with one member, "secrets", a list')
    records: list[SecretRecord] = []
    seen: set[str] = set()
    for number, entry in enumerate(data["secrets"], start=1):
        where = f"{what}: secret {number}"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} is not an object")
        unknown = sorted(set(entry) - _SECRET_FIELDS)
        if unknown:
            # A long or unprintable name could be a value written in the wrong place: it is
            # quoted only when short printable ASCII (decisions R7.3).
            raise UsageError(f"{where} has {unknown_member(unknown[0])}")
        for name in ("id", "website"):
            if not isinstance(entry.get(name), str):
                raise UsageError(f"{where}: {name} is required and must be a string")
        for name in ("username", "password", "notes"):
            if not isinstance(entry.get(name, ""), str):
                raise UsageError(f"{where}: {name} must be a string")
        tags = entry.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise UsageError(f"{where}: tags must be a list of strings")
        secret_id = entry["id"]
        if _UUID_RE.fullmatch(secret_id) is None:
            raise UsageError(f"{where}: id is not a UUID")
        if secret_id.lower() in seen:
            raise UsageError(f"{where}: id is used twice")
        seen.add(secret_id.lower())
        records.append(
            SecretRecord(
                id=secret_id,
                website=entry["website"],
                username=SecretValue(entry.get("username", "")),
                password=SecretValue(entry.get("password", "")),
                notes=SecretValue(entry.get("notes", "")),
                tags=tuple(tags),
            )
        )
    return records


def load_vault_file(path: str) -> InMemoryVault:
    """Read a vault file into an in-memory vault; raise :class:`UsageError` when invalid."""
    what = f"vault file {path}"
    return InMemoryVault(parse_vault(_read(path, "vault file"), what))


def load_policy_file(path: str) -> Policy:
    """Read a policy file; raise :class:`UsageError` when it cannot be read or is invalid.

    A host that keeps running fails closed on an invalid file (every tool DENY). A one-shot
    command fails closed more simply: it refuses to start, so nothing runs.
    """
    text = _read(path, "policy file")
    try:
        return parse_policy(text)
    except PolicyError as error:
        raise UsageError(f"policy file {path} is invalid: {error}") from None


# --- demo tools --------------------------------------------------------------------------------


def _echo(arguments: ToolArguments) -> str:
    return arguments.raw


def _sha256(arguments: ToolArguments) -> ToolResult:
    text = arguments.string("text")
    if text is None:
        return ToolResult('sha256 needs a string argument "text"', is_error=True)
    return ToolResult(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


def _write_note(notes_dir: Path | None) -> Tool:
    def write_note(arguments: ToolArguments) -> ToolResult:
        if notes_dir is None:
            return ToolResult(
                "write_note is not configured: start secref with --notes-dir DIR", is_error=True
            )
        name = arguments.string("name")
        content = arguments.string("content")
        if name is None or _NOTE_NAME_RE.fullmatch(name) is None:
            # The name is not quoted back: it may have come from a reference.
            return ToolResult(
                "the note name must be 1 to 64 letters, digits, '.', '_' or '-', "
                "not starting with '.'",
                is_error=True,
            )
        if content is None:
            return ToolResult('write_note needs a string argument "content"', is_error=True)
        target = notes_dir / name
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(content)
        return ToolResult(f"wrote {len(content)} characters to {name}")

    return Tool("write_note", "notes", write_note, risk=Risk.HIGH, permission="notes.write")


#: The most ``write_file`` writes in one call: a generous bound for a config or key file.
WRITE_FILE_MAX_CHARS: Final = 1_000_000


def sandbox_tool(sandbox: Path | None) -> Tool:
    """Return ``write_file``: writes ``content`` to the relative ``path`` inside ``sandbox``.

    Args:
        sandbox: The only directory the tool writes under; ``None`` leaves it unconfigured.

    Returns:
        The tool (provider ``files``, HIGH risk). It refuses an absolute path, ``..`` and any
        path that resolves (symbolic links followed) outside the sandbox, and never quotes the
        path or the content back: either may have come from a reference.
    """

    def write_file(arguments: ToolArguments) -> ToolResult:
        if sandbox is None:
            return ToolResult(
                "write_file is not configured: start secref serve with --sandbox DIR",
                is_error=True,
            )
        relative = arguments.string("path")
        content = arguments.string("content")
        if relative is None or content is None:
            return ToolResult(
                'write_file needs string arguments "path" and "content"', is_error=True
            )
        if len(content) > WRITE_FILE_MAX_CHARS:
            return ToolResult(
                f"write_file writes at most {WRITE_FILE_MAX_CHARS} characters", is_error=True
            )
        root = sandbox.resolve()
        candidate = Path(relative)
        target = (root / candidate).resolve()
        if (
            not relative
            or candidate.is_absolute()
            or ".." in candidate.parts
            or not target.is_relative_to(root)
            or target == root
        ):
            return ToolResult("write_file refuses a path outside the sandbox", is_error=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(content)
        return ToolResult(f"wrote {len(content)} characters inside the sandbox")

    return Tool("write_file", "files", write_file, risk=Risk.HIGH)


def demo_tools(notes_dir: Path | None = None) -> list[Tool]:
    """Return the CLI's tools: ``echo``, ``sha256`` and ``write_note``."""
    return [
        Tool("echo", "demo", _echo, risk=Risk.LOW),
        Tool("sha256", "demo", _sha256, risk=Risk.LOW),
        _write_note(notes_dir),
    ]


# --- the command line ----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2, through ``main``."""

    def error(self, message: str) -> Any:  # argparse's signature is NoReturn
        raise UsageError(message)


_DESCRIPTION = """\
Run calls through the reference host's governed path: the agent writes {{secret:<uuid>}}
(or {{secret:<uuid>.username}}, {{secret:<uuid>.notes}}) where a value would go, and the host
resolves it after you approve, scrubs it out of the result and records only the reference."""

_MAIN_EPILOG = """\
Run "secref COMMAND --help" for a command's options. Get a secret's id from "secref list",
then write it into a call:

  secref list --vault vault.json
  secref invoke sha256 --vault vault.json --policy policy.json --permission secret.read \\
      --args '{"text": "{{secret:<id>}}"}'

The vault and policy file formats are in docs/reference-host.md."""

_INVOKE_EPILOG = """\
tools:
  echo        returns its arguments as it received them (shows scrubbing at work)
  sha256      returns the SHA-256 of the string argument "text"
  write_note  writes "content" to the file "name" in --notes-dir (needs notes.write)

The prompt is written to stderr and read from the terminal; Enter, end of input, or input
that is not a terminal denies. The result goes to stdout. Exit status: 0 when the tool ran
and succeeded, 1 when the call was refused or the tool failed, 2 for a usage error, 3 when
the call's ledger record could not be written.

example:
  secref invoke echo --vault vault.json --policy policy.json --permission secret.read \\
      --args '{"header": "Authorization: Bearer {{secret:6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5}}"}'

File formats: docs/reference-host.md."""


_SERVE_EPILOG = """\
tools:
  echo        returns its arguments as it received them (shows scrubbing at work)
  sha256      returns the SHA-256 of the string argument "text"
  write_file  writes "content" to the relative "path" inside --sandbox

example (an MCP client's configuration starts this over stdio):
  secref serve --vault vault.json --policy policy.json --ledger ledger.jsonl --sandbox out/

See docs/mcp.md."""


def build_parser() -> argparse.ArgumentParser:
    """Return the ``secref`` argument parser."""
    parser = _Parser(
        prog="secref",
        description=_DESCRIPTION,
        epilog=_MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=version_text("secref"),
        help="print the program's name and version, then exit",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    invoke = commands.add_parser(
        "invoke",
        help="run one tool call through the governed path",
        description="Run one tool call through the governed path and print its result.",
        epilog=_INVOKE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    invoke.add_argument("tool", help="the tool to call: echo, sha256 or write_note")
    invoke.add_argument(
        "--args",
        dest="arguments",
        required=True,
        metavar="JSON",
        help="the call's arguments, a JSON object, references written in place",
    )
    invoke.add_argument(
        "--vault", required=True, metavar="FILE", help="the vault file (JSON) to resolve from"
    )
    invoke.add_argument(
        "--policy", required=True, metavar="FILE", help="the host policy file (JSON)"
    )
    invoke.add_argument(
        "--ledger",
        metavar="FILE",
        help="append the call's record to this JSON Lines ledger (created 0600)",
    )
    invoke.add_argument(
        "--user-admin",
        action="store_true",
        help="act as an admin, who holds every permission",
    )
    invoke.add_argument(
        "--permission",
        action="append",
        default=[],
        metavar="P",
        help="grant the user a permission, e.g. secret.read or notes.write (repeatable); "
        "without secret.read or --user-admin, references are refused",
    )
    invoke.add_argument(
        "--approval-timeout",
        type=float,
        default=APPROVAL_TIMEOUT_SECONDS,
        metavar="S",
        help=f"seconds to wait for your answer (default {APPROVAL_TIMEOUT_SECONDS:g})",
    )
    invoke.add_argument("--notes-dir", metavar="DIR", help="where write_note writes its files")
    invoke.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print the host log, debug included, to stderr (it never holds a value)",
    )

    serve = commands.add_parser(
        "serve",
        help="serve echo, sha256 and write_file as governed MCP tools",
        description="Serve the governed tools over MCP: stdio by default, or Streamable HTTP "
        "on a loopback address with --http. Approval is asked through MCP elicitation when "
        "the client declares it; otherwise a call that needs approval is denied at once, "
        "unless --operator tty is given and a terminal exists. Needs secref-suite[mcp].",
        epilog=_SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--vault", required=True, metavar="FILE", help="the vault file (JSON)")
    serve.add_argument("--policy", required=True, metavar="FILE", help="the policy file (JSON)")
    serve.add_argument("--ledger", metavar="FILE", help="the JSON Lines ledger (created 0600)")
    serve.add_argument("--sandbox", metavar="DIR", help="the directory write_file writes in")
    serve.add_argument(
        "--http",
        metavar="127.0.0.1:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp; loopback hosts only",
    )
    serve.add_argument(
        "--operator",
        choices=("none", "tty"),
        default="none",
        help="who answers when the client cannot elicit: none (deny at once, the default) "
        "or tty (ask on the controlling terminal, when there is one)",
    )
    serve.add_argument(
        "--approval-timeout",
        type=float,
        default=APPROVAL_TIMEOUT_SECONDS,
        metavar="S",
        help=f"seconds to wait for an answer (default {APPROVAL_TIMEOUT_SECONDS:g})",
    )

    listing = commands.add_parser(
        "list",
        help="print the vault's secrets as id<TAB>website<TAB>username",
        description="Print one id<TAB>website<TAB>username line per secret, in file order.",
    )
    listing.add_argument("--vault", required=True, metavar="FILE", help="the vault file (JSON)")
    return parser


def _directory(path: str | None, flag: str) -> Path | None:
    if path is None:
        return None
    if not Path(path).is_dir():
        raise UsageError(f"{flag} {path} is not a directory")
    return Path(path)


def _invoke(
    options: argparse.Namespace, stdin: IO[str] | None, stdout: IO[str], stderr: IO[str]
) -> int:
    if not options.approval_timeout > 0:
        raise UsageError("--approval-timeout must be a positive number of seconds")
    arguments = _json(options.arguments, "--args")
    if not isinstance(arguments, dict):
        raise UsageError("--args must be a JSON object")
    vault = load_vault_file(options.vault)
    policy = load_policy_file(options.policy)
    notes_dir = _directory(options.notes_dir, "--notes-dir")
    ledger: Ledger = MemoryLedger()
    if options.ledger is not None:
        _directory(str(Path(options.ledger).parent), "the directory of --ledger")
        file_ledger = JsonlLedger(options.ledger)
        try:
            # Opened now, so a symbolic link, a directory, a FIFO or a device there is refused
            # before any call runs (decisions R6.7).
            file_ledger.open()
        except OSError as error:
            raise UsageError(f"--ledger: {error}") from None
        ledger = file_ledger
    logger = logging.getLogger("reference_impl.cli")
    if options.verbose:
        # A logger of this run's own, so repeated runs in one process never stack handlers.
        logger = logging.Logger("secref", logging.DEBUG)
        handler = logging.StreamHandler(stderr)
        handler.setFormatter(logging.Formatter("secref: %(levelname)s %(message)s"))
        logger.addHandler(handler)
    registry = Registry(
        policy=policy,
        vault=vault,
        operator=TerminalOperator(stdin, stderr),
        ledger=ledger,
        user=User(
            name=os.environ.get("USER", "operator"),
            is_admin=options.user_admin,
            permissions=frozenset(options.permission),
        ),
        approval_timeout=options.approval_timeout,
        logger=logger,
    )
    for tool in demo_tools(notes_dir):
        registry.register(tool)
    if options.tool not in {tool.name for tool in registry.tools()}:
        raise UsageError(f"unknown tool {options.tool!r}; the tools are echo, sha256, write_note")
    # The arguments go to the host exactly as written, not re-encoded.
    outcome = registry.invoke(options.tool, options.arguments)
    stdout.write(outcome.text + "\n")
    stdout.flush()
    stderr.write(f"secref: {outcome.disposition.value}\n")
    if outcome.ledger_error is not None:
        stderr.write(f"secref: error: the call was not recorded: {outcome.ledger_error}\n")
        return EXIT_LEDGER_FAILED
    return EXIT_CALL_FAILED if outcome.is_error else EXIT_OK


def _tty_operator() -> Operator | None:
    """Return a terminal operator on the controlling terminal, or ``None`` when there is none.

    The terminal is opened twice, once to read and once to write: a text stream opened ``"r+"``
    needs a seekable file, and a terminal is not one, so that open always failed.
    """
    try:
        answers = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - lives with the server
    except OSError:
        return None
    try:
        prompts = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - lives with the server
    except OSError:
        answers.close()
        return None
    return TerminalOperator(answers, prompts)


def _serve(options: argparse.Namespace, stderr: IO[str]) -> int:
    if not options.approval_timeout > 0:
        raise UsageError("--approval-timeout must be a positive number of seconds")
    try:
        from reference_impl import mcp_server
    except ImportError:
        raise UsageError(
            "secref serve needs the MCP SDK: pip install 'secref-suite[mcp]'"
        ) from None
    address = None
    if options.http is not None:
        try:
            address = mcp_server.parse_loopback(options.http)
        except mcp_server.NotLoopbackError as error:
            raise UsageError(str(error)) from None
    vault = load_vault_file(options.vault)
    policy = load_policy_file(options.policy)
    sandbox = _directory(options.sandbox, "--sandbox")
    ledger: Ledger = MemoryLedger()
    if options.ledger is not None:
        _directory(str(Path(options.ledger).parent), "the directory of --ledger")
        ledger = JsonlLedger(options.ledger)
    fallback = None
    if options.operator == "tty":
        terminal = _tty_operator()
        if terminal is None:
            raise UsageError("--operator tty needs a terminal, and there is none")
        fallback = terminal.ask
    operator = mcp_server.ThreadOperator()
    registry = Registry(
        policy=policy,
        vault=vault,
        operator=operator,
        ledger=ledger,
        user=User(name=os.environ.get("USER", "operator"), permissions=frozenset({SECRET_READ})),
        approval_timeout=options.approval_timeout,
        logger=logging.getLogger("reference_impl.serve"),
    )
    tools = [*demo_tools(None)[:2], sandbox_tool(sandbox)]
    for tool in tools:
        registry.register(tool)
    server = mcp_server.build_server(
        mcp_server.RegistryBackend(registry, operator), mcp_server.Approval(fallback)
    )
    if address is None:
        mcp_server.serve_stdio(server)
        return EXIT_OK
    http = mcp_server.HttpServer(server, address[0], address[1])
    stderr.write(f"secref: serving MCP at {http.url}\n")
    stderr.flush()
    http.run_forever()
    return EXIT_OK


def _list(options: argparse.Namespace, stdout: IO[str]) -> int:
    for record in load_vault_file(options.vault).records():
        fields = (record.id, record.website, record.username.reveal())
        stdout.write("\t".join(printable(field) for field in fields) + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``secref``; return its exit code.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when omitted.

    Returns:
        0 on success, 1 when the call was refused or its tool failed, 2 for a usage error, 3
        when the call's ledger record could not be written.
    """
    stdout, stderr = sys.stdout, sys.stderr
    try:
        options = build_parser().parse_args(argv)
        if options.command == "list":
            return _list(options, stdout)
        if options.command == "serve":
            return _serve(options, stderr)
        return _invoke(options, sys.stdin, stdout, stderr)
    except UsageError as error:
        stderr.write(f"secref: error: {error} (see secref --help)\n")
        return EXIT_USAGE
    except SystemExit as exit_:  # --help and --version end here
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        stderr.write("secref: interrupted\n")
        return 130
    except Exception as error:  # never a traceback: it could quote anything
        stderr.write(f"secref: error: unexpected {type(error).__name__}\n")
        return EXIT_USAGE
