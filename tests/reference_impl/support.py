"""Shared data and helpers for the reference host's unit tests.

This module owns the canary secrets, the standard handlers (echo, SHA-256, thrower, recorder)
and the leak checks. A leak check reports which surface and which form leaked, by label only:
it must never put a canary's text into an assertion message or a test id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_impl import (
    SECRET_READ,
    ApprovalRequest,
    CallOutcome,
    InMemoryVault,
    Ledger,
    LedgerRecord,
    MemoryLedger,
    Operator,
    Policy,
    Registry,
    Risk,
    ScriptedOperator,
    SecretRecord,
    SecretValue,
    Tool,
    ToolArguments,
    ToolResult,
    User,
    forms,
)

ID_A = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
ID_B = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
ID_AI = "11111111-2222-4333-8444-555555555555"
ID_EMPTY = "99999999-8888-4777-8666-555555555555"
ID_MISSING = "deadbeef-dead-4eef-8eef-deadbeefdead"
ID_MISSING_2 = "cafebabe-cafe-4abe-8abe-cafebabecafe"

# Canaries: every one has a space (forms c and d differ), a quote or a backslash or a control
# character (form b differs), non-ASCII text (form c percent-encodes it) and at least 8 code points.
PASSWORD_A = 'Kq7 "vault" p\\ss/\u00e9\u03bb\x01-A9z'
USERNAME_A = "alice canary\u00fc@example.org"
NOTES_A = "line one\tcanary\nline \u4e2d two"
PASSWORD_B = "Zt9 second canary \u00df&=+%"
USERNAME_B = "bob.canary-user"
SHORT_PASSWORD = "s3cr3t!"  # 7 code points: never scrubbed (decisions R5.1)

VALUES: dict[str, str] = {
    "password A": PASSWORD_A,
    "username A": USERNAME_A,
    "notes A": NOTES_A,
    "password B": PASSWORD_B,
}


def record(
    secret_id: str,
    website: str,
    username: str,
    password: str,
    notes: str = "",
    tags: tuple[str, ...] = (),
) -> SecretRecord:
    """Return a vault record with its text fields wrapped."""
    return SecretRecord(
        secret_id,
        website,
        SecretValue(username),
        SecretValue(password),
        SecretValue(notes),
        tags,
    )


def standard_records() -> list[SecretRecord]:
    """Return the vault used by most tests."""
    return [
        record(ID_A, "example.com", USERNAME_A, PASSWORD_A, NOTES_A),
        record(ID_B, "second.example", USERNAME_B, PASSWORD_B),
        record(
            ID_AI, "ai.example", "ai-user-name", "sk-ai-provider-key-0001", tags=("ai-provider",)
        ),
        record(ID_EMPTY, "empty.example", "empty-user", ""),
    ]


def ref(secret_id: str, field_name: str | None = None) -> str:
    """Return reference text for ``secret_id`` and an optional field."""
    suffix = f".{field_name}" if field_name else ""
    return "{{secret:" + secret_id + suffix + "}}"


def args(**members: object) -> str:
    """Return compact JSON object text for ``members``."""
    return json.dumps(members, ensure_ascii=False)


def strings_in(value: object) -> Iterator[str]:
    """Yield every string (keys included) of a decoded JSON value, depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield key
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def value_strings(arguments: ToolArguments) -> list[str]:
    """Return the string values of a handler's arguments, or ``[]`` when not a JSON object."""
    try:
        json.loads(arguments.raw)
    except ValueError:
        return []
    return list(strings_in(json.loads(arguments.raw)))


def echo_handler(arguments: ToolArguments) -> str:
    """The design's echo handler: the raw arguments, then every form of every string value."""
    lines = [arguments.raw]
    for text in value_strings(arguments):
        lines.append(text)
        lines.extend(forms(text))
    return "\n".join(lines)


def sha256_handler(arguments: ToolArguments) -> str:
    """The design's SHA-256 handler: the hex digest of each string value, one a line."""
    return "\n".join(
        hashlib.sha256(text.encode("utf-8")).hexdigest() for text in value_strings(arguments)
    )


def thrower_handler(arguments: ToolArguments) -> str:
    """Raise with every string value in the exception text."""
    raise RuntimeError("could not use " + " | ".join(value_strings(arguments)))


