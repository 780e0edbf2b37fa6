"""Mutants of the reference host's MCP layer: each breaks one rule of decisions R9.

This module owns broken versions of ``reference_impl.mcp_server`` (and of the registry's
scrubbing of rich results), served behind the reference driver and checked over the MCP wire
(``via="mcp"``: ``--via mcp`` against the driver's MCP endpoint). Each must be caught by a
failure naming the requirement it cites. They break the host on purpose; nothing here may
print a value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, Final

from conformance.selftest.base import Mutant
from conformance.selftest.variants import (
    SDK_PREFIX,
    descriptors_in_schema,
    gate_unrecorded,
    refusals_as_errors,
)

_SERVER: Final = "reference_impl.mcp_server"


def kept_where(keep: Callable[[dict[str, Any], str, int], bool]) -> Callable[[Any], Any]:
    """Scrub a rich tree but leave the value of each member ``keep(object, name, depth)``
    picks as the handler wrote it; member names are scrubbed, as the host scrubs them."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        def walk(scrubber: Any, node: object, depth: int) -> object:
            if isinstance(node, dict):
                return {
                    original(scrubber, key): child
                    if keep(node, key, depth)
                    else walk(scrubber, child, depth + 1)
                    for key, child in node.items()
                }
            if isinstance(node, list):
                return [walk(scrubber, child, depth) for child in node]
            return original(scrubber, node)

        def scrub_tree(scrubber: Any, node: object) -> object:
            return walk(scrubber, node, 0)

        return scrub_tree

    return transform


def scrub_except(member: str) -> Callable[[Any], Any]:
    """Scrub a rich tree but leave one member's value (at any depth) as the handler wrote it."""
    return kept_where(lambda _node, key, _depth: key == member)


def members_kept(
    chosen: Callable[[dict[str, Any]], bool], members: tuple[str, ...]
) -> Callable[[Any], Any]:
    """Scrub a rich tree but leave ``members`` of every object ``chosen`` picks as the handler
    wrote them."""
    return kept_where(lambda node, key, _depth: key in members and chosen(node))


def _error_with_meta(original: Callable[..., Any]) -> Callable[..., Any]:
    """Send a rich result as a JSON-RPC error whose data is the result's _meta."""
    from mcp.shared.exceptions import MCPError

    def render(outcome: Any, scrubbing: bool) -> Any:
        rendered = original(outcome, scrubbing)
        if isinstance(outcome.rich, dict) and "_meta" in outcome.rich:
            raise MCPError(code=-32000, message="tool failed", data=outcome.rich["_meta"])
        return rendered

    return render


def _substituted_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """Show the operator the arguments with every reference replaced by its value."""

    def call(self: Any, tool: str, args: str, ask: Callable[..., Any]) -> Any:
        vault = self.harness.vault

        def asking(request: Any, timeout: float) -> Any:
            shown = request.arguments
            for record in vault.records() if vault is not None else ():
                marker = "{{secret:" + record.id + "}}"
                shown = shown.replace(marker, record.password.reveal())
            return ask(dataclasses.replace(request, arguments=shown), timeout)

        return original(self, tool, args, asking)

    return call


#: The passwords each open prompt's references name, by request id, for the schema to show.
_PROMPT_PASSWORDS: dict[str, str] = {}


def _prompt_passwords(original: Callable[..., Any]) -> Callable[..., Any]:
    """Note the passwords of the secrets each prompt's references name, by its request id."""

    def call(self: Any, tool: str, args: str, ask: Callable[..., Any]) -> Any:
        vault = self.harness.vault

        def asking(request: Any, timeout: float) -> Any:
            named = {reference.split(".")[0] for reference in request.secret_refs}
            records = vault.records() if vault is not None else ()
            shown = [record.password.reveal() for record in records if record.id in named]
            _PROMPT_PASSWORDS[request.id] = " ".join(shown)
            return ask(request, timeout)

        return original(self, tool, args, asking)

    return call


