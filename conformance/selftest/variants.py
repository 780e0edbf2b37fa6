"""Legal variants of the reference host: each takes an alternative the rulings allow.

This module owns hosts the suite must pass (decisions S1.12): the reference host with a patch
that makes it behave as another host following a ruling exactly would, where the reference
host chose otherwise. Each names the requirements whose checks it must pass. They are served
as mutants are (``python -m conformance.selftest driver NAME``), and the unit tests run the
suite against each, narrowed to its requirements (``tests/conformance/test_variants.py``). A
variant may change only what its ruling leaves to the host; nothing here may print a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Variant
from conformance.selftest.catalog_approval import save_keeps_stamp

_SERVER: Final = "reference_impl.mcp_server"
_POLICY: Final = "reference_impl._policy"

#: The JSON-RPC error code the variants send refusals with, as an MCP layer might.
REFUSAL_CODE: Final = -32600


def refusals_as_errors(
    prefix: str, data: Callable[[str], object] = lambda _disposition: None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Send every refusal and failed execution as a JSON-RPC error whose message is ``prefix``
    followed by the refusal message (decisions R9.5), and whose ``data`` is ``data`` of the
    call's disposition (none when that is ``None``)."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from mcp.shared.exceptions import MCPError

        def render(outcome: Any, scrubbing: bool) -> Any:
            if outcome.is_error:
                message = prefix + outcome.text
                raise MCPError(code=REFUSAL_CODE, message=message, data=data(outcome.disposition))
            return original(outcome, scrubbing)

        return render

    return transform


def descriptors_in_schema(extra: Callable[[Any], str]) -> Callable[[Any], Any]:
    """Repeat the approval request's descriptors, and ``extra(request)``, in the description of
    the elicitation form's decision field (its requested schema, decisions R9.6)."""

    def transform(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def elicitation_schema(request: Any) -> dict[str, Any]:
            schema = original(request)
            field = dict(schema["properties"]["decision"])
            shown = "; ".join(request.descriptors) + extra(request)
            field["description"] = f"{field.get('description', '')} Secrets: {shown}"
            return {**schema, "properties": {**schema["properties"], "decision": field}}

        return elicitation_schema

    return transform


def kept_whole(original: Callable[..., str]) -> Callable[..., str]:
    """Keep the arguments a prompt and ``sanitizedArgs`` show whole, however long: the bound of
    10,000 characters is the reference host's own (LEDG-022), which no other host must copy."""

    def sanitize_arguments(raw: str, limit: int = 0, *, marked: bool | None = None) -> str:
        del limit
        return str(original(raw, 1 << 62, marked=marked))

    return sanitize_arguments


#: The prefix the official TypeScript SDK's ``McpError`` writes before a message.
SDK_PREFIX: Final = f"MCP error {REFUSAL_CODE}: "

VARIANTS: Final[tuple[Variant, ...]] = (
    Variant(
        "mcp-refusal-prefixed-error",
        ("MCP-006", "MCP-011", "MSG-001", "MSG-003", "MSG-007", "ORD-001"),
        "Every refusal and failed execution is a JSON-RPC error whose message is the refusal "
        "message after the prefix an MCP layer adds (MCP error -32600: ), which R9.5 accepts.",
        ((_SERVER, "render", refusals_as_errors(SDK_PREFIX)),),
        via="mcp",
    ),
    Variant(
        "mcp-descriptors-in-schema",
        ("MCP-007", "MCP-008", "APPR-005", "APPR-010"),
        "The elicitation's requested schema repeats the descriptors, usernames included, in "
        "its decision field's description, which R9.6 and the username exception of R3.2 allow.",
        ((_SERVER, "elicitation_schema", descriptors_in_schema(lambda _request: "")),),
        via="mcp",
    ),
    Variant(
        "mcp-disposition-in-error-data",
        ("APPR-010", "APPR-008", "MCP-006", "MCP-011"),
        "Every refusal and failed execution is a JSON-RPC error that names its disposition in "
        'its data ({"disposition": ...}), which R9.8 allows; the adapter does not show its '
        "ledger, so the suite can learn the disposition only there.",
        ((_SERVER, "render", refusals_as_errors("", lambda name: {"disposition": name})),),
        via="mcp",
        hidden=("observe.ledger",),
    ),
    Variant(
        "fence-rule-at-answer",
        ("FENCE-001", "FENCE-002", "FENCE-005", "INV4"),
        "Saving a rule does not move the fence's stamps; the fence refuses on a revocation or "
        "reset, and otherwise judges the call by the rule in force at the answer (upstream's "
        "re-check that the rule is not DENY), which R3.4 (v1.2) allows.",
        (
            (_POLICY, "Rules.save_tool_rule", save_keeps_stamp("_tool_stamps")),
            (_POLICY, "Rules.save_provider_rule", save_keeps_stamp("_provider_stamps")),
        ),
        via="driver",
    ),
    Variant(
        "arguments-kept-whole",
        ("APPR-004", "LEDG-004"),
        "A prompt and sanitizedArgs show the arguments whole however long they are, where the "
        "reference host keeps 10,000 characters: that bound is the reference host's own "
        "(LEDG-022), which R6.2 does not ask of another host.",
        (("reference_impl._registry", "sanitize_arguments", kept_whole),),
        via="driver",
    ),
)

#: Variants by name.
BY_NAME: Final = {variant.name: variant for variant in VARIANTS}
