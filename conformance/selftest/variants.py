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
import json
import re
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Variant, line_patch
from conformance.selftest.catalog_approval import save_keeps_stamp
from conformance.selftest.variants_legal import LEGAL_MORE, NARROWED

_SERVER: Final = "reference_impl.mcp_server"
_POLICY: Final = "reference_impl._policy"
_REG: Final = "reference_impl._registry"
_GRAMMAR: Final = "reference_impl._grammar"

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


def gate_unrecorded(original: Callable[..., Any]) -> Callable[..., Any]:
    """Leave no ledger record for a call the kill-switch or RBAC withholds at step [0], before
    the marker scan (the call's ``marked`` is still unset); every other refusal is recorded."""
    from reference_impl._types import CallOutcome, Disposition

    withheld = frozenset({Disposition.KILL_SWITCHED, Disposition.RBAC_DENIED})

    @functools.wraps(original)
    def _refuse(self: Any, call: Any, refusal: Any) -> Any:
        if call.marked is not None or refusal.disposition not in withheld:
            return original(self, call, refusal)
        # Nothing is to be recorded for it later either (an internal failure records once).
        call.recorded = True
        return CallOutcome(refusal.disposition, refusal.message, True, (), refusal)

    return _refuse


def _repeats_a_member(raw: str) -> bool:
    """Whether some object of the JSON text ``raw`` names a member twice (after its escapes
    are decoded); text the standard library cannot read counts as no repeat."""
    repeated = False

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        names = [name for name, _ in members]
        repeated = repeated or len(set(names)) != len(names)
        return dict(members)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return repeated


