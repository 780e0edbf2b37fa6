"""Checks of refusal messages and their precedence (decisions R2, R2.3; design steps [0]-[7]).

Each refusal of the table in R2 is produced on its own, then every ordering vector sets several
conditions up at once and the winner's disposition and message must come back. Refusals are
decided before any prompt and before any vault read they can precede; the kill-switch and RBAC
come before everything, and the steps run in the design's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance import vectors
from conformance.canary import Mint
from conformance.host import Answer, CallResult, Control, HandlerKind, HostConfig, SecretSpec
from conformance.outcomes import accept, require, should
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ids_out_of_order,
    ledger_records,
    make_secret,
    names_vault_failure,
    new_id,
    ref,
    tool,
)
from conformance.vectors import OrderingVector

#: Conditions decided before the vault is read (decisions R7.1).
_BEFORE_VAULT = (
    "malformed",
    "feature-off",
    "no-secret-read",
    "tool-deny",
    "provider-deny",
    "bearing-deny",
)


@dataclass(slots=True)
class _Setup:
    secrets: list[SecretSpec] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)


def _build(mint: Mint, conditions: tuple[str, ...]) -> tuple[HostConfig, str]:
    """Return a configuration and arguments under which every condition applies at once."""
    setup = _Setup()
    good = make_secret(mint)
    setup.secrets.append(good)
    setup.members["good"] = ref(good.id)
    for condition in conditions:
        if condition == "malformed":
            setup.members["bad"] = "{{secret:not-a-uuid}}"
        elif condition == "feature-off":
            setup.policy["secretReferencesEnabled"] = False
        elif condition == "no-secret-read":
            setup.overrides["permissions"] = ()
        elif condition == "tool-deny":
            setup.policy.setdefault("tools", {})[RECORDER.name] = "DENY"
        elif condition == "provider-deny":
            setup.policy.setdefault("providers", {})[PROVIDER] = "DENY"
        elif condition == "bearing-deny":
            setup.policy["secretBearingCalls"] = "DENY"
        elif condition == "no-vault":
            setup.overrides["vault"] = "absent"
        elif condition == "vault-failure":
            setup.overrides["vault"] = "failing:offline"
        elif condition == "ai-provider":
            key = make_secret(mint, tags=("ai-provider",))
            setup.secrets.append(key)
            setup.members["ai"] = ref(key.id)
        elif condition == "unknown-id":
            setup.members["unknown"] = ref(new_id())
        elif condition == "empty-field":
            bare = make_secret(mint, notes=False)
            setup.secrets.append(bare)
            setup.members["empty"] = ref(bare.id, "notes")
        else:
            raise ValueError(f"unknown condition {condition!r}")
    host_config = config(setup.secrets, policy=setup.policy or None, **setup.overrides)
    return host_config, args_json(setup.members)


def _ordering_params() -> list[Any]:
    return [
        pytest.param(
            vector,
            id=vector.id,
            marks=[pytest.mark.req(*vector.requirements), pytest.mark.vector(vector.id)],
        )
        for vector in vectors.load_ordering()
    ]


def _needs(host: RecordingHost, conditions: tuple[str, ...]) -> None:
    if "no-vault" in conditions:
        host.need("vault.absent")
    if "vault-failure" in conditions:
        host.need("vault.failing")


@pytest.mark.req("ORD-003", "LEDG-005", "LEDG-008")
@pytest.mark.parametrize("vector", _ordering_params())
def test_ordering_vector(host: RecordingHost, mint: Mint, vector: OrderingVector) -> None:
    """With several refusals applying, the winner's disposition and message come back."""
    _needs(host, vector.conditions)
    host_config, args = _build(mint, vector.conditions)
    host.reset(host_config)
    outcome = host.invoke(RECORDER.name, args)
    seen = host.observe()
    if vector.level == "MUST":
        disposition = vector.disposition
        require(
            outcome.disposition == disposition,
            "ORD-001",
            f"{outcome.disposition} won; {vector.winner} ({disposition}) should have",
        )
        if vector.message_prefix:
            require(
                outcome.text.startswith(vector.message_prefix),
                ("ORD-001", *[rid for rid in vector.requirements if rid.startswith("MSG-")]),
                f"the refusal does not begin with the {vector.winner} message",
            )
    else:
        disposition = _resolution_winner(outcome, vector)
    require(seen.receipts == (), ("INV2", "SUBST-004"), "the tool ran for a refused call")
    require(seen.approval_requests == (), "ORD-003", "a call refused before the prompt prompted")
    if vector.winner in _BEFORE_VAULT:
        require(
            seen.vault_reads == (),
            ("VAULT-001", "INV3"),
            f"the vault was read for a call refused by {vector.winner}",
        )
    records = ledger_records(seen)
    require(len(records) == 1, "LEDG-005", "a refused call was not recorded once")
    require(
        records[0].get("approvalDisposition") == disposition,
        ("LEDG-008", "LEDG-005"),
        "the ledger records another disposition than the refusal's",
    )


