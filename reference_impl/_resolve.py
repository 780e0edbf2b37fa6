"""Step [7], resolution: one walk of the vault for every reference of the call.

This module owns reading the values a call needs, in one walk of 200-entry pages that stops when
every id is found or a page comes back short (decisions R7.1), and deciding the resolution
refusals in their order: vault failure, AI-provider key, unknown id, empty field or a value
holding a lone surrogate (R2.3, R5.2). It
must never read the vault twice for one call, or put a failure's own message in a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from reference_impl._limits import AI_PROVIDER_TAG, VAULT_PAGE_SIZE
from reference_impl._types import Disposition, Reference, Refusal, SecretRecord, SecretValue
from reference_impl._vault import Vault, VaultError

NO_VAULT_MESSAGE = "No secret vault is available on this host"

#: A surrogate code point: in a Python string every one of them is lone, since a pair read from
#: JSON is decoded to the character it encodes.
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _walk(vault: Vault, wanted: set[str]) -> dict[str, SecretRecord]:
    found: dict[str, SecretRecord] = {}
    page = 0
    while wanted:
        records = vault.read_page(page, VAULT_PAGE_SIZE)
        for record in records:
            key = record.id.lower()
            if key in wanted:
                found[key] = record
                wanted.discard(key)
        if len(records) < VAULT_PAGE_SIZE:
            break
        page += 1
    return found


def resolve(
    vault: Vault | None, references: Sequence[Reference]
) -> tuple[tuple[tuple[Reference, SecretValue], ...], tuple[SecretRecord, ...]] | Refusal:
    """Read every reference's value.

    Args:
        vault: The vault, or ``None`` on a host built without one.
        references: Distinct references, in order of first use.

    Returns:
        (reference, value) pairs and the matching records, both in the order of
        ``references``; or the first refusal that applies.
    """
    if vault is None:
        return Refusal(Disposition.SECRET_UNRESOLVED, NO_VAULT_MESSAGE, "no-vault", "MSG-010")
    ids = list(dict.fromkeys(reference.id for reference in references))
    try:
        found = _walk(vault, set(ids))
    except VaultError as error:
        return _vault_failure(error.kind)
    except Exception:  # a port's own bug is a vault failure, never a crash
        return _vault_failure("unexpected error")
    for secret_id in ids:
        record = found.get(secret_id)
        if record is not None and AI_PROVIDER_TAG in record.tags:
            return Refusal(
                Disposition.SECRET_FORBIDDEN,
                f"secret {secret_id} is an AI provider key; configure the provider in the "
                "host's AI settings",
                "ai-provider",
                "MSG-011",
            )
    missing = [secret_id for secret_id in ids if secret_id not in found]
    if missing:
        return Refusal(
            Disposition.SECRET_UNRESOLVED,
            "no secret with id " + ", ".join(missing),
            "unknown-id",
            "MSG-007",
        )
    pairs: list[tuple[Reference, SecretValue]] = []
    records: list[SecretRecord] = []
    for reference in references:
        record = found[reference.id]
        value = record.value(reference.field)
        if not value or _LONE_SURROGATE.search(value.reveal()) is not None:
            # A lone surrogate (a vault stores one through a JSON escape) is refused as a value
            # the host cannot deliver: scrubbing could not find every spelling tools give it
            # (decisions R5.2 allows refusing it or scrubbing it; this host refuses).
            return Refusal(
                Disposition.SECRET_UNRESOLVED,
                f"secret {reference.id} has no {reference.field.value}",
                "empty-field",
                "MSG-008",
            )
        pairs.append((reference, value))
        records.append(record)
    return tuple(pairs), tuple(records)


def _vault_failure(kind: str) -> Refusal:
    # Only the kind follows the prefix: a failure's own message could quote anything.
    return Refusal(
        Disposition.SECRET_UNRESOLVED,
        f"the vault could not be read ({kind})",
        "vault-failure",
        "MSG-009",
    )
