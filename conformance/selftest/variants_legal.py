"""More legal variants of the reference host: alternatives and SHOULD departures the rulings
allow, each a difference another host may well have (decisions S1.12).

This module owns variants that each keep a legal difference another host may well have: an
elicitation form of titled choices, a form read by its decision whatever stands beside it, a
risk raised past HIGH, a JSON writer that escapes non-ASCII characters, a fractional
``durationMs``, a depth limit below 64 levels, and POLICY_DENIED for a lost ``secret.read``.
:mod:`conformance.selftest.variants` serves them with its own, and
``tests/conformance/test_variants.py`` holds each to passing every check of its requirements.
A variant may change only what its ruling leaves to the host; nothing here may print a value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Variant, line_patch

_SERVER: Final = "reference_impl.mcp_server"
_REG: Final = "reference_impl._registry"
_GRAMMAR: Final = "reference_impl._grammar"


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
