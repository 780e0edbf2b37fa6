"""The mutant catalog: deliberately broken reference hosts that the suite must catch.

This module owns the data (one :class:`Mutant` per broken variant: a name, the one requirement
it violates, a description and the patches that break it) and the means to apply it: in this
process, as ``--host mutant:<name>``, or behind the reference driver, as
``python -m conformance.mutants driver <name>``, so a mutant can be checked through the
subprocess path too. Each patch replaces one attribute of a ``reference_impl`` module or class
with a function of the original, and is undone when the host closes. :func:`selftest` runs the
suite against every mutant and reports the requirement IDs each was caught by. Mutants change
behaviour only; none may print a value.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import json
import shlex
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance import (
    mutants_grammar,
    mutants_mcp,
    mutants_path,
    mutants_survivors,
    strip_selftest,
)
from conformance.catalog import SHOULD, load_catalog
from conformance.host import HostUnderTest
from conformance.mutant_base import Mutant, Patch, applied
from conformance.selftest import pool

__all__ = ["BY_NAME", "MUTANTS", "Mutant", "Patch", "applied", "get", "selftest"]

_local = threading.local()


# --- the transforms ---------------------------------------------------------------------------


def _remember_substitution(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        _local.substituted = arguments.raw
        return arguments

    return substitute


def _ledger_from_substituted(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        raw = getattr(_local, "substituted", None)
        _local.substituted = None
        if raw is not None:
            fields["sanitized_args"] = raw
        return original(**fields)

    return build


def _log_substituted(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        raw = getattr(_local, "substituted", None)
        _local.substituted = None
        if raw is not None:
            self.log.debug("call %s: substituted %s", call.id, raw)
        return original(self, call, *args)

    return record


def _scrub_after_cap(original: type) -> type:
    from reference_impl._cap import cap

    class CappedFirst(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            return str(super().scrub(cap(text)))

    return CappedFirst


def _trust_answers_secret_calls(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Disposition, Rule

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        rules = self.rules
        trusted = (
            call.tool.name in rules._session_trusted
            or rules._yolo
            or rules._tools.get(call.tool.name) is Rule.ALLOW
            or rules._providers.get(call.tool.provider_id) is Rule.ALLOW
        )
        if call.refs and trusted:
            return Disposition.APPROVED_ONCE
        return original(self, call, records)

    return approve


def _read_vault_first(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if call.refs and self.vault is not None:
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, call)

    return prepass


def _partial_resolution(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Refusal, SecretRecord, SecretValue

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        if not isinstance(found, Refusal) or found.reason != "unknown-id":
            return found
        pairs, records = [], []
        for reference in references:
            single = original(vault, [reference])
            if isinstance(single, Refusal):
                pairs.append((reference, SecretValue("")))
                records.append(
                    SecretRecord(
                        reference.id, "?", SecretValue(""), SecretValue(""), SecretValue("")
                    )
                )
            else:
                pairs.extend(single[0])
                records.extend(single[1])
        return tuple(pairs), tuple(records)

    return resolve


def _case_sensitive(original: Any) -> Any:
    import re

    return re.compile(original.pattern, original.flags & ~re.IGNORECASE)


def _literal_scan_only(original: Callable[[str], bool]) -> Callable[[str], bool]:
    from reference_impl._scan import MARKER_RE

    def has_marker(raw: str) -> bool:
        return "{{" in raw and MARKER_RE.search(raw) is not None

    return has_marker


def _keys_pass_through(original: type) -> type:
    class NoKeys(original):  # type: ignore[misc]
        def strings(self) -> Iterator[tuple[bool, int, int, str]]:
            for item in super().strings():
                if not item[0]:
                    yield item

    return NoKeys


def _without_form_d(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        found = original(value)
        return tuple(form for form in found if "%20" not in form) or found[:1]

    return forms


def _constant(value: Any) -> Callable[[Any], Any]:
    return lambda _original: value


def _echo_candidate(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def refuse(self: Any, call: Any, refusal: Any) -> Any:
        if refusal.reason == "malformed":
            refusal = dataclasses.replace(
                refusal, message=f"{refusal.message} in {call.args[:300]}"
            )
        return original(self, call, refusal)

    return refuse


def _walk_twice(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        original(vault, set(wanted))
        return original(vault, wanted)

    return walk


def _request_with(**changes: Any) -> Callable[[Any], Any]:
    def transform(original: Any) -> Any:
        def build(**fields: Any) -> Any:
            return original(**{**fields, **changes})

        return build

    return transform


def _tool_risk_kept(original: Any) -> Callable[..., Any]:
    from reference_impl._types import Risk

    def build(**fields: Any) -> Any:
        return original(**{**fields, "risk": min(fields["risk"], Risk.MEDIUM)})

    return build


def _stamp_frozen(original: Callable[..., Any]) -> Callable[..., Any]:
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        return (0, 0)

    return stamp


def _fail_open(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._policy import Policy

    @functools.wraps(original)
    def load(path: Any) -> Any:
        policy = original(path)
        return Policy() if policy.fault is not None else policy

    return load


def _never_times_out(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        return Answer.APPROVE if answer is Answer.TIMEOUT else answer

    return ask


def _view_from_agents_text(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        try:
            stale = json.loads(parsed.raw)
        except ValueError:
            return arguments
        if isinstance(stale, dict):
            arguments._view = stale  # the per-key view keeps the references
        return arguments

    return substitute


def _reencoded(original: Callable[[str], Any]) -> Callable[[str], Any]:
    def build(raw: str) -> Any:
        try:
            return original(json.dumps(json.loads(raw)))
        except ValueError:
            return original(raw)

    return build


def _read_vault_always(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if not call.refs and self.vault is not None:
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, call)

    return prepass


def _quadratic_scrub(original: type) -> type:
    class Rescanning(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            for start in range(0, len(text), 32):
                text[start:].find("\x00")  # rescans the whole tail at every step
            return str(super().scrub(text))

    return Rescanning


def _cap_note_outside(original: Callable[..., str]) -> Callable[..., str]:
    from reference_impl._limits import RESULT_CAP_CHARS

    def cap(text: str, limit: int = RESULT_CAP_CHARS) -> str:
        if len(text) <= limit:
            return text
        return text[:limit] + f"\n[result cut; it had {len(text)} characters]"

    return cap


def _refs_duplicated(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        refs = tuple(fields["secret_refs"])
        return original(**{**fields, "secret_refs": refs + refs[:1]})

    return build


def _refusing(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def refuse(self: Any, call: Any, refusal: Any) -> Any:
        _local.refusing = True
        try:
            return original(self, call, refusal)
        finally:
            _local.refusing = False

    return refuse


def _record_unless_refusing(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if getattr(_local, "refusing", False):
            return None
        return original(self, call, *args)

    return record


def _switch_ignored(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        policy = self.policy
        if policy.secret_references_enabled:
            return original(self, call)
        self.policy = dataclasses.replace(policy, secret_references_enabled=True)
        try:
            return original(self, call)
        finally:
            self.policy = policy

    return prepass


def _bearing_deny_first(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._registry import BEARING_DENIED_MESSAGE
    from reference_impl._types import Disposition, Refusal, Rule

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if call.refs and self.policy.secret_bearing_calls is Rule.DENY:
            return Refusal(
                Disposition.SECRET_FORBIDDEN, BEARING_DENIED_MESSAGE, "bearing-denied", "MSG-006"
            )
        return original(self, call)

    return prepass


def _remember_answer(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        _local.answer = answer
        return answer

    return ask


def _broad_answer_grants(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._registry import _BROAD_DISPOSITIONS
    from reference_impl._types import Answer, Disposition, Rule

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.answer = None
        result = original(self, call, records)
        answer = getattr(_local, "answer", None)
        broad = (Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION)
        if call.refs and result is Disposition.APPROVED_ONCE and answer in broad:
            if answer is Answer.ALWAYS_ALLOW:
                self.rules.save_tool_rule(call.tool.name, Rule.ALLOW)
            elif answer is Answer.TRUST_PROVIDER:
                self.rules.save_provider_rule(call.tool.provider_id, Rule.ALLOW)
            else:
                self.rules.trust_session(call.tool.name)
            return _BROAD_DISPOSITIONS[answer]
        return result

    return approve


def _unbounded_queue(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def init(self: Any, operator: Any, timeout: float, limit: int) -> None:
        original(self, operator, timeout, 1_000_000)

    return init


def _user_snapshot(original: property) -> property:
    def get(self: Any) -> Any:
        snapshot = getattr(_local, "user", None)
        return snapshot if snapshot is not None else original.fget(self)  # type: ignore[misc]

    return property(get)


def _approve_with_snapshot(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.user = self.user  # the fence then sees the user as the prompt opened
        try:
            return original(self, call, records)
        finally:
            _local.user = None

    return approve


def _without_json_escape(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    from reference_impl._scrub import json_escape

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        escaped = json_escape(value)
        return tuple(form for form in original(value) if form == value or form != escaped)

    return forms


def _scrubbing_forced(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(path: Any) -> Any:
        return dataclasses.replace(original(path), result_scrubbing_enabled=True)

    return load


def _remember_failure(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.failed = result.is_error
        return result

    return run


def _failure_text_kept(original: type) -> type:
    class SuccessOnly(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if getattr(_local, "failed", False):
                return text
            return str(super().scrub(text))

    return SuccessOnly


def _permission_dropped(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        return original(**{**fields, "permission": None})

    return build


_REG = "reference_impl._registry"

#: The first mutants; :data:`MUTANTS` adds the grammar and governed-path catalogs.
_CORE: Final[tuple[Mutant, ...]] = (
    Mutant(
        "ledger-substituted-args",
        "LEDG-004",
        "The ledger's sanitizedArgs is built from the substituted arguments.",
        (
            (_REG, "substitute", _remember_substitution),
            (_REG, "LedgerRecord", _ledger_from_substituted),
        ),
    ),
    Mutant(
        "scrub-after-cap",
        "SCRUB-011",
        "The result is cut to the cap before it is scrubbed.",
        ((_REG, "Scrubber", _scrub_after_cap),),
    ),
    Mutant(
        "trust-answers-secret-call",
        "APPR-001",
        "Session trust, YOLO or an ALLOW rule runs a secret-bearing call without a prompt.",
        ((_REG, "Registry._approve", _trust_answers_secret_calls),),
    ),
    Mutant(
        "vault-read-before-deny",
        "VAULT-001",
        "The vault's first page is read before the pre-pass refusals are decided.",
        ((_REG, "Registry._prepass", _read_vault_first),),
    ),
    Mutant(
        "partial-substitution",
        "SUBST-004",
        "With an unknown id the known references are substituted and the tool runs.",
        ((_REG, "resolve", _partial_resolution),),
    ),
    Mutant(
        "case-sensitive-prefix",
        "GRAM-001",
        "Only the lower-case {{secret: prefix is a marker.",
        (
            ("reference_impl._scan", "MARKER_RE", _case_sensitive),
            ("reference_impl._grammar", "MARKER_RE", _case_sensitive),
            ("reference_impl._grammar", "_CANDIDATE_RE", _case_sensitive),
            ("reference_impl._grammar", "_UNTERMINATED_RE", _case_sensitive),
            ("reference_impl._sanitize", "MARKER_RE", _case_sensitive),
            ("reference_impl._sanitize", "_CANDIDATE_RE", _case_sensitive),
        ),
    ),
    Mutant(
        "escaped-marker-passes",
        "GRAM-012",
        "The pre-scan looks for literal markers only, so \\u-escaped markers pass through.",
        ((_REG, "has_marker", _literal_scan_only),),
    ),
    Mutant(
        "keys-pass-through",
        "GRAM-014",
        "A marker in an object key is ignored instead of refusing the call.",
        (("reference_impl._grammar", "_Walker", _keys_pass_through),),
    ),
    Mutant(
        "pct20-not-scrubbed",
        "SCRUB-006",
        "Form d, URL form encoding with %20 for spaces, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_form_d),),
    ),
    Mutant(
        "floor-nine",
        "SCRUB-001",
        "Values need 9 code points, not 8, to be scrubbed.",
        (("reference_impl._scrub", "SCRUB_MIN_CODE_POINTS", _constant(9)),),
    ),
    Mutant(
        "fence-stamp-ignored",
        "FENCE-001",
        "Revocation stamps never move, so a revocation or reset during the prompt is missed.",
        (("reference_impl._policy", "Rules.stamp", _stamp_frozen),),
        via="driver",
    ),
    Mutant(
        "refusal-echoes-candidate",
        "MSG-012",
        "The malformed-reference refusal quotes the agent's argument text.",
        ((_REG, "Registry._refuse", _echo_candidate),),
    ),
    Mutant(
        "ai-provider-resolves",
        "MSG-011",
        "A secret tagged ai-provider resolves like any other.",
        (("reference_impl._resolve", "AI_PROVIDER_TAG", _constant("no-such-tag")),),
    ),
    Mutant(
        "vault-read-twice",
        "VAULT-002",
        "Each call walks the vault twice.",
        (("reference_impl._resolve", "_walk", _walk_twice),),
    ),
    Mutant(
        "debug-log-holds-value",
        "LOG-001",
        "A DEBUG log record quotes the substituted arguments.",
        (
            (_REG, "substitute", _remember_substitution),
            (_REG, "Registry._record", _log_substituted),
        ),
        via="driver",
    ),
    Mutant(
        "descriptors-missing",
        "APPR-002",
        "The approval request carries no descriptors.",
        ((_REG, "ApprovalRequest", _request_with(descriptors=())),),
        via="driver",
    ),
    Mutant(
        "risk-not-raised",
        "APPR-003",
        "The approval request keeps the tool's own risk, below HIGH for most tools.",
        ((_REG, "ApprovalRequest", _tool_risk_kept),),
    ),
    Mutant(
        "policy-fails-open",
        "POL-002",
        "An invalid policy file is replaced by the defaults instead of denying every tool.",
        (("reference_impl.harness", "load_policy", _fail_open),),
    ),
    Mutant(
        "timeout-approves",
        "APPR-008",
        "An unanswered prompt counts as an approval when it times out.",
        (("reference_impl._approve", "ApprovalGate.ask", _never_times_out),),
    ),
    Mutant(
        "views-disagree",
        "SUBST-001",
        "The handler's per-key view is parsed from the agent's text, so it keeps the references "
        "while the raw JSON holds the values.",
        ((_REG, "substitute", _view_from_agents_text),),
        via="driver",
    ),
    Mutant(
        "reference-free-reencoded",
        "SUBST-003",
        "A call without references reaches its handler re-encoded instead of byte for byte.",
        ((_REG, "ToolArguments", _reencoded),),
        via="driver",
    ),
    Mutant(
        "reference-free-reads-vault",
        "VAULT-003",
        "A call without references reads the vault's first page.",
        ((_REG, "Registry._prepass", _read_vault_always),),
        via="driver",
    ),
    Mutant(
        "quadratic-scrub",
        "INV7",
        "Scrubbing rescans the rest of the result at every step, so it takes quadratic time.",
        ((_REG, "Scrubber", _quadratic_scrub),),
    ),
    Mutant(
        "cap-note-outside",
        "CAP-001",
        "The note about a cut is appended after cutting at the cap, so the result exceeds it.",
        ((_REG, "cap", _cap_note_outside),),
        via="driver",
    ),
    Mutant(
        "secret-refs-duplicated",
        "LEDG-002",
        "The ledger's secretRefs repeats the first reference.",
        ((_REG, "LedgerRecord", _refs_duplicated),),
        via="driver",
    ),
    Mutant(
        "refusals-not-recorded",
        "LEDG-005",
        "A refused call writes no ledger record.",
        (
            (_REG, "Registry._refuse", _refusing),
            (_REG, "Registry._record", _record_unless_refusing),
        ),
        via="driver",
    ),
    Mutant(
        "feature-switch-ignored",
        "MSG-003",
        "secretReferencesEnabled false is ignored and references resolve.",
        ((_REG, "Registry._prepass", _switch_ignored),),
        via="driver",
    ),
    Mutant(
        "bearing-deny-first",
        "ORD-001",
        "secretBearingCalls DENY is decided before the feature switch, secret.read and tool DENY.",
        ((_REG, "Registry._prepass", _bearing_deny_first),),
        via="driver",
    ),
    Mutant(
        "broad-answer-grants",
        "APPR-006",
        "A broad answer to a secret-bearing call is recorded and saved as a broad grant.",
        (
            ("reference_impl._approve", "ApprovalGate.ask", _remember_answer),
            (_REG, "Registry._approve", _broad_answer_grants),
        ),
        via="driver",
    ),
    Mutant(
        "queue-unbounded",
        "APPR-009",
        "The pending-prompt limit is ignored, so no call ends as QUEUE_FULL.",
        (("reference_impl._approve", "ApprovalGate.__init__", _unbounded_queue),),
        via="driver",
    ),
    Mutant(
        "lost-permission-ignored",
        "FENCE-003",
        "The fence checks secret.read against the user as the prompt opened, not as it closed.",
        (
            (_REG, "Registry.user", _user_snapshot),
            (_REG, "Registry._approve", _approve_with_snapshot),
        ),
        via="driver",
    ),
    Mutant(
        "json-escape-not-scrubbed",
        "SCRUB-004",
        "Form b, the value's JSON string escape, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_json_escape),),
        via="driver",
    ),
    Mutant(
        "scrubbing-switch-ignored",
        "SCRUB-012",
        "resultScrubbingEnabled false is ignored and results are still scrubbed.",
        (("reference_impl.harness", "load_policy", _scrubbing_forced),),
        via="driver",
    ),
    Mutant(
        "failure-text-unscrubbed",
        "SCRUB-010",
        "Failure text built from a handler's exception is not scrubbed.",
        (
            ("reference_impl._execute", "Executor.run", _remember_failure),
            (_REG, "Scrubber", _failure_text_kept),
        ),
    ),
    Mutant(
        "rbac-ignored",
        "ORD-004",
        "A tool's RBAC permission is dropped when it is registered, so anyone may use it.",
        (("reference_impl.harness", "Tool", _permission_dropped),),
    ),
)

#: What the generated grammar corpus's vector IDs hold (docs/vectors.md).
GENERATED_MARK: Final = "gen-"

#: The catalog. Each mutant breaks one requirement of decisions R1 to R7.
MUTANTS: Final[tuple[Mutant, ...]] = (
    *_CORE,
    *mutants_grammar.MUTANTS,
    *mutants_path.MUTANTS,
    *mutants_mcp.MUTANTS,
    *mutants_survivors.MUTANTS,
)

#: Mutants by name.
BY_NAME: Final = {mutant.name: mutant for mutant in MUTANTS}


def get(name: str) -> Mutant:
    """Return the mutant called ``name``.

    Raises:
        KeyError: No mutant has that name.
    """
    return BY_NAME[name]


class _MutantHost:
    """The in-process reference host with a mutant applied while it is open."""

    def __init__(self, mutant: Mutant) -> None:
        from conformance.hosts.inprocess import InProcessHost

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(applied(mutant))
        self._inner = InProcessHost()
        self._mutant = mutant

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def info(self) -> Any:
        info = self._inner.info()
        return dataclasses.replace(info, name=f"{info.name} (mutant {self._mutant.name})")

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._stack.close()


def inprocess_host(name: str) -> HostUnderTest:
    """Return the in-process reference host with mutant ``name`` applied until it closes.

    Raises:
        KeyError: No mutant has that name.
    """
    host: HostUnderTest = _MutantHost(get(name))
    return host


def driver_command(name: str) -> str:
    """Return the ``--host`` command that serves mutant ``name`` behind the reference driver."""
    return f"{sys.executable} -m conformance.mutants driver {name}"


def run_driver(name: str) -> int:
    """Serve mutant ``name`` over driver protocol v1 on standard input and output."""
    mutant = get(name)
    from reference_impl import driver

    with applied(mutant):
        return driver.main([], name=f"secref reference host (mutant {mutant.name})")


# --- the self-test ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the suite made of one mutant."""

    mutant: Mutant
    caught: bool
    caught_by: tuple[str, ...]
    failing_checks: int
    harness_error: str | None
    seconds: float
    reads: tuple[str, ...] = ()
    """The capabilities the checks that caught it used."""
    core: bool = False
    """Whether a hand-written check (not only the generated corpus) caught it."""
    stopped: bool = False
    """Whether the run ended once the mutant's requirement was decided, before its last check."""


