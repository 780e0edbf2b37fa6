"""The fuzz properties under the loaded profile: parse, arbitrary text, substitute, scrub,
sanitizer and the whole governed path."""

from __future__ import annotations

import pytest

from fuzz import profiles
from fuzz.properties import prop


@pytest.mark.req(
    "GRAM-001", "GRAM-002", "GRAM-003", "GRAM-004", "GRAM-005", "GRAM-006", "GRAM-008",
    "GRAM-009", "GRAM-010", "GRAM-011", "GRAM-012", "GRAM-013", "GRAM-014", "GRAM-015",
    "GRAM-016", "GRAM-018", "MSG-001", "MSG-002", "MSG-012", "MSG-013", "MSG-014",
)  # fmt: skip
def test_parse_finds_every_planted_reference_and_refuses_every_malformed_one() -> None:
    """Planted references are found with their identity; malformed ones are refused, located,
    with their static reason and none of their text."""
    prop("parse", profiles.scaled())()


@pytest.mark.req("GRAM-001", "GRAM-009", "GRAM-016", "GRAM-017")
def test_arbitrary_text_is_never_refused_without_a_marker() -> None:
    """On arbitrary Unicode the scan never misses a marker, a parse ends only in documented
    refusals, text without a marker is never refused, and the scan matches a hand-written one."""
    prop("text", profiles.scaled(0.5))()


@pytest.mark.req("SUBST-001", "SUBST-002", "SUBST-003", "SUBST-004", "SUBST-005", "INV2", "INV6")
def test_substitution_is_one_rewrite_all_or_nothing() -> None:
    """Substitution fails whole when a value is missing, leaves no reference text, agrees with
    the per-key view, and with no reference keeps the arguments byte for byte."""
    prop("substitute", profiles.scaled())()


@pytest.mark.req(
    "SCRUB-001", "SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006", "SCRUB-007", "SCRUB-009"
)
def test_scrubbing_leaves_no_form_and_matches_the_leftmost_longest_oracle() -> None:
    """No form of a value of 8 or more code points survives, and the scrubber equals the naive
    leftmost-longest oracle, for overlapping, prefix and placeholder-like values."""
    prop("scrub", profiles.scaled(0.5))()


@pytest.mark.req("LEDG-007", "MSG-012")
def test_sanitizer_leaves_no_malformed_body() -> None:
    """No body of a malformed candidate survives sanitizing; valid references stay legible."""
    prop("sanitize", profiles.scaled())()


@pytest.mark.req("INV1", "INV1-ECHO", "INV2", "INV5", "LEDG-005", "LOG-001", "APPR-005")
def test_whole_path_with_an_echo_handler_leaks_nothing() -> None:
    """A generated call through the whole path ends as its ground truth says, runs the handler
    only when approved, and leaves no value on any surface."""
    prop("pipeline", profiles.scaled())()
