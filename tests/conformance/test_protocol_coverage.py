"""Everything the driver protocol defines is used by at least one conformance check.

The lists come from the protocol's JSON Schemas, never from a hand-kept copy: every standard
handler, every disposition, every ``control`` op (the kill switch for one tool and for every
tool), every prompt answer, every vault mode, every policy mode and optional ``configure``
member, every member of the policy file, and every ``observe`` member. The checks' source is
read as Python syntax trees (the vectors as JSON), so a word in a comment or a docstring never
counts as use. A value the schemas gain without a rule here for recognising its use fails the
test too, so the lists cannot drift.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import conformance

_PACKAGE = Path(conformance.__file__).parent
_SCHEMAS = _PACKAGE / "schemas" / "protocol"
_CHECKS = _PACKAGE / "checks"

#: The constants of :mod:`conformance.scenario` that stand for a tool bound to a handler.
_SCENARIO_TOOLS = {"echo": "ECHO", "recorder": "RECORDER", "sha256": "SHA256", "thrower": "THROWER"}

#: Python names of the ``configure`` members a check sets as :class:`HostConfig` fields.
_CONFIG_FIELDS = {
    "policy": "policy",
    "policyText": "policy_text",
    "vaultFailureMessage": "vault_failure_message",
    "vaultFailingFromPage": "vault_failing_from_page",
    "ledgerSeed": "ledger_seed",
    "policyStore": "policy_store",
    "vault": "vault",
}

#: Python names of the ``observe`` members, as :class:`Observation` attributes.
_OBSERVE_FIELDS = {
    "ledgerBase64": "ledger_bytes",
    "log": "log_records",
    "requests": "approval_requests",
    "receipts": "receipts",
    "vaultReads": "vault_reads",
    "ledgerRead": "ledger_read",
}

#: Python method names of the ``control`` ops, on :class:`conformance.host.Control`.
_CONTROL_METHODS = {
    "revoke": "revoke",
    "reset": "reset",
    "saveRule": "save_rule",
    "setPermissions": "set_permissions",
    "trustSession": "trust_session",
    "setYolo": "set_yolo",
    "kill": "kill",
}


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((_SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


@dataclass(slots=True)
class _Uses:
    """What the checks' syntax trees use."""

    attributes: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)
    keywords: dict[str, list[ast.expr]] = field(default_factory=dict)
    calls: dict[str, list[ast.Call]] = field(default_factory=dict)