def _resolution_winner(outcome: CallResult, vector: OrderingVector) -> str:
    """Judge a refusal among conditions met within resolution, and return its disposition.

    Their order is a SHOULD (decisions R2.3): the call must end with one of their refusals,
    disposition and message both (MUST), and one other than the vector's winner is reported
    non-strict while the check goes on to judge the rest.
    """
    taken = [
        condition
        for condition in vector.conditions
        if outcome.disposition == _SINGLE[condition][1]
        and outcome.text.startswith(_SINGLE[condition][2])
    ]
    require(
        bool(taken),
        [rid for rid in vector.requirements if rid.startswith("MSG-")],
        f"the call ended {outcome.disposition} with none of the refusals of "
        f"{', '.join(vector.conditions)}",
    )
    should(
        vector.winner in taken,
        "ORD-002",
        f"{taken[0]} won; {vector.winner} ({vector.disposition}) should have",
    )
    return vector.disposition if vector.winner in taken else _SINGLE[taken[0]][1]


_SINGLE: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "feature-off": (
        ("feature-off",),
        "SECRET_FORBIDDEN",
        "Secret references are disabled on this host",
        "MSG-003",
    ),
    "no-secret-read": (
        ("no-secret-read",),
        "SECRET_FORBIDDEN",
        "Secret references require the secret.read permission",
        "MSG-004",
    ),
    "tool-deny": (("tool-deny",), "POLICY_DENIED", "", "MSG-005"),
    "provider-deny": (("provider-deny",), "POLICY_DENIED", "", "MSG-005"),
    "bearing-deny": (
        ("bearing-deny",),
        "SECRET_FORBIDDEN",
        "Secret-bearing calls are refused by host policy",
        "MSG-006",
    ),
    "vault-failure": (
        ("vault-failure",),
        "SECRET_UNRESOLVED",
        "the vault could not be read (",
        "MSG-009",
    ),
    "no-vault": (
        ("no-vault",),
        "SECRET_UNRESOLVED",
        "No secret vault is available on this host",
        "MSG-010",
    ),
    "ai-provider": (("ai-provider",), "SECRET_FORBIDDEN", "secret ", "MSG-011"),
    "unknown-id": (("unknown-id",), "SECRET_UNRESOLVED", "no secret with id ", "MSG-007"),
    "empty-field": (("empty-field",), "SECRET_UNRESOLVED", "secret ", "MSG-008"),
}


@pytest.mark.req("ORD-003", "INV2")
@pytest.mark.parametrize(
    "case",
    # Each case cites its own message rule only: a case that ran says nothing of the others.
    [pytest.param(case, marks=pytest.mark.req(row[3])) for case, row in _SINGLE.items()],
)
def test_single_refusal(host: RecordingHost, mint: Mint, case: str) -> None:
    """Each refusal of the table alone: its disposition, its message, and nothing run."""
    conditions, disposition, prefix, requirement = _SINGLE[case]
    _needs(host, conditions)
    host_config, args = _build(mint, conditions)
    host.reset(host_config)
    outcome = host.invoke(RECORDER.name, args)
    seen = host.observe()
    require(
        outcome.disposition == disposition,
        requirement,
        f"{case} ended {outcome.disposition}, not {disposition}",
    )
    require(outcome.text.startswith(prefix), requirement, f"the {case} message is not the ruling's")
    require(seen.receipts == (), ("INV2", requirement), "the tool ran for a refused call")
    require(seen.approval_requests == (), "ORD-003", "a refused call prompted the operator")


@pytest.mark.req("MSG-007")
def test_unknown_ids_listed_once_in_order(host: RecordingHost, mint: Mint) -> None:
    """Unknown ids are each named once, lower case, in order of first use, joined by ', '."""
    known = make_secret(mint)
    # In descending order, so that a host that sorts the ids it names is caught on every run.
    first, second = ids_out_of_order(2)
    host.reset(config([known]))
    args = args_json(
        {
            "a": ref(first.upper()),
            "k": ref(known.id),
            "b": ref(second, "notes"),
            "c": ref(first, "username"),
        }
    )
    outcome = host.invoke(RECORDER.name, args)
    require(
        outcome.text.startswith(f"no secret with id {first}, {second}")
        and outcome.text.count(first) == 1,
        "MSG-007",
        "the unknown ids are not listed once each, lower case, in order of first use",
    )


@pytest.mark.req("MSG-008")
@pytest.mark.parametrize("field_name", ["notes", "username", "password"])
def test_empty_field_named(host: RecordingHost, mint: Mint, field_name: str) -> None:
    """An empty field is refused as 'secret <id> has no <field>'."""
    secret = make_secret(mint, notes=field_name != "notes")
    blank = SecretSpec(
        secret.id,
        secret.website,
        "" if field_name == "username" else secret.username,
        "" if field_name == "password" else secret.password,
        secret.notes,
    )
    host.reset(config([blank]))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id, field_name)}))
    require(
        outcome.disposition == "SECRET_UNRESOLVED"
        and outcome.text.startswith(f"secret {secret.id} has no {field_name}"),
        "MSG-008",
        f"an empty {field_name} was not refused as 'secret <id> has no {field_name}'",
    )


