"""Mutants that break the governed path after the grammar: approval, fence, substitution,
scrubbing, cap, ledger, vault, policy, the invariants and operating the host (decisions R3 to
R7, and the design's invariants).

Each entry is a :class:`conformance.mutant_base.Mutant`; :mod:`conformance.mutants` gathers
this catalog with the others. A mutant changes behaviour only; none may print a value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from conformance.mutant_base import Mutant, Patch

_local = threading.local()
_REG = "reference_impl._registry"


def _ledger_export(name: str, transform: Callable[[Any], Any]) -> tuple[Patch, Patch]:
    """Patch a ledger function where it is defined and where the package re-exports it, so
    that callers through either name meet the mutant."""
    return (("reference_impl._ledger", name, transform), ("reference_impl", name, transform))


_UNSET: Final = object()


# --- approval ---------------------------------------------------------------------------------


def _substituted_text(call: Any, records: Any) -> str | None:
    """Return the call's arguments with its values substituted, or ``None`` without references."""
    from reference_impl._arguments import substitute
    from reference_impl._grammar import ParsedArguments, parse_arguments

    parsed = parse_arguments(call.args) if call.refs else None
    if not isinstance(parsed, ParsedArguments):
        return None
    pairs = tuple(
        (reference, record.value(reference.field))
        for reference, record in zip(call.refs, records, strict=True)
    )
    return str(substitute(parsed, pairs).raw)


