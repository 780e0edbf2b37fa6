"""``invoke`` never raises on any argument text: every outcome is a result or a documented
refusal. Hypothesis drives arbitrary text, arbitrary JSON, and both salted with markers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl import (
    MALFORMED_PREFIX,
    NOT_OBJECT_MESSAGE,
    CallOutcome,
    Disposition,
    Refusal,
    has_marker,
    parse_arguments,
    sanitize_arguments,
)
from tests.reference_impl.support import (
    ID_A,
    ID_AI,
    ID_B,
    ID_EMPTY,
    ID_MISSING,
    Host,
    build,
    leaks,
    ref,
)

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

#: Every refusal this configuration can give, by the reason code the refusal carries, with the
#: shape its message begins with (decisions R1.8, R2).
DOCUMENTED_REFUSALS: dict[str, tuple[Disposition, re.Pattern[str]]] = {
    "malformed": (
        Disposition.SECRET_UNRESOLVED,
        re.compile(
            re.escape(MALFORMED_PREFIX) + r" at (/.*)? offset \d+ length \d+: "
            r"(the id is not a secret id \(expected a UUID\)"
            r"|unknown field \(expected one of password, username, notes\)"
            r"|the reference is not terminated with \}\}"
            r"|a secret reference cannot be a JSON key)",
            re.DOTALL,
        ),
    ),
    "not-an-object": (Disposition.SECRET_UNRESOLVED, re.compile(re.escape(NOT_OBJECT_MESSAGE))),
    "unknown-id": (
        Disposition.SECRET_UNRESOLVED,
        re.compile(rf"no secret with id {_UUID}(, {_UUID})*"),
    ),
    "empty-field": (
        Disposition.SECRET_UNRESOLVED,
        re.compile(rf"secret {_UUID} has no (password|username|notes)"),
    ),
    "ai-provider": (
        Disposition.SECRET_FORBIDDEN,
        re.compile(rf"secret {_UUID} is an AI provider key"),
    ),
}
RAN = {Disposition.APPROVED_ONCE}

_HOST: list[Host] = []


def host() -> Host:
    """One registry for every example: a registry keeps worker threads for its handlers."""
    if not _HOST:
        _HOST.append(build())
    return _HOST[0]


def check_documented(out: CallOutcome) -> None:
    """Fail unless ``out`` is a result or one of the documented refusals."""
    if out.refusal is None:
        assert out.disposition in RAN
        return
    assert out.refusal.reason in DOCUMENTED_REFUSALS, out.refusal.reason
    disposition, shape = DOCUMENTED_REFUSALS[out.refusal.reason]
    assert out.disposition is disposition
    # The message begins with the documented words; what follows is the host's own (R2).
    assert shape.match(out.text) is not None, out.refusal.reason
    assert out.is_error


FRAGMENTS = [
    "{{secret:",
    "{{SECRET:",
    "{{",
    "}}",
    "{",
    "}",
    ".",
    ".password",
    ".username",
    ".notes",
    ".totp",
    ID_A,
    ID_A.upper(),
    ID_B,
    ID_AI,
    ID_EMPTY,
    ID_MISSING,
    "\\u007b",
    "\\u007B\\u007bsecret:",
    "\\\\",
    '"',
    "\\",
    "\u017f",
    ref(ID_A),
    ref(ID_A, "notes"),
    ref(ID_B, "username"),
    ref(ID_AI),
    ref(ID_EMPTY),
    ref(ID_MISSING),
]

any_char = st.characters(exclude_categories=())
salted_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(any_char, max_size=4)), max_size=12
).map("".join)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(any_char),
    salted_text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=5), salted_text), children, max_size=4),
    ),
    max_leaves=15,
)


def dumped(value: Any, ensure_ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii)


@pytest.mark.req("GRAM-016", "GRAM-017", "ORD-003")
@given(text=st.one_of(st.text(any_char), salted_text))
def test_invoke_never_raises_on_any_text(text: str) -> None:
    """Arbitrary text, surrogates included, is a result or a documented refusal."""
    h = host()
    before = len(h.recorder.raws)
    out = h.invoke("recorder", text)
    check_documented(out)
    if not has_marker(text):
        assert out.disposition is Disposition.APPROVED_ONCE
        assert h.recorder.raws[before:] == [text]


@pytest.mark.req("GRAM-011", "GRAM-016", "INV1-ECHO")
@given(value=json_values, ensure_ascii=st.booleans())
def test_invoke_never_raises_on_any_json(value: Any, ensure_ascii: bool) -> None:
    """Arbitrary JSON, objects or not, salted with markers, is a result or a documented
    refusal; the echo handler's result never holds a canary."""
    out = host().invoke("echo", dumped(value, ensure_ascii))
    check_documented(out)
    assert leaks(out.text) == []


@pytest.mark.req("GRAM-011", "INV1-ECHO")
@given(
    members=st.dictionaries(st.text(max_size=5), json_values, max_size=5),
    ensure_ascii=st.booleans(),
)
def test_invoke_never_raises_on_any_json_object(
    members: dict[str, Any], ensure_ascii: bool
) -> None:
    """Objects, the usual shape of arguments, reach the deeper steps; the same holds there."""
    out = host().invoke("echo", dumped(members, ensure_ascii))
    check_documented(out)
    assert leaks(out.text) == []


@pytest.mark.req("MSG-012", "LEDG-007")
@given(body=st.text(st.characters(exclude_characters="{}"), min_size=1, max_size=20))
def test_a_malformed_body_never_reaches_message_or_sanitized_args(body: str) -> None:
    """Whatever a malformed body holds, the refusal and sanitizedArgs omit it."""
    canary = "zq" + body + "qz"
    raw = json.dumps({"a": "x{{secret:" + canary + "}}y"})
    outcome = parse_arguments(raw)
    assert isinstance(outcome, Refusal)  # "zq" can never start a UUID
    assert canary not in outcome.message
    sanitized = json.loads(sanitize_arguments(raw))["a"]
    assert canary not in sanitized
    assert sanitized.endswith("y")