def _meta_merged(original: Callable[..., Any]) -> Callable[..., Any]:
    """Merge the string members of params._meta into the arguments, so they are resolved."""

    def build_server(backend: Any, approval: Any = None, name: str = "secref") -> Any:
        server = original(backend, approval, name)
        entry = server.get_request_handler("tools/call")

        async def handler(ctx: Any, params: Any) -> Any:
            meta = params.meta.model_dump() if params.meta is not None else {}
            extra = {key: value for key, value in meta.items() if isinstance(value, str)}
            if extra:
                merged = {**(params.arguments or {}), **extra}
                params = params.model_copy(update={"arguments": merged})
            return await entry.handler(ctx, params)

        server.add_request_handler("tools/call", entry.params_type, handler)
        return server

    return build_server


def _first_item_capped(original: Callable[..., Any]) -> Callable[..., Any]:
    """Cap only the first text item, as if it were the whole result."""

    def cap_items(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        texts = [index for index, item in enumerate(content) if item.get("type") == "text"]
        if not texts:
            return content
        first = texts[0]
        head = original([content[first]])
        return [*content[:first], *head, *content[first + 1 :]]

    return cap_items


def _decline_approves(original: Callable[..., Any]) -> Callable[..., Any]:
    """Take a declined elicitation as an approval."""
    from reference_impl._types import Answer

    def answer_of(result: Any) -> Any:
        if result.action == "decline":
            return Answer.APPROVE
        return original(result)

    return answer_of


def _always_elicit(_original: Callable[..., Any]) -> Callable[..., Any]:
    """Elicit whatever the client declared."""
    return lambda _ctx: True


def _provider_is_a_value(original: Callable[..., Any]) -> Callable[..., Any]:
    """List every tool under a provider named by the first secret's password."""

    def tools(self: Any) -> Sequence[Any]:
        found: Sequence[Any] = original(self)
        vault = self.harness.vault
        records = vault.records() if vault is not None else ()
        if not records:
            return found
        value = records[0].password.reveal()
        return [dataclasses.replace(tool, provider_id=value) for tool in found]

    return tools


def _log_despite_scrubbing_off(original: Callable[..., Any]) -> Callable[..., Any]:
    """Send the handler's log lines even with result scrubbing off."""

    def render(outcome: Any, scrubbing: bool) -> Any:
        return original(outcome, True)

    return render


def _refusal_behind_a_banner(original: Callable[..., Any]) -> Callable[..., Any]:
    """Put a banner text item before a refusal's message."""

    def render(outcome: Any, scrubbing: bool) -> Any:
        rendered = original(outcome, scrubbing)
        if outcome.is_error:
            content = [{"type": "text", "text": "Refused."}, *rendered.result["content"]]
            return dataclasses.replace(rendered, result={**rendered.result, "content": content})
        return rendered

    return render


def _numbers_as_strings(original: Callable[..., str]) -> Callable[..., str]:
    """Re-serialize every number of params.arguments as a string."""

    def convert(node: Any) -> Any:
        if isinstance(node, bool) or node is None:
            return node
        if isinstance(node, int | float):
            return str(node)
        if isinstance(node, dict):
            return {key: convert(child) for key, child in node.items()}
        if isinstance(node, list):
            return [convert(child) for child in node]
        return node

    def arguments_text(arguments: Any) -> str:
        return original(convert(dict(arguments or {})))

    return arguments_text


def _gate_reads_the_vault(original: Callable[..., Any]) -> Callable[..., Any]:
    """Read a page of the vault before withholding a call at step [0], and leave no record
    of it, as the legal variant ``mcp-errors-withheld-unrecorded`` does."""
    from reference_impl._types import Disposition

    unrecorded = gate_unrecorded(original)
    withheld = frozenset({Disposition.KILL_SWITCHED, Disposition.RBAC_DENIED})

    @functools.wraps(original)
    def _refuse(self: Any, call: Any, refusal: Any) -> Any:
        if call.marked is None and refusal.disposition in withheld and self.vault is not None:
            self.vault.read_page(0, 1)
        return unrecorded(self, call, refusal)

    return _refuse


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "mcp-structured-unscrubbed",
        "MCP-003",
        "A rich result's structuredContent reaches the agent unscrubbed.",
        (("reference_impl._registry", "scrub_tree", scrub_except("structuredContent")),),
        via="mcp",
    ),
    Mutant(
        "mcp-progress-unscrubbed",
        "MCP-003",
        "Progress messages sent during a call are not scrubbed.",
        (("reference_impl._registry", "scrub_tree", scrub_except("progress")),),
        via="mcp",
    ),
    Mutant(
        "mcp-error-data-holds-value",
        "MCP-003",
        "A JSON-RPC error's data carries the result's unscrubbed _meta.",
        (
            ("reference_impl._registry", "scrub_tree", scrub_except("_meta")),
            (_SERVER, "render", _error_with_meta),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-link-uri-unscrubbed",
        "MCP-003",
        "A resource link's uri is left as the handler wrote it.",
        (
            (
                "reference_impl._registry",
                "scrub_tree",
                members_kept(lambda node: node.get("type") == "resource_link", ("uri",)),
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-log-when-scrubbing-off",
        "MCP-004",
        "Handler log lines go out as MCP log notifications even with result scrubbing off.",
        ((_SERVER, "render", _log_despite_scrubbing_off),),
        via="mcp",
    ),
    Mutant(
        "mcp-elicitation-substituted",
        "MCP-007",
        "The elicitation shows the arguments with every reference replaced by its value.",
        ((_SERVER, "HarnessBackend.call", _substituted_prompt),),
        via="mcp",
    ),
    Mutant(
        "mcp-meta-reference-resolved",
        "MCP-001",
        "A reference written in params._meta is merged into the arguments and resolved.",
        ((_SERVER, "build_server", _meta_merged),),
        via="mcp",
    ),
    Mutant(
        "mcp-cap-first-item-only",
        "MCP-005",
        "The cap counts only the first text item.",
        ((_SERVER, "cap_items", _first_item_capped),),
        via="mcp",
    ),
    Mutant(
        "mcp-decline-approves",
        "MCP-008",
        "A declined elicitation is taken as an approval.",
        ((_SERVER, "answer_of", _decline_approves),),
        via="mcp",
    ),
    Mutant(
        "mcp-elicits-undeclared",
        "MCP-009",
        "The host elicits from a client that did not declare elicitation.",
        ((_SERVER, "_can_elicit", _always_elicit),),
        via="mcp",
    ),
    Mutant(
        "mcp-listing-holds-value",
        "MCP-010",
        "tools/list names each tool's provider by a secret's value.",
        ((_SERVER, "HarnessBackend.tools", _provider_is_a_value),),
        via="mcp",
    ),
    Mutant(
        "mcp-refusal-behind-banner",
        "MCP-006",
        "A refusal's first text item is a banner, not the refusal message.",
        ((_SERVER, "render", _refusal_behind_a_banner),),
        via="mcp",
    ),
    Mutant(
        "mcp-refusal-error-behind-banner",
        "MCP-006",
        "A refusal is a JSON-RPC error whose message puts a banner, not an error code, before "
        "the refusal message.",
        ((_SERVER, "render", refusals_as_errors("Refused: ")),),
        via="mcp",
    ),
    Mutant(
        "mcp-schema-holds-password",
        "MCP-007",
        "The elicitation's requested schema repeats the descriptors, followed by the password "
        "of each secret they name.",
        (
            (_SERVER, "HarnessBackend.call", _prompt_passwords),
            (
                _SERVER,
                "elicitation_schema",
                descriptors_in_schema(lambda request: " " + _PROMPT_PASSWORDS.get(request.id, "")),
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-error-data-misnames-denial",
        "APPR-010",
        "Refusals are JSON-RPC errors naming their disposition in their data, and a denial is "
        "named POLICY_DENIED there, though the ledger records DENIED.",
        (
            (
                _SERVER,
                "render",
                refusals_as_errors(
                    "",
                    lambda name: {"disposition": "POLICY_DENIED" if name == "DENIED" else name},
                ),
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-numbers-as-strings",
        "MCP-002",
        "The MCP layer re-serializes every number of the arguments as a string.",
        ((_SERVER, "arguments_text", _numbers_as_strings),),
        via="mcp",
    ),
    Mutant(
        "mcp-unnamed-withheld-reads-vault",
        "ORD-004",
        "On a host whose withheld calls are named nowhere (refusals as JSON-RPC errors without "
        "data, calls withheld at step [0] unrecorded: two EITHER alternatives), the kill "
        "switch and RBAC withhold a call only after reading a page of the vault.",
        (
            (_SERVER, "render", refusals_as_errors(SDK_PREFIX)),
            ("reference_impl._registry", "Registry._refuse", _gate_reads_the_vault),
        ),
        via="mcp",
    ),
)
