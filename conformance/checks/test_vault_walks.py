"""Checks of the vault walk in the roles the paging checks never gave it (design: syntax;
decisions R1.2, R7.1).

This module owns four things the 450-entry vault of ``test_vault.py`` leaves out: a vault
that lists an id in upper case (the id a reference names is the one the vault returns, in
upper or lower case hex, and both spellings are one reference), a walk made anew by every
call (a value is held for its own call only, so a later call never reads it from an earlier
call's walk), a walk past the tenth page (it stops only when every id is found or a page
comes back short, so a safety cap on pages loses secrets), and a vault that fails in the
middle of a walk (a page that could not be read is no end of the vault, so the call is a vault
failure, never a list of ids the vault does not hold). Only the referenced entries are
canaries; the filler entries are short plain values the sweep needs not guard. It prints ids,
page numbers and counts, never a value.
"""

from __future__ import annotations

import json
from typing import Final

import pytest

from conformance.alphabets import vault_failure_kinds
from conformance.canary import Mint
from conformance.host import SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    ECHO,
    RECORDER,
    VAULT_PAGE,
    RecordingHost,
    args_json,
    config,
    filler,
    ledger_records,
    make_secret,
    name_of,
    names_vault_failure,
    new_id,
    placeholder,
    ref,
)

#: The large vault: 13 full pages and a short fourteenth, past any cap of ten pages (2,000
#: secrets) a walk might keep against a server that never returns a short page.
LARGE_VAULT: Final = 2_650

#: Where the referenced entry of the large vault stands: on its last, short page.
LARGE_POSITION: Final = 2_640


#: The vault a walk fails in the middle of: three full pages and an empty fourth, each
#: referenced entry on a page of its own.
MIDWALK_VAULT: Final = 3 * VAULT_PAGE

#: Where the referenced entries stand: on the first page and on the last full one.
MIDWALK_POSITIONS: Final = (7, 2 * VAULT_PAGE + 50)


def _mixed_case(secret_id: str) -> str:
    """Return ``secret_id`` with its letters in upper and lower case by turns."""
    return "".join(
        char.upper() if index % 2 else char.lower() for index, char in enumerate(secret_id)
    )


@pytest.mark.req("GRAM-004", "SUBST-005", "SCRUB-007", "LEDG-002")
def test_vault_id_in_upper_case_resolves(host: RecordingHost, mint: Mint) -> None:
    """A secret the vault lists under an upper-case id, referenced in lower, upper and mixed
    case, resolves as one secret: its values are delivered, an echo is scrubbed with the
    placeholders of the lower-case id, and the ledger names the references in lower case."""
    base = make_secret(mint)
    stored = base.id.upper()
    secret = SecretSpec(stored, base.website, base.username, base.password, base.notes)
    host.reset(config([make_secret(mint), secret], tools=(ECHO,)))
    members = {
        "lower": ref(stored.lower()),
        "upper": ref(stored, "password"),
        "mixed": ref(_mixed_case(stored), "notes"),
    }
    outcome = host.invoke(ECHO.name, args_json(members))
    require(
        outcome.disposition == "APPROVED_ONCE",
        "GRAM-004",
        f"a secret the vault lists under the upper-case id {stored}, referenced in lower, upper "
        f"and mixed case, ended {outcome.disposition}, not APPROVED_ONCE",
    )
    seen = host.observe()
    if seen.judges("observe.receipts", "SUBST-005"):
        raw = json.loads(seen.receipts[0].raw) if len(seen.receipts) == 1 else None
        expected = {"lower": secret.password, "upper": secret.password, "mixed": secret.notes}
        changed = sorted(
            key
            for key, want in expected.items()
            if not isinstance(raw, dict) or raw.get(key) != want
        )
        require(
            not changed,
            "SUBST-005",
            f"argument(s) {', '.join(changed)} naming a secret the vault lists in upper case "
            "did not reach the handler as its value",
        )
    missing = [
        field_name
        for field_name in ("password", "notes")
        if placeholder(stored, field_name) not in outcome.text
    ]
    require(
        not missing,
        "SCRUB-007",
        f"an echo of the {' and '.join(missing)} of a secret the vault lists in upper case "
        "came back without the placeholder of its lower-case id",
    )
    if seen.judges("observe.ledger", "LEDG-002"):
        records = ledger_records(seen)
        names = [name_of(stored), name_of(stored, "notes")]
        recorded = records[-1].get("secretRefs") if records else None
        require(
            recorded == names,
            "LEDG-002",
            f"the call's record lists secretRefs {recorded}, not {names}",
        )


