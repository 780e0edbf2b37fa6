"""A JSON-ready control surface over one reference registry, for conformance runs.

This module owns turning a configuration object (the driver protocol's ``configure`` params)
into a live reference host, playing the operator through a callback while a prompt is open,
applying the operator's mid-prompt actions, and reporting every surface a check inspects: the
ledger file's bytes, every host log record at DEBUG and above, the approval requests, the
handler receipts and the vault's page reads. The in-process host and the subprocess driver are
thin wrappers around it. It must never print; what it reports is what the host produced.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from reference_impl import _ledger
from reference_impl._execute import Tool
from reference_impl._ledger import JsonlLedger
from reference_impl._policy import Policy, PolicyPersistError, load_policy
from reference_impl._registry import Registry
from reference_impl._types import (
    Answer,
    ApprovalRequest,
    Risk,
    Rule,
    SecretRecord,
    SecretValue,
    User,
)
from reference_impl._vault import InMemoryVault
from reference_impl.handlers import Receipts, make_handler

#: What this host can do, as its handshake announces (docs/driver-protocol.md).
CAPABILITIES: Final = (
    "start",
    "observe.ledger",
    "observe.log",
    "observe.requests",
    "observe.receipts",
    "observe.vault-reads",
    "control.revoke",
    "control.reset",
    "control.save-rule",
    "control.set-permissions",
    "control.trust-session",
    "control.set-yolo",
    "control.kill",
    "vault.absent",
    "vault.failing",
    "policy.text",
    "vault.failure-message",
    "vault.failing-from-page",
    "ledger.seed",
    "observe.ledger-read",
    "policy.store-failing",
    "reference",
)

#: The ``policyStore`` values ``configure`` accepts: a store that saves rules, or one whose
#: every save fails (docs/driver-protocol.md, "configure").
POLICY_STORES: Final = ("working", "failing")

#: Answers the operator callback may give, by their wire names; "none" lets the prompt time out.
ANSWERS: Final = {answer.value: answer for answer in Answer if answer is not Answer.TIMEOUT}

#: Plays the operator: gets the request as a JSON-ready dict, returns an answer's wire name.
PromptCallback = Callable[[dict[str, Any]], str]
RegistryFactory = Callable[..., Registry]


def _first_failing_page(value: object) -> int:
    """Return ``vaultFailingFromPage`` as a page number: absent or null is 0, every read fails.

    Raises:
        ValueError: It is not a whole number of at least 0.
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("vaultFailingFromPage must be a whole number of at least 0")
    return value


def request_to_dict(request: ApprovalRequest) -> dict[str, Any]:
    """Return an approval request as the driver protocol carries it."""
    return {
        "id": request.id,
        "tool": request.tool_name,
        "provider": request.provider_id,
        "risk": request.risk.name,
        "descriptors": list(request.descriptors),
        "arguments": request.arguments,
        "secretRefs": list(request.secret_refs),
        "stamp": list(request.stamp),
    }


def _approve(_request: dict[str, Any]) -> str:
    return "approve"


