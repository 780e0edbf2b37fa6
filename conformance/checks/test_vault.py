"""Checks of vault reads (decisions R7.1, R3.6; design invariant 3).

A vault of 450 entries makes paging visible: ids on the first, second and third page of 200
must be found in one walk that stops as soon as every id is found, or at a short page. Nothing
is read for a reference-free call or for a call refused at steps [2] to [6].
"""

from __future__ import annotations

import pytest

from conformance.canary import Mint
from conformance.host import SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    VAULT_PAGE,
    RecordingHost,
    args_json,
    config,
    make_secret,
    new_id,
    ref,
)

#: The vault's entries: three pages, the last a short one.
VAULT_SIZE = 450


def _vault(mint: Mint, size: int) -> list[SecretSpec]:
    # Only the entries a check references need canaries; the rest are cheap and short.
    return [
        SecretSpec(new_id(), f"bulk-{index}.example", f"u{index}", f"p{index}")
        for index in range(size)
    ]


_PAGING = {
    "first-page": ((10,), (0,)),
    "second-page": ((250,), (0, 1)),
    "third-page": ((420,), (0, 1, 2)),
    "first-and-third": ((10, 420), (0, 1, 2)),
    "second-twice": ((250, 260), (0, 1)),
    "unknown": ((None,), (0, 1, 2)),
}


@pytest.mark.req("VAULT-002")
@pytest.mark.parametrize("case", list(_PAGING))
def test_one_walk_of_pages(host: RecordingHost, mint: Mint, case: str) -> None:
    """One walk of 200-entry pages, stopping when every id is found or a page comes back short."""
    positions, pages = _PAGING[case]
    entries = _vault(mint, VAULT_SIZE)
    members = {}
    for number, position in enumerate(positions):
        if position is None:
            members[f"r{number}"] = ref(new_id())
            continue
        real = make_secret(mint, secret_id=entries[position].id)
        entries[position] = real
        members[f"r{number}"] = ref(real.id)
    host.reset(config(entries))
    host.invoke(RECORDER.name, args_json(members))
    reads = host.observe().vault_reads
    require(
        reads == pages,
        "VAULT-002",
        f"the call read pages {list(reads)}; one walk reads {list(pages)}",
    )


@pytest.mark.req("VAULT-002")
def test_exact_multiple_stops_at_empty_page(host: RecordingHost, mint: Mint) -> None:
    """With exactly 400 entries an unknown id is looked for on pages 0, 1 and the empty 2."""
    host.reset(config(_vault(mint, 2 * VAULT_PAGE)))
    host.invoke(RECORDER.name, args_json({"x": ref(new_id())}))
    reads = host.observe().vault_reads
    require(reads == (0, 1, 2), "VAULT-002", f"the call read pages {list(reads)}")


@pytest.mark.req("VAULT-003", "INV5")
def test_reference_free_reads_nothing(host: RecordingHost, mint: Mint) -> None:
    """A call without references reads nothing from the vault."""
    host.reset(config(_vault(mint, 10)))
    host.invoke(RECORDER.name, args_json({"x": "{secret:x} {{secrets:y}}"}))
    require(host.observe().vault_reads == (), "VAULT-003", "a reference-free call read the vault")


_REFUSED_BEFORE_READ = {
    "feature-off": ({"secretReferencesEnabled": False}, {}),
    "no-secret-read": (None, {"permissions": ()}),
    "tool-deny": ({"tools": {RECORDER.name: "DENY"}}, {}),
    "provider-deny": ({"providers": {PROVIDER: "DENY"}}, {}),
    "bearing-deny": ({"secretBearingCalls": "DENY"}, {}),
    "malformed": (None, {}),
}


@pytest.mark.req("VAULT-001", "INV3")
@pytest.mark.parametrize("case", list(_REFUSED_BEFORE_READ))
def test_no_read_before_prepass_passes(host: RecordingHost, mint: Mint, case: str) -> None:
    """A call refused at steps [2] to [6] never reads the vault."""
    policy, overrides = _REFUSED_BEFORE_READ[case]
    secret = make_secret(mint)
    host.reset(config([secret], policy=policy, **overrides))
    members = {"x": ref(secret.id)}
    if case == "malformed":
        members["y"] = "{{secret:zz}}"
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(outcome.is_error, "VAULT-001", f"a call that {case} should refuse ran")
    require(
        host.observe().vault_reads == (),
        ("VAULT-001", "INV3"),
        f"the vault was read for a call refused by {case}",
    )
