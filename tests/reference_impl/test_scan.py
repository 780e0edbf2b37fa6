"""Step [1], the marker pre-scan: never a false "no", literal or \\u-escaped."""

from __future__ import annotations

import json

import pytest

from reference_impl import has_marker
from reference_impl._scan import unescape_u
from tests.reference_impl.support import ID_A, ref


@pytest.mark.req("GRAM-001")
@pytest.mark.parametrize("word", ["secret", "SECRET", "SeCrEt"])
def test_literal_marker_in_any_ascii_case(word: str) -> None:
    """A literal marker is found whatever the ASCII case of its word."""
    assert has_marker('{"a": "x{{' + word + ':y"}')


@pytest.mark.req("GRAM-012")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"a": "\\u007b\\u007bsecret:"}', id="escaped-braces"),
        pytest.param('{"a": "\\u007B{\\u0053ecret\\u003A"}', id="mixed-upper-hex"),
        pytest.param('{"\\u007b\\u007bsecret:k": 1}', id="in-a-key"),
        pytest.param("not json \\u007b\\u007bsecret:", id="not-json"),
    ],
)
def test_escaped_marker_is_found(raw: str) -> None:
    """A marker that JSON unescaping would reveal is found."""
    assert has_marker(raw)


@pytest.mark.req("GRAM-012")
def test_escaped_backslash_is_not_an_escape() -> None:
    """An escaped backslash followed by u007b is text, as JSON unescaping reads it."""
    raw = '{"a": "\\\\u007b\\\\u007bsecret:"}'
    assert json.loads(raw)["a"] == "\\u007b\\u007bsecret:"
    assert not has_marker(raw)
    assert unescape_u("\\\\u007b") == "\\\\u007b"
    assert unescape_u("\\\\\\u007b") == "\\\\{"


@pytest.mark.req("INV5", "GRAM-007")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"path": ".env", "content": "KEY=value"}', id="ordinary"),
        pytest.param('{"t": "{{ secret: x}}"}', id="space-inside"),
        pytest.param('{"t": "{secret:x}"}', id="single-brace"),
        pytest.param('{"t": "{{secret x"}', id="no-colon"),
        pytest.param('{"t": "{{\u017fecret:x}}"}', id="long-s-look-alike"),
        pytest.param('{"t": "\\u007bsecret:"}', id="one-brace-escaped"),
        pytest.param("", id="empty"),
    ],
)
def test_no_marker_means_no(raw: str) -> None:
    """Text that holds no marker, even after unescaping, is passed over."""
    assert not has_marker(raw)


@pytest.mark.req("GRAM-012")
def test_every_decoded_marker_is_flagged() -> None:
    """Each way of writing each marker character, escaped or not, is flagged."""
    marker = "{{secret:"
    for index in range(len(marker)):
        for spelling in (f"\\u{ord(marker[index]):04x}", f"\\u{ord(marker[index]):04X}"):
            text = marker[:index] + spelling + marker[index + 1 :]
            raw = '{"a": "' + text + ref(ID_A)[9:] + '"}'
            assert json.loads(raw)["a"].startswith(marker)
            assert has_marker(raw), f"character {index} escaped"
