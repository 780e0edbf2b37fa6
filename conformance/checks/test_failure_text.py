"""Checks of the failure texts a host writes itself: the execution timeout's text and a vault
failure's refusal (decisions R5.4, R2).

The ``timeout`` handler holds every value of its call and sleeps past the host's execution
timeout, so the host ends the call with its own timeout text: that text, and the ledger's error
snippet cut from it, must hold no form of any value. For a vault failure the suite chooses the
failure's own message (a canary, through ``vaultFailureMessage``), then searches every surface
for it: the refusal may name the kind of failure, never repeat its message. Nothing here prints
a value or the canary message; both are named by label.
"""

from __future__ import annotations

import pytest

from conformance.canary import Detector, Guarded, Kind, Mint, required_forms
from conformance.host import HandlerKind
from conformance.outcomes import fail, require
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    args_json,
    call_surfaces,
    config,
    ledger_records,
    make_secret,
    ref,
    tool,
)

#: The execution timeout the timeout check configures, in seconds: short, to keep the check
#: quick, yet far above a round trip of the driver protocol.
_EXECUTION_TIMEOUT_S = 0.3

#: How long the timeout handler sleeps: well past the execution timeout, so the host ends the
#: call first on any machine.
_HANDLER_SLEEP_S = 3.0


@pytest.mark.req("SCRUB-010")
@pytest.mark.parametrize("kind", [Kind.PLAIN, Kind.SPECIAL], ids=["plain", "special"])
def test_timeout_text_holds_no_value(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """The host's execution-timeout text, and the snippet cut from it, hold no form of a value."""
    secret = make_secret(mint, kind=kind)
    slow = tool("slow", HandlerKind.TIMEOUT, seconds=_HANDLER_SLEEP_S)
    host.reset(config([secret], tools=(slow,), execution_timeout_s=_EXECUTION_TIMEOUT_S))
    args = args_json({"p": ref(secret.id), "n": ref(secret.id, "notes")})
    outcome = host.invoke(slow.name, args)
    require(
        outcome.is_error,
        "SCRUB-010",
        f"a handler that outlived the execution timeout ended {outcome.disposition}, not failed",
    )
    snippet = ""
    records = ledger_records(host.observe())
    if records:
        snippet = str(records[-1].get("errorSnippet") or "")
    for field_name in ("password", "notes"):
        value = str(getattr(secret, field_name))
        for name, form in required_forms(value).items():
            if form in outcome.text:
                fail("SCRUB-010", f"form {name} of the {field_name} is in the timeout text")
            if form in snippet:
                fail("SCRUB-010", f"form {name} of the {field_name} is in the timeout's snippet")


@pytest.mark.req("MSG-009")
@pytest.mark.parametrize("kind", ["offline", "signed out", "rpc failure"])
def test_vault_failure_message_never_reported(host: RecordingHost, mint: Mint, kind: str) -> None:
    """The failure's own message, a canary the suite chose, reaches no surface; its kind may."""
    host.need("vault.failing", "vault.failure-message")
    token = mint.canary(Kind.PLAIN, "vault-failure-message").value
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            vault=f"failing:{kind}",
            vault_failure_message=f"connection reset by peer: {token}",
        )
    )
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    require(
        outcome.disposition == "SECRET_UNRESOLVED"
        and outcome.text.startswith("the vault could not be read ("),
        "MSG-009",
        f"a vault failure ended {outcome.disposition}, without the ruling's message",
    )
    detector = Detector((Guarded("the vault failure's own message", token),))
    for surface, text in call_surfaces(outcome, host.observe()):
        found = detector.find(text)
        if found:
            fail(
                "MSG-009",
                f"the vault failure's own message (form {found[0][1]}) is in the {surface}",
            )
