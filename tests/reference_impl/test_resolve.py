"""Step [7], resolution: one walk of 200-entry pages, and the resolution refusals."""

from __future__ import annotations

import uuid

import pytest

from reference_impl import (
    NO_VAULT_MESSAGE,
    VAULT_PAGE_SIZE,
    Disposition,
    Field,
    InMemoryVault,
    Reference,
    Refusal,
    resolve,
)
from tests.reference_impl.support import ID_A, ID_MISSING, record


def filled(count: int) -> tuple[InMemoryVault, list[str]]:
    ids = [str(uuid.UUID(int=index + 1)) for index in range(count)]
    vault = InMemoryVault(
        record(i, f"site{n}", f"user-{n}", f"password-{n:08d}") for n, i in enumerate(ids)
    )
    return vault, ids


def pw(secret_id: str) -> Reference:
    return Reference(secret_id, Field.PASSWORD)


@pytest.mark.req("VAULT-002")
def test_pages_hold_200_entries() -> None:
    """The page size is the design's 200."""
    assert VAULT_PAGE_SIZE == 200


@pytest.mark.req("VAULT-002")
@pytest.mark.parametrize(
    ("count", "wanted", "reads"),
    [
        pytest.param(450, [0], [0], id="found-on-first-page"),
        pytest.param(450, [5, 420], [0, 1, 2], id="found-on-third-page"),
        pytest.param(450, [199, 200], [0, 1], id="page-boundary"),
        pytest.param(450, [None], [0, 1, 2], id="missing-stops-at-short-page"),
        pytest.param(400, [None], [0, 1, 2], id="missing-full-pages-then-empty"),
        pytest.param(0, [None], [0], id="empty-vault"),
    ],
)
def test_one_walk_stops_when_found_or_short(
    count: int, wanted: list[int | None], reads: list[int]
) -> None:
    """The walk reads pages in order and stops when every id is found or a page is short."""
    vault, ids = filled(count)
    references = [pw(ID_MISSING if index is None else ids[index]) for index in wanted]
    resolve(vault, references)
    assert vault.reads == reads


@pytest.mark.req("VAULT-002", "GRAM-004")
def test_values_come_back_in_reference_order() -> None:
    """Each reference gets its own field's value, in the order asked, ids matched in lower case."""
    vault = InMemoryVault(
        [record(ID_A.upper(), "example.com", "user-name-1", "password-1234", "some notes")]
    )
    outcome = resolve(
        vault, [Reference(ID_A, Field.NOTES), Reference(ID_A, Field.USERNAME), pw(ID_A)]
    )
    assert not isinstance(outcome, Refusal)
    pairs, records = outcome
    revealed = [value.reveal() for _, value in pairs]
    assert revealed == ["some notes", "user-name-1", "password-1234"]
    assert [r.website for r in records] == ["example.com"] * 3


@pytest.mark.req("MSG-010")
def test_no_vault() -> None:
    """A host without a vault refuses every reference."""
    outcome = resolve(None, [pw(ID_A)])
    assert isinstance(outcome, Refusal)
    assert (outcome.disposition, outcome.message) == (
        Disposition.SECRET_UNRESOLVED,
        NO_VAULT_MESSAGE,
    )


@pytest.mark.req("MSG-009")
def test_a_failure_on_a_later_page_is_a_vault_failure() -> None:
    """A walk that fails midway refuses the call and returns nothing."""
    vault, ids = filled(450)

    original = vault.read_page

    def flaky(page: int, page_size: int) -> object:
        if page == 1:
            vault.fail_with = "rpc failure"
        return original(page, page_size)

    vault.read_page = flaky  # type: ignore[method-assign,assignment]
    outcome = resolve(vault, [pw(ids[0]), pw(ids[300])])
    assert isinstance(outcome, Refusal)
    assert outcome.message == "the vault could not be read (rpc failure)"
