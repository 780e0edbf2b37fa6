"""The design's adversarial pair: an echo of every form and a SHA-256, on every surface.

Each test checks the result, the ledger file's bytes (a real JSON Lines file), every approval
request and every host log record captured at DEBUG. Leak checks report labels such as
"password A/c", never the text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from reference_impl import CallOutcome, Disposition, JsonlLedger, Policy, forms
from tests.reference_impl.support import (
    ID_A,
    ID_B,
    NOTES_A,
    PASSWORD_A,
    PASSWORD_B,
    USERNAME_A,
    VALUES,
    Host,
    build,
    leaks,
    ledger_file_leaks,
    ref,
    request_text,
    strings_in,
)


def adversarial_arguments() -> str:
    """Every field of secret A and the password of B, at depth, in arrays, and \\u-escaped."""
    raw = json.dumps(
        {
            "password": ref(ID_A),
            "username": ref(ID_A, "username"),
            "notes": "before " + ref(ID_A, "notes") + " after",
            "nested": {"list": [ref(ID_B), {"deep": "x=" + ref(ID_B) + ";"}]},
            "plain": "no reference here",
        }
    )
    return raw[:-1] + ', "escaped": "\\u007b\\u007bsecret:' + ID_B + '.password}}"}'


def substituted_view() -> dict[str, object]:
    """The arguments the handler receives, decoded, as the test expects them."""
    return {
        "password": PASSWORD_A,
        "username": USERNAME_A,
        "notes": "before " + NOTES_A + " after",
        "nested": {"list": [PASSWORD_B, {"deep": "x=" + PASSWORD_B + ";"}]},
        "plain": "no reference here",
        "escaped": PASSWORD_B,
    }


def surfaces_leaks(
    h: Host, ledger_path: Path, caplog: pytest.LogCaptureFixture
) -> dict[str, list[str]]:
    """Return leak labels per surface other than the result."""
    requests: list[str] = []
    for request in h.operator.requests:
        requests.extend(leaks(request_text(request, with_descriptors=False)))
        # A username may appear in descriptors (decisions R3.2); nothing else may.
        others = {k: v for k, v in VALUES.items() if not k.startswith("username")}
        for descriptor in request.descriptors:
            requests.extend(leaks(descriptor, others))
    logs: list[str] = []
    for record in caplog.records:
        logs.extend(leaks(record.getMessage()))
        logs.extend(leaks(repr(record.args)))
    return {
        "ledger": ledger_file_leaks(ledger_path.read_bytes()),
        "requests": sorted(set(requests)),
        "logs": sorted(set(logs)),
    }


def run(
    tool: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, policy: Policy | None = None
) -> tuple[Host, CallOutcome, Path]:
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "mcp-calls.jsonl"
    h = build(ledger=JsonlLedger(path), policy=policy)
    out = h.invoke(tool, adversarial_arguments())
    assert out.disposition is Disposition.APPROVED_ONCE
    debug_records = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug_records, "the host logged nothing at DEBUG: the log surface was not exercised"
    assert len(h.operator.requests) == 1
    assert path.stat().st_size > 0
    return h, out, path


@pytest.mark.req("INV1", "INV1-ECHO", "LOG-001", "APPR-005", "LEDG-004", "SCRUB-009")
def test_echo_of_every_form_leaks_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The echo handler returns raw arguments and forms a-d of every value; none survives."""
    h, out, path = run("echo", tmp_path, caplog)
    assert leaks(out.text) == []
    # The echo really ran on values: its placeholders stand where the values were.
    assert out.text.count(f"[secret:{ID_A}.password]") >= 4
    assert out.text.count(f"[secret:{ID_B}.password]") >= 4
    assert f"[secret:{ID_A}.username]" in out.text
    assert f"[secret:{ID_A}.notes]" in out.text
    assert surfaces_leaks(h, path, caplog) == {"ledger": [], "requests": [], "logs": []}


@pytest.mark.req("INV1", "INV1-SHA256", "LOG-001", "APPR-005")
def test_sha256_comes_back_exactly_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The boundary, demonstrated: the hash reaches the agent, the plaintext does not."""
    h, out, path = run("sha256", tmp_path, caplog)
    expected = "\n".join(
        hashlib.sha256(text.encode("utf-8")).hexdigest() for text in strings_in(substituted_view())
    )
    assert out.text == expected
    assert leaks(out.text) == []
    assert surfaces_leaks(h, path, caplog) == {"ledger": [], "requests": [], "logs": []}


@pytest.mark.req("INV1", "INV1-THROW", "SCRUB-010", "LOG-001")
def test_thrower_leaks_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Failure text that quotes every value is scrubbed in the result and the snippet."""
    h, out, path = run("thrower", tmp_path, caplog)
    assert out.is_error
    assert leaks(out.text) == []
    assert f"[secret:{ID_A}.notes]" in out.text
    assert surfaces_leaks(h, path, caplog) == {"ledger": [], "requests": [], "logs": []}


@pytest.mark.req("SCRUB-012", "SCRUB-014", "INV1-ECHO", "LOG-001")
def test_with_scrubbing_off_only_the_result_holds_values(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """resultScrubbingEnabled=false: the echo's result holds every form of every value, while
    the ledger's arguments, the requests and the log stay clean."""
    h, out, path = run("echo", tmp_path, caplog, Policy(result_scrubbing_enabled=False))
    missing = [
        f"{label}/{index}"
        for label, value in VALUES.items()
        for index, form in enumerate(forms(value))
        if form not in out.text
    ]
    assert missing == []
    assert "[secret:" not in out.text
    assert surfaces_leaks(h, path, caplog) == {"ledger": [], "requests": [], "logs": []}


@pytest.mark.req("SCRUB-013", "SCRUB-014")
def test_with_scrubbing_off_the_error_snippet_stays_clean(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """This host scrubs the ledger's error snippet whatever the switch says (R5.5, EITHER)."""
    h, out, path = run("thrower", tmp_path, caplog, Policy(result_scrubbing_enabled=False))
    assert out.is_error
    assert "password A/a" in leaks(out.text)
    assert surfaces_leaks(h, path, caplog) == {"ledger": [], "requests": [], "logs": []}
    (line,) = path.read_text(encoding="ascii").splitlines()
    assert "[secret:" in json.loads(line)["errorSnippet"]


@pytest.mark.req("SCRUB-001", "INV1")
def test_a_short_value_is_delivered_and_not_scrubbed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A value under 8 code points reaches the result as is, by design (R5.1)."""
    from tests.reference_impl.support import SHORT_PASSWORD, record

    caplog.set_level(logging.DEBUG)
    path = tmp_path / "ledger.jsonl"
    h = build(
        ledger=JsonlLedger(path), records=[record(ID_A, "s.example", "short-user", SHORT_PASSWORD)]
    )
    out = h.invoke("echo", json.dumps({"p": ref(ID_A)}))
    delivered = SHORT_PASSWORD in out.text
    assert delivered
    short = {"short": SHORT_PASSWORD}
    assert ledger_file_leaks(path.read_bytes(), short) == []
    assert leaks(caplog.text, short) == []
