"""Translation between the suite's host types and the JSON-ready shapes of driver protocol v1.

This module owns one mapping, used by every host adapter: a :class:`HostConfig` to the
``configure`` params, a prompt answer to its wire name, and the wire's results and
observations back to the suite's types. Keeping it in one place keeps the in-process host and
the subprocess driver speaking exactly the same protocol.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from conformance.host import (
    CallResult,
    HostConfig,
    HostInfo,
    LogRecord,
    Observation,
    Receipt,
)


def config_to_wire(config: HostConfig) -> dict[str, Any]:
    """Return ``config`` as the driver protocol's ``configure`` params.

    The optional members (``vaultFailureMessage``, ``vaultFailingFromPage``, ``ledgerSeed``,
    ``policyStore``) are sent only when a check sets them, so an adapter that predates them sees
    the same params as before.
    """
    params: dict[str, Any] = {
        "secrets": [
            {
                "id": secret.id,
                "website": secret.website,
                "username": secret.username,
                "password": secret.password,
                "notes": secret.notes,
                "tags": list(secret.tags),
            }
            for secret in config.secrets
        ],
        "vault": config.vault,
        "policy": None if config.policy is None else dict(config.policy),
        "policyText": config.policy_text,
        "user": {"admin": config.admin, "permissions": list(config.permissions)},
        "tools": [
            {
                "name": tool.name,
                "provider": tool.provider,
                "handler": tool.handler.value,
                "risk": tool.risk,
                "permission": tool.permission,
                "options": dict(tool.options),
            }
            for tool in config.tools
        ],
        "approvalTimeoutS": config.approval_timeout_s,
        "pendingLimit": config.pending_limit,
        "executionTimeoutS": config.execution_timeout_s,
    }
    if config.vault_failure_message is not None:
        params["vaultFailureMessage"] = config.vault_failure_message
    if config.vault_failing_from_page is not None:
        params["vaultFailingFromPage"] = config.vault_failing_from_page
    if config.ledger_seed is not None:
        params["ledgerSeed"] = base64.b64encode(config.ledger_seed).decode("ascii")
    if config.policy_store != "working":
        params["policyStore"] = config.policy_store
    return params


def configure_needs(params: Mapping[str, Any]) -> set[str]:
    """Return the capabilities a ``configure`` request's params need."""
    needs: set[str] = set()
    vault = params.get("vault")
    if vault == "absent":
        needs.add("vault.absent")
    elif isinstance(vault, str) and vault.startswith("failing"):
        needs.add("vault.failing")
    if params.get("policyText") is not None:
        needs.add("policy.text")
    if params.get("vaultFailureMessage") is not None:
        needs.add("vault.failure-message")
    if params.get("vaultFailingFromPage") is not None:
        needs.add("vault.failing-from-page")
    if params.get("ledgerSeed") is not None:
        needs.add("ledger.seed")
    if params.get("policyStore") == "failing":
        needs.add("policy.store-failing")
    return needs


def result_from_wire(data: Mapping[str, Any]) -> CallResult:
    """Return an ``invoke`` result as a :class:`CallResult`."""
    return CallResult(str(data["disposition"]), str(data["text"]), bool(data["isError"]))


#: A lone surrogate: legal in JSON as an escape, with no UTF-8 form.
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """Return ``text`` with each lone surrogate written as its escape, ``\\udxxx``.

    A host may send one as a JSON escape; no UTF-8 report, terminal or worker channel can
    carry it, so a description holding one would end the run with an encoding error.
    """
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def info_from_wire(data: Mapping[str, Any]) -> HostInfo:
    """Return a handshake's host description as a :class:`HostInfo`.

    The name, version and language are the host's text, kept as data, lone surrogates escaped.
    """
    return HostInfo(
        name=_encodable(str(data["name"])),
        version=_encodable(str(data["version"])),
        language=_encodable(str(data["language"])),
        capabilities=frozenset(str(item) for item in data.get("capabilities", ())),
    )


def observation_from_wire(
    data: Mapping[str, Any], printed: str = "", printed_whole: bool = True
) -> Observation:
    """Return an ``observe`` result as an :class:`Observation`, with standard error as
    ``printed`` (``printed_whole`` false when a bound cut it)."""
    return Observation(
        ledger_bytes=base64.b64decode(str(data.get("ledgerBase64", ""))),
        log_records=tuple(
            LogRecord(str(item["level"]), str(item["message"])) for item in data.get("log", ())
        ),
        approval_requests=tuple(dict(item) for item in data.get("requests", ())),
        receipts=tuple(
            Receipt(str(item["tool"]), str(item["raw"]), item.get("view"))
            for item in data.get("receipts", ())
        ),
        vault_reads=tuple(int(page) for page in data.get("vaultReads", ())),
        printed=printed,
        printed_whole=printed_whole,
        ledger_read=(
            tuple(dict(item) for item in data["ledgerRead"])
            if isinstance(data.get("ledgerRead"), list)
            else None
        ),
    )


class WireControl:
    """The operator's mid-prompt actions (:class:`conformance.host.Control`) as ``control`` ops.

    Args:
        send: Delivers one op and its params: straight to the harness in process, or as a
            ``control`` request over the wire.
    """

    def __init__(self, send: Callable[[str, dict[str, Any]], object]) -> None:
        self._send = send

    def revoke(self, kind: str, name: str) -> None:
        """Revoke the saved rule of a ``"tool"`` or a ``"provider"``."""
        self._send("revoke", {"kind": kind, "name": name})

    def reset(self) -> None:
        """Reset every saved rule and all session trust."""
        self._send("reset", {})

    def save_rule(self, kind: str, name: str, rule: str) -> None:
        """Save ``ALLOW``, ``ASK`` or ``DENY`` for a ``"tool"`` or a ``"provider"``."""
        self._send("saveRule", {"kind": kind, "name": name, "rule": rule})

    def set_permissions(self, admin: bool, permissions: Sequence[str]) -> None:
        """Change the signed-in user's role and permissions."""
        self._send("setPermissions", {"admin": admin, "permissions": list(permissions)})

    def trust_session(self, tool: str) -> None:
        """Trust a tool for the session."""
        self._send("trustSession", {"tool": tool})

    def set_yolo(self, enabled: bool) -> None:
        """Turn YOLO mode on or off."""
        self._send("setYolo", {"enabled": enabled})

    def kill(self, tool: str | None = None) -> None:
        """Pull the kill-switch for one tool, or for every tool with ``None``."""
        self._send("kill", {"tool": tool})
