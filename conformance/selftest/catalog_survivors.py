"""Mutant hosts for the checks that mutation testing of the reference host asked for.

This module owns the broken reference hosts behind ``conformance/checks/test_slot_accounting.py``,
``conformance/checks/test_fence_history.py``, ``conformance/checks/test_exact_results.py``, the
policy-file and kept-escapes checks of ``conformance/checks/test_reference_only.py``, the
redaction-extent and duration checks of ``conformance/checks/test_ledger.py``, and the check of
a host failure whose record cannot be built in ``conformance/checks/test_ledger_outcomes.py``:
each breaks one requirement in a way the older checks let through, and the self-test must catch
it (a SHOULD by being reported non-strict). A mutant here changes behaviour only, and never
prints a value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch


def _slot_freed_twice(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        try:
            return original(self, request)
        finally:
            with self._lock:
                self._open -= 1

    return ask


def _stamps_or_generation(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        with self._lock:
            generation = self._generation
            return (
                generation | self._tool_stamps.get(tool, 0),
                generation | self._provider_stamps.get(provider, 0),
            )

    return stamp


def _stamps_xor_generation(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        with self._lock:
            generation = self._generation
            return (
                generation ^ self._tool_stamps.get(tool, 0),
                generation ^ self._provider_stamps.get(provider, 0),
            )

    return stamp


def _save_toggles_stamp(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def patch(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def save(self: Any, name: str, rule: Any) -> None:
            if self.store_failure is not None:
                original(self, name, rule)  # raises, as the unbroken method does
                return
            with self._lock:
                getattr(self, f"_{kind}s")[name] = rule
                stamps = getattr(self, f"_{kind}_stamps")
                stamps[name] = stamps.get(name, 0) ^ 1

        return save

    return patch


def _one_placeholder_per_pass(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def init(self: Any, resolved: Any) -> None:
        original(self, resolved)
        # The pass over occurrences that do not overlap reads every one as the first form.
        count = len(self._replacements)
        if count:
            self._replacements = (self._replacements[0],) * count
            self._sizes = (self._sizes[0],) * count

    return init


def _window_restart_late(_original: Callable[..., Any]) -> Callable[..., Any]:
    def find_after(text: str, form: str, start: int) -> int:
        end = start + 256
        at = text.find(form, start, end)
        if at < 0 and end < len(text):
            at = text.find(form, end + len(form) + 1)
        return at

    return find_after


def _string_member_unread(_original: Callable[..., Any]) -> Callable[..., Any]:
    def string(_self: Any, _key: str) -> str | None:
        return None

    return string


def _prescan_counts_from_start(_original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl import _scan

    def marker_in(raw: str) -> bool:
        if _scan._LITERAL_FIRST_RE.search(raw) is not None:
            return True
        for match in _scan._ESCAPED_FIRST_RE.finditer(raw):
            start = before = match.start()
            # The run of backslashes is counted from the text's first character instead.
            while before and raw[0] == "\\":
                before -= 1
            if (start - before) % 2 == 0:
                return True
        return False

    return marker_in


def _second_brace_kept(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def redaction_end(text: str, body_start: int) -> int:
        end: int = original(text, body_start)
        # Stop after the first closing brace, leaving the candidate's second one behind.
        return end - 1 if text.startswith("}}", end - 2) else end

    return redaction_end


def _unscanned_taken_for_unmarked(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def sanitize_arguments(raw: str, limit: int | None = None, *, marked: Any = None) -> str:
        # A call recorded before the marker scan (marked is None) is taken for one without a
        # marker: its malformed candidates are kept as the agent wrote them.
        if limit is None:
            return str(original(raw, marked=bool(marked)))
        return str(original(raw, limit, marked=bool(marked)))

    return sanitize_arguments


def _never_cut(_original: Callable[..., Any]) -> Callable[..., Any]:
    def cut(text: str, _limit: int) -> str:
        return text

    return cut


def _host_failure_unrecorded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def internal_failure(self: Any, call: Any, error: Exception) -> Any:
        call.recorded = True  # as if the record had been written: it never is
        return original(self, call, error)

    return internal_failure


def _port_bug_escapes(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl import VaultError

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        escaped: list[Exception] = []

        class _Watched:
            def read_page(self, page: int, size: int) -> Any:
                try:
                    return vault.read_page(page, size)
                except VaultError:
                    raise
                except Exception as error:
                    escaped.append(error)
                    raise

        result = original(None if vault is None else _Watched(), references)
        if escaped:
            # The port's own failure leaves resolution: a host failure, not a vault failure.
            raise RuntimeError("the vault port failed") from None
        return result

    return resolve


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "pending-slot-freed-twice",
        "APPR-009",
        "Each closed prompt frees two slots, so after a few calls more prompts than the limit "
        "stay open at once and none ends as QUEUE_FULL.",
        (("reference_impl._approve", "ApprovalGate.ask", _slot_freed_twice),),
        via="driver",
    ),
    Mutant(
        "stamps-or-generation",
        "FENCE-001",
        "A rule's revocation stamp ORs the reset count with the rule's own count, so after one "
        "reset the first revocation of a rule leaves its stamp unchanged and the fence lets "
        "the approval through.",
        (("reference_impl._policy", "Rules.stamp", _stamps_or_generation),),
    ),
    Mutant(
        "stamps-xor-generation",
        "FENCE-001",
        "A rule's revocation stamp XORs the reset count with the rule's own count, so a reset "
        "and revocations of both the tool's and the provider's rules made while one prompt is "
        "open cancel out and the fence lets the approval through.",
        (("reference_impl._policy", "Rules.stamp", _stamps_xor_generation),),
        via="driver",
    ),
    Mutant(
        "saved-rule-toggles-stamp",
        "FENCE-001",
        "Saving a tool's or a provider's rule toggles its revocation stamp instead of counting "
        "up, so a revocation followed by a saved ASK or ALLOW while one prompt is open leaves "
        "the stamp as it was and the fence lets the approval through.",
        (
            ("reference_impl._policy", "Rules.save_tool_rule", _save_toggles_stamp("tool")),
            ("reference_impl._policy", "Rules.save_provider_rule", _save_toggles_stamp("provider")),
        ),
        via="driver",
    ),
    Mutant(
        "one-placeholder-per-pass",
        "SCRUB-020",
        "Where no two occurrences overlap, every occurrence is replaced with the longest form's "
        "placeholder and length, so a second value's placeholder is wrong and text beside a "
        "shorter form is eaten; dense text, which takes the overlap path, comes out right.",
        (("reference_impl._scrub", "Scrubber.__init__", _one_placeholder_per_pass),),
        via="driver",
    ),
    Mutant(
        "window-restart-late",
        "SCRUB-009",
        "After an overlap, a value passed over is looked for in a 256-character window and then "
        "only from a form's length past the window's end, so an occurrence straddling or just "
        "past the window's end is left in clear.",
        (("reference_impl._scrub", "_find_after", _window_restart_late),),
        via="driver",
    ),
    Mutant(
        "string-member-unread",
        "OPS-002",
        "A tool's per-key accessor for a string member returns nothing, so the secref demo "
        "tools that read a member (sha256, write_note) never see the substituted value.",
        (("reference_impl._arguments", "ToolArguments.string", _string_member_unread),),
        driver=False,
    ),
    Mutant(
        "prescan-counts-from-start",
        "GRAM-016",
        "The marker pre-scan counts the backslashes before an escaped brace from the text's "
        "first character, so text that is not JSON, starts with a backslash and holds an "
        "escaped marker at an odd offset is let through to the tool.",
        (("reference_impl._scan", "_marker_in", _prescan_counts_from_start),),
        via="driver",
    ),
    Mutant(
        "redaction-keeps-second-brace",
        "LEDG-007",
        "The redaction of a malformed candidate in sanitizedArgs stops after its first closing "
        "brace, so the second one is left behind before the text that follows.",
        (("reference_impl._sanitize", "_redaction_end", _second_brace_kept),),
        via="driver",
    ),
    Mutant(
        "withheld-calls-unredacted",
        "LEDG-007",
        "A call recorded before the host's scan for markers (withheld by the kill switch or "
        "RBAC) is taken for a call without one, so its sanitizedArgs keep a malformed "
        "candidate as the agent wrote it.",
        (("reference_impl._registry", "sanitize_arguments", _unscanned_taken_for_unmarked),),
        via="driver",
    ),
    Mutant(
        "kept-arguments-unbounded",
        "LEDG-022",
        "sanitizedArgs and the approval request keep the agent's arguments whole, however long, "
        "so every call writes its whole argument text into the ledger.",
        (("reference_impl._sanitize", "cut", _never_cut),),
        via="driver",
    ),
    Mutant(
        "host-failure-unrecorded",
        "LEDG-016",
        "A call the host itself fails on before its record is written ends as a withheld "
        "failure but leaves no ledger record.",
        (("reference_impl._registry", "Registry._internal_failure", _host_failure_unrecorded),),
        driver=False,
    ),
    Mutant(
        "vault-port-bug-crashes-call",
        "MSG-009",
        "A vault port failing with something other than its own error ends the call as a host "
        "failure instead of a vault failure with the ruling's message.",
        (("reference_impl._registry", "resolve", _port_bug_escapes),),
        driver=False,
    ),
    Mutant(
        "tool-save-stamp-masked",
        "FENCE-001",
        "Saving a tool's rule masks its count to the lowest bit instead of adding one, so after "
        "one earlier revocation a revocation, a save and a revocation while one prompt is open "
        "bring the count back to where it was and the fence lets the approval through.",
        (
            line_patch(
                "reference_impl._policy",
                "Rules.save_tool_rule",
                "self._tool_stamps.get(tool, 0) + 1",
                "self._tool_stamps.get(tool, 0) & 1",
            ),
        ),
    ),
    Mutant(
        "provider-save-stamp-masked",
        "FENCE-001",
        "Saving a provider's rule masks its count to the lowest bit instead of adding one: the "
        "mirror of tool-save-stamp-masked, so that the provider's half of the history check is "
        "shown to catch a count that comes back.",
        (
            line_patch(
                "reference_impl._policy",
                "Rules.save_provider_rule",
                "self._provider_stamps.get(provider, 0) + 1",
                "self._provider_stamps.get(provider, 0) & 1",
            ),
        ),
    ),
    Mutant(
        "non-json-escapes-dropped",
        "LEDG-022",
        "In text that is not JSON, every escape but \\uXXXX is dropped from the record's "
        "sanitizedArgs, so the ledger holds text the agent never sent.",
        (
            line_patch(
                "reference_impl._scan",
                "_unescape_match",
                "return match.group(0)",
                "return match.group(1)",
            ),
        ),
    ),
    Mutant(
        "kept-string-respelt",
        "LEDG-022",
        "A string of JSON arguments that holds a reference is encoded again even when nothing in "
        "it was redacted, so the escapes the agent wrote there (\\u00e9, \\/) are spelt anew in "
        "the record's sanitizedArgs and the approval request.",
        (
            line_patch(
                "reference_impl._sanitize",
                "_redact_json",
                "if redacted != text:",
                "if redacted is not text:",
            ),
        ),
    ),
    Mutant(
        "redaction-braces-counted-from-one",
        "LEDG-007",
        "A malformed candidate's braces are counted from one, so a candidate closed by a single "
        "brace is redacted up to a later brace, hiding the agent's text between them.",
        (line_patch("reference_impl._sanitize", "_redaction_end", "depth = 0", "depth = 1"),),
    ),
    Mutant(
        "duration-plus-a-second",
        "LEDG-021",
        "durationMs adds a second to the call's length in seconds instead of multiplying it, so "
        "every record reads about 1000 ms whatever the call took.",
        (
            line_patch(
                "reference_impl._registry",
                "Registry._record",
                "call.started) * 1000",
                "call.started) + 1000",
            ),
        ),
    ),
    Mutant(
        "policy-file-error-raised",
        "POL-002",
        "An unusable policy file (a directory, a FIFO, over 16 MiB, not UTF-8) makes loading "
        "the policy raise instead of giving a policy that denies every tool.",
        tuple(
            line_patch(
                module,
                "load_policy",
                "except InputFileError as error:",
                "except ArithmeticError as error:",
            )
            for module in ("reference_impl._policy", "reference_impl")
        ),
    ),
    Mutant(
        "self-overlap-window-masked",
        "SCRUB-009",
        "After an overlap, a long form is looked for again from the window's end masked with "
        "its length instead of less its length, so the next occurrence of a value of 255 to "
        "about 500 characters that overlaps itself is left in clear.",
        (
            line_patch(
                "reference_impl._scrub",
                "_find_after",
                "max(start, end - len(form) + 1)",
                "max(start, end & len(form) + 1)",
            ),
        ),
    ),
    Mutant(
        "failure-record-error-raised",
        "LEDG-016",
        "When the record of a call the host failed on cannot be built either, the error "
        "escapes invoke instead of ending the call with the lost record said on it.",
        (
            line_patch(
                "reference_impl._registry",
                "Registry._internal_failure",
                "except Exception:  # the record of a failure must not fail the call",
                "except LookupError:  # the record of a failure must not fail the call",
            ),
        ),
    ),
    Mutant(
        "torn-tail-read-by-byte-value",
        "LEDG-015",
        "A ledger file is taken to end a line when its last byte is at or below the newline's, "
        "so a record appended after a torn line whose crash left zero bytes is glued to it, "
        "and both are lost to every reader.",
        (
            line_patch(
                "reference_impl._ledger",
                "JsonlLedger._needs_newline",
                'os.pread(descriptor, 1, size - 1) != b"\\n"',
                'os.pread(descriptor, 1, size - 1) > b"\\n"',
            ),
        ),
    ),
)
