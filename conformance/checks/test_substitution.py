"""Checks of substitution, atomicity, transparency and consistency (decisions R4; invariants
2, 5 and 6).

A call without references must reach its handler byte for byte, read no vault and record empty
``secretRefs``, whatever its text (white space, escapes, number spellings, look-alikes, arrays,
invalid JSON). A call with references must hand the handler each value in one rewrite, with the
raw JSON and the per-key view agreeing at every depth; if any reference fails, nothing runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.canary import Kind, Mint
from conformance.outcomes import require, should
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    new_id,
    ref,
    substitute_oracle,
    value_of,
)
from conformance.via import same_arguments

#: Reference-free argument texts that must reach the handler exactly as written.
TRANSPARENT = {
    "compact": '{"a":"b"}',
    "spaced": '{ "a" :  "b" ,\n\t"n": 1.50 }',
    "escapes": '{"a":"\\u00e9\\n\\/","b":"\\ud83d\\udd11"}',
    "numbers": '{"n":1.50,"e":1E+2,"z":-0.0,"big":123456789012345678901234567890}',
    "order": '{"z":1,"a":2,"m":{"y":true,"b":null}}',
    "look-alikes": '{"a":"{secret:x}","b":"{{secrets:x}}","c":"{{ secret:x}}","d":"secret:x}}"}',
    "array-top": '["{secret:x}", 1, 2]',
    "scalar-top": '"just a string"',
    "number-top": "42",
    "invalid-json": '{"a": "b",}',
    "not-json": "plain text, no braces",
    "empty": "",
    "braces-only": "{{}}{{{{",
    "unicode": '{"k":"日本語 🔑 \\u017fecret"}',
    "duplicate-keys": '{"a":1,"a":2}',
}


@pytest.mark.req("INV5", "SUBST-003", "GRAM-017", "VAULT-003", "MCP-002")
@pytest.mark.parametrize("name", list(TRANSPARENT))
def test_reference_free_call_is_untouched(host: RecordingHost, mint: Mint, name: str) -> None:
    """A reference-free call reaches the handler byte for byte, reads nothing, refs empty."""
    host.reset(config([make_secret(mint)]))
    args = TRANSPARENT[name]
    outcome = host.invoke(RECORDER.name, args)
    seen = host.observe()
    require(not outcome.is_error, "INV5", f"a reference-free call ended {outcome.disposition}")
    require(len(seen.receipts) == 1, "INV5", "the handler did not run once")
    require(
        same_arguments(host, seen.receipts[0].raw, args),
        ("INV5", "SUBST-003", "GRAM-017"),
        "the handler's raw arguments differ from what the agent sent",
    )
    require(seen.vault_reads == (), ("VAULT-003", "INV5"), "a reference-free call read the vault")
    records = ledger_records(seen)
    require(
        len(records) == 1 and records[0].get("secretRefs", []) == [],
        ("INV5", "SUBST-003"),
        "a reference-free call did not record empty secretRefs",
    )


@pytest.mark.req("INV5", "VAULT-003")
def test_reference_free_call_after_a_secret_call(host: RecordingHost, mint: Mint) -> None:
    """A reference-free call after a secret-bearing one is untouched, reads nothing, refs empty."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    reads = host.observe().vault_reads
    args = TRANSPARENT["spaced"]
    outcome = host.invoke(RECORDER.name, args)
    seen = host.observe()
    require(not outcome.is_error, "INV5", f"a reference-free call ended {outcome.disposition}")
    require(
        len(seen.receipts) == 2 and same_arguments(host, seen.receipts[-1].raw, args),
        "INV5",
        "the handler's raw arguments differ from what the agent sent",
    )
    require(
        seen.vault_reads == reads, ("VAULT-003", "INV5"), "a reference-free call read the vault"
    )
    records = ledger_records(seen)
    require(
        len(records) == 2 and records[-1].get("secretRefs", []) == [],
        "INV5",
        "a reference-free call after a secret-bearing one did not record empty secretRefs",
    )


def _nested(first: Any, second: Any) -> str:
    return (
        '{"top": "'
        + ref(first.id)
        + '", "n": 1.50, "deep": {"list": ["a", "'
        + ref(second.id, "username")
        + " and "
        + ref(first.id, "notes")
        + '", {"k": "'
        + ref(second.id)
        + '"}], "flag": true}, "plain": "x"}'
    )


@pytest.mark.req("INV6", "SUBST-001", "SUBST-005")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_raw_and_view_agree(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """After substitution the raw JSON and the per-key view agree at every depth."""
    first, second = make_secret(mint, kind=kind), make_secret(mint, kind=kind)
    host.reset(config([first, second]))
    args = _nested(first, second)
    outcome = host.invoke(RECORDER.name, args)
    require(not outcome.is_error, "SUBST-005", f"the call ended {outcome.disposition}")
    receipt = host.observe().receipts[0]
    raw = json.loads(receipt.raw)
    if receipt.view is not None:
        require(
            json.dumps(receipt.view, sort_keys=True) == json.dumps(raw, sort_keys=True),
            ("INV6", "SUBST-001"),
            "the per-key view and the raw JSON disagree",
        )
    expected = substitute_oracle(json.loads(args), {first.id: first, second.id: second})
    require(
        json.dumps(raw, sort_keys=True) == json.dumps(expected, sort_keys=True),
        "SUBST-005",
        "some reference was not replaced by the value of the field it names",
    )
    should(
        list(raw) == ["top", "n", "deep", "plain"] and '"n": 1.50' in receipt.raw,
        "SUBST-002",
        "substitution changed key order or the written text of a number",
    )


@pytest.mark.req("INV2", "SUBST-004")
@pytest.mark.parametrize("failing", ["unknown-id", "empty-field", "ai-provider"])
def test_all_or_nothing(host: RecordingHost, mint: Mint, failing: str) -> None:
    """One failing reference among good ones: nothing is substituted and the handler never runs."""
    good = make_secret(mint)
    bare = make_secret(mint, notes=False)
    key = make_secret(mint, tags=("ai-provider",))
    host.reset(config([good, bare, key]))
    bad = {
        "unknown-id": ref(new_id()),
        "empty-field": ref(bare.id, "notes"),
        "ai-provider": ref(key.id),
    }[failing]
    outcome = host.invoke(RECORDER.name, args_json({"a": ref(good.id), "b": bad}))
    seen = host.observe()
    require(
        outcome.is_error,
        ("INV2", "SUBST-004"),
        f"a call with a failing reference ({failing}) ran",
    )
    require(seen.receipts == (), ("INV2", "SUBST-004"), "the handler ran with a failed reference")
    require(
        value_of(good, "password") not in outcome.text,
        ("INV2", "SUBST-004"),
        "a good reference's value reached the refusal",
    )


@pytest.mark.req("SUBST-005")
def test_reference_inside_text(host: RecordingHost, mint: Mint) -> None:
    """A reference is replaced wherever it stands in a string, text around it kept."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json(
        {"u": "https://h.example/?u=" + ref(secret.id, "username") + "&p=" + ref(secret.id) + "#x"}
    )
    host.invoke(RECORDER.name, args)
    raw = json.loads(host.observe().receipts[0].raw)
    expected = f"https://h.example/?u={secret.username}&p={secret.password}#x"
    require(raw.get("u") == expected, "SUBST-005", "the text around a reference was not kept")
