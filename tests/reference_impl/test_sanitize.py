"""The argument sanitizer behind sanitizedArgs and the approval request (decisions R6.4)."""

from __future__ import annotations

import json

import pytest

from reference_impl import REDACTED_CANDIDATE, redact_text, sanitize_arguments
from reference_impl._limits import SANITIZED_ARGS_CHARS
from tests.reference_impl.support import ID_A, ID_B, ref

pytestmark = pytest.mark.req("LEDG-007")


def sanitized_value(raw: str, key: str = "a") -> object:
    return json.loads(sanitize_arguments(raw))[key]


def test_valid_references_stay_legible() -> None:
    """Valid references of any spelling are kept as the agent wrote them."""
    raw = json.dumps({"a": "x " + ref(ID_A) + " " + "{{SECRET:" + ID_B.upper() + ".notes}}"})
    assert sanitize_arguments(raw) == raw


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("{{secret:hunter2}}", REDACTED_CANDIDATE, id="bad-id"),
        pytest.param("{{secret:hunter2}}tail", REDACTED_CANDIDATE + "tail", id="text-after"),
        pytest.param("{{secret:{{hunter2}}}}", REDACTED_CANDIDATE, id="nested-braces"),
        pytest.param("{{secret:{{hunter2}}}}x}}", REDACTED_CANDIDATE + "x}}", id="balanced"),
        pytest.param("pre {{secret:hunter2", "pre " + REDACTED_CANDIDATE, id="unterminated"),
        pytest.param("{{secret:hunter2}x", REDACTED_CANDIDATE + "x", id="one-brace"),
        pytest.param(
            ref(ID_A) + "{{secret:" + ID_A + ".totp}}",
            ref(ID_A) + REDACTED_CANDIDATE,
            id="bad-field-beside-valid",
        ),
    ],
)
def test_malformed_candidates_are_redacted(text: str, expected: str) -> None:
    """A malformed candidate is redacted up to the brace that closes it; the rest stays."""
    assert redact_text(text) == expected
    assert sanitized_value(json.dumps({"a": text})) == expected


def test_keys_are_redacted() -> None:
    """A marker in a key is redacted too; the key's value stays."""
    out = json.loads(sanitize_arguments('{"{{secret:hunter2}}": "v"}'))
    assert out == {REDACTED_CANDIDATE: "v"}


def test_escaped_candidates_are_redacted() -> None:
    """A \\u-escaped malformed candidate is redacted after unescaping."""
    out = sanitized_value('{"a": "\\u007b\\u007bsecret:hunter2}}"}')
    assert out == REDACTED_CANDIDATE


def test_other_bytes_are_kept_as_written() -> None:
    """Only the redacted string token changes; white space and numbers stay."""
    raw = '{ "n" : 1.50 ,\n "a": "{{secret:hunter2}}" }'
    assert sanitize_arguments(raw) == '{ "n" : 1.50 ,\n "a": "' + REDACTED_CANDIDATE + '" }'


def test_non_json_text_is_redacted() -> None:
    """Arguments that are not JSON are redacted as text, after unescaping."""
    assert sanitize_arguments("use {{secret:hunter2}} now") == "use " + REDACTED_CANDIDATE + " now"
    assert "hunter2" not in sanitize_arguments("x \\u007b\\u007bsecret:hunter2}} y")


def test_reference_free_text_is_unchanged() -> None:
    """Text without a marker is returned as it is."""
    raw = '{"a": "{not a marker}", "b": [1, 2]}'
    assert sanitize_arguments(raw) is raw


def test_long_arguments_are_cut_with_a_note() -> None:
    """sanitizedArgs keeps at most 10,000 characters, the note included."""
    raw = json.dumps({"a": "x" * 20_000})
    out = sanitize_arguments(raw)
    assert len(out) == SANITIZED_ARGS_CHARS
    assert out.endswith(f"... [{len(raw)} characters, cut]")
    assert out.startswith('{"a": "xxx')


def test_keys_that_redact_alike_are_all_kept() -> None:
    """Two malformed keys that both redact to the same text stay two members, in order: the
    sanitizer never merges, renames or drops a member (docs/reference-host.md)."""
    raw = json.dumps({"{{secret:one}}": ref(ID_A), "{{secret:two}}": 1})
    sanitized = sanitize_arguments(raw)
    pairs = json.loads(sanitized, object_pairs_hook=list)
    assert pairs == [(REDACTED_CANDIDATE, ref(ID_A)), (REDACTED_CANDIDATE, 1)]
