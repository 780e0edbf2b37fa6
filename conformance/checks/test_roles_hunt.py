"""Checks that give a username or a note every control decided before the prompt, and change the
signed-in user's role at each moment of a call (decisions R2, R2.3, R3.1, R3.3, R3.4).

The older refusal checks carry a password reference, and the older role checks change a
non-admin's permissions. A host that judges a call by its fields (a username is "only account
metadata", so the feature switch, ``secretBearingCalls`` and ``secret.read`` guard passwords and
notes alone) passes them, and so does one that reads the admin role once, when a call or a
session starts. Here the only reference of a call is a username or a note under each refusal of
R2 that comes before the vault, and under ``secretBearingCalls = DENY`` beside every trust a
host can grant; each of those refusals, the two switches of the policy file and a missing
``secret.read``, outlasts every control that relaxes a rule (a reset, a revocation, a saved
ALLOW, session trust, YOLO); a broad answer to such a call grants nothing; YOLO or session trust
turned on while a prompt is open answers nothing, so a denial stays DENIED and silence TIMEOUT;
and an admin who holds no ``secret.read`` of their own is demoted between two calls and while a
prompt is open. An admin needs no ``secret.read`` (R2: the refusal is for a non-admin), so a
demoted admin without it has lost it. Nothing here prints a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.checks._controls import RELAXING, relax
from conformance.host import Answer, CallResult, Control, HandlerKind
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    acting,
    answering,
    args_json,
    config,
    judge_free_call_after_broad_answer,
    make_secret,
    ref,
    require_lost_read_refused,
    tool,
)

#: The fields the older refusal and role checks never gave these roles.
FIELDS: Final = ("username", "notes")
#: Every field, for the roles no older check gives even a password.
ALL_FIELDS: Final = ("password", "username", "notes")

_DISABLED: Final = "Secret references are disabled on this host"
_NO_READ: Final = "Secret references require the secret.read permission"
_BEARING: Final = "Secret-bearing calls are refused by host policy"

#: A SECRET_FORBIDDEN refusal of R2 decided before the vault: the policy file, the user's
#: permissions, the message's first words and the requirement of that message.
_REFUSALS: Final[dict[str, tuple[Mapping[str, Any] | None, tuple[str, ...], str, str]]] = {
    "feature-off": ({"secretReferencesEnabled": False}, ("secret.read",), _DISABLED, "MSG-003"),
    "no-secret-read": (None, (), _NO_READ, "MSG-004"),
    "secret-policy-deny": ({"secretBearingCalls": "DENY"}, ("secret.read",), _BEARING, "MSG-006"),
}

#: Trust granted by the policy file (no capability) or at run time (a control and its
#: capability), each beside ``secretBearingCalls = DENY``.
_GRANTS: Final[
    dict[str, tuple[Mapping[str, Any], str | None, Callable[[Control], None] | None]]
] = {
    "yolo-policy": ({"yolo": True}, None, None),
    "tool-allow-policy": ({"tools": {RECORDER.name: "ALLOW"}}, None, None),
    "provider-allow-policy": ({"providers": {PROVIDER: "ALLOW"}}, None, None),
    "session-trust": ({}, "control.trust-session", lambda c: c.trust_session(RECORDER.name)),
    "yolo": ({}, "control.set-yolo", lambda c: c.set_yolo(True)),
}

#: The low-risk recorder every call here names: a tool's own risk must change nothing.
_LOW: Final = tool(RECORDER.name, HandlerKind.RECORDER, risk="LOW")


def _counts(host: RecordingHost) -> tuple[int, int, int]:
    """Return how many receipts, approval requests and vault page reads the host shows now."""
    seen = host.observe()
    return len(seen.receipts), len(seen.approval_requests), len(seen.vault_reads)


def _refused_before_prompt(
    host: RecordingHost,
    outcome: CallResult,
    before: tuple[int, int, int],
    prefix: str,
    requirement: str,
    what: str,
) -> None:
    """Require a SECRET_FORBIDDEN refusal with ``prefix``, and no run, prompt or vault read
    since ``before`` (the counts :func:`_counts` returned before the call)."""
    require(
        outcome.disposition == "SECRET_FORBIDDEN",
        requirement,
        f"{what} ended {outcome.disposition}, not SECRET_FORBIDDEN",
    )
    require(outcome.text.startswith(prefix), requirement, f"the message of {what} is not R2's")
    seen = host.observe()
    ran, asked, read = before
    require(len(seen.receipts) == ran, (requirement, "INV2"), f"the tool ran for {what}")
    require(len(seen.approval_requests) == asked, "ORD-003", f"{what} prompted the operator")
    if seen.judges("observe.vault-reads", ("VAULT-001", "INV3")):
        pages = len(seen.vault_reads) - read
        require(
            pages == 0,
            ("VAULT-001", "INV3"),
            f"{what} read {pages} vault pages before it was refused",
        )


@pytest.mark.req("ORD-003", "VAULT-001", "INV3", "INV2")
@pytest.mark.parametrize(
    "case",
    [pytest.param(case, marks=pytest.mark.req(row[3])) for case, row in _REFUSALS.items()],
)
@pytest.mark.parametrize("field_name", FIELDS)
def test_field_only_call_refused_before_prompt(
    host: RecordingHost, mint: Mint, field_name: str, case: str
) -> None:
    """A call whose only reference is a username or a note meets the feature switch, a missing
    secret.read and secretBearingCalls = DENY as a password does: SECRET_FORBIDDEN with R2's
    message, before any vault read or prompt."""
    policy, permissions, prefix, requirement = _REFUSALS[case]
    secret = make_secret(mint)
    host.reset(config([secret], tools=(_LOW,), policy=policy, permissions=permissions))
    outcome = host.invoke(_LOW.name, args_json({"x": ref(secret.id, field_name)}))
    _refused_before_prompt(
        host, outcome, (0, 0, 0), prefix, requirement, f"a {field_name}-only call under {case}"
    )


@pytest.mark.req("MSG-006", "ORD-003", "VAULT-001", "INV3", "INV2")
@pytest.mark.parametrize("grant", list(_GRANTS))
@pytest.mark.parametrize("field_name", ALL_FIELDS)
def test_secret_policy_deny_beats_every_trust(
    host: RecordingHost, mint: Mint, field_name: str, grant: str
) -> None:
    """secretBearingCalls = DENY refuses a secret-bearing call whatever trust the tool holds:
    YOLO, session trust and a tool or provider ALLOW come after the secret policy."""
    extra, capability, action = _GRANTS[grant]
    if capability is not None:
        host.need(capability)
    secret = make_secret(mint)
    policy = {"secretBearingCalls": "DENY", **extra}
    host.reset(config([secret], tools=(_LOW,), policy=policy))
    free = host.invoke(_LOW.name, args_json({"x": "plain"}), acting(action) if action else None)
    if free.disposition == "POLICY_DENIED":
        pytest.skip(f"the host does not accept the {grant} policy field")
    before = _counts(host)
    outcome = host.invoke(_LOW.name, args_json({"x": ref(secret.id, field_name)}))
    what = f"a {field_name} call under secretBearingCalls DENY and {grant}"
    _refused_before_prompt(host, outcome, before, _BEARING, "MSG-006", what)


@pytest.mark.req("ORD-003", "VAULT-001", "INV3", "INV2")
@pytest.mark.parametrize(
    "case",
    [pytest.param(case, marks=pytest.mark.req(row[3])) for case, row in _REFUSALS.items()],
)
@pytest.mark.parametrize("control", list(RELAXING))
@pytest.mark.parametrize("field_name", ALL_FIELDS)
def test_refusal_before_the_vault_outlasts_every_control(
    host: RecordingHost, mint: Mint, field_name: str, control: str, case: str
) -> None:
    """The feature switch and secretBearingCalls = DENY, read from the policy file at start-up,
    and a missing secret.read still refuse a call with a reference of any field after a reset, a
    revocation, a saved ALLOW, session trust or YOLO: SECRET_FORBIDDEN with R2's message, before
    any vault read or prompt."""
    policy, permissions, prefix, requirement = _REFUSALS[case]
    secret = make_secret(mint)
    host.reset(config([secret], tools=(_LOW,), policy=policy, permissions=permissions))
    relax(host, control)
    outcome = host.invoke(_LOW.name, args_json({"x": ref(secret.id, field_name)}))
    what = f"a {field_name} call under {case} after {control}"
    _refused_before_prompt(host, outcome, (0, 0, 0), prefix, requirement, what)


_BROAD: Final = (Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION)


@pytest.mark.req("APPR-006", "APPR-001", "APPR-007")
@pytest.mark.parametrize("answer", _BROAD, ids=[answer.value for answer in _BROAD])
@pytest.mark.parametrize("field_name", FIELDS)
def test_broad_answer_to_field_only_call_runs_once(
    host: RecordingHost, mint: Mint, field_name: str, answer: Answer
) -> None:
    """A broad answer to a call whose only reference is a username or a note runs it once as
    APPROVED_ONCE and grants nothing: the next reference-free call still prompts (session trust
    may cover it, R3.3's EITHER), and so does the next call with the reference."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json({"x": ref(secret.id, field_name)})
    outcome = host.invoke(RECORDER.name, args, answering(answer))
    require(
        outcome.disposition == "APPROVED_ONCE",
        "APPR-006",
        f"{answer.value} on a {field_name}-only call ended {outcome.disposition}",
    )
    before = len(host.observe().approval_requests)
    host.invoke(RECORDER.name, args_json({"x": "plain"}))
    free_prompted = len(host.observe().approval_requests) > before
    judge_free_call_after_broad_answer(answer, free_prompted, f"a {field_name}-only call")
    before = len(host.observe().approval_requests)
    host.invoke(RECORDER.name, args)
    require(
        len(host.observe().approval_requests) == before + 1,
        ("APPR-006", "APPR-001"),
        f"after {answer.value} the next {field_name}-only call did not prompt",
    )


#: Trust granted while a prompt is open, with the control's capability. Neither touches a saved
#: rule, so no fence is moved: only the operator's answer decides the call.
_TRUST_WHILE_OPEN: Final[dict[str, tuple[str, Callable[[Control], None]]]] = {
    "yolo": ("control.set-yolo", lambda c: c.set_yolo(True)),
    "session-trust": ("control.trust-session", lambda c: c.trust_session(RECORDER.name)),
}

#: The approval timeout of the unanswered case: short, as the queue checks' is. The denied
#: case waits long: its answer comes after a control's round trip, which a slow adapter may
#: take more than a few tenths of a second for.
_SHORT_S: Final = 0.3
_LONG_S: Final = 30.0


@pytest.mark.req("APPR-001")
@pytest.mark.parametrize(
    ("answer", "requirement"),
    [
        pytest.param(Answer.DENY, "APPR-010", id="deny", marks=pytest.mark.req("APPR-010")),
        pytest.param(Answer.NONE, "APPR-008", id="unanswered", marks=pytest.mark.req("APPR-008")),
    ],
)
@pytest.mark.parametrize("grant", list(_TRUST_WHILE_OPEN))
@pytest.mark.parametrize("field_name", ["password", "username"])
def test_trust_granted_while_prompt_open_answers_nothing(
    host: RecordingHost,
    mint: Mint,
    field_name: str,
    grant: str,
    answer: Answer,
    requirement: str,
) -> None:
    """YOLO or session trust turned on while a secret-bearing call's prompt is open does not
    answer that prompt: the operator's denial still ends the call as DENIED, and no answer
    still ends it as TIMEOUT, with the tool never called."""
    capability, action = _TRUST_WHILE_OPEN[grant]
    host.need(capability)
    secret = make_secret(mint)
    timeout = _SHORT_S if answer is Answer.NONE else _LONG_S
    host.reset(config([secret], approval_timeout_s=timeout))
    outcome = host.invoke(
        RECORDER.name, args_json({"x": ref(secret.id, field_name)}), acting(action, answer)
    )
    ends = "DENIED" if answer is Answer.DENY else "TIMEOUT"
    what = f"a {field_name} call whose prompt saw {grant} turned on and then {answer.value}"
    require(
        outcome.disposition == ends,
        (requirement, "APPR-001"),
        f"{what} ended {outcome.disposition}, not {ends}",
    )
    require(host.observe().receipts == (), (requirement, "APPR-001"), f"the tool ran for {what}")


#: Ways to lose secret.read while the prompt is open: the user as configured, then each
#: setPermissions the operator sends. A non-admin holding secret.read drops it; an admin holding
#: nothing of their own is demoted.
_LOSSES: Final[
    dict[str, tuple[bool, tuple[str, ...], tuple[tuple[bool, tuple[str, ...]], ...]]]
] = {
    "dropped": (False, ("secret.read",), ((False, ()),)),
    "admin-demoted": (True, (), ((False, ()),)),
    "admin-demoted-keeping-others": (
        True,
        ("other.permission",),
        ((False, ("other.permission",)),),
    ),
}

#: The losses the older fence checks already give a password reference.
_OLDER: Final = {("password", "dropped")}


@pytest.mark.req("FENCE-003", "FENCE-004")
@pytest.mark.parametrize(
    ("field_name", "loss"),
    [(f, loss) for f in ALL_FIELDS for loss in _LOSSES if (f, loss) not in _OLDER],
)
def test_secret_read_lost_by_role_while_prompt_open(
    host: RecordingHost, mint: Mint, field_name: str, loss: str
) -> None:
    """Losing secret.read while the prompt is open refuses the approved call whatever field it
    references, and an admin demoted while the prompt is open has lost it."""
    host.need("control.set-permissions")
    admin, permissions, changes = _LOSSES[loss]
    secret = make_secret(mint)
    host.reset(config([secret], admin=admin, permissions=permissions))

    def drop(control: Control) -> None:
        for now_admin, now_permissions in changes:
            control.set_permissions(now_admin, now_permissions)

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id, field_name)}), acting(drop))
    what = f"a {field_name} call whose user lost secret.read ({loss}) while its prompt was open"
    require_lost_read_refused(host, outcome, what)


@pytest.mark.req("MSG-004", "ORD-003", "VAULT-001", "INV3", "INV2")
@pytest.mark.parametrize("field_name", ALL_FIELDS)
def test_admin_demoted_between_calls(host: RecordingHost, mint: Mint, field_name: str) -> None:
    """An admin who holds no secret.read of their own runs a call, is demoted, and the next call
    with the same reference is refused as a non-admin without secret.read is: the role is read
    for each call, not once for the session."""
    host.need("control.set-permissions")
    secret = make_secret(mint)
    host.reset(config([secret], admin=True, permissions=()))
    args = args_json({"x": ref(secret.id, field_name)})
    first = host.invoke(RECORDER.name, args)
    require(
        first.disposition == "APPROVED_ONCE",
        "MSG-004",
        f"an admin's {field_name} call ended {first.disposition}",
    )
    host.control().set_permissions(False, ())
    before = _counts(host)
    outcome = host.invoke(RECORDER.name, args)
    what = f"a {field_name} call after the admin was demoted"
    _refused_before_prompt(host, outcome, before, _NO_READ, "MSG-004", what)