@cache
def _uses() -> _Uses:
    uses = _Uses()
    for path in sorted(_CHECKS.glob("test_*.py")):
        tree = ast.parse(path.read_text("utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                uses.attributes.add(node.attr)
                if isinstance(node.value, ast.Name):
                    uses.attributes.add(f"{node.value.id}.{node.attr}")
            elif isinstance(node, ast.Name):
                uses.names.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                uses.strings.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                uses.strings.add(
                    "".join(
                        part.value
                        for part in node.values
                        if isinstance(part, ast.Constant) and isinstance(part.value, str)
                    )
                )
            elif isinstance(node, ast.keyword) and node.arg is not None:
                uses.keywords.setdefault(node.arg, []).append(node.value)
            elif isinstance(node, ast.Assign):
                # ``overrides["vault"] = "absent"`` sets a configuration field by name too.
                for target in node.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.slice, ast.Constant)
                        and isinstance(target.slice.value, str)
                    ):
                        uses.keywords.setdefault(target.slice.value, []).append(node.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                uses.calls.setdefault(node.func.attr, []).append(node)
    for vector_file in resources.files("conformance").joinpath("vectors").iterdir():
        if vector_file.name.endswith(".json"):
            uses.strings.update(_json_strings(json.loads(vector_file.read_text("utf-8"))))
    return uses


def _json_strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _json_strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _json_strings(item)


def _keyword_values(name: str) -> list[ast.expr]:
    return _uses().keywords.get(name, [])


def _keyword_strings(name: str) -> set[str]:
    found: set[str] = set()
    for value in _keyword_values(name):
        for node in ast.walk(value):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def _set_to_something(name: str) -> bool:
    """Whether some check passes keyword ``name`` a value that is not a bare ``None``."""
    return any(
        not (isinstance(value, ast.Constant) and value.value is None)
        for value in _keyword_values(name)
    )


# --- what the schemas define ----------------------------------------------------------------


def _handlers() -> list[str]:
    return list(_schema("common")["$defs"]["handler"]["enum"])


def _dispositions() -> list[str]:
    return list(_schema("common")["$defs"]["disposition"]["enum"])


def _control_ops() -> list[str]:
    options = _schema("control.request")["properties"]["params"]["oneOf"]
    return [str(option["properties"]["op"]["const"]) for option in options]


def _answers() -> list[str]:
    result = _schema("prompt.response")["properties"]["result"]
    return list(result["properties"]["answer"]["enum"])


def _vault_modes() -> list[str]:
    pattern = _schema("configure.request")["properties"]["params"]["properties"]["vault"]
    match = re.fullmatch(r"\^\((.*)\)\$", str(pattern["pattern"]))
    assert match is not None, "the vault pattern is no longer a list of alternatives"
    return [alternative.split(":", 1)[0] for alternative in match.group(1).split("|")]


def _configure_members() -> list[str]:
    return list(_schema("configure.request")["properties"]["params"]["properties"])


def _policy_stores() -> list[str]:
    members = _schema("configure.request")["properties"]["params"]["properties"]
    return list(members["policyStore"]["enum"])


def _policy_members() -> list[str]:
    return list(_schema("common")["$defs"]["policyFile"]["properties"])


def _observe_members() -> list[str]:
    return list(_schema("observe.response")["properties"]["result"]["properties"])


# --- how use is recognised --------------------------------------------------------------------


def _handler_used(handler: str) -> bool:
    uses = _uses()
    constant = _SCENARIO_TOOLS.get(handler)
    return f"HandlerKind.{handler.upper()}" in uses.attributes or (
        constant is not None and constant in uses.names
    )


def _kill_calls() -> list[ast.Call]:
    return _uses().calls.get(_CONTROL_METHODS["kill"], [])


def _kill_for_every_tool() -> bool:
    return any(
        not call.args or (isinstance(call.args[0], ast.Constant) and call.args[0].value is None)
        for call in _kill_calls()
    )


def _kill_for_one_tool() -> bool:
    return any(
        call.args and not (isinstance(call.args[0], ast.Constant) and call.args[0].value is None)
        for call in _kill_calls()
    )


def _control_used(op: str) -> bool:
    method = _CONTROL_METHODS.get(op)
    calls = _uses().calls.get(method, []) if method is not None else []
    if op == "reset":
        # ``host.reset(config)`` configures; the control op takes no argument.
        return any(not call.args and not call.keywords for call in calls)
    return bool(calls)


#: The ``configure`` members every configuration carries, so every check uses them.
_REQUIRED_MEMBERS = frozenset(
    {"secrets", "user", "tools", "approvalTimeoutS", "pendingLimit", "executionTimeoutS"}
)


def _member_used(member: str) -> bool:
    if member in _REQUIRED_MEMBERS:
        return True
    python_name = _CONFIG_FIELDS.get(member)
    return python_name is not None and _set_to_something(python_name)


#: Every item the protocol defines, with how its use is recognised.
_ITEMS: list[tuple[str, Callable[[], list[str]], Callable[[str], bool]]] = [
    ("handler", _handlers, _handler_used),
    ("disposition", _dispositions, lambda value: value in _uses().strings),
    ("control op", _control_ops, _control_used),
    ("prompt answer", _answers, lambda value: f"Answer.{value.upper()}" in _uses().attributes),
    (
        "vault mode",
        _vault_modes,
        # "present" is every configuration's default; the others are named.
        lambda mode: (
            mode == "present" or any(text.startswith(mode) for text in _keyword_strings("vault"))
        ),
    ),
    ("configure member", _configure_members, _member_used),
    (
        "policy store",
        _policy_stores,
        lambda store: store == "working" or store in _keyword_strings("policy_store"),
    ),
    ("policy member", _policy_members, lambda member: member in _uses().strings),
    (
        "observe member",
        _observe_members,
        lambda member: _OBSERVE_FIELDS.get(member, "?") in _uses().attributes,
    ),
]


def test_the_schemas_define_what_this_test_knows() -> None:
    """Every control op and observe member of the schemas has a rule for recognising its use."""
    assert sorted(_control_ops()) == sorted(_CONTROL_METHODS)
    assert sorted(_observe_members()) == sorted(_OBSERVE_FIELDS)
    optional = set(_configure_members()) - _REQUIRED_MEMBERS
    assert sorted(optional) == sorted(_CONFIG_FIELDS)
    assert len(_handlers()) >= 7
    assert len(_dispositions()) >= 15


def test_everything_the_protocol_defines_is_used_by_a_check() -> None:
    """No handler, disposition, control op, answer, mode or member goes unused by the checks."""
    unused = [
        f"{kind} {value}"
        for kind, listing, used in _ITEMS
        for value in listing()
        if not used(value)
    ]
    assert unused == []


def test_the_kill_switch_is_pulled_for_one_tool_and_for_all() -> None:
    """Some check pulls the kill switch for one named tool, and some for every tool."""
    assert _kill_for_one_tool()
    assert _kill_for_every_tool()


def test_an_unused_item_is_reported() -> None:
    """A value no check uses is reported in every category, so the test can fail."""
    for kind, _listing, used in _ITEMS:
        assert not used("no-check-uses-this"), kind
