"""The operator's controls that relax a rule at run time, for the checks that what was decided
before them outlasts each one.

This module owns one table and its use: each control an operator has outside a prompt that
could let a call through that was refused before it (a reset, a revocation of the tool's or the
provider's rule, a saved ALLOW for either, session trust, YOLO), with the capability it needs,
all aimed at the standard recorder and its provider. The design's precedence puts the kill
switch, RBAC, a faulted policy file and the secret policy above every rule these change, and the
policy file is read at start-up (decisions R7.2), so none of them may lift those. It is not a
check module and prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from conformance.host import Control
from conformance.scenario import PROVIDER, RECORDER, RecordingHost

#: Each relaxing control by name: the capability it needs and what it does.
RELAXING: Final[Mapping[str, tuple[str, Callable[[Control], None]]]] = {
    "reset": ("control.reset", lambda control: control.reset()),
    "revoke-tool": ("control.revoke", lambda control: control.revoke("tool", RECORDER.name)),
    "revoke-provider": ("control.revoke", lambda control: control.revoke("provider", PROVIDER)),
    "save-tool-allow": (
        "control.save-rule",
        lambda control: control.save_rule("tool", RECORDER.name, "ALLOW"),
    ),
    "save-provider-allow": (
        "control.save-rule",
        lambda control: control.save_rule("provider", PROVIDER, "ALLOW"),
    ),
    "trust-session": (
        "control.trust-session",
        lambda control: control.trust_session(RECORDER.name),
    ),
    "yolo": ("control.set-yolo", lambda control: control.set_yolo(True)),
}


def relax(host: RecordingHost, name: str) -> None:
    """Apply the relaxing control ``name`` outside any prompt.

    Args:
        host: The host under test, already reset.
        name: A key of :data:`RELAXING`.

    Raises:
        pytest.skip.Exception: The host did not announce the control's capability.
    """
    capability, act = RELAXING[name]
    host.need(capability)
    act(host.control())
