"""Legal variants of the reference host: each takes an alternative the rulings allow.

This module owns hosts the suite must pass (decisions S1.12): the reference host with a patch
that makes it behave as another host following a ruling exactly would, where the reference
host chose otherwise. Each names the requirements whose checks it must pass. They are served
as mutants are (``python -m conformance.selftest driver NAME``), and the unit tests run the
suite against each, narrowed to its requirements (``tests/conformance/test_variants.py``). A
variant may change only what its ruling leaves to the host; nothing here may print a value.
"""

from __future__ import annotations

import functools
import re
import threading
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


def later_names_shared(original: Callable[..., None]) -> Callable[..., None]:
    """Build a call's scrubber from its references in reverse order of use, so that a value
    or form two references share is named by the one used later (decisions R5.3)."""

    @functools.wraps(original)
    def init(self: Any, resolved: Any) -> None:
        original(self, tuple(resolved)[::-1])

    return init


def _folded(original: re.Pattern[str]) -> re.Pattern[str]:
    """The same pattern with its case folded beyond ASCII: ``secret`` then also matches a word
    spelled with the long s (U+017F)."""
    return re.compile(original.pattern, original.flags & ~re.ASCII)


#: The raw spelling of a marker's first letter, which also takes the long s, literally or as a
#: ``\u017f`` escape in either case of its hexadecimal digits.
_RAW_S: Final = "(?:[Ss\u017f]|\\\\u017[fF]|"


def _raw_folded(original: re.Pattern[str]) -> re.Pattern[str]:
    """A raw-text marker pattern of ``reference_impl._scan`` whose first letter also takes the
    long s, literally or escaped."""
    return re.compile(original.pattern.replace("(?:[Ss]|", _RAW_S, 1), original.flags)


#: Every pattern the reference host reads a marker with, by the module that holds it: the scan,
#: the grammar and the sanitizer, so that the long s is a marker in all of them alike.
_FOLDED_MARKERS: Final = tuple(
    (module, name, _folded)
    for module, names in (
        ("reference_impl._scan", ("MARKER_RE",)),
        ("reference_impl._grammar", ("MARKER_RE", "_CANDIDATE_RE", "_UNTERMINATED_RE")),
        ("reference_impl._sanitize", ("MARKER_RE", "_CANDIDATE_RE")),
    )
    for name in names
) + tuple(
    ("reference_impl._scan", name, _raw_folded)
    for name in ("_LITERAL_FIRST_RE", "_ESCAPED_FIRST_RE")
)


class _UnknownFirst:
    """Within resolution, an unknown id refused before an AI provider key: the order R2.3 gives
    as a SHOULD only. The vault is still walked once; the walk's finds are kept for the call."""

    def __init__(self) -> None:
        self._found = threading.local()

    def walk(self, original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @functools.wraps(original)
        def _walk(vault: Any, wanted: set[str]) -> dict[str, Any]:
            found = original(vault, wanted)
            self._found.ids = frozenset(found)
            return found

        return _walk

    def resolve(self, original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Disposition, Refusal

        @functools.wraps(original)
        def resolve(vault: Any, references: Any) -> Any:
            self._found.ids = None
            outcome = original(vault, references)
            found = self._found.ids
            if not isinstance(outcome, Refusal) or outcome.reason != "ai-provider" or found is None:
                return outcome
            ids = dict.fromkeys(reference.id for reference in references)
            missing = [secret_id for secret_id in ids if secret_id not in found]
            if not missing:
                return outcome
            return Refusal(
                Disposition.SECRET_UNRESOLVED,
                "no secret with id " + ", ".join(missing),
                "unknown-id",
                "MSG-007",
            )

        return resolve


_UNKNOWN_FIRST: Final = _UnknownFirst()


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
        "shared-value-named-by-later",
        ("SCRUB-008", "SCRUB-007", "SCRUB-009"),
        "A value or form two references share is named by the reference used later, where the "
        "reference host names the first: R5.3 leaves the choice to the host.",
        (("reference_impl._scrub", "Scrubber.__init__", later_names_shared),),
        via="driver",
    ),
    Variant(
        "long-s-marker",
        ("GRAM-007", "GRAM-001", "GRAM-012", "GRAM-014", "LEDG-007"),
        "A marker spelled with the long s (U+017F), which case-folds to secret, is a marker "
        "everywhere the host reads one (values, keys, escapes, the sanitizer), where the "
        "reference host keeps it plain text: R1.3 allows either reading.",
        _FOLDED_MARKERS,
        via="driver",
    ),
    Variant(
        "unknown-id-before-ai-key",
        ("ORD-002", "ORD-003", "LEDG-005", "LEDG-008", "MSG-007", "MSG-011"),
        "Within resolution an unknown id is refused before an AI provider key, against the "
        "order R2.3 gives as a SHOULD: reported non-strict, and every MUST still judged.",
        (
            ("reference_impl._resolve", "_walk", _UNKNOWN_FIRST.walk),
            ("reference_impl._registry", "resolve", _UNKNOWN_FIRST.resolve),
        ),
        via="driver",
        differs=("ORD-002",),
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