def _request_shows_substituted(
    only_with_scrubbing_off: bool,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The request's arguments are the substituted text (only with scrubbing off, if asked)."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def approve(self: Any, call: Any, records: Any) -> Any:
            if only_with_scrubbing_off and self.policy.result_scrubbing_enabled:
                return original(self, call, records)
            call.sanitized = _substituted_text(call, records)
            try:
                return original(self, call, records)
            finally:
                call.sanitized = None  # the ledger still gets the agent's own text

        return approve

    return transform


def _risk_note(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The request gains a note on its risk that repeats every descriptor, usernames and all."""

    @functools.wraps(original)
    def to_dict(request: Any) -> dict[str, Any]:
        data = original(request)
        if request.descriptors:
            data["riskNote"] = f"{request.risk.name}: reads " + "; ".join(request.descriptors)
        return data

    return to_dict


def _denial_approves(original: Callable[..., Any]) -> Callable[..., Any]:
    """The gate reads the operator's denial as an approval."""
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        return Answer.APPROVE if answer is Answer.DENY else answer

    return ask


def _stamp_without_provider(original: Callable[..., Any]) -> Callable[..., Any]:
    """The revocation stamp counts the tool's changes only, never the provider's."""

    @functools.wraps(original)
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        tool_stamp, _ = original(self, tool, provider)
        return (tool_stamp, 0)

    return stamp


# --- the fence --------------------------------------------------------------------------------


def _save_keeps_stamp(stamps_attribute: str) -> Callable[[Callable[..., None]], Any]:
    """Saving a rule leaves the revocation stamp (``_tool_stamps`` or ``_provider_stamps``)."""

    def transform(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def save(self: Any, name: str, rule: Any) -> None:
            stamps = getattr(self, stamps_attribute)
            before = stamps.get(name, _UNSET)
            original(self, name, rule)
            with self._lock:
                if before is _UNSET:
                    stamps.pop(name, None)
                else:
                    stamps[name] = before

        return save

    return transform


def _denied_as_before_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """While a prompt is open, the DENY verdict is the one read before it opened."""

    @functools.wraps(original)
    def denied(self: Any, tool: str, provider: str) -> Any:
        verdict = getattr(_local, "deny_verdict", _UNSET)
        return original(self, tool, provider) if verdict is _UNSET else verdict

    return denied


def _fence_reuses_verdict(original: Callable[..., Any]) -> Callable[..., Any]:
    """The fence re-uses the pre-pass's DENY verdict instead of reading the rules again."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.deny_verdict = self.rules.denied(call.tool.name, call.tool.provider_id)
        try:
            return original(self, call, records)
        finally:
            _local.deny_verdict = _UNSET

    return approve


def _reset_keeps_stamps(original: Callable[..., None]) -> Callable[..., None]:
    """A reset forgets the saved rules but leaves every revocation stamp in place."""

    @functools.wraps(original)
    def reset(self: Any) -> None:
        generation = self._generation
        original(self)
        with self._lock:
            self._generation = generation

    return reset


# --- substitution and resolution ---------------------------------------------------------------


def _values_by_id(original: Callable[..., Any]) -> Callable[..., Any]:
    """Values are looked up by secret id only, so one field's value stands for every field."""

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        by_id = {reference.id: value for reference, value in resolved}
        return original(
            parsed, tuple((reference, by_id[reference.id]) for reference, _ in resolved)
        )

    return substitute


def _empty_is_a_value(original: Callable[..., bool]) -> Callable[..., bool]:
    """An empty value counts as present, so a reference to an empty field resolves."""

    def present(self: Any) -> bool:
        return True

    return present


def _permission_at_fence_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """The pre-pass skips the secret.read check, leaving it to the fence after the prompt."""
    from reference_impl._types import SECRET_READ

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        user = self.user
        if user.may(SECRET_READ):
            return original(self, call)
        self._user = dataclasses.replace(user, permissions=user.permissions | {SECRET_READ})
        try:
            return original(self, call)
        finally:
            self._user = user

    return prepass


def _stale_refs(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call without markers is recorded with the references of the registry's last call."""

    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if call.refs:
            self._last_refs = call.refs
        elif not call.marked:
            call.refs = getattr(self, "_last_refs", ())
        return original(self, call, *args)

    return record


def _view_top_level_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """The per-key view substitutes top-level strings only; nested members keep references."""

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        try:
            view = json.loads(parsed.raw)
        except ValueError:
            return arguments
        if not isinstance(view, dict):
            return arguments
        substituted = json.loads(arguments.raw)
        arguments._view = {
            key: substituted[key] if isinstance(item, str) else item for key, item in view.items()
        }
        return arguments

    return substitute


# --- scrubbing and the cap --------------------------------------------------------------------


def _without_identity(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """Form a, the value itself, is not among the scrubbed forms."""

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        return tuple(form for form in original(value) if form != value)

    return forms


def _plus_kept(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """The scrubbed form c leaves '+' in the value as it is instead of %2B."""

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(form.replace("%2B", "+") for form in original(value)))

    return forms


def _form_table_writes(byte: int, text: str) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    """Form c's byte table writes ``byte`` as ``text``, as another URL encoder would."""

    def transform(original: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(text if index == byte else entry for index, entry in enumerate(original))

    return transform


def _with_sha256(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """The value's SHA-256 in hex is scrubbed as if it were a form of the value."""
    import hashlib

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        found = original(value)
        if not found:
            return found
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return (*found, digest)

    return forms


def _placeholder_without_field(original: Callable[..., str]) -> Callable[..., str]:
    """The placeholder names the secret's id but not the field."""

    @functools.wraps(original)
    def placeholder(reference: Any) -> str:
        return f"[secret:{reference.id}]"

    return placeholder


def _merge_drops_overlapped(original: Callable[..., str]) -> Callable[..., str]:
    """After an overlap the merge stops looking for the form it passed over."""

    @functools.wraps(original)
    def merge(self: Any, text: str) -> str:
        needles = self._needles
        found = [text.find(form) for form, _ in needles]
        active = [index for index, position in enumerate(found) if position >= 0]
        pieces: list[str] = []
        cursor = 0
        while active:
            best = min(active, key=found.__getitem__)
            form, replacement = needles[best]
            pieces.append(text[cursor : found[best]])
            pieces.append(replacement)
            cursor = found[best] + len(form)
            survivors: list[int] = []
            for index in active:
                if found[index] < cursor:
                    if index != best:
                        continue  # overlapped by the replacement: never looked for again
                    found[index] = text.find(needles[index][0], cursor)
                    if found[index] < 0:
                        continue
                survivors.append(index)
            active = survivors
        pieces.append(text[cursor:])
        return "".join(pieces)

    return merge


def _rescanning(original: Callable[..., str]) -> Callable[..., str]:
    """Each form is replaced in turn over the text already scrubbed, placeholders included."""

    @functools.wraps(original)
    def scrub(self: Any, text: str) -> str:
        for form, replacement in self._needles:
            text = text.replace(form, replacement)
        return text

    return scrub


def _first_occurrence_only(original: type) -> type:
    """Each form is replaced at its first occurrence only."""

    class FirstOnly(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            for form, replacement in self._needles:
                text = text.replace(form, replacement, 1)
            return text

    return FirstOnly


def _one_field_per_secret(original: type) -> type:
    """The scrubber keeps one field per secret, so a second field of a secret is not scrubbed."""

    class FirstFieldOnly(original):  # type: ignore[misc]
        def __init__(self, resolved: Any) -> None:
            seen: dict[str, Any] = {}
            for reference, value in resolved:
                seen.setdefault(reference.id, (reference, value))
            super().__init__(tuple(seen.values()))

    return FirstFieldOnly


def _scrub_up_to_cut(original: type) -> type:
    """An over-cap result is scrubbed only up to where the cap will cut it."""
    from reference_impl._limits import RESULT_CAP_CHARS

    class UpToCut(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if len(text) <= RESULT_CAP_CHARS:
                return str(super().scrub(text))
            note = f"\n[result cut to {RESULT_CAP_CHARS} characters; it had {len(text)}]"
            keep = RESULT_CAP_CHARS - len(note)
            return str(super().scrub(text[:keep])) + text[keep:]

    return UpToCut


def _remember_failure_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """Remember a failed handler's text as it came back, before scrubbing."""

    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.failure_text = result.text if result.is_error else None
        return result

    return run


def _snippet_from_failure_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger's error snippet is cut from the failure text before it was scrubbed."""
    from reference_impl._limits import ERROR_SNIPPET_CHARS

    @functools.wraps(original)
    def record(self: Any, call: Any, disposition: Any, is_error: bool, snippet: Any) -> Any:
        text = getattr(_local, "failure_text", None)
        _local.failure_text = None
        if is_error and text is not None:
            snippet = text[:ERROR_SNIPPET_CHARS]
        return original(self, call, disposition, is_error, snippet)

    return record


# --- the ledger -------------------------------------------------------------------------------


def _provider_renamed(original: Callable[..., dict[str, object]]) -> Callable[..., Any]:
    """The record's providerId is written as provider."""

    @functools.wraps(original)
    def to_json_dict(self: Any) -> dict[str, object]:
        data = original(self)
        return {("provider" if key == "providerId" else key): item for key, item in data.items()}

    return to_json_dict


def _duration_always_zero(original: Callable[..., dict[str, object]]) -> Callable[..., Any]:
    """Every record's durationMs is written as 0."""

    @functools.wraps(original)
    def to_json_dict(self: Any) -> dict[str, object]:
        return {**original(self), "durationMs": 0}

    return to_json_dict


def _forbidden_as_policy_denied(original: Any) -> Callable[..., Any]:
    """SECRET_FORBIDDEN is recorded as POLICY_DENIED."""
    from reference_impl._types import Disposition

    def build(**fields: Any) -> Any:
        if fields["approval_disposition"] is Disposition.SECRET_FORBIDDEN:
            fields["approval_disposition"] = Disposition.POLICY_DENIED
        return original(**fields)

    return build


def _secret_refs_required(original: Callable[..., Any]) -> Callable[..., Any]:
    """A record without secretRefs fails to decode."""

    @functools.wraps(original)
    def decode(data: dict[str, object]) -> Any:
        if "secretRefs" not in data:
            raise KeyError("secretRefs")
        return original(data)

    return decode


def _two_writes_unlocked(original: Callable[..., None]) -> Callable[..., None]:
    """Each record is two writes outside the lock: its text, then its newline."""
    from reference_impl import _ledger

    @functools.wraps(original)
    def append(self: Any, record: Any) -> None:
        line = _ledger.encode_record(record)
        descriptor = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _ledger.LEDGER_FILE_MODE
        )
        try:
            os.write(descriptor, line[:-1])
            time.sleep(0)  # another writer may run between the text and its newline
            os.write(descriptor, b"\n")
        finally:
            os.close(descriptor)

    return append


def _no_record_start(_original: Any) -> bytes:
    """The reader no longer looks for a whole record after a torn prefix on one line."""
    return b"\x00no record starts here\x00"


def _secret_refs_loose(original: Callable[..., Any]) -> Callable[..., Any]:
    """A record whose secretRefs is not a list of names is read anyway, coerced to strings."""

    @functools.wraps(original)
    def decode(data: dict[str, object]) -> Any:
        refs = data.get("secretRefs")
        if refs is not None and not isinstance(refs, list):
            refs = list(str(refs))
        if isinstance(refs, list):
            data = {**data, "secretRefs": [str(ref) for ref in refs]}
        return original(data)

    return decode


def _damage_called_torn(original: Callable[..., Any]) -> Callable[..., Any]:
    """Every damaged line is reported as a torn line, whatever its damage."""

    @functools.wraps(original)
    def read(path: Any) -> Any:
        contents = original(path)
        problems = tuple(
            problem.split(":", 1)[0] + ": torn line skipped" for problem in contents.problems
        )
        return type(contents)(contents.records, problems)

    return read


def _every_open_failure_a_fifo(original: Callable[..., Any]) -> Callable[..., Any]:
    """Every ledger open that fails is reported as a FIFO at the path, whatever the cause."""
    from reference_impl import LedgerError

    @functools.wraps(original)
    def open_locked(self: Any) -> Any:
        try:
            return original(self)
        except LedgerError as error:
            raise LedgerError(error.errno, f"the ledger {self.path} is a FIFO") from None

    return open_locked


def _torn_line_fatal(original: Callable[..., Any]) -> Callable[..., Any]:
    """A reader meeting a torn last line gives up on the whole file."""

    @functools.wraps(original)
    def read(path: Any) -> Any:
        contents = original(path)
        if any("torn" in problem for problem in contents.problems):
            raise ValueError("the ledger's last line is torn")
        return contents

    return read


# --- policy -----------------------------------------------------------------------------------


def _bearing_default_deny(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """A policy file that does not set secretBearingCalls makes it DENY."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def parse(text: str) -> Any:
        policy = original(text)
        if "secretBearingCalls" not in json.loads(text):
            return dataclasses.replace(policy, secret_bearing_calls=Rule.DENY)
        return policy

    return parse


def _tool_allow_first(original: Callable[..., Any]) -> Callable[..., Any]:
    """A tool ALLOW is consulted before a provider DENY, and wins."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def denied(self: Any, tool: str, provider: str) -> Any:
        verdict = original(self, tool, provider)
        if verdict == "provider:DENY" and self._tools.get(tool) is Rule.ALLOW:
            return None
        return verdict

    return denied


# --- operating the host -----------------------------------------------------------------------


def _list_columns_swapped(original: Callable[..., int]) -> Callable[..., int]:
    """secref list prints username before website."""
    from reference_impl import cli

    @functools.wraps(original)
    def listing(options: Any, stdout: Any) -> int:
        for record in cli.load_vault_file(options.vault).records():
            fields = (record.id, record.username.reveal(), record.website)
            stdout.write("\t".join(cli.printable(field) for field in fields) + "\n")
        return 0

    return listing


def _silent_without_terminal(original: Callable[..., Any]) -> Callable[..., Any]:
    """Without a terminal to answer from, the CLI denies without showing the request."""
    from reference_impl import cli
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any, timeout: float) -> Any:
        if self._in is None or not cli._isatty(self._in):
            return Answer.DENY
        return original(self, request, timeout)

    return ask


# --- withheld calls, failure texts, exact results, seeded ledgers -------------------------------


def _kill_only_when_gated(original: Callable[..., bool]) -> Callable[..., bool]:
    """The kill switch is read only where the pre-pass mutant below asks for it."""

    @functools.wraps(original)
    def killed(self: Any, tool: str) -> bool:
        return bool(getattr(_local, "kill_now", False)) and original(self, tool)

    return killed


def _kill_after_prepass(original: Callable[..., Any]) -> Callable[..., Any]:
    """The kill switch is decided after the secret pre-pass, so a pre-pass refusal wins."""
    from reference_impl._types import Disposition, Refusal

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        refusal = original(self, call)
        if refusal is not None:
            return refusal
        _local.kill_now = True
        try:
            dead = self.rules.killed(call.tool.name)
        finally:
            _local.kill_now = False
        if dead:
            return Refusal(
                Disposition.KILL_SWITCHED,
                f"Tool {call.tool.name} is disabled by the kill-switch",
                "kill-switch",
                "ORD-004",
            )
        return None

    return prepass


def _kill_all_ignored(original: Callable[..., None]) -> Callable[..., None]:
    """Pulling the kill switch for every tool does nothing."""

    @functools.wraps(original)
    def kill(self: Any, tool: str | None = None) -> None:
        if tool is not None:
            original(self, tool)

    return kill


def _allow_outranks_kill(original: Callable[..., bool]) -> Callable[..., bool]:
    """A tool ALLOW, a provider ALLOW, YOLO or session trust lets a kill-switched tool run."""
    from reference_impl._types import Rule

    @functools.wraps(original)
    def killed(self: Any, tool: str) -> bool:
        with self._lock:
            allowed = (
                self._tools.get(tool) is Rule.ALLOW
                or Rule.ALLOW in self._providers.values()
                or self._yolo
                or tool in self._session_trusted
            )
        return False if allowed else original(self, tool)

    return killed


def _unknown_tool_reads_vault(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call to an unknown tool that carries a marker reads the vault's first page first."""
    from reference_impl._scan import has_marker

    @functools.wraps(original)
    def invoke(self: Any, tool_name: str, args_json: str) -> Any:
        if tool_name not in self._tools and self.vault is not None and has_marker(args_json):
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, tool_name, args_json)

    return invoke


def _persist_failure_ignored(original: Callable[..., None]) -> Callable[..., None]:
    """A rule the policy store cannot save is reported saved, and the call runs."""
    from reference_impl._policy import PolicyPersistError

    @functools.wraps(original)
    def save(self: Any, name: str, rule: Any) -> None:
        with contextlib.suppress(PolicyPersistError):
            original(self, name, rule)

    return save


def _slots_never_freed(original: Callable[..., Any]) -> Callable[..., Any]:
    """An answered prompt keeps its slot in the approval queue."""

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        if answer is not None:
            with self._lock:
                self._open += 1
        return answer

    return ask


def _stamp_parity(stamps_attribute: str) -> Callable[[Callable[..., None]], Any]:
    """A revocation flips the stamp between two states, so a second one undoes the first."""

    def transform(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def revoke(self: Any, name: str) -> None:
            original(self, name)
            with self._lock:
                stamps = getattr(self, stamps_attribute)
                stamps[name] = stamps[name] % 2

        return revoke

    return transform


def _timeout_quotes_arguments(original: Callable[..., Any]) -> Callable[..., Any]:
    """The execution-timeout text quotes the substituted arguments."""
    from reference_impl._types import ToolResult

    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.timed_out = result.is_error and " timed out after " in result.text
        if _local.timed_out:
            return ToolResult(f"{result.text} while running {arguments.raw}", is_error=True)
        return result

    return run


def _timeout_text_unscrubbed(original: type) -> type:
    """The scrubber leaves an execution-timeout text as it is."""

    class TimeoutKept(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if getattr(_local, "timed_out", False):
                return text
            return str(super().scrub(text))

    return TimeoutKept


def _failure_message_as_kind(original: Callable[..., None]) -> Callable[..., None]:
    """A vault failure's own message stands in for its kind, so the refusal repeats it."""

    def init(self: Any, kind: str, message: str | None = None) -> None:
        original(self, kind, message)
        if message is not None:
            self.kind = message

    return init


def _seed_truncated(original: Callable[..., None]) -> Callable[..., None]:
    """The ledger file is emptied when the host first writes to it."""

    @functools.wraps(original)
    def append(self: Any, record: Any) -> None:
        if not getattr(self, "_mutant_opened", False):
            self._mutant_opened = True
            with open(self.path, "wb"):
                pass
        original(self, record)

    return append


def _near_window_only(original: Callable[..., int]) -> Callable[..., int]:
    """After an overlap, a passed-over form is looked for in the next 256 characters only."""
    from reference_impl._scrub import _NEAR_WINDOW

    def find_after(text: str, form: str, start: int) -> int:
        return text.find(form, start, start + _NEAR_WINDOW)

    return find_after


def _drops_after_placeholder(original: type) -> type:
    """Each placeholder swallows the character that follows it."""

    class Swallowing(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            scrubbed = str(super().scrub(text))
            return re.sub(r"(\[secret:[^\]]*\]).", r"\1", scrubbed, flags=re.DOTALL)

    return Swallowing


def _shortest_first(original: type) -> type:
    """Where forms start at one place, the shortest is replaced, not the longest."""

    class ShortestFirst(original):  # type: ignore[misc]
        def __init__(self, resolved: Any) -> None:
            super().__init__(resolved)
            needles: tuple[tuple[str, str], ...] = getattr(self, "_needles")  # noqa: B009
            ordered = sorted(needles, key=lambda item: len(item[0]))
            self._needles = tuple(ordered)
            self._forms = tuple(form for form, _ in ordered)
            self._replacements = tuple(replacement for _, replacement in ordered)
            self._sizes = tuple(len(form) for form, _ in ordered)

    return ShortestFirst


def _cap_limit(limit: int) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """The cap cuts at ``limit`` characters instead of 150,000."""

    def transform(original: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(original)
        def cap(text: str, _limit: int = limit) -> str:
            return original(text, limit)

        return cap

    return transform


def _cap_at_limit(original: Callable[..., str]) -> Callable[..., str]:
    """A result of exactly the cap's length is cut as if it were over."""
    from reference_impl._limits import RESULT_CAP_CHARS

    @functools.wraps(original)
    def cap(text: str, limit: int = RESULT_CAP_CHARS) -> str:
        return original(text, limit - 1) if len(text) == limit else original(text, limit)

    return cap


def _string_accessor_stringifies(original: Callable[..., Any]) -> Callable[..., Any]:
    """``args.string(key)`` returns the text of any member, numbers and objects included."""

    @functools.wraps(original)
    def string(self: Any, key: str) -> str | None:
        value = self.get(key)
        return None if value is None else str(value)

    return string


# --- the reference host under faults and hostile input ------------------------------------------


def _follows_symlinks(original: int) -> int:
    """The ledger opens its path with no O_NOFOLLOW, so a symbolic link there is followed."""
    return original & ~os.O_NOFOLLOW


def _failure_never_refuses(original: Callable[..., Any]) -> Callable[..., Any]:
    """The registry never asks whether the ledger can take a record: every call runs."""

    @functools.wraps(original)
    def fault(self: Any) -> Any:
        return None

    return fault


def _deep_line_raises(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger reader decodes a line without catching the decoder's RecursionError."""
    from reference_impl import _ledger

    @functools.wraps(original)
    def decode(line: bytes) -> Any:
        decoded = json.loads(line)
        if not isinstance(decoded, dict):
            raise TypeError("not an object")
        return _ledger.decode_record(decoded)

    return decode


def _appends_onto_torn_line(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger never looks at the file's last byte, so a record is glued to a torn line."""

    @functools.wraps(original)
    def needs_newline(descriptor: int) -> bool:
        return False

    return staticmethod(needs_newline)


def _describe_lets_base_exceptions_out(original: Callable[..., Any]) -> Callable[..., Any]:
    """Formatting a handler's exception catches Exception only, as it once did."""

    @functools.wraps(original)
    def describe(error: BaseException | None) -> str:
        try:
            return str(error)
        except Exception:
            return type(error).__name__

    return describe


def _last_member_wins(original: Callable[..., Any]) -> Callable[..., Any]:
    """JSON objects in the host's files keep the last of two members of one name."""
    return dict


def _files_unbounded(original: int) -> int:
    """The host reads a file of any size."""
    return 1 << 62


def _surrogates_delivered(original: Any) -> Any:
    """A value holding a lone surrogate is delivered, and the scrubber misses its escape."""
    import re

    return re.compile("(?!)")


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "request-args-substituted",
        "APPR-004",
        "The approval request shows the arguments after substitution, not as the agent wrote them.",
        ((_REG, "Registry._approve", _request_shows_substituted(False)),),
        via="driver",
    ),
    Mutant(
        "risk-note-repeats-usernames",
        "APPR-005",
        "The approval request gains a risk note that repeats each descriptor, usernames included.",
        (("reference_impl.harness", "request_to_dict", _risk_note),),
        via="driver",
    ),
    Mutant(
        "denial-approves",
        "APPR-010",
        "The operator's denial is treated as an approval and the tool runs.",
        (("reference_impl._approve", "ApprovalGate.ask", _denial_approves),),
        via="driver",
    ),
    Mutant(
        "stamp-without-provider",
        "APPR-011",
        "The approval's stamp leaves out the provider, so a provider revocation is not seen.",
        (("reference_impl._policy", "Rules.stamp", _stamp_without_provider),),
        via="driver",
    ),
    Mutant(
        "saved-deny-not-rechecked",
        "FENCE-002",
        "Saving a rule does not move the stamp and the fence re-uses the pre-pass's DENY verdict, "
        "so a DENY saved during the prompt is missed.",
        (
            ("reference_impl._policy", "Rules.save_tool_rule", _save_keeps_stamp("_tool_stamps")),
            (
                "reference_impl._policy",
                "Rules.save_provider_rule",
                _save_keeps_stamp("_provider_stamps"),
            ),
            ("reference_impl._policy", "Rules.denied", _denied_as_before_prompt),
            (_REG, "Registry._approve", _fence_reuses_verdict),
        ),
        via="driver",
    ),
    Mutant(
        "wrong-field-substituted",
        "SUBST-005",
        "Values are substituted by secret id, so every field of a secret gets the same value.",
        ((_REG, "substitute", _values_by_id),),
        via="driver",
    ),
    Mutant(
        "identity-form-not-scrubbed",
        "SCRUB-003",
        "Form a, the value itself, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_identity),),
    ),
    Mutant(
        "plus-not-encoded",
        "SCRUB-005",
        "The scrubbed form c keeps '+' as it is instead of %2B, so the real form c survives.",
        (("reference_impl._scrub", "forms", _plus_kept),),
    ),
    Mutant(
        "star-form-encoded",
        "SCRUB-005",
        "Form c writes '*' as %2A, as quote_plus does, so the design's form c (which keeps '*') "
        "survives.",
        (("reference_impl._scrub", "_FORM_TABLE", _form_table_writes(0x2A, "%2A")),),
    ),
    Mutant(
        "tilde-form-kept",
        "SCRUB-005",
        "Form c keeps '~', as quote_plus does, so the design's form c (%7E) survives.",
        (("reference_impl._scrub", "_FORM_TABLE", _form_table_writes(0x7E, "~")),),
    ),
    Mutant(
        "placeholder-without-field",
        "SCRUB-007",
        "The placeholder is [secret:<id>], without the field.",
        (("reference_impl._scrub", "placeholder", _placeholder_without_field),),
        via="driver",
    ),
    Mutant(
        "overlap-drops-form",
        "SCRUB-009",
        "When occurrences overlap, a form passed over is never looked for again and survives.",
        (("reference_impl._scrub", "Scrubber._merge", _merge_drops_overlapped),),
    ),
    Mutant(
        "scrubbing-off-request-substituted",
        "SCRUB-014",
        "With result scrubbing off, the approval request shows the substituted arguments.",
        ((_REG, "Registry._approve", _request_shows_substituted(True)),),
        via="driver",
    ),
    Mutant(
        "scrub-rescans-placeholders",
        "SCRUB-016",
        "The reference scrubber replaces each form in turn, rescanning the placeholders it wrote.",
        (("reference_impl._scrub", "Scrubber.scrub", _rescanning),),
        driver=False,
    ),
    Mutant(
        "scrub-stops-at-cut",
        "CAP-002",
        "An over-cap result is scrubbed only up to the cut, so a value straddling it leaves a "
        "fragment.",
        ((_REG, "Scrubber", _scrub_up_to_cut),),
    ),
    Mutant(
        "ledger-field-renamed",
        "LEDG-001",
        "The ledger writes providerId as provider.",
        (("reference_impl._types", "LedgerRecord.to_json_dict", _provider_renamed),),
        via="driver",
    ),
    Mutant(
        "ledger-duration-zero",
        "LEDG-021",
        "Every ledger record's durationMs reads 0, whatever the call took.",
        (("reference_impl._types", "LedgerRecord.to_json_dict", _duration_always_zero),),
        via="driver",
    ),
    Mutant(
        "old-records-undecodable",
        "LEDG-003",
        "A ledger record without secretRefs fails to decode.",
        _ledger_export("decode_record", _secret_refs_required),
        driver=False,
    ),
    Mutant(
        "forbidden-recorded-as-denied",
        "LEDG-008",
        "SECRET_FORBIDDEN is recorded in the ledger as POLICY_DENIED.",
        ((_REG, "LedgerRecord", _forbidden_as_policy_denied),),
        via="driver",
    ),
    Mutant(
        "ledger-mode-0644",
        "LEDG-009",
        "The ledger file is created with mode 0644, readable by everyone.",
        (("reference_impl._ledger", "LEDGER_FILE_MODE", lambda _original: 0o644),),
        driver=False,
    ),
    Mutant(
        "ledger-two-writes",
        "LEDG-010",
        "Each ledger record is two writes outside the lock, its text then its newline.",
        (("reference_impl._ledger", "JsonlLedger.append", _two_writes_unlocked),),
        driver=False,
    ),
    Mutant(
        "torn-line-fatal",
        "LEDG-011",
        "Reading a ledger whose last line is torn fails instead of skipping the line.",
        _ledger_export("read_ledger", _torn_line_fatal),
        driver=False,
    ),
    Mutant(
        "ledger-follows-symlinks",
        "LEDG-012",
        "The ledger is opened through a symbolic link at its path.",
        (("reference_impl._ledger", "_OPEN_FLAGS", _follows_symlinks),),
        driver=False,
    ),
    Mutant(
        "ledger-failure-runs-calls",
        "LEDG-013",
        "After an append fails, later calls still run.",
        ((_REG, "Registry._ledger_fault", _failure_never_refuses),),
        driver=False,
    ),
    Mutant(
        "ledger-error-misnamed",
        "LEDG-012",
        "Every ledger path the reference host refuses is reported as a FIFO, a symbolic link, a "
        "directory and a missing parent directory included, so the error misleads the operator.",
        (("reference_impl._ledger", "JsonlLedger._open_locked", _every_open_failure_a_fifo),),
        driver=False,
    ),
    Mutant(
        "damage-called-torn",
        "LEDG-014",
        "The ledger reader reports every line it skips as torn, a whole record with a field "
        "missing or of the wrong type included, so its report misleads about the damage.",
        _ledger_export("read_ledger", _damage_called_torn),
        driver=False,
    ),
    Mutant(
        "glued-record-dropped",
        "LEDG-011",
        "A whole record appended onto a torn line without a newline is lost with the torn "
        "prefix instead of being read.",
        (("reference_impl._ledger", "RECORD_START", _no_record_start),),
        driver=False,
    ),
    Mutant(
        "secret-refs-not-validated",
        "LEDG-014",
        "A ledger line whose secretRefs is not a list of names is read as a record, its "
        "secretRefs coerced to strings, instead of being skipped and reported.",
        (("reference_impl._ledger", "decode_record", _secret_refs_loose),),
        driver=False,
    ),
    Mutant(
        "ledger-deep-line-raises",
        "LEDG-014",
        "Reading a ledger line nested too deeply raises RecursionError.",
        (("reference_impl._ledger", "_decode_line", _deep_line_raises),),
        driver=False,
    ),
    Mutant(
        "ledger-appends-onto-torn-line",
        "LEDG-015",
        "A record appended after a torn last line is glued to it.",
        (("reference_impl._ledger", "JsonlLedger._needs_newline", _appends_onto_torn_line),),
        driver=False,
    ),
    Mutant(
        "hostile-exception-text-escapes",
        "LEDG-016",
        "A handler exception whose text raises a BaseException makes invoke raise.",
        (("reference_impl._execute", "_describe", _describe_lets_base_exceptions_out),),
        driver=False,
    ),
    Mutant(
        "policy-last-member-wins",
        "POL-005",
        "A policy member written twice keeps its last value instead of invalidating the file.",
        (("reference_impl._files", "_no_duplicates", _last_member_wins),),
        driver=False,
    ),
    Mutant(
        "vault-file-unbounded",
        "VAULT-005",
        "The vault file is read whatever its size.",
        (("reference_impl._files", "INPUT_FILE_MAX_BYTES", _files_unbounded),),
        driver=False,
    ),
    Mutant(
        "lone-surrogate-delivered-unscrubbed",
        "SCRUB-017",
        "A value holding a lone surrogate is delivered and its JSON escape is not scrubbed.",
        (
            ("reference_impl._resolve", "_LONE_SURROGATE", _surrogates_delivered),
            ("reference_impl._scrub", "_LONE_SURROGATE", _surrogates_delivered),
        ),
    ),
    Mutant(
        "bearing-default-deny",
        "POL-001",
        "A policy file that does not set secretBearingCalls denies secret-bearing calls.",
        (("reference_impl._policy", "parse_policy", _bearing_default_deny),),
        via="driver",
    ),
    Mutant(
        "tool-allow-beats-provider-deny",
        "POL-004",
        "A tool ALLOW outranks a provider DENY.",
        (("reference_impl._policy", "Rules.denied", _tool_allow_first),),
        via="driver",
    ),
    Mutant(
        "one-field-per-secret-scrubbed",
        "INV1",
        "The scrubber keeps one field per secret, so a second field of one secret leaks.",
        ((_REG, "Scrubber", _one_field_per_secret),),
    ),
    Mutant(
        "first-occurrence-scrubbed",
        "INV1-ECHO",
        "Each form is scrubbed at its first occurrence only, so an echo's repeats leak.",
        ((_REG, "Scrubber", _first_occurrence_only),),
    ),
    Mutant(
        "sha256-scrubbed-away",
        "INV1-SHA256",
        "The value's SHA-256 is scrubbed like a form, so the hash never reaches the agent.",
        (("reference_impl._scrub", "forms", _with_sha256),),
        via="driver",
    ),
    Mutant(
        "failure-snippet-unscrubbed",
        "INV1-THROW",
        "The ledger's error snippet is cut from a failed handler's text before scrubbing.",
        (
            ("reference_impl._execute", "Executor.run", _remember_failure_text),
            (_REG, "Registry._record", _snippet_from_failure_text),
        ),
    ),
    Mutant(
        "empty-field-resolves",
        "INV2",
        "A reference to an empty field resolves to the empty string and the call runs.",
        (("reference_impl._types", "SecretValue.__bool__", _empty_is_a_value),),
        via="driver",
    ),
    Mutant(
        "permission-checked-after-prompt",
        "INV3",
        "Without secret.read the call is resolved and prompted, and only the fence refuses it.",
        ((_REG, "Registry._prepass", _permission_at_fence_only),),
        via="driver",
    ),
    Mutant(
        "reset-keeps-stamps",
        "INV4",
        "A reset during the prompt leaves the stamps in place, so the approval still holds.",
        (("reference_impl._policy", "Rules.reset", _reset_keeps_stamps),),
        via="driver",
    ),
    Mutant(
        "stale-secret-refs",
        "INV5",
        "A reference-free call is recorded with the secretRefs of the call before it.",
        ((_REG, "Registry._record", _stale_refs),),
        via="driver",
    ),
    Mutant(
        "view-top-level-only",
        "INV6",
        "The per-key view substitutes top-level strings only, so nested members keep references.",
        ((_REG, "substitute", _view_top_level_only),),
        via="driver",
    ),
    Mutant(
        "list-columns-swapped",
        "OPS-001",
        "secref list prints id, username, website.",
        (("reference_impl.cli", "_list", _list_columns_swapped),),
        driver=False,
    ),
    Mutant(
        "cli-prompt-hidden",
        "OPS-002",
        "secref invoke denies without showing the request when no terminal is attached.",
        (("reference_impl.cli", "TerminalOperator.ask", _silent_without_terminal),),
        driver=False,
    ),
    Mutant(
        "kill-after-prepass",
        "ORD-004",
        "The kill switch is decided after the secret pre-pass, so a malformed reference or a "
        "secret-policy DENY is reported instead.",
        (
            ("reference_impl._policy", "Rules.killed", _kill_only_when_gated),
            (_REG, "Registry._prepass", _kill_after_prepass),
        ),
        via="driver",
    ),
    Mutant(
        "kill-all-ignored",
        "ORD-004",
        "Pulling the kill switch for every tool does nothing.",
        (("reference_impl._policy", "Rules.kill", _kill_all_ignored),),
    ),
    Mutant(
        "allow-outranks-kill",
        "POL-004",
        "An ALLOW rule, YOLO or session trust lets a kill-switched tool run.",
        (("reference_impl._policy", "Rules.killed", _allow_outranks_kill),),
        via="driver",
    ),
    Mutant(
        "unknown-tool-reads-vault",
        "ORD-006",
        "A call to an unknown tool that carries a marker reads the vault before it is refused.",
        ((_REG, "Registry.invoke", _unknown_tool_reads_vault),),
        via="driver",
    ),
    Mutant(
        "persist-failure-ignored",
        "APPR-012",
        "A broad answer the policy store cannot save runs the call as if it were saved.",
        (
            ("reference_impl._policy", "Rules.save_tool_rule", _persist_failure_ignored),
            ("reference_impl._policy", "Rules.save_provider_rule", _persist_failure_ignored),
        ),
        via="driver",
    ),
    Mutant(
        "queue-slots-never-freed",
        "APPR-009",
        "An answered prompt keeps its slot, so calls made one after another end QUEUE_FULL.",
        (("reference_impl._approve", "ApprovalGate.ask", _slots_never_freed),),
        via="driver",
    ),
    Mutant(
        "second-revocation-restores-stamp",
        "FENCE-001",
        "A revocation flips the stamp, so revoking the same rule twice during a prompt is missed.",
        (
            ("reference_impl._policy", "Rules.revoke_tool", _stamp_parity("_tool_stamps")),
            (
                "reference_impl._policy",
                "Rules.revoke_provider",
                _stamp_parity("_provider_stamps"),
            ),
        ),
    ),
    Mutant(
        "timeout-text-unscrubbed",
        "SCRUB-010",
        "The execution-timeout text quotes the substituted arguments and is not scrubbed.",
        (
            ("reference_impl._execute", "Executor.run", _timeout_quotes_arguments),
            (_REG, "Scrubber", _timeout_text_unscrubbed),
        ),
        via="driver",
    ),
    Mutant(
        "vault-failure-message-copied",
        "MSG-009",
        "The vault refusal repeats the failure's own message instead of its kind.",
        (("reference_impl._vault", "VaultError.__init__", _failure_message_as_kind),),
        via="driver",
    ),
    Mutant(
        "old-records-undecodable-via-driver",
        "LEDG-003",
        "A ledger record without secretRefs fails to decode, seen through a seeded ledger.",
        _ledger_export("decode_record", _secret_refs_required),
        via="driver",
    ),
    Mutant(
        "existing-ledger-emptied",
        "LEDG-020",
        "The host empties an existing ledger file when it first writes to it.",
        (("reference_impl._ledger", "JsonlLedger.append", _seed_truncated),),
        via="driver",
    ),
    Mutant(
        "overlap-rescan-near-only",
        "SCRUB-009",
        "After an overlap a passed-over value is looked for in the next 256 characters only.",
        (("reference_impl._scrub", "_find_after", _near_window_only),),
    ),
    Mutant(
        "placeholder-swallows-next-char",
        "SCRUB-020",
        "Each placeholder swallows the character that follows the occurrence it replaced.",
        ((_REG, "Scrubber", _drops_after_placeholder),),
        via="driver",
    ),
    Mutant(
        "scrub-shortest-first",
        "SCRUB-020",
        "Where forms start at one place the shortest is replaced, leaving the rest of the longer.",
        ((_REG, "Scrubber", _shortest_first),),
    ),
    Mutant(
        "cap-cuts-to-a-few",
        "CAP-003",
        "The cap cuts every result to 64 characters.",
        ((_REG, "cap", _cap_limit(64)),),
        via="driver",
    ),
    Mutant(
        "cap-cuts-at-the-limit",
        "CAP-003",
        "A result of exactly 150,000 characters is cut.",
        ((_REG, "cap", _cap_at_limit),),
    ),
    Mutant(
        "string-accessor-stringifies",
        "SUBST-001",
        "args.string(key) returns the text of any member, so the handler's view of a number or "
        "an object is a string.",
        (("reference_impl._arguments", "ToolArguments.string", _string_accessor_stringifies),),
        via="driver",
    ),
)