def _run_suite(arguments: Sequence[str]) -> dict[str, Any] | None:
    """Run the suite in this process and return its JSON report."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="secref-selftest-") as directory:
        report = Path(directory) / "report.json"
        from conformance.cli import base_arguments

        # The inner run's own pytest lines ("3 failed, ...") would read as failures of a green
        # self-test; its verdict is the report. They are shown only when no report came.
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            pytest.main(
                [
                    *base_arguments(),
                    "--no-header",
                    "--tb=no",
                    "--report-json",
                    str(report),
                    *arguments,
                ]
            )
        if not report.exists():
            sys.stdout.write(printed.getvalue())
            return None
        loaded: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return loaded


def judge(mutant: Mutant, report: dict[str, Any] | None, seconds: float) -> Verdict:
    """Decide from a suite report whether ``mutant`` was caught, naming its requirement."""
    if report is None:
        return Verdict(mutant, False, (), 0, "the suite wrote no report", seconds)
    failing = [check for check in report["checks"] if check["outcome"] == "fail"]
    named = tuple(dict.fromkeys(rid for check in failing for rid in check["failedRequirements"]))
    problem = "; ".join(report["problems"]) or None
    caught = mutant.requirement in named
    entry = load_catalog().get(mutant.requirement)
    if not caught and entry is not None and entry.level == SHOULD:
        # A SHOULD never fails a run: a mutant breaking one is caught when the suite reports
        # that requirement non-strict.
        noted = {item["requirement"] for check in report["checks"] for item in check["nonStrict"]}
        caught = mutant.requirement in noted
        named = (*named, *sorted(noted & {mutant.requirement}))
    catching = [
        check
        for check in report["checks"]
        if mutant.requirement in check["failedRequirements"]
        or any(item["requirement"] == mutant.requirement for item in check["nonStrict"])
    ]
    reads = tuple(
        sorted({capability for check in catching for capability in check.get("reads", ())})
    )
    core = any(GENERATED_MARK not in check["id"] for check in catching)
    stopped = bool(report.get("stopped"))
    return Verdict(mutant, caught, named, len(failing), problem, seconds, reads, core, stopped)


def path_of(mutant: Mutant, via: str) -> str:
    """The path a self-test run takes to ``mutant``: its own under ``"catalog"``, else ``via``."""
    return mutant.via if via == "catalog" else via


def path_arguments(path: str) -> list[str]:
    """The suite arguments that reach a mutant on ``path``: the MCP layer's mutants are served
    behind the driver and reached over MCP, so their runs, stripped ones included, say
    ``--via mcp``."""
    return ["--via", "mcp"] if path == "mcp" else []


def _progress(line: str) -> None:
    """Print one line of a long run at once, so that a log piped to a file or CI shows it."""
    print(line, flush=True)


def selftest(
    names: Sequence[str] = (),
    *,
    via: str = "catalog",
    broad: bool = False,
    strip: bool = False,
    strip_corpus: str = "core",
    out: Callable[[str], None] | None = None,
    workers: int = 1,
) -> int:
    """Run the suite against every mutant (or those named) and print the mutation score.

    Each mutant's run orders the checks of its requirement first and ends once a failure names
    it (``--stop-when-decided``); every stripped run ends once it can no longer be conformant.
    The rows and the closing lines count these stops, so that none is read as a pass.

    Args:
        names: Mutants to run; every mutant by default.
        via: ``"catalog"`` (each mutant through its own path, :attr:`Mutant.via`),
            ``"inprocess"``, or ``"driver"`` (the reference driver in a subprocess).
        broad: Run the whole suite against each mutant rather than the checks citing its
            requirement.
        strip: Also run the capability-stripping tables (:mod:`conformance.strip_selftest`):
            the reference driver with each capability stripped, and each driver-capable
            mutant with each capability its catch used stripped. No row may be conformant.
        strip_corpus: ``"core"`` leaves the generated grammar corpus out of the stripped runs of
            the reference driver; ``"all"`` keeps it.
        out: Where lines go; standard output, flushed line by line, by default.
        workers: How many runs go side by side (:mod:`conformance.selftest.pool`); the rows
            are printed in the catalog's order whichever finishes first.

    Returns:
        0 when every mutant was caught by a failure naming its requirement, 1 otherwise, 2 when
        a name is unknown.
    """
    out = out or _progress
    chosen = [BY_NAME[name] for name in names if name in BY_NAME] if names else list(MUTANTS)
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        out(f"unknown mutants: {', '.join(unknown)}")
        return 2
    if via == "driver":
        chosen = [mutant for mutant in chosen if mutant.driver]
    verdicts: list[Verdict] = []
    paths = [path_of(mutant, via) for mutant in chosen]
    through_driver = sum(path in ("driver", "mcp") for path in paths)
    runs: list[list[str]] = []
    for mutant, path in zip(chosen, paths, strict=True):
        host = f"mutant:{mutant.name}" if path == "inprocess" else driver_command(mutant.name)
        arguments = ["--host", host, *path_arguments(path)]
        if not broad:
            arguments += ["--requirements", mutant.requirement]
        # The run ends at the first failure naming the mutant's requirement: that is all the
        # judgement reads, and the checks citing it run first.
        arguments += ["--stop-when-decided", mutant.requirement]
        runs.append(arguments)
    answers = pool.run_all(_run_suite, runs, workers)
    for mutant, path, (report, seconds) in zip(chosen, paths, answers, strict=True):
        verdict = judge(mutant, report, seconds)
        verdicts.append(verdict)
        mark = "caught" if verdict.caught else "MISSED"
        by = ", ".join(verdict.caught_by[:6]) or "-"
        stop = strip_selftest.STOPPED_NOTE if verdict.stopped else ""
        out(
            f"{mark:<7} {mutant.name:<28} breaks {mutant.requirement:<10} "
            f"failed naming {by} ({verdict.failing_checks} checks, {verdict.seconds:.1f} s, "
            f"via {path}{stop})"
        )
    caught = sum(verdict.caught for verdict in verdicts)
    stops = sum(verdict.stopped for verdict in verdicts)
    score = 100.0 * caught / len(verdicts) if verdicts else 0.0
    out(
        f"mutation score: {caught}/{len(verdicts)} caught ({score:.0f}%); "
        f"{through_driver} through the subprocess driver, "
        f"{len(verdicts) - through_driver} in process; "
        f"{stops} runs stopped once decided, {workers} side by side"
    )
    broken: list[str] = []
    if strip:
        broken = _strip_tables(verdicts, out, strip_corpus, via, workers)
    missed = [verdict.mutant.name for verdict in verdicts if not verdict.caught]
    if missed or broken or not verdicts:
        # One closing line that says what failed, so that a log cut to its tail still does.
        parts = [f"mutants missed: {', '.join(missed)}"] if missed else []
        parts += [f"stripped runs broken: {', '.join(broken)}"] if broken else []
        out(f"self-test FAILED: {'; '.join(parts) or 'no mutant ran'}")
        return 1
    return 0


def _strip_tables(
    verdicts: Sequence[Verdict],
    out: Callable[[str], None],
    corpus: str = "core",
    via: str = "catalog",
    workers: int = 1,
) -> list[str]:
    """Print both capability-stripping tables; return the labels of the rows that broke."""
    from reference_impl.harness import CAPABILITIES

    adapter = f"{shlex.quote(sys.executable)} -m reference_impl.driver"
    out("")
    out("the reference driver with one capability stripped:")
    extra = strip_selftest.CORE_ONLY if corpus == "core" else ()
    rows = strip_selftest.capability_table(adapter, CAPABILITIES, _run_suite, out, extra, workers)
    out("")
    out("mutants with a capability their catch used stripped:")
    # A mutant that breaks a SHOULD leaves a conformant verdict even with nothing stripped (a
    # SHOULD is reported, never failed), so only MUST mutants can show a stripped run certifying.
    musts = {entry.id for entry in load_catalog().requirements if entry.level == "MUST"}
    cases = [
        (
            verdict.mutant.name,
            verdict.mutant.requirement,
            verdict.reads,
            verdict.core,
            path_arguments(path_of(verdict.mutant, via)),
        )
        for verdict in verdicts
        if verdict.mutant.driver and verdict.caught and verdict.mutant.requirement in musts
    ]
    rows += strip_selftest.mutant_table(cases, _run_suite, out, workers)
    broken = [row for row in rows if not row.holds]
    stops = sum(row.stopped for row in rows)
    out(
        f"capability stripping: {len(rows) - len(broken)}/{len(rows)} runs never conformant, "
        f"no check judging on what it could not see; {stops} runs stopped once decided"
    )
    return [row.label for row in broken]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.mutants``: list mutants, serve one as a driver, or self-test."""
    parser = argparse.ArgumentParser(prog="python -m conformance.mutants")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the catalog")
    serve = commands.add_parser("driver", help="serve a mutant over driver protocol v1")
    serve.add_argument("name")
    run = commands.add_parser("selftest", help="run the suite against the mutants")
    run.add_argument("names", nargs="*")
    run.add_argument("--via", choices=("catalog", "inprocess", "driver"), default="catalog")
    run.add_argument("--broad", action="store_true")
    run.add_argument(
        "--jobs",
        type=_positive,
        default=pool.default_workers(),
        metavar="N",
        help="runs side by side, each in a process of its own (default: one per core)",
    )
    run.add_argument(
        "--strip",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run the capability-stripping tables (default: on when no mutant is named)",
    )
    run.add_argument(
        "--strip-corpus",
        choices=("core", "all"),
        default="core",
        help="with the stripping tables: leave the generated grammar corpus out of the "
        "reference driver's stripped runs (core, the default) or keep it (all)",
    )
    options = parser.parse_args(argv)
    if options.command == "list":
        for mutant in MUTANTS:
            print(f"{mutant.name}\t{mutant.requirement}\t{mutant.description}")
        return 0
    if options.command == "driver":
        return run_driver(options.name)
    strip = not options.names if options.strip is None else options.strip
    return selftest(
        options.names,
        via=options.via,
        broad=options.broad,
        strip=strip,
        strip_corpus=options.strip_corpus,
        workers=options.jobs,
    )


def _positive(text: str) -> int:
    """Parse a count of at least 1, for ``--jobs``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
