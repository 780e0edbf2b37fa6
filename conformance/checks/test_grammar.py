"""Checks of the reference grammar (decisions R1, R2.1, R2.2), one case per grammar vector.

Every vector's argument text is sent as written to an echo tool over a vault whose entries are
fresh canaries. A valid vector must resolve exactly its references and hand the handler the
suite's own substitution; an invalid one must be refused before any prompt, vault read or
handler call, with the required disposition and message, and without the candidate's text; an
acceptable one may take any of its listed alternatives, and the one taken is reported.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from conformance import vectors
from conformance.outcomes import accept, fail, require, should
from conformance.scenario import (
    ECHO,
    RecordingHost,
    config,
    ledger_records,
    substitute_oracle,
    value_of,
    vector_vault,
)
from conformance.vectors import GrammarVector
from conformance.via import same_arguments

_LOCATION_REQUIREMENTS = ("MSG-013", "MSG-014", "GRAM-015", "GRAM-006", "GRAM-018")


def _params(expected: str) -> list[Any]:
    return [
        pytest.param(
            vector,
            id=vector.id,
            marks=[pytest.mark.req(*vector.requirements), pytest.mark.vector(vector.id)],
        )
        for vector in vectors.grammar_corpus()
        if vector.expected == expected
    ]


def _canonical(node: Any) -> str:
    # NaN is not equal to itself; comparing the canonical text compares trees as written. Members
    # are sorted: an object's member order is no part of its value (key order is SUBST-002, a
    # SHOULD), and a view written by a map may list them in another order.
    return json.dumps(node, ensure_ascii=False, allow_nan=True, sort_keys=True)


def _parse(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


#: A double-quoted JSON string token, found in text that need not be JSON as a whole.
_STRING_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)


def _texts(text: str) -> list[str]:
    """``text`` itself and each double-quoted string token in it, decoded."""
    decoded = [_parse(token) for token in _STRING_TOKEN_RE.findall(text)]
    return [text, *(value for ok, value in decoded if ok and isinstance(value, str))]


def _check_substituted_in_place(
    host: RecordingHost, vector: GrammarVector, receipt: Any, ids: tuple[str, ...]
) -> None:
    """An extension vector resolved with its extension kept: every reference replaced by its
    value and none left, in the raw text and in any per-key view."""
    by_id = {secret.id: secret for secret in host.config.secrets}
    seen = [("the raw arguments", _texts(receipt.raw), ("SUBST-005", *ids))]
    if receipt.view is not None:
        view = _texts(json.dumps(receipt.view, ensure_ascii=False, allow_nan=True))
        seen.append(("the per-key view", view, ("SUBST-001", "INV6")))
    for where, texts, named in seen:
        for name in vector.refs:
            secret_id, _, field_name = name.partition(".")
            value = value_of(by_id[secret_id], field_name)
            require(any(value in text for text in texts), named, f"{where} lack {name}'s value")
            require(
                not any(f"secret:{secret_id}" in text.lower() for text in texts),
                named,
                f"a reference to {secret_id} was left in {where}",
            )


def _run(host: RecordingHost, mint: Any, vector: GrammarVector) -> tuple[Any, Any]:
    secrets = vector_vault(mint, vectors.VECTOR_SECRETS)
    host.reset(config(secrets, tools=(ECHO,)))
    outcome = host.invoke(ECHO.name, vector.args)
    return outcome, host.observe()


def _check_resolved(host: RecordingHost, vector: GrammarVector, outcome: Any, seen: Any) -> None:
    """A call the host ran: its references, and what the handler received."""
    ids = vector.requirements
    records = ledger_records(seen)
    require(len(records) == 1, "LEDG-005", f"{len(records)} ledger records for one call")
    refs = records[0].get("secretRefs")
    require(
        refs == list(vector.refs),
        ("GRAM-004", "LEDG-002", *ids),
        f"secretRefs is {refs!r}, expected {list(vector.refs)!r}",
    )
    receipts = seen.receipts
    require(len(receipts) == 1, ids, f"the handler ran {len(receipts)} times")
    receipt = receipts[0]
    if not vector.refs:
        require(
            same_arguments(host, receipt.raw, vector.args),
            ("GRAM-017", "SUBST-003", "INV5"),
            "a call without references did not reach the handler byte for byte",
        )
        require(
            seen.vault_reads == (), ("VAULT-003", "INV5"), "a reference-free call read the vault"
        )
        return
    by_id = {secret.id: secret for secret in host.config.secrets}
    parsed_ok, parsed = _parse(vector.args)
    raw_ok, raw_tree = _parse(receipt.raw)
    if not raw_ok and "extension" in vector.flags and vector.expected == vectors.ACCEPTABLE:
        # Text valid only under a JSON extension may be resolved (decisions R1.8); substituting
        # in place keeps the extension, so no RFC 8259 parser reads the result: the
        # substitution is judged in the text and in the view instead (decisions S1.12).
        _check_substituted_in_place(host, vector, receipt, ids)
        return
    require(raw_ok, ("SUBST-001", "INV6"), "the substituted arguments are not JSON")
    if receipt.view is not None:
        require(
            _canonical(receipt.view) == _canonical(raw_tree),
            ("SUBST-001", "INV6"),
            "the handler's per-key view and raw JSON disagree",
        )
    if parsed_ok:
        # A host that resolved a look-alike vector read its marker as one (decisions R1.3).
        expected = substitute_oracle(parsed, by_id, folded_markers="GRAM-007" in ids)
        require(
            _canonical(raw_tree) == _canonical(expected),
            ("SUBST-005", *ids),
            "the handler did not receive each reference replaced by its field's value",
        )


def _check_refused(vector: GrammarVector, outcome: Any, seen: Any, *, strict: bool = True) -> None:
    """A refused call: disposition, message, and nothing done."""
    ids = vector.requirements
    # A wrong disposition breaks the vector's grammar rules, not the message rules it lists.
    require(
        outcome.disposition == vector.disposition,
        [rid for rid in ids if rid.startswith("GRAM-")] or ids,
        f"disposition {outcome.disposition}, expected {vector.disposition}",
    )
    # A vault read means a candidate the grammar rejects was taken as a reference.
    grammar = [rid for rid in ids if rid.startswith("GRAM-") and rid not in _LOCATION_REQUIREMENTS]
    require(
        seen.vault_reads == (),
        ("VAULT-001", *grammar),
        "a call refused while parsing read the vault",
    )
    for canary in vector.canaries:
        require(canary not in outcome.text, "MSG-012", "the refusal quotes the candidate's text")
    require(seen.receipts == (), ("INV2", "SUBST-004"), "the handler ran for a refused call")
    require(seen.approval_requests == (), "ORD-003", "a refused call prompted the operator")
    records = ledger_records(seen)
    require(len(records) == 1, "LEDG-005", f"{len(records)} ledger records for a refused call")
    record = records[0]
    require(
        record.get("approvalDisposition") == vector.disposition,
        ("LEDG-008", "LEDG-005"),
        "the ledger records another disposition than the refusal's",
    )
    sanitized = str(record.get("sanitizedArgs", ""))
    should(
        not any(canary in sanitized for canary in vector.canaries),
        "LEDG-007",
        f"{vector.id}: sanitizedArgs keeps a malformed candidate's body",
    )
    prefix = vector.message_prefix
    if prefix is not None:
        if "not-object" in vector.flags:
            should(
                outcome.text.startswith(prefix),
                "GRAM-018",
                f"{vector.id}: the non-object refusal does not begin with the ruling's words",
            )
        else:
            require(
                outcome.text.startswith(prefix),
                ("MSG-001", "MSG-002") if "key" in vector.flags else "MSG-001",
                "the refusal message does not begin with the ruling's words",
            )
    if vector.reason is not None and vector.pointer is not None and vector.offset is not None:
        located = (
            f"Malformed secret reference at {vector.pointer} offset {vector.offset} "
            f"length {vector.length}: {vector.reason}"
        )
        named = [rid for rid in _LOCATION_REQUIREMENTS if rid in ids] or ["MSG-013"]
        should(
            outcome.text.startswith(located),
            named[0],
            f"{vector.id}: the message does not locate the candidate as the ruling's form does",
        )


#: The depth a host SHOULD still read to the bottom (decisions R1.9).
_DEPTH_FLOOR = 64


def _depth(args: str) -> int:
    """Return how many arrays and objects nest at the deepest point of JSON text ``args``."""
    deepest, stack = 0, [(json.loads(args), 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


@pytest.mark.req("SUBST-005", "INV6", "ORD-003", "GRAM-041", "GRAM-042")
@pytest.mark.parametrize("vector", _params(vectors.VALID))
def test_valid_vector_resolves(host: RecordingHost, mint: Any, vector: GrammarVector) -> None:
    """A valid vector runs after one prompt and hands the handler exactly its substitution. A
    host may stop reading at a depth of its own and refuse what lies deeper, failing closed
    (decisions R1.9): a deep vector so refused is reported against the 64-level floor."""
    outcome, seen = _run(host, mint, vector)
    if "deep" in vector.flags and outcome.disposition == "SECRET_UNRESOLVED":
        if host.has("observe.receipts"):
            require(seen.receipts == (), "GRAM-041", f"{vector.id}: a refused call ran")
        depth = _depth(vector.args)
        should(
            depth > _DEPTH_FLOOR,
            "GRAM-042",
            f"{vector.id}: a reference {depth} levels deep was refused, above the 64-level floor",
        )
        return
    require(
        not outcome.is_error,
        vector.requirements,
        f"a valid vector ended {outcome.disposition}",
    )
    _check_resolved(host, vector, outcome, seen)


@pytest.mark.req("INV2", "SUBST-004", "ORD-003", "VAULT-001", "LEDG-005")
@pytest.mark.parametrize("vector", _params(vectors.INVALID))
def test_invalid_vector_refused(host: RecordingHost, mint: Any, vector: GrammarVector) -> None:
    """An invalid vector is refused before any prompt, read or handler call, without its text."""
    outcome, seen = _run(host, mint, vector)
    require(outcome.is_error, vector.requirements, "an invalid vector was not refused")
    _check_refused(vector, outcome, seen)


@pytest.mark.parametrize("vector", _params(vectors.ACCEPTABLE))
def test_acceptable_vector(host: RecordingHost, mint: Any, vector: GrammarVector) -> None:
    """An acceptable vector takes one of its listed alternatives; which one is reported."""
    outcome, seen = _run(host, mint, vector)
    requirement = next(
        (rid for rid in ("GRAM-007", "GRAM-019") if rid in vector.requirements),
        vector.requirements[0],
    )
    records = ledger_records(seen)
    refs = records[0].get("secretRefs") if records else None
    if outcome.is_error:
        refusing = "refuse" if "refuse" in vector.alternatives else "marker"
        if refusing not in vector.alternatives:
            fail(requirement, "the host refused a vector that has no refusing alternative")
        if refusing == "marker" and vector.refs:
            # As a marker, a valid look-alike reference must resolve, not be refused.
            fail(requirement, f"a look-alike marker was refused as {outcome.disposition}")
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            requirement,
            f"refused as {outcome.disposition}, not SECRET_UNRESOLVED",
        )
        require(seen.receipts == (), ("INV2", "SUBST-004"), "the handler ran for a refused call")
        accept(requirement, refusing)
        return
    if "literal" in vector.alternatives and not refs:
        receipt = seen.receipts[0] if seen.receipts else None
        require(
            receipt is not None and same_arguments(host, receipt.raw, vector.args),
            ("GRAM-017", "INV5"),
            "literal text did not reach the handler byte for byte",
        )
        accept(requirement, "literal")
        return
    choice = "resolve" if "resolve" in vector.alternatives else "marker"
    _check_resolved(host, vector, outcome, seen)
    accept(requirement, choice)
