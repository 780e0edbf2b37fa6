"""More legal variants of the reference host: alternatives and SHOULD departures the rulings
allow, each a difference another host may well have (decisions S1.12).

This module owns variants that each keep a legal difference another host may well have: an
elicitation form of titled choices, a form read by its decision whatever stands beside it, a
risk raised past HIGH, a JSON writer that escapes non-ASCII characters, a fractional
``durationMs``, a depth limit below 64 levels, and POLICY_DENIED for a lost ``secret.read``.
:mod:`conformance.selftest.variants` serves them with its own, and
``tests/conformance/test_variants.py`` holds each to passing every check of its requirements.
It also owns :data:`NARROWED`: adapters that differ from the reference driver on the wire alone
(a protocol writer that spells messages as a map-based JSON library does, one that writes each
message a few tenths of a second late) and a host that hands its handler the members sorted;
``tests/conformance/test_adapter_variants.py`` runs each through the checks its difference once
failed or left unchecked.
A variant may change only what its ruling leaves to the host; nothing here may print a value.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Variant, line_patch

_SERVER: Final = "reference_impl.mcp_server"
_REG: Final = "reference_impl._registry"
_GRAMMAR: Final = "reference_impl._grammar"
_DRIVER: Final = "reference_impl.driver"


def titled_choices(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Offer the elicitation form's answers as a titled single choice (a ``oneOf`` of ``const``
    and ``title``, the form the MCP schema gives for labelled options) in place of a bare
    ``enum``; the values, and how the host reads them, are the reference host's."""

    def elicitation_schema(request: Any) -> dict[str, Any]:
        schema = original(request)
        field = dict(schema["properties"]["decision"])
        options = field.pop("enum")
        field["oneOf"] = [
            {"const": option, "title": option.replace("_", " ").capitalize()} for option in options
        ]
        return {**schema, "properties": {**schema["properties"], "decision": field}}

    return elicitation_schema


def _nesting(raw: str) -> int:
    """Return how deep arrays and objects nest in JSON text ``raw``, strings skipped."""
    depth = deepest = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', raw):
        text = token.group()
        if text in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif text in "]}":
            depth -= 1
    return deepest