@pytest.mark.req("MSG-009")
@pytest.mark.parametrize("kind", ["offline", "signed out", "rpc failure"])
def test_vault_failure_names_kind_only(host: RecordingHost, mint: Mint, kind: str) -> None:
    """A vault failure message is the prefix and a kind, never the failure's own text."""
    host.need("vault.failing")
    secret = make_secret(mint)
    host.reset(config([secret], vault=f"failing:{kind}"))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    # A kind is a short plain phrase; an exception's own text or repr brings quotes or colons.
    require(
        outcome.disposition == "SECRET_UNRESOLVED"
        and names_vault_failure(outcome.text)
        and len(outcome.text) < 100,
        "MSG-009",
        "the vault failure is not reported by its kind alone",
    )


#: Tag lists, and whether they make a secret an AI provider's key: the tag ai-provider
#: exactly, among others or alone (a tag list is a set of tags, never one string), and
#: near misses that do not.
_AI_TAGS = {
    "near-miss": (("ai-provider-ish",), False),
    "upper-case": (("AI-PROVIDER",), False),
    "other-tags": (("other", "x"), False),
    "after-another": (("work", "ai-provider"), True),
    "before-another": (("ai-provider", "work"), True),
}


@pytest.mark.req("MSG-011")
@pytest.mark.parametrize("case", list(_AI_TAGS))
def test_only_exact_ai_provider_tag_forbids(host: RecordingHost, mint: Mint, case: str) -> None:
    """A secret with the exact tag ai-provider among its tags, whatever else it carries, is
    refused SECRET_FORBIDDEN; one with other tags only resolves."""
    tags, forbidden = _AI_TAGS[case]
    secret = make_secret(mint, tags=tags)
    host.reset(config([secret]))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    if not forbidden:
        require(
            outcome.disposition == "APPROVED_ONCE",
            "MSG-011",
            f"a secret tagged other than exactly ai-provider ({case}) ended {outcome.disposition}",
        )
        return
    # The refusal's words are test_message_lists.py's to judge; here only the tag test is.
    require(
        outcome.disposition == "SECRET_FORBIDDEN",
        "MSG-011",
        f"a secret tagged ai-provider among other tags ({case}) ended {outcome.disposition}, "
        "not SECRET_FORBIDDEN",
    )


@pytest.mark.req("ORD-004", "LEDG-006")
@pytest.mark.parametrize("with_reference", [True, False], ids=["secret", "plain"])
def test_rbac_withholds_first(host: RecordingHost, mint: Mint, with_reference: bool) -> None:
    """A tool the user may not use is withheld first: no vault read, no prompt, no tool call."""
    secret = make_secret(mint)
    guarded = tool("guarded", HandlerKind.RECORDER, permission="tool.guarded")
    host.reset(
        config(
            [secret],
            tools=(guarded,),
            policy={"secretBearingCalls": "DENY"},
            permissions=("secret.read",),
        )
    )
    args = args_json({"x": ref("not-a-uuid") if with_reference else "plain"})
    outcome = host.invoke(guarded.name, args)
    seen = host.observe()
    require(outcome.is_error, "ORD-004", "a tool the user may not use ran")
    require(
        not outcome.text.startswith("Malformed") and not outcome.text.startswith("Secret"),
        "ORD-004",
        "RBAC was not decided before the secret pre-pass",
    )
    require(
        seen.vault_reads == () and seen.approval_requests == () and seen.receipts == (),
        "ORD-004",
        "a withheld tool read the vault, prompted or ran",
    )
    accept("LEDG-006", "recorded" if ledger_records(seen) else "not-recorded")


@pytest.mark.req("ORD-005", "VAULT-004")
def test_steps_in_design_order(host: RecordingHost, mint: Mint) -> None:
    """Resolve before the prompt, execute after it, ledger after execution."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    during: dict[str, Any] = {}

    def look(_request: Mapping[str, Any], _control: Control) -> Answer:
        seen = host.observe()
        during["reads"] = seen.vault_reads
        during["receipts"] = len(seen.receipts)
        during["records"] = len(ledger_records(seen))
        return Answer.APPROVE

    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), look)
    after = host.observe()
    require(bool(during.get("reads")), "ORD-005", "the vault was not read before the prompt")
    require(during.get("receipts") == 0, "ORD-005", "the tool ran before the prompt")
    require(during.get("records") == 0, "ORD-005", "the ledger was written before execution")
    require(len(after.receipts) == 1, "ORD-005", "the approved tool did not run")
    should(
        after.vault_reads == during.get("reads"),
        "VAULT-004",
        "the vault was read again after the prompt",
    )