class RecordCapture(logging.Handler):
    """Keeps every record it is handed, formatted, exception text included: the host log as the
    driver protocol reports it. The harness hands it the host's logger; the suite's in-process
    adapter subclasses it to keep the rest of the process's records too."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, str]] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot be formatted is kept as its template
            message = str(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            message += "\n" + record.exc_text
        with self._guard:
            self.records.append({"level": record.levelname, "message": message})

    def take(self) -> list[dict[str, str]]:
        """Return the records kept so far."""
        with self._guard:
            return list(self.records)

    def clear(self) -> None:
        """Forget the records kept so far."""
        with self._guard:
            self.records.clear()


class _CallbackOperator:
    """The registry's operator: hands each request to the calling thread's callback."""

    def __init__(self, host: HarnessHost) -> None:
        self._host = host

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        deadline = time.monotonic() + timeout
        data = request_to_dict(request)
        self._host._record_request(data)
        callback: PromptCallback = getattr(self._host._local, "on_prompt", None) or _approve
        wire = callback(data)
        answer = ANSWERS.get(wire)
        if answer is None:
            # No answer: the prompt stays open until the host's own timeout ends it.
            time.sleep(max(0.0, deadline - time.monotonic()))
            return Answer.TIMEOUT
        if time.monotonic() > deadline:
            return Answer.TIMEOUT
        return answer


class HarnessHost:
    """One reference host, configured from JSON-ready data and observed from outside.

    Args:
        registry_factory: Builds the registry from ``Registry``'s keyword arguments; a mutant
            host passes a broken one.
    """

    def __init__(self, registry_factory: RegistryFactory = Registry) -> None:
        self._factory = registry_factory
        self._dir = Path(tempfile.mkdtemp(prefix="secref-host-"))
        self._local = threading.local()
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._capture = RecordCapture()
        self._logger = logging.getLogger(f"reference_impl.host.{id(self):x}")
        self._logger.setLevel(logging.DEBUG)
        self._logger.propagate = False
        self._logger.addHandler(self._capture)
        self.receipts = Receipts()
        self.vault: InMemoryVault | None = None
        self.registry: Registry | None = None
        self.ledger_path = self._dir / "ledger.jsonl"
        self._generation = 0

    # --- the protocol's requests -------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Return the handshake's host description."""
        from reference_impl import __version__

        return {
            "name": "secref reference host",
            "version": __version__,
            "language": "python",
            "capabilities": list(CAPABILITIES),
        }

    def configure(self, config: Mapping[str, Any]) -> None:
        """Start afresh from ``config``: new registry, vault, policy and an empty ledger.

        Args:
            config: The driver protocol's ``configure`` params (docs/driver-protocol.md).

        Raises:
            ValueError, KeyError, TypeError: The configuration is malformed.
        """
        self._generation += 1
        generation_dir = self._dir / str(self._generation)
        generation_dir.mkdir()
        self.ledger_path = generation_dir / "ledger.jsonl"
        seed = config.get("ledgerSeed")
        if seed is not None:
            # An existing ledger, as an earlier run left it: the host opens it and appends.
            self.ledger_path.write_bytes(base64.b64decode(str(seed), validate=True))
            self.ledger_path.chmod(0o600)
        store = str(config.get("policyStore", "working"))
        if store not in POLICY_STORES:
            raise ValueError(f"unknown policy store {store!r}")
        policy = self._policy(config, generation_dir)
        records = [
            SecretRecord(
                id=str(item["id"]),
                website=str(item["website"]),
                username=SecretValue(str(item.get("username", ""))),
                password=SecretValue(str(item.get("password", ""))),
                notes=SecretValue(str(item.get("notes", ""))),
                tags=tuple(str(tag) for tag in item.get("tags", ())),
            )
            for item in config.get("secrets", ())
        ]
        vault_mode = str(config.get("vault", "present"))
        self.vault = None if vault_mode == "absent" else InMemoryVault(records)
        if vault_mode.startswith("failing:") and self.vault is not None:
            self.vault.fail_with = vault_mode.split(":", 1)[1]
            message = config.get("vaultFailureMessage")
            self.vault.fail_message = None if message is None else str(message)
            self.vault.fail_from_page = _first_failing_page(config.get("vaultFailingFromPage"))
        elif config.get("vaultFailingFromPage") is not None:
            raise ValueError("vaultFailingFromPage needs a failing vault")
        elif vault_mode not in ("present", "absent"):
            raise ValueError(f"unknown vault mode {vault_mode!r}")
        user = config.get("user", {})
        with self._lock:
            self._requests.clear()
            self._capture.records.clear()
        self.receipts.clear()
        registry = self._factory(
            policy=policy,
            vault=self.vault,
            operator=_CallbackOperator(self),
            ledger=JsonlLedger(self.ledger_path),
            user=User(
                name="operator",
                is_admin=bool(user.get("admin", False)),
                permissions=frozenset(user.get("permissions", ("secret.read",))),
            ),
            approval_timeout=float(config.get("approvalTimeoutS", 45.0)),
            pending_limit=int(config.get("pendingLimit", 4)),
            execution_timeout=float(config.get("executionTimeoutS", 5.0)),
            logger=self._logger,
        )
        for spec in config.get("tools", ()):
            name = str(spec["name"])
            registry.register(
                Tool(
                    name=name,
                    provider_id=str(spec["provider"]),
                    handler=make_handler(
                        str(spec["handler"]), name, self.receipts, spec.get("options")
                    ),
                    risk=Risk[str(spec.get("risk", "MEDIUM"))],
                    permission=spec.get("permission"),
                )
            )
        if store == "failing":
            registry.rules.store_failure = "the policy store could not be written"
        self.registry = registry

    @staticmethod
    def _policy(config: Mapping[str, Any], directory: Path) -> Policy:
        text = config.get("policyText")
        if text is None and config.get("policy") is not None:
            text = json.dumps(config["policy"])
        if text is None:
            return Policy()
        path = directory / "mcp-tool-policy.json"
        path.write_text(str(text), encoding="utf-8")
        return load_policy(path)

    def _live(self) -> Registry:
        if self.registry is None:
            raise RuntimeError("the host is not configured")
        return self.registry

    def invoke(
        self,
        tool: str,
        args: str,
        on_prompt: PromptCallback | None = None,
        *,
        with_rich: bool = False,
    ) -> dict[str, Any]:
        """Run one call in this thread; ``on_prompt`` plays the operator (approve if omitted).

        Args:
            tool: The tool the agent named.
            args: The argument text.
            on_prompt: Plays the operator.
            with_rich: Also return the handler's further result surfaces, scrubbed, as
                ``rich`` (for the MCP wire; the driver protocol has no such member).

        Returns:
            ``{"disposition", "text", "isError"}``, ``rich`` when asked for, and ``ledgerError``
            when the call's record could not be written.
        """
        registry = self._live()
        self._local.on_prompt = on_prompt
        try:
            outcome = registry.invoke(tool, args)
        finally:
            self._local.on_prompt = None
        result: dict[str, Any] = {
            "disposition": outcome.disposition.value,
            "text": outcome.text,
            "isError": outcome.is_error,
        }
        if with_rich:
            result["rich"] = outcome.rich
        if outcome.ledger_error is not None:
            result["ledgerError"] = outcome.ledger_error
        return result

    def control(self, op: str, params: Mapping[str, Any]) -> None:
        """Apply one operator action: the driver protocol's ``control`` request.

        Raises:
            ValueError: ``op`` is not a known action.
        """
        registry = self._live()
        rules = registry.rules
        if op == "revoke":
            if params["kind"] == "tool":
                rules.revoke_tool(str(params["name"]))
            else:
                rules.revoke_provider(str(params["name"]))
        elif op == "reset":
            rules.reset()
        elif op == "saveRule":
            rule = Rule(str(params["rule"]))
            try:
                if params["kind"] == "tool":
                    rules.save_tool_rule(str(params["name"]), rule)
                else:
                    rules.save_provider_rule(str(params["name"]), rule)
            except PolicyPersistError as error:
                raise ValueError("the policy store is failing") from error
        elif op == "setPermissions":
            registry.set_user(
                User(
                    name=registry.user.name,
                    is_admin=bool(params.get("admin", False)),
                    permissions=frozenset(str(p) for p in params.get("permissions", ())),
                )
            )
        elif op == "trustSession":
            rules.trust_session(str(params["tool"]))
        elif op == "setYolo":
            rules.set_yolo(bool(params["enabled"]))
        elif op == "kill":
            tool = params.get("tool")
            rules.kill(None if tool is None else str(tool))
        else:
            raise ValueError(f"unknown control op {op!r}")

    def observe(self) -> dict[str, Any]:
        """Return every surface as the driver protocol's ``observe`` result."""
        try:
            ledger = self.ledger_path.read_bytes()
        except FileNotFoundError:
            ledger = b""
        with self._lock:
            requests = list(self._requests)
            log = list(self._capture.records)
        return {
            "ledgerBase64": base64.b64encode(ledger).decode("ascii"),
            "log": log,
            "requests": requests,
            "receipts": [
                {"tool": item.tool, "raw": item.raw, "view": item.view}
                for item in self.receipts.all()
            ],
            "vaultReads": list(self.vault.reads) if self.vault is not None else [],
            "ledgerRead": self._ledger_read(),
        }

    def _ledger_read(self) -> list[dict[str, object]]:
        """Return every ledger record as the host's own reader decodes it; skipped lines out."""
        return [record.to_json_dict() for record in _ledger.read_ledger(self.ledger_path).records]

    def close(self) -> None:
        """Release the host's files and log handler."""
        self._logger.removeHandler(self._capture)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _record_request(self, data: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(data)
