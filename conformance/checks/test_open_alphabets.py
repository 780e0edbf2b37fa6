"""Checks that draw the names a host must refuse, report or keep apart from a generator, not a
list (decisions R1.2, R1.4, R2; design "Approval semantics").

The contract has exactly three fields. A host that accepts a fourth, however plausible its name,
delivers something the operator never saw described; so the field names here come from
:func:`conformance.alphabets.unknown_fields`, a seeded generator of credential-store words, small
edits of the real names and random words, and each one must refuse its call as malformed, alone
or beside a good reference, before any prompt and without running the tool. In the same way a
vault failure of a kind the host has never heard of is still reported by its kind alone, its own
message on no surface (:func:`conformance.alphabets.vault_failure_kinds`), and a rule saved for
one tool holds for that exact name only: a tool whose name is a near miss of it, in case, a
prefix, a separator or a letter, takes its own rule, and a near miss nobody registered is an
unknown tool (:func:`conformance.alphabets.near_names`). Nothing here prints a value or the
failure's message; a detail names the field, the kind or the tool.
"""

from __future__ import annotations

import pytest

from conformance.alphabets import near_names, unknown_fields, vault_failure_kinds
from conformance.canary import Detector, Guarded, Kind, Mint
from conformance.host import Answer, HandlerKind
from conformance.outcomes import fail, require
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    answering,
    args_json,
    call_surfaces,
    config,
    make_secret,
    names_vault_failure,
    ref,
    tool,
)

#: How many generated field names each run tries.
FIELD_COUNT = 64

#: How many generated kinds of vault failure each run tries.
KIND_COUNT = 32

#: How many generated near names of a tool each run tries.
NEAR_NAME_COUNT = 24


#: The tool that holds a rule, whose name the generated names are near misses of.
_RULED = tool("send_mail", HandlerKind.RECORDER)