@pytest.mark.req("VAULT-002")
def test_every_call_walks_the_vault(host: RecordingHost, mint: Mint) -> None:
    """Two calls in a row naming the same secret each walk the vault from its first page: a
    value is held for its own call only, never served to a later call from an earlier walk."""
    secret = make_secret(mint)
    host.reset(config([make_secret(mint), secret], tools=(RECORDER,)))
    args = args_json({"x": ref(secret.id)})
    judged = host.has("observe.vault-reads")
    for number in (1, 2):
        before = len(host.observe().vault_reads) if judged else 0
        outcome = host.invoke(RECORDER.name, args)
        require(
            outcome.disposition == "APPROVED_ONCE",
            "VAULT-002",
            f"call {number} of two naming the same secret ended {outcome.disposition}, "
            "not APPROVED_ONCE",
        )
        seen = host.observe()
        if not seen.judges("observe.vault-reads", "VAULT-002"):
            return
        pages = seen.vault_reads[before:]
        require(
            pages == (0,),
            "VAULT-002",
            f"call {number} of two naming the same secret read pages {list(pages)}, not its "
            "own walk [0]",
        )


@pytest.mark.req("VAULT-002")
def test_walk_past_ten_pages(host: RecordingHost, mint: Mint) -> None:
    """A secret on the fourteenth page of a vault of 2,650 entries is found by one walk of 14
    pages, which stops at that short page and at no cap before it."""
    entries = list(filler([new_id() for _ in range(LARGE_VAULT)]))
    secret = make_secret(mint, secret_id=entries[LARGE_POSITION].id)
    entries[LARGE_POSITION] = secret
    host.reset(config(entries, tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    page = LARGE_POSITION // VAULT_PAGE
    require(
        outcome.disposition == "APPROVED_ONCE",
        "VAULT-002",
        f"a call naming the secret at entry {LARGE_POSITION + 1} of {LARGE_VAULT} (page "
        f"{page}) ended {outcome.disposition}, not APPROVED_ONCE",
    )
    seen = host.observe()
    if seen.judges("observe.vault-reads", "VAULT-002"):
        pages = tuple(range(page + 1))
        require(
            seen.vault_reads == pages,
            "VAULT-002",
            f"the call read pages {list(seen.vault_reads)}; one walk reads 0 to {page}",
        )


@pytest.mark.req("MSG-009", "VAULT-002", "INV2")
@pytest.mark.parametrize("failing_from", [1, 2])
def test_vault_failing_in_the_middle_of_a_walk(
    host: RecordingHost, mint: Mint, failing_from: int
) -> None:
    """A vault that serves its first pages and then fails, on a call naming a secret on the
    first page and one past the failure: the walk has not seen the vault's end, so the call is
    refused as a vault failure naming its kind, never as an unknown id, and nothing runs."""
    host.need("vault.failing", "vault.failing-from-page")
    entries = list(filler([new_id() for _ in range(MIDWALK_VAULT)]))
    secrets: list[SecretSpec] = []
    for position in MIDWALK_POSITIONS:
        secret = make_secret(mint, secret_id=entries[position].id)
        entries[position] = secret
        secrets.append(secret)
    # A kind the protocol's examples do not name, so that a host cannot know it in advance.
    kind = vault_failure_kinds(failing_from)[-1]
    host.reset(
        config(
            entries,
            tools=(RECORDER,),
            vault=f"failing:{kind}",
            vault_failing_from_page=failing_from,
        )
    )
    outcome = host.invoke(
        RECORDER.name, args_json({"first": ref(secrets[0].id), "later": ref(secrets[1].id)})
    )
    where = (
        f"a vault that fails from page {failing_from} (kind {kind!r}), on a call naming entries "
        f"{MIDWALK_POSITIONS[0] + 1} and {MIDWALK_POSITIONS[1] + 1} of {MIDWALK_VAULT}"
    )
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "MSG-009",
        f"{where} ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    require(
        names_vault_failure(outcome.text),
        "MSG-009",
        f"{where} was not refused as a vault failure named by its kind"
        + (
            ": it named an id the vault does not hold"
            if "no secret with id" in outcome.text
            else ""
        ),
    )
    seen = host.observe()
    require(seen.receipts == (), "INV2", f"the tool ran through {where}")
    if seen.judges("observe.vault-reads", "VAULT-002"):
        # A page read again after its failure (a host's retry) is left to the rulings' silence;
        # a page past the failure, or one skipped before it, is no walk of this vault.
        require(
            sorted(set(seen.vault_reads)) == list(range(failing_from + 1)),
            "VAULT-002",
            f"{where} read pages {list(seen.vault_reads)}; its walk reads 0 to {failing_from} "
            "and stops at the failure",
        )
