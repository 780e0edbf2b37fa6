"""Step [13], the cap: 150,000 characters, the note about the cut included."""

from __future__ import annotations

import pytest

from reference_impl import RESULT_CAP_CHARS, cap

pytestmark = pytest.mark.req("CAP-001")


def test_text_within_the_cap_is_unchanged() -> None:
    """A result at the cap is returned as it is."""
    text = "x" * RESULT_CAP_CHARS
    assert cap(text) is text


@pytest.mark.parametrize("extra", [1, 100, 1_000_000])
def test_longer_text_is_cut_to_the_cap_note_included(extra: int) -> None:
    """A longer result is cut so that it and the note fill exactly the cap."""
    text = "y" * (RESULT_CAP_CHARS + extra)
    out = cap(text)
    assert len(out) == RESULT_CAP_CHARS
    assert out.endswith(f"[result cut to {RESULT_CAP_CHARS} characters; it had {len(text)}]")
    assert out.startswith("y" * 1000)


def test_a_smaller_limit_is_honoured() -> None:
    """The limit is a parameter for hosts and tests."""
    assert len(cap("z" * 500, limit=200)) == 200