@pytest.mark.req("GRAM-005", "GRAM-008", "MSG-001")
def test_generated_fields_are_refused(host: RecordingHost, mint: Mint) -> None:
    """Each generated field name that the contract does not have refuses its call as malformed:
    SECRET_UNRESOLVED, 'Malformed secret reference', no prompt, no tool. Every other call puts
    a good reference before it, so that both the only reference and one of two are tried."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    for index, field_name in enumerate(unknown_fields(FIELD_COUNT)):
        members = {"x": ref(secret.id, field_name)}
        if index % 2:
            members = {"good": ref(secret.id, "username"), **members}
        outcome = host.invoke(RECORDER.name, args_json(members))
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            ("GRAM-005", "GRAM-008"),
            f"a reference to the field {field_name!r} ended {outcome.disposition}, not refused",
        )
        require(
            outcome.text.startswith("Malformed secret reference"),
            "MSG-001",
            f"the refusal of the field {field_name!r} is not 'Malformed secret reference'",
        )
    seen = host.observe()
    require(seen.receipts == (), "GRAM-008", "the tool ran for a reference to an unknown field")
    if seen.judges("observe.requests", "GRAM-008"):
        require(
            seen.approval_requests == (),
            "GRAM-008",
            "a call with an unknown field prompted the operator",
        )


@pytest.mark.req("MSG-009", "INV2")
def test_generated_vault_failure_kinds(host: RecordingHost, mint: Mint) -> None:
    """Each generated kind of vault failure refuses its call as SECRET_UNRESOLVED with 'the vault
    could not be read (<kind>)', runs no tool, and leaves the failure's own message, a canary
    the suite chose, on no surface. A host that knows a few kinds and reports any other by its
    message is caught whatever the kind is called."""
    host.need("vault.failing", "vault.failure-message")
    token = mint.canary(Kind.PLAIN, "vault-failure-message").value
    detector = Detector((Guarded("the vault failure's own message", token),))
    secret = make_secret(mint)
    for kind in vault_failure_kinds(KIND_COUNT):
        host.reset(
            config(
                [secret],
                vault=f"failing:{kind}",
                vault_failure_message=f"connection reset by peer: {token}",
            )
        )
        outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            "MSG-009",
            f"a vault failure of kind {kind!r} ended {outcome.disposition}, not SECRET_UNRESOLVED",
        )
        # A kind is a short plain phrase; an exception's own text or repr brings quotes or colons.
        require(
            names_vault_failure(outcome.text) and len(outcome.text) < 100,
            "MSG-009",
            f"a vault failure of kind {kind!r} is not reported by its kind alone",
        )
        seen = host.observe()
        require(seen.receipts == (), "INV2", f"the tool ran through a vault failure ({kind!r})")
        for surface, text in call_surfaces(outcome, seen):
            found = detector.find(text)
            if found:
                fail(
                    "MSG-009",
                    f"the vault failure's own message (kind {kind!r}, form {found[0][1]}) is "
                    f"in the {surface}",
                )


@pytest.mark.req("POL-004")
@pytest.mark.parametrize("rule", ["DENY", "ALLOW"])
def test_near_named_tool_keeps_its_own_rule(host: RecordingHost, mint: Mint, rule: str) -> None:
    """A tool rule holds for the exact name it was saved for. Beside a tool holding a DENY or an
    ALLOW, a tool under each generated near name takes its own rule, the default ASK: its
    secret-bearing call and its reference-free call both prompt, and run once approved, while
    the ruled tool's reference-free call keeps its rule. A host that folds case, matches a
    prefix or ignores separators when it looks a rule up is caught whatever the names."""
    secret = make_secret(mint)
    kept = {"DENY": "POLICY_DENIED", "ALLOW": "ALLOWED"}[rule]
    for name in near_names(_RULED.name, NEAR_NAME_COUNT):
        near = tool(name, HandlerKind.RECORDER)
        host.reset(config([secret], tools=(_RULED, near), policy={"tools": {_RULED.name: rule}}))
        ruled = host.invoke(_RULED.name, args_json({"x": "plain"}), answering(Answer.APPROVE))
        require(
            ruled.disposition == kept,
            "POL-004",
            f"beside {name!r} the {rule} of {_RULED.name!r} ended its call {ruled.disposition}",
        )
        for what, value in (("secret-bearing", ref(secret.id)), ("reference-free", "plain")):
            outcome = host.invoke(name, args_json({"x": value}), answering(Answer.APPROVE))
            require(
                outcome.disposition == "APPROVED_ONCE",
                "POL-004",
                f"a {what} call to {name!r}, with the rule {rule} for {_RULED.name!r} beside "
                f"it, ended {outcome.disposition}, not APPROVED_ONCE under its own rule",
            )


@pytest.mark.req("ORD-006")
def test_near_names_are_unknown_tools(host: RecordingHost, mint: Mint) -> None:
    """A call to a generated near name of a registered tool, which nobody registered, is
    UNKNOWN_TOOL: no vault read, no prompt, no run, however close the name."""
    secret = make_secret(mint)
    host.reset(config([secret], tools=(_RULED,)))
    outcomes = []
    for name in near_names(_RULED.name, NEAR_NAME_COUNT):
        outcome = host.invoke(name, args_json({"x": ref(secret.id)}), answering(Answer.APPROVE))
        require(
            outcome.is_error,
            "ORD-006",
            f"a call to {name!r}, near the registered {_RULED.name!r}, was not refused",
        )
        outcomes.append((name, outcome))
    seen = host.observe()
    require(
        seen.vault_reads == () and seen.approval_requests == () and seen.receipts == (),
        "ORD-006",
        "a call to a near name of a registered tool read the vault, prompted or ran a tool",
    )
    # Last: over MCP an unknown tool's disposition may be named nowhere (R9.8).
    for name, outcome in outcomes:
        require(
            outcome.disposition == "UNKNOWN_TOOL",
            "ORD-006",
            f"a call to {name!r}, near the registered {_RULED.name!r}, ended {outcome.disposition}",
        )