def duplicates_refused(original: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse, as SECRET_UNRESOLVED, marker-bearing arguments in which an object repeats a
    member, where the reference host resolves them: a refusal of the grammar's step [2]."""
    from reference_impl._types import Disposition, Refusal

    @functools.wraps(original)
    def parse_arguments(raw: str) -> Any:
        outcome = original(raw)
        if isinstance(outcome, Refusal) or not outcome.references or not _repeats_a_member(raw):
            return outcome
        return Refusal(
            Disposition.SECRET_UNRESOLVED,
            "Arguments carry a secret reference but repeat an object member",
            "duplicate-key",
            "GRAM-019",
        )

    return parse_arguments


def extensions_read(original: Callable[..., Any]) -> Callable[..., Any]:
    """Read marker-bearing arguments that are an object only under the JSON extensions the
    standard library takes (NaN and Infinity, raw control characters in strings, a leading
    byte-order mark) as that object, written back as standard JSON text, and go on with it;
    text no extension of these explains is refused as before."""
    from reference_impl._types import Refusal

    @functools.wraps(original)
    def parse_arguments(raw: str) -> Any:
        outcome = original(raw)
        if not isinstance(outcome, Refusal) or outcome.reason != "not-an-object":
            return outcome
        try:
            tree = json.loads(raw.removeprefix("\ufeff"), strict=False)
        except (ValueError, RecursionError):
            return outcome
        if not isinstance(tree, dict):
            return outcome
        return original(json.dumps(tree, ensure_ascii=False, separators=(",", ":")))

    return parse_arguments


#: Whitespace that also takes JavaScript comments, as a lenient JSON reader does.
_LENIENT_SPACE: Final = re.compile(r"(?:[ \t\n\r]++|//[^\n]*+|/\*(?s:.*?)\*/)*")


def _with_non_finite(original: re.Pattern[str]) -> re.Pattern[str]:
    """A number pattern that also takes NaN, Infinity and -Infinity."""
    return re.compile(f"(?:{original.pattern})|-?Infinity|NaN", original.flags)


def _wait_out(request: Any, timeout: float) -> Any:
    """Ask no one: let the approval request run out its timeout, then answer TIMEOUT."""
    from reference_impl._types import Answer

    del request
    threading.Event().wait(timeout)
    return Answer.TIMEOUT


def unelicited_wait(original: Callable[..., Any]) -> Callable[..., Any]:
    """Serve MCP so that a call needing approval from a client that cannot elicit is asked of
    no one and waits out the approval timeout, ending TIMEOUT, where the reference host denies
    it at once."""
    from reference_impl.mcp_server import Approval

    @functools.wraps(original)
    def build_server(backend: Any, approval: Any = None, name: str = "secref") -> Any:
        chosen = approval if approval is not None else Approval(fallback=_wait_out)
        return original(backend, chosen, name)

    return build_server


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
        takes=(("MCP-011", "jsonrpc-error"),),
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
        takes=(("MCP-011", "jsonrpc-error"),),
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
        takes=(("FENCE-005", "rule-at-answer"),),
    ),
    Variant(
        "kill-switch-unfenced",
        ("FENCE-006", "FENCE-001", "FENCE-002", "INV4", "ORD-004"),
        "The fence re-checks revocations, resets, saved DENYs and a lost secret.read, not the "
        "kill switch: a call whose tool is kill-switched while its prompt is open runs once as "
        "approved. R3.4 leaves the kill switch out of the fence's events; step [0] still "
        "withholds every later call.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                '        self._trace("fence")\n        if self.rules.killed(tool.name):\n',
                '        self._trace("fence")\n        if False:\n',
            ),
        ),
        via="driver",
        takes=(("FENCE-006", "runs"),),
    ),
    Variant(
        "shared-value-named-by-later",
        ("SCRUB-008", "SCRUB-007", "SCRUB-009"),
        "A value or form two references share is named by the reference used later, where the "
        "reference host names the first: R5.3 leaves the choice to the host.",
        (("reference_impl._scrub", "Scrubber.__init__", later_names_shared),),
        via="driver",
        takes=(("SCRUB-008", "other"),),
    ),
    Variant(
        "long-s-marker",
        ("GRAM-007", "GRAM-001", "GRAM-012", "GRAM-014", "LEDG-007"),
        "A marker spelled with the long s (U+017F), which case-folds to secret, is a marker "
        "everywhere the host reads one (values, keys, escapes, the sanitizer), where the "
        "reference host keeps it plain text: R1.3 allows either reading.",
        _FOLDED_MARKERS,
        via="driver",
        takes=(("GRAM-007", "marker"),),
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
        # It stands for another host, so it does not say it is the reference host: the
        # reference host's own rules (LEDG-022 among them) are then not applicable (S1.1).
        hidden=("reference",),
    ),
    Variant(
        "scrub-by-utf16-length",
        ("SCRUB-002", "SCRUB-001", "SCRUB-007", "SCRUB-010"),
        "A value 8 or more long in UTF-16 units is scrubbed even when it is under 8 code "
        "points, where the reference host counts code points only: R5.1 allows either count.",
        (
            line_patch(
                "reference_impl._scrub",
                "forms",
                "if len(value) < SCRUB_MIN_CODE_POINTS:",
                "if max(len(value), len(value.encode('utf-16-le', 'surrogatepass')) // 2) < "
                "SCRUB_MIN_CODE_POINTS:",
            ),
        ),
        via="driver",
        takes=(("SCRUB-002", "scrubbed"),),
    ),
    Variant(
        "lone-surrogate-delivered",
        ("SCRUB-018", "SCRUB-017", "SCRUB-009"),
        "A value holding a lone surrogate is delivered and then scrubbed in every form, where "
        "the reference host refuses it at resolution: R5.2 allows either.",
        (
            line_patch(
                _REG,
                "resolve",
                "if not value or _LONE_SURROGATE.search(value.reveal()) is not None:",
                "if not value:",
            ),
        ),
        via="driver",
        takes=(("SCRUB-018", "scrubbed"),),
    ),
    Variant(
        "snippet-unscrubbed-when-off",
        ("SCRUB-013", "SCRUB-012", "SCRUB-014"),
        "With result scrubbing off, the ledger's error snippet is cut from the unscrubbed "
        "failure text and may hold the value, where the reference host scrubs it anyway: R5.5 "
        "allows either.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "snippet = cut(scrubber.scrub(text), ERROR_SNIPPET_CHARS)",
                "snippet = cut(text, ERROR_SNIPPET_CHARS)",
            ),
        ),
        via="driver",
        takes=(("SCRUB-013", "holds-value"),),
    ),
    Variant(
        "withheld-unrecorded",
        ("LEDG-006", "ORD-004"),
        "A call the kill-switch or RBAC withholds before the marker scan leaves no ledger "
        "record, where the reference host records it: R6.3 allows either.",
        ((_REG, "Registry._refuse", gate_unrecorded),),
        via="driver",
        takes=(("LEDG-006", "not-recorded"),),
    ),
    Variant(
        "session-trust-from-secret-call",
        ("APPR-007", "APPR-006", "APPR-001"),
        "A trust-for-session answer to a secret-bearing call runs it once and also trusts later "
        "reference-free calls to the tool, where the reference host grants nothing: R3.3 "
        "allows either.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "return Disposition.APPROVED_ONCE",
                "if answer is Answer.TRUST_SESSION:\n"
                "                self.rules.trust_session(tool.name)\n"
                "            return Disposition.APPROVED_ONCE",
            ),
        ),
        via="driver",
        takes=(("APPR-007", "trusts"),),
    ),
    Variant(
        "duplicate-keys-refused",
        ("GRAM-019", "GRAM-016", "GRAM-017"),
        "Marker-bearing arguments in which an object repeats a member are refused as "
        "SECRET_UNRESOLVED, where the reference host resolves them; with extension text also "
        "refused, the host refuses every case R1.8 leaves open.",
        ((_GRAMMAR, "parse_arguments", duplicates_refused),),
        via="driver",
        takes=(("GRAM-019", "refuse"),),
    ),
    Variant(
        "extensions-resolved",
        ("GRAM-019", "GRAM-016", "GRAM-017"),
        "Marker-bearing arguments that are an object only under a JSON extension the standard "
        "library reads (raw control characters, a byte-order mark) are resolved and handed on "
        "as standard JSON, where the reference host refuses them: R1.8 allows either.",
        ((_GRAMMAR, "parse_arguments", extensions_read),),
        via="driver",
        takes=(("GRAM-019", "resolve"),),
    ),
    Variant(
        "extensions-resolved-in-place",
        ("GRAM-019", "GRAM-016", "GRAM-017"),
        "Marker-bearing arguments that are an object only under a JSON extension (NaN and "
        "Infinity, comments, raw control characters) are resolved in place, the extension "
        "kept around the substituted strings, where the reference host refuses them: R1.8 "
        "allows either.",
        (
            (_GRAMMAR, "_WS_RE", lambda _original: _LENIENT_SPACE),
            (_GRAMMAR, "_NUMBER_RE", _with_non_finite),
            line_patch(
                _GRAMMAR,
                "_decode",
                "return _scanstring(raw, quote + 1, True)",
                "return _scanstring(raw, quote + 1, False)",
            ),
        ),
        via="driver",
        takes=(("GRAM-019", "resolve"),),
    ),
    Variant(
        "mcp-unelicited-times-out",
        ("MCP-012", "MCP-009"),
        "A call needing approval from a client that cannot elicit is asked of no one and waits "
        "out the approval timeout, ending TIMEOUT, where the reference host denies it at once: "
        "R9.6 allows either.",
        ((_SERVER, "build_server", unelicited_wait),),
        via="mcp",
        takes=(("MCP-012", "timeout"),),
    ),
    Variant(
        "withheld-records-name-references",
        ("LEDG-002", "LEDG-006"),
        "A call the kill-switch or RBAC withholds is recorded with the references its arguments "
        "carry in secretRefs, where the reference host, which reads no withheld call's "
        "arguments, records none: R6.2 asks the names of the call's references, and R6.3 "
        "leaves the record itself to the host.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                'self._trace("gate")',
                'self._trace("gate")\n'
                "        if has_marker(args_json):\n"
                "            named = _grammar.parse_arguments(args_json)\n"
                "            if not isinstance(named, Refusal):\n"
                "                call.refs = named.references",
            ),
        ),
        takes=(("LEDG-006", "recorded"),),
    ),
    *LEGAL_MORE,
)

#: Legal variants that show less than the suite needs to judge every requirement they name: a
#: fact they leave unobservable is unchecked for them, never failed (decisions S1.1). Each is
#: run by ``tests/conformance/test_legal_hunt.py``, which holds it to no failed check.
PARTLY_OBSERVED: Final[tuple[Variant, ...]] = (
    Variant(
        "mcp-errors-withheld-unrecorded",
        ("ORD-004", "LEDG-006", "MCP-011"),
        "Every refusal is a JSON-RPC error after the prefix an MCP layer adds (R9.5), and a "
        "call the kill-switch or RBAC withholds leaves no ledger record (R6.3): two EITHER "
        "alternatives at once, so nothing names a withheld call's disposition, and no record of "
        "an earlier call may stand for it.",
        (
            (_SERVER, "render", refusals_as_errors(SDK_PREFIX)),
            (_REG, "Registry._refuse", gate_unrecorded),
        ),
        via="mcp",
        takes=(("MCP-011", "jsonrpc-error"),),
    ),
)

#: Variants by name.
BY_NAME: Final = {variant.name: variant for variant in (*VARIANTS, *PARTLY_OBSERVED, *NARROWED)}
