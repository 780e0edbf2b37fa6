"""A reference registry rigged for fuzzing: canary vault, echoing tools and every surface.

This module owns the host the pipeline property, the pipeline target and the differential
runner send calls to: a vault of canary secrets under the shared pool's ids, an ``echo`` tool
that returns its raw arguments and every scrubbed form of every string value, a ``recorder``
tool, a captured host log, and helpers that search every surface for any form of any value. A
leak is reported by reference name and length only; this module must never print a value.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from fuzz.oracles import own_form_encode, own_forms, own_json_escape
from fuzz.strategies import POOL_IDS
from reference_impl import (
    SECRET_READ,
    ArgumentsUnavailableError,
    Field,
    InMemoryVault,
    MemoryLedger,
    Policy,
    Reference,
    Registry,
    Rule,
    ScriptedOperator,
    SecretRecord,
    SecretValue,
    Tool,
    ToolArguments,
    User,
    encode_record,
)
from reference_impl.harness import RecordCapture

#: Canary values, all of 8 code points or more so every one must be scrubbed (decisions R5.1).
#: They differ in every form (space, quote, backslash, non-ASCII, plus sign) and never contain
#: a placeholder's brackets.
CANARIES: Final = {
    POOL_IDS[0]: ("canary user zero", 'Pw0 "quoted" c\\naryA', "notes zero + canary\u00e9"),
    POOL_IDS[1]: ("canaryuser-one", "pw one/with space Q7", "multi\nline notes canary"),
    POOL_IDS[2]: ("user two \u2603 canary", "P@ss+w0rd two canary", "n0tes-two-canary~*_"),
}


def canary_records() -> list[SecretRecord]:
    """Return the rig's vault entries."""
    return [
        SecretRecord(
            id=secret_id,
            website=f"site{index}.example",
            username=SecretValue(user),
            password=SecretValue(password),
            notes=SecretValue(notes),
        )
        for index, (secret_id, (user, password, notes)) in enumerate(CANARIES.items())
    ]


def canary_values() -> list[tuple[Reference, str]]:
    """Return every (reference, value) the vault could resolve."""
    pairs = []
    for secret_id, (user, password, notes) in CANARIES.items():
        pairs.append((Reference(secret_id, Field.USERNAME), user))
        pairs.append((Reference(secret_id, Field.PASSWORD), password))
        pairs.append((Reference(secret_id, Field.NOTES), notes))
    return pairs


def _strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def echo_text(arguments: ToolArguments) -> str:
    """Return the raw arguments, then forms a to d of every string value, one a line."""
    lines = [arguments.raw]
    try:
        view: object = arguments.view()
    except ArgumentsUnavailableError:
        return arguments.raw
    for text in _strings(view):
        form_c = own_form_encode(text)
        lines.extend([text, own_json_escape(text), form_c, form_c.replace("+", "%20")])
    return "\n".join(lines)


@dataclass
class Rig:
    """One reference registry and what each of its surfaces holds since :meth:`clear`."""

    registry: Registry
    operator: ScriptedOperator
    ledger: MemoryLedger
    vault: InMemoryVault
    capture: RecordCapture
    receipts: list[str] = field(default_factory=list)

    def clear(self) -> None:
        """Forget every surface's contents; the registry keeps its rules."""
        self.receipts.clear()
        self.operator.requests.clear()
        self.ledger.records.clear()
        self.vault.reads.clear()
        self.capture.clear()

    def leaks(self, result_text: str) -> list[str]:
        """Return one line per (surface, reference) where a form of a value appears.

        The username shown in an approval descriptor is metadata by design (decisions R3.2)
        and is the one exception.
        """
        found: list[str] = []
        ledger = b"".join(encode_record(record) for record in self.ledger.records)
        ledger_text = ledger.decode("ascii")
        ledger_strings = "\n".join(
            str(value) for record in self.ledger.records for value in record.to_json_dict().values()
        )
        requests = [
            (request.arguments + "\n" + "\n".join(request.secret_refs), request.descriptors)
            for request in self.operator.requests
        ]
        surfaces = {
            "result": result_text,
            "ledger bytes": ledger_text,
            "ledger fields": ledger_strings,
            "log": "\n".join(record["message"] for record in self.capture.take()),
        }
        for reference, value in canary_values():
            for form in own_forms(value):
                found.extend(
                    f"{surface}: {reference.name} ({len(value)} code points)"
                    for surface, text in surfaces.items()
                    if form in text
                )
                for body, descriptors in requests:
                    shown = body + (
                        "" if reference.field is Field.USERNAME else "\n".join(descriptors)
                    )
                    if form in shown:
                        found.append(
                            f"approval request: {reference.name} ({len(value)} code points)"
                        )
        return sorted(set(found))


def build_rig(policy: Policy | None = None, scrubbing: bool = True) -> Rig:
    """Build a registry over the canary vault with ``echo`` and ``recorder`` tools.

    Args:
        policy: The policy; by default ALLOW for calls without references and ASK (always a
            prompt) for calls with them.
        scrubbing: Whether result scrubbing is on.

    Returns:
        The rig. The operator approves every prompt.
    """
    if policy is None:
        policy = Policy(default_rule=Rule.ALLOW, result_scrubbing_enabled=scrubbing)
    vault = InMemoryVault(canary_records())
    operator = ScriptedOperator()
    ledger = MemoryLedger()
    logger = logging.getLogger(f"fuzz.rig.{id(vault)}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    capture = RecordCapture()
    logger.addHandler(capture)
    registry = Registry(
        policy=policy,
        vault=vault,
        operator=operator,
        ledger=ledger,
        logger=logger,
        user=User(permissions=frozenset({SECRET_READ})),
    )
    rig = Rig(registry, operator, ledger, vault, capture)

    def echo(arguments: ToolArguments) -> str:
        rig.receipts.append(arguments.raw)
        return echo_text(arguments)

    def recorder(arguments: ToolArguments) -> str:
        rig.receipts.append(arguments.raw)
        return "ok"

    registry.register(Tool("echo", "fuzz", echo))
    registry.register(Tool("recorder", "fuzz", recorder))
    return rig


def decoded(raw: str) -> object:
    """Return ``json.loads(raw)``, or ``None`` when it cannot be read."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