def depth_limited(limit: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Refuse marker-bearing arguments nested deeper than ``limit`` as SECRET_UNRESOLVED,
    unread: a host that stops parsing at that depth, failing closed (decisions R1.9)."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Disposition, Refusal

        @functools.wraps(original)
        def parse_arguments(raw: str) -> Any:
            if _nesting(raw) > limit:
                return Refusal(
                    Disposition.SECRET_UNRESOLVED,
                    f"Arguments nest deeper than {limit} levels; secret references in them "
                    "cannot be read",
                    "too-deep",
                    "GRAM-041",
                )
            return original(raw)

        return parse_arguments

    return transform


def _with_members(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with members the protocol does not name, which the suite ignores: one in the
    message, one in a result object, and the host's capabilities in reverse order."""
    message = {"x-trace": {"adapter": "map-writer"}, **message}
    result = message.get("result")
    if isinstance(result, dict):
        result = {**result, "x-elapsed-ms": 1}
        host = result.get("host")
        if isinstance(host, dict):
            result["host"] = {**host, "capabilities": host["capabilities"][::-1], "x-build": "1"}
        message["result"] = result
    return message


def map_writer(original: Callable[..., None]) -> Callable[..., None]:
    """Write each message as a map-based JSON library would: members sorted by name, at every
    depth (the receipts' views included), a space after each comma and colon, every ``/``
    escaped as ``\\/``, every line ended by CR LF, and members the protocol does not name
    beside its own."""
    del original

    def _send(self: Any, message: dict[str, Any]) -> None:
        text = json.dumps(_with_members(dict(message)), ensure_ascii=True, sort_keys=True)
        line = text.replace("/", "\\/") + "\r\n"
        with self._write_lock:
            self._out.write(line.encode("ascii"))
            self._out.flush()

    return _send


def late_writes(seconds: float) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Write each message ``seconds`` after it was made: every reply comes late, and every
    prompt reaches the operator that long after the host's approval countdown began, as on an
    adapter in another runtime, or a loaded machine."""

    def transform(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def _send(self: Any, message: dict[str, Any]) -> None:
            time.sleep(seconds)
            original(self, message)

        return _send

    return transform


class _Number(str):
    """A JSON number kept as the text it was written with."""


def _sorted_text(node: object) -> str:
    """Write JSON ``node`` with every object's members sorted by name, numbers as written."""
    if isinstance(node, dict):
        members = sorted(node.items())
        return "{" + ",".join(f"{json.dumps(k)}:{_sorted_text(v)}" for k, v in members) + "}"
    if isinstance(node, list):
        return "[" + ",".join(_sorted_text(item) for item in node) + "]"
    if isinstance(node, _Number):
        return str(node)
    return json.dumps(node, ensure_ascii=False)


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise ValueError("a member is repeated")
    return members


def members_sorted(original: Callable[..., Any]) -> Callable[..., Any]:
    """Write substituted arguments again with every object's members sorted by name, as a host
    that decodes them into a map and encodes the map would; numbers keep their written text.
    Arguments that repeat a member, or nest too deeply for the decoder, are left as
    substituted."""
    from reference_impl._arguments import ToolArguments

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        try:
            tree = json.loads(
                arguments.raw, object_pairs_hook=_unique, parse_float=_Number, parse_int=_Number
            )
            return ToolArguments(_sorted_text(tree))
        except (ValueError, RecursionError):
            return arguments

    return substitute


#: The variants of this module, in the order the suite's report lists them.
LEGAL_MORE: Final[tuple[Variant, ...]] = (
    Variant(
        "mcp-elicit-titled-choices",
        ("MCP-007", "MCP-008", "APPR-010"),
        "The elicitation form offers its answers as a titled single choice (oneOf of const and "
        "title), where the reference host offers a bare enum: R9.6 leaves the form to the host, "
        "and the MCP schema allows both.",
        ((_SERVER, "elicitation_schema", titled_choices),),
        via="mcp",
    ),
    Variant(
        "mcp-accept-reads-decision",
        ("MCP-008", "INV3"),
        "An accepted form is read by its decision member whatever other members stand beside "
        "it, where the reference host denies content with any other member: an MCP form's "
        "schema cannot forbid other members, so such content is content the schema allows "
        "(R9.6).",
        (
            line_patch(
                _SERVER,
                "answer_of",
                "if set(content) != {DECISION_FIELD}:",
                "if DECISION_FIELD not in content:",
            ),
        ),
        via="mcp",
    ),
    Variant(
        "mcp-risk-critical",
        ("MCP-007", "APPR-003", "APPR-005"),
        "Every secret-bearing call is asked about at CRITICAL risk, whatever the tool's own risk, "
        "where the reference host raises it to HIGH: R3.2 asks for at least HIGH.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "risk=max(tool.risk, Risk.HIGH) if call.refs else tool.risk,",
                "risk=Risk.CRITICAL if call.refs else tool.risk,",
            ),
        ),
        via="mcp",
    ),
    Variant(
        "substitution-escapes-non-ascii",
        ("SCRUB-007", "SCRUB-011", "SUBST-005"),
        "A substituted string is written back with each non-ASCII character as a \\u escape, "
        "as a JSON writer's default does, where the reference host keeps the character: R4.1 "
        "asks only that the raw text and the per-key view agree, and such a spelling of a value "
        "is a form beyond the design (R5.6), which a host need not scrub.",
        (
            line_patch(
                _REG,
                "substitute",
                'pieces.append(encode_string("".join(parts)))',
                'pieces.append(json.dumps("".join(parts)))',
            ),
        ),
        via="driver",
    ),
    Variant(
        "duration-fractional",
        ("LEDG-001", "LEDG-021"),
        "A record's durationMs is a JSON number with a fraction of a millisecond, and the host's "
        "reader takes one: R6.2 names the field without its type, and whole milliseconds is a "
        "SHOULD (LEDG-021), reported non-strict.",
        (
            line_patch(
                _REG,
                "Registry._record",
                "duration_ms=max(0, int((self.clock.monotonic() - call.started) * 1000)),",
                "duration_ms=max(0.0, round((self.clock.monotonic() - call.started) * 1e3, 3)),",
            ),
            line_patch(
                "reference_impl._ledger",
                "decode_record",
                "if not isinstance(duration, int):",
                "if not isinstance(duration, int | float) or isinstance(duration, bool):",
            ),
        ),
        via="driver",
        differs=("LEDG-021",),
    ),
    Variant(
        "depth-limit-32",
        ("GRAM-001", "GRAM-041", "GRAM-042"),
        "Marker-bearing arguments nested deeper than 32 levels are refused as SECRET_UNRESOLVED "
        "without being read, failing closed: R1.9 lets a host limit the depth it parses, and a "
        "limit below 64 levels is a SHOULD, reported non-strict.",
        ((_GRAMMAR, "parse_arguments", depth_limited(32)),),
        via="driver",
        differs=("GRAM-042",),
    ),
    Variant(
        "lost-read-policy-denied",
        ("FENCE-003", "FENCE-004"),
        "A call whose user lost secret.read while its prompt was open is refused as "
        "POLICY_DENIED, and recorded so, where the reference host gives SECRET_FORBIDDEN: R3.4 "
        "accepts POLICY_DENIED, reported non-strict.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                'Disposition.SECRET_FORBIDDEN, NO_PERMISSION_MESSAGE, "no-permission", "FENCE-003"',
                'Disposition.POLICY_DENIED, NO_PERMISSION_MESSAGE, "no-permission", "FENCE-003"',
            ),
        ),
        via="driver",
        differs=("FENCE-004",),
    ),
)