@dataclass(repr=False)
class Recorder:
    """A handler that keeps the raw arguments and per-key view of every call."""

    raws: list[str] = field(default_factory=list)
    views: list[dict[str, object]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __repr__(self) -> str:
        # What it received holds values: a failing assertion must not print them.
        return f"Recorder(<{len(self.raws)} calls>)"

    def __call__(self, arguments: ToolArguments) -> ToolResult:
        with self.lock:
            self.raws.append(arguments.raw)
            with contextlib.suppress(ValueError):
                self.views.append(arguments.view())
        return ToolResult("ok")


@dataclass(repr=False)
class Host:
    """A registry with its ports, as the tests build it."""

    registry: Registry
    vault: InMemoryVault
    operator: ScriptedOperator
    ledger: Ledger
    recorder: Recorder

    def __repr__(self) -> str:
        return "Host(<registry>)"

    @property
    def records(self) -> list[LedgerRecord]:
        """The records of an in-memory ledger."""
        assert isinstance(self.ledger, MemoryLedger)
        return self.ledger.records

    def invoke(self, tool: str, raw: str) -> CallOutcome:
        """Run one call."""
        return self.registry.invoke(tool, raw)


SECRET_USER = User(name="dev", permissions=frozenset({SECRET_READ}))


def build(
    *,
    policy: Policy | None = None,
    operator: Operator | None = None,
    ledger: Ledger | None = None,
    user: User = SECRET_USER,
    records: Sequence[SecretRecord] | None = None,
    extra_tools: Iterable[Tool] = (),
    **options: Any,
) -> Host:
    """Return a registry with the standard vault and tools ``echo``, ``sha256``, ``thrower``,
    ``recorder`` (provider ``demo``) and ``other`` (provider ``elsewhere``)."""
    vault = InMemoryVault(standard_records() if records is None else records)
    scripted = ScriptedOperator()
    chosen_ledger: Ledger = ledger if ledger is not None else MemoryLedger()
    registry = Registry(
        policy=policy,
        vault=vault,
        operator=operator if operator is not None else scripted,
        ledger=chosen_ledger,
        user=user,
        **options,
    )
    recorder = Recorder()
    registry.register(Tool("echo", "demo", echo_handler))
    registry.register(Tool("sha256", "demo", sha256_handler))
    registry.register(Tool("thrower", "demo", thrower_handler))
    registry.register(Tool("recorder", "demo", recorder, risk=Risk.LOW))
    registry.register(Tool("other", "elsewhere", recorder))
    for tool in extra_tools:
        registry.register(tool)
    return Host(registry, vault, scripted, chosen_ledger, recorder)


def leak_forms(value: str) -> dict[str, str]:
    """Return every text that would reveal ``value``, labelled: forms a to d, and the
    ASCII-only JSON escape a ledger line would use."""
    labelled = dict(zip("abcd", forms(value), strict=False))
    labelled["ascii-json"] = json.dumps(value)[1:-1]
    return labelled


def leaks(surface: str, values: dict[str, str] | None = None) -> list[str]:
    """Return labels ``"<value label>/<form>"`` for every canary form found in ``surface``."""
    found = []
    for label, value in (VALUES if values is None else values).items():
        for form_label, form in leak_forms(value).items():
            if form in surface:
                found.append(f"{label}/{form_label}")
    return found


def request_text(request: ApprovalRequest, *, with_descriptors: bool = True) -> str:
    """Return every text field of an approval request, joined."""
    parts = [request.id, request.tool_name, request.provider_id, request.arguments]
    parts.extend(request.secret_refs)
    if with_descriptors:
        parts.extend(request.descriptors)
    return "\n".join(parts)


def ledger_file_leaks(data: bytes, values: dict[str, str] | None = None) -> list[str]:
    """Return leak labels for a ledger file: its bytes as written, every decoded string of
    every line, and the strings inside ``sanitizedArgs`` decoded once more."""
    text = data.decode("utf-8", "replace")
    found = leaks(text, values)
    for line in text.splitlines():
        try:
            decoded = json.loads(line)
        except ValueError:
            continue
        for string in strings_in(decoded):
            found.extend(leaks(string, values))
        inner = decoded.get("sanitizedArgs") if isinstance(decoded, dict) else None
        if isinstance(inner, str):
            try:
                nested = json.loads(inner)
            except ValueError:
                continue
            for string in strings_in(nested):
                found.extend(leaks(string, values))
    return sorted(set(found))
