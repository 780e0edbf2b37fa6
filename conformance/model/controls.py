"""The controls the model check applies: what it draws for them, and how it applies them.

This module owns the control actions of :mod:`conformance.model.machine`: the strategy for any
control the host announced (:func:`actions`), for the controls the fence must see while a
prompt is open (:func:`fence_actions`), the trusts a granted call gives a tool
(:data:`GRANTS`), and applying an action to a host's control and naming it for the fence
(:func:`apply`, :func:`event`). An action is a method name and its arguments: ids, tool and
provider names and rule names, never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from hypothesis import strategies as st

from conformance.host import Control
from conformance.model import world
from conformance.scenario import CONTROL_CAPABILITIES

#: One control action: its method name and arguments, as the reproducer prints it.
Action = tuple[Any, ...]


def actions(capabilities: frozenset[str]) -> st.SearchStrategy[Action]:
    targets = st.sampled_from(world.TARGETS)
    options: list[st.SearchStrategy[Action]] = []
    offered = {
        "revoke": targets.map(lambda t: ("revoke", *t)),
        "reset": st.just(("reset",)),
        "save_rule": st.tuples(targets, st.sampled_from(("ALLOW", "ASK", "DENY"))).map(
            lambda p: ("save_rule", *p[0], p[1])
        ),
        "set_permissions": st.tuples(
            st.booleans(),
            st.sampled_from(
                (("secret.read",), (), ("secret.read", world.GATE_PERMISSION), ("secret.read",))
            ),
        ).map(lambda p: ("set_permissions", *p)),
        # The tools calls name, as often as they are named: a trust that no call meets is lost.
        "trust_session": st.sampled_from(world.CALLED).map(lambda t: ("trust_session", t)),
        "set_yolo": st.booleans().map(lambda b: ("set_yolo", b)),
        "kill": st.sampled_from((world.ECHO_NAME, world.AUX.name)).map(lambda t: ("kill", t)),
    }
    for method, strategy in offered.items():
        if CONTROL_CAPABILITIES[method] in capabilities:
            options.append(strategy)
    return st.one_of(options) if options else st.nothing()


def fence_actions(capabilities: frozenset[str]) -> st.SearchStrategy[Action]:
    """The controls the fence must see while a prompt is open (decisions R3.4): a revocation, a
    reset, a saved DENY, a lost ``secret.read``, each for what calls name most."""
    near = st.sampled_from((world.TARGETS[3], world.TARGETS[0], world.TARGETS[1]))
    offered = {
        "revoke": near.map(lambda t: ("revoke", *t)),
        "reset": st.just(("reset",)),
        "save_rule": near.map(lambda t: ("save_rule", *t, "DENY")),
        "set_permissions": st.just(("set_permissions", False, ())),
    }
    options = [s for m, s in offered.items() if CONTROL_CAPABILITIES[m] in capabilities]
    return st.one_of(options) if options else st.nothing()


#: The trusts a host can grant a tool at run time, by the control that grants them.
GRANTS: Final[Mapping[str, Callable[[str], Action]]] = {
    "trust-session": lambda tool: ("trust_session", tool),
    "yolo": lambda _tool: ("set_yolo", True),
    "allow-rule": lambda tool: ("save_rule", "tool", tool, "ALLOW"),
}
GRANT_NEEDS: Final = {
    "trust-session": "control.trust-session",
    "yolo": "control.set-yolo",
    "allow-rule": "control.save-rule",
}


def apply(control: Control, action: Action) -> None:
    method, *arguments = action
    getattr(control, method)(*arguments)


def event(action: Action) -> tuple[str, str]:
    """The fence's view of an action: ``(op, target)``."""
    method = action[0]
    if method == "save_rule":
        return (f"save:{action[3]}", f"{action[1]}:{action[2]}")
    if method == "revoke":
        return ("revoke", f"{action[1]}:{action[2]}")
    if method == "kill":
        return ("kill", str(action[1]))
    return (method, "")