#: Legal variants run through the checks their difference once failed or left unchecked rather
#: than through every check of their requirements, which would take long: adapters that differ
#: from the reference driver on the wire alone (how they spell a message, how late they write
#: it), and a host that hands its handler the members sorted. Each must be judged as the
#: reference host is, with no check failed and no requirement left unchecked for it
#: (decisions S1.1, S1.12).
NARROWED: Final[tuple[Variant, ...]] = (
    Variant(
        "driver-map-writer",
        ("SUBST-001",),
        "The adapter writes its messages as a map-based JSON library does: members sorted by "
        "name at every depth, the handler's per-key view included, spaces after commas and "
        "colons, '/' escaped, CR LF line ends, members the protocol does not name beside its "
        "own, and its capabilities in another order. The driver protocol reads a line as JSON "
        "and ignores unknown members, and the per-key view must hold the raw JSON's values for "
        "every key (R4.1), not in its order.",
        ((_DRIVER, "Driver._send", map_writer),),
        via="driver",
    ),
    Variant(
        "driver-late-writes",
        ("APPR-009", "APPR-010", "APPR-008", "APPR-001"),
        "Every message the adapter writes, replies and prompts alike, goes out 0.2 s after it "
        "was made, so a prompt reaches the operator 0.2 s into the host's approval countdown: "
        "the driver protocol bounds a request by the call timeout only, and R3.5 asks only "
        "that an answer after the host's own timeout not run the call.",
        ((_DRIVER, "Driver._send", late_writes(0.2)),),
        via="driver",
    ),
    Variant(
        "substitution-sorts-members",
        ("SUBST-005", "SUBST-002"),
        "Substituted arguments reach the handler written again with every object's members "
        "sorted by name, as from a map, numbers as written: R4.1 keeps key order as a SHOULD "
        "(SUBST-002), reported non-strict, and the values each reference is replaced by are "
        "the same.",
        ((_REG, "substitute", members_sorted),),
        via="driver",
        differs=("SUBST-002",),
    ),
)
