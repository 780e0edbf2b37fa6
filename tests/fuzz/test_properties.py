"""The fuzz properties under the loaded profile: parse, arbitrary text, substitute, scrub,
sanitizer and the whole governed path."""

from __future__ import annotations

import json

import pytest

from fuzz import profiles
from fuzz.properties import check_sanitize, every_string, prop
from fuzz.strategies import ArgCase, Template


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


_COLLIDING = (
    '{"{{secret:bad-one-canary}}": "{{secret:6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5}}", '
    '"{{secret:bad-two-canary}}": 1}'
)


def _colliding_case() -> ArgCase:
    return ArgCase(
        raw=_COLLIDING,
        template=Template("object"),
        references=(),
        problem=None,
        shape="object",
        marker=True,
        canaries=("bad-one-canary", "bad-two-canary"),
        spellings=("{{secret:6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5}}",),
    )


def test_every_string_reads_keys_that_repeat() -> None:
    """Decoding member by member keeps both members of a repeated key, in document order."""
    assert every_string('{"a": "x", "a": ["y", {"b": "z"}]}') == ["a", "x", "a", "y", "b", "z"]
    assert every_string("{") is None


@pytest.mark.req("LEDG-007")
def test_keys_that_redact_alike_keep_the_reference_legible() -> None:
    """Two malformed keys both redact to {{secret:[REDACTED]}}; the valid reference in the first
    member's value is still read (the false alarm of FUZZ-0003)."""
    check_sanitize(_colliding_case())


@pytest.mark.req("LEDG-007")
def test_sanitize_property_catches_a_dropped_member(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sanitizer that merges repeated keys, dropping the first member, fails the property."""
    import reference_impl

    original = reference_impl.sanitize_arguments

    def merging(raw: str, limit: int = 10_000, *, marked: bool | None = None) -> str:
        return json.dumps(json.loads(original(raw, limit)))

    # fuzz.properties calls it as ``host.sanitize_arguments``, ``host`` being reference_impl.
    monkeypatch.setattr(reference_impl, "sanitize_arguments", merging)
    with pytest.raises(AssertionError, match="not kept legible"):
        check_sanitize(_colliding_case())
