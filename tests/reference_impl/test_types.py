"""Value types: secrets never print, refusals and records carry only what they should."""

from __future__ import annotations

import logging
import pickle

import pytest

from reference_impl import (
    BROAD_ANSWERS,
    WITHHELD,
    Answer,
    Disposition,
    SecretValue,
    ToolArguments,
)
from tests.reference_impl.support import PASSWORD_A, record


@pytest.mark.req("LOG-001")
def test_a_secret_value_never_formats_itself(caplog: pytest.LogCaptureFixture) -> None:
    """repr, str, format, %-logging and a record's repr all show <redacted>."""
    caplog.set_level(logging.DEBUG)
    value = SecretValue(PASSWORD_A)
    entry = record("x", "site", PASSWORD_A, PASSWORD_A, PASSWORD_A)
    logging.getLogger("test").debug("value %s %r %s", value, value, entry)
    texts = [repr(value), str(value), f"{value}", f"{value!r:>40}", repr(entry), caplog.text]
    leaked = [index for index, text in enumerate(texts) if PASSWORD_A in text]
    assert leaked == []
    assert str(value) == "<redacted>"
    reveals = value.reveal() == PASSWORD_A
    assert reveals


@pytest.mark.req("LOG-001")
def test_a_secret_value_is_never_pickled() -> None:
    """Pickling would write the plaintext somewhere: it is refused."""
    with pytest.raises(TypeError):
        pickle.dumps(SecretValue("abc"))


@pytest.mark.req("LOG-001")
def test_tool_arguments_never_print_their_text() -> None:
    """Substituted arguments hold values; their repr gives only a size."""
    arguments = ToolArguments('{"a": "' + "v" * 12 + '"}')
    assert repr(arguments) == "ToolArguments(<21 characters>)"


@pytest.mark.req("LEDG-008", "APPR-006")
def test_withheld_and_broad_answers() -> None:
    """The withheld dispositions and the broad answers are the design's sets."""
    assert {
        Disposition.QUEUE_FULL,
        Disposition.POLICY_PERSIST_FAILED,
        Disposition.SECRET_FORBIDDEN,
        Disposition.SECRET_UNRESOLVED,
    } == WITHHELD
    assert {Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION} == BROAD_ANSWERS
