"""Mutants of the result path at large sizes, in awkward texts and across calls.

This module owns the broken reference hosts behind ``test_output_paths`` and
``test_across_calls``: a scrubber with a budget of occurrences per form, a cap that counts
UTF-8 bytes, a host that cuts a huge result before scrubbing it, one that scrubs in fixed
blocks, a cap decided on the raw length or switched off with scrubbing, results tidied (line
breaks, trailing blanks) before the scrub, a scrubber that skips non-ASCII values in ASCII
text, one that reads a JSON result as JSON, a floor that spares only passwords, an error
snippet cut before it is scrubbed; and across calls, a late result logged or handed to the next
call, one scrub table shared by calls open at once, a scrubber that keeps every value of the
session, a cached DENY lookup that a provider rule does not clear, a module logger that warns
with a handler's failure, and an execution timeout recorded as no error. Each entry is a
:class:`~conformance.selftest.base.Mutant`; ``tests/conformance/test_output_mutants.py`` shows
that the older checks miss each and the new ones catch it. A mutant changes behaviour only and
never prints a value.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_REG: Final = "reference_impl._registry"
_SCRUB: Final = "reference_impl._scrub"
_POLICY: Final = "reference_impl._policy"

#: The most occurrences of one form the ``scrub-budget-per-form`` mutant replaces in one text.
_BUDGET: Final = 2_000

#: The raw length past which the ``huge-result-capped-first`` mutant cuts before scrubbing:
#: four times the cap.
_HUGE: Final = 600_000

#: The block the ``scrub-in-blocks`` mutant scrubs at a time: 128 KiB of characters.
_BLOCK: Final = 128 * 1024


def _utf8_cap(original: Callable[..., Any]) -> Callable[..., Any]:
    """The cap measures a result in UTF-8 bytes and cuts it at a byte count."""

    @functools.wraps(original)
    def cap(text: str, limit: int = 150_000) -> str:
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            return text
        note = f"\n[result cut to {limit} characters; it had {len(text)}]"
        return data[: limit - len(note)].decode("utf-8", "ignore") + note

    return cap


def _ascii_skips_non_ascii(original: type) -> type:
    """A text that is ASCII only is scrubbed of the ASCII values alone: a non-ASCII value's
    forms c and d, which are ASCII, stay."""

    class AsciiScrubber(original):  # type: ignore[misc]
        def __init__(self, resolved: Any) -> None:
            pairs = tuple(resolved)
            super().__init__(pairs)
            plain = tuple(pair for pair in pairs if pair[1].reveal().isascii())
            self.twin = original(plain) if len(plain) < len(pairs) else None

        def scrub(self, text: str) -> str:
            if self.twin is not None and text.isascii():
                return str(self.twin.scrub(text))
            return str(super().scrub(text))

    return AsciiScrubber


#: The helper the ``json-result-values-only`` mutant's line names: a JSON result is decoded,
#: its string values scrubbed and the tree encoded again.
_JSON_VALUES: Final = """
import json as _json


def _json_values(scrubber, node):
    if isinstance(node, str):
        return scrubber.scrub(node)
    if isinstance(node, dict):
        return {key: _json_values(scrubber, child) for key, child in node.items()}
    if isinstance(node, list):
        return [_json_values(scrubber, child) for child in node]
    return node


def _scrub_json(scrubber, text):
    if text.lstrip()[:1] in ("{", "["):
        try:
            tree = _json.loads(text)
        except ValueError:
            pass
        else:
            return _json.dumps(_json_values(scrubber, tree), ensure_ascii=False)
    return scrubber.scrub(text)
"""

#: The helper the ``floor-only-for-passwords`` mutant's line names: a username or notes value
#: shorter than the floor still gets its forms.
_UNFLOORED: Final = """
def _forms_for(reference, text):
    if reference.field.value == "password" or not text or len(text) >= SCRUB_MIN_CODE_POINTS:
        return forms(text)
    form_c = form_encode(text)
    return tuple(dict.fromkeys((text, json_escape(text), form_c, form_c.replace("+", "%20"))))
"""

#: The helper the ``late-result-logged`` mutant's line names: a watcher waits for a handler
#: that outlived its timeout and logs what it returned at DEBUG.
_LATE_LOGGED: Final = """
import dataclasses as _dataclasses
import threading as _threading


def _run_logging_late(registry, call, tool, arguments):
    box = {}
    finished = _threading.Event()

    def handler(args):
        try:
            returned = tool.handler(args)
            box["text"] = returned if isinstance(returned, str) else getattr(returned, "text", "")
            return returned
        finally:
            finished.set()

    result = registry._executor.run(
        _dataclasses.replace(tool, handler=handler), arguments, registry.execution_timeout
    )
    if result.is_error and result.text.startswith(f"Tool {tool.name} timed out after"):

        def late():
            if finished.wait(60.0):
                registry.log.debug(
                    "call %s: %s finished after its timeout; discarded: %.200s",
                    call.id,
                    tool.name,
                    box.get("text", ""),
                )

        _threading.Thread(target=late, daemon=True).start()
    return result
"""


def _completion_queue(original: type) -> type:
    """The executor waits on one queue of finished jobs, so a call takes the first job to
    finish, which may be an earlier call's handler that outlived its timeout."""
    from reference_impl import _execute
    from reference_impl._types import ToolResult

    class QueueExecutor(original):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.finished: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def _work(self) -> None:
            while True:
                job = self._jobs.get()
                try:
                    job.outcome = _execute._result_of(job.handler(job.arguments))
                except BaseException as error:  # a handler's failure is its result
                    job.outcome = error
                finally:
                    job.done.release()
                    self.finished.put(job)
                with self._lock:
                    self._idle += 1

        def run(self, tool: Any, arguments: Any, timeout: float) -> Any:
            job = _execute._Job(tool.handler, arguments)
            with self._lock:
                if self._idle:
                    self._idle -= 1
                else:
                    threading.Thread(target=self._work, daemon=True).start()
            self._jobs.put(job)
            try:
                done = self.finished.get(True, timeout) if timeout > 0 else self.finished.get(False)
            except queue.Empty:
                return ToolResult(f"Tool {tool.name} timed out after {timeout:g} s", is_error=True)
            outcome = done.outcome
            if isinstance(outcome, ToolResult):
                return outcome
            return ToolResult(
                f"Tool {tool.name} failed: {_execute._describe(outcome)}", is_error=True
            )

    return QueueExecutor


#: The values the latest call of each vault resolved, for the ``shared-scrub-table`` mutant.
_LATEST: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _remember_latest(original: Callable[..., Any]) -> Callable[..., Any]:
    """Resolution keeps the values it found as the host's one scrub table."""

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        if isinstance(found, tuple) and vault is not None:
            _LATEST[vault] = found[0]
        return found

    return resolve


#: The helper the ``shared-scrub-table`` and ``session-wide-scrub`` mutants' lines name.
_SHARED: Final = """
from conformance.selftest.catalog_outputs import _LATEST, _SESSION
"""

#: The values every call of each registry delivered, for the ``session-wide-scrub`` mutant.
_SESSION: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

#: Each rules object's cached DENY lookups, for the ``deny-cache-misses-provider`` mutant.
_DENY_CACHE: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], Any]] = (
    weakref.WeakKeyDictionary()
)


def _cached_denied(original: Callable[..., Any]) -> Callable[..., Any]:
    """DENY lookups are cached by tool and provider."""

    @functools.wraps(original)
    def denied(self: Any, tool: str, provider: str) -> Any:
        table = _DENY_CACHE.setdefault(self, {})
        key = (tool, provider)
        if key not in table:
            table[key] = original(self, tool, provider)
        return table[key]

    return denied


def _clears_deny_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    """Saving or revoking a tool's rule, or resetting, clears the DENY cache; a provider's rule
    is forgotten."""

    @functools.wraps(original)
    def change(self: Any, *args: Any) -> Any:
        _DENY_CACHE.pop(self, None)
        return original(self, *args)

    return change


#: The logger the ``module-logger-warning`` mutant warns on: the executor module's own.
_MODULE_LOG: Final = logging.getLogger("reference_impl._execute")


def _warns_failures(original: Callable[..., Any]) -> Callable[..., Any]:
    """A handler's failure is logged at WARNING on the executor module's logger, with its text."""

    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        mark = f"Tool {tool.name} failed: "
        if result.is_error and result.text.startswith(mark):
            _MODULE_LOG.warning("tool %s raised: %s", tool.name, result.text[len(mark) :])
        return result

    return run


_SCRUB_LINE: Final = "text = scrubber.scrub(text)"
_RAW_TEXT: Final = "text = result.text\n"
_SCRUBBER_LINE: Final = "scrubber = Scrubber(resolved) if resolved else _NO_VALUES"

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "scrub-budget-per-form",
        "SCRUB-009",
        f"The scrubber replaces at most {_BUDGET:,} occurrences of each form in one text.",
        (
            line_patch(
                _SCRUB,
                "Scrubber.scrub",
                "size = len(form)\n            while at >= 0:",
                f"size = len(form)\n            budget = {_BUDGET}\n"
                "            while at >= 0 and (budget := budget - 1) >= 0:",
            ),
        ),
    ),
    Mutant(
        "cap-counts-utf8-bytes",
        "CAP-003",
        "The cap measures a result in UTF-8 bytes, so a non-ASCII result within 150,000 "
        "characters is cut.",
        ((_REG, "cap", _utf8_cap),),
    ),
    Mutant(
        "huge-result-capped-first",
        "CAP-002",
        "A result over four times the cap is cut before it is scrubbed, so a value across the "
        "cut stays partly readable.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                _RAW_TEXT,
                f"text = result.text if len(result.text) <= {_HUGE} else cap(result.text)\n",
            ),
        ),
    ),
    Mutant(
        "scrub-in-blocks",
        "SCRUB-003",
        "A result is scrubbed 128 KiB at a time, so a value across a block edge is missed.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                _SCRUB_LINE,
                'text = "".join(scrubber.scrub(text[start : start + '
                f"{_BLOCK}]) for start in range(0, len(text), {_BLOCK}))",
            ),
        ),
    ),
    Mutant(
        "cap-decided-on-raw-length",
        "CAP-001",
        "The cap is applied only when the handler's own text is over it, so a result that "
        "passes the cap through its placeholders is not cut.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "text = cap(text)",
                "text = cap(text) if len(result.text) > 150_000 else text",
            ),
        ),
    ),
    Mutant(
        "cap-off-with-scrubbing-off",
        "CAP-001",
        "resultScrubbingEnabled false switches the cap off with the scrubber.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "text = cap(text)",
                "text = cap(text) if self.policy.result_scrubbing_enabled else text",
            ),
        ),
    ),
    Mutant(
        "crlf-normalized",
        "SCRUB-003",
        "A result's CRLF line breaks become LF before the scrub, so a value holding one is "
        "missed and the text is changed.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                _RAW_TEXT,
                'text = result.text.replace("\\r\\n", "\\n")\n',
            ),
        ),
    ),
    Mutant(
        "result-rstripped",
        "CAP-003",
        "A result's trailing blanks are trimmed before the scrub, so a value ending in one is "
        "missed and the text is changed.",
        (line_patch(_REG, "Registry._govern", _RAW_TEXT, "text = result.text.rstrip()\n"),),
    ),
    Mutant(
        "ascii-text-skips-non-ascii-values",
        "SCRUB-005",
        "An ASCII-only text is scrubbed of the ASCII values alone, so forms c and d of a "
        "non-ASCII value, alone in a text, stay.",
        ((_REG, "Scrubber", _ascii_skips_non_ascii),),
    ),
    Mutant(
        "json-result-values-only",
        "SCRUB-003",
        "A JSON result is decoded, scrubbed in its string values and encoded again, so a value "
        "used as a member name stays and the text is re-encoded.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                _SCRUB_LINE,
                "text = _scrub_json(scrubber, text)",
                extra=_JSON_VALUES,
            ),
        ),
    ),
    Mutant(
        "floor-only-for-passwords",
        "SCRUB-001",
        "The 8-code-point floor applies to passwords only: a short username or notes value is "
        "scrubbed.",
        (
            line_patch(
                _SCRUB,
                "Scrubber.__init__",
                "for form in forms(value.reveal()):",
                "for form in _forms_for(reference, value.reveal()):",
                extra=_UNFLOORED,
            ),
        ),
    ),
    Mutant(
        "snippet-cut-then-scrubbed",
        "CAP-002",
        "The error snippet is cut from the handler's raw failure text and then scrubbed, so a "
        "value across the cut stays partly readable in the ledger.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "            if scrubber and not self.policy.result_scrubbing_enabled:\n"
                "                snippet = cut(scrubber.scrub(text), ERROR_SNIPPET_CHARS)\n"
                "            else:\n"
                "                snippet = cut(text, ERROR_SNIPPET_CHARS)",
                "            snippet = cut(result.text, ERROR_SNIPPET_CHARS)\n"
                "            if scrubber:\n"
                "                snippet = scrubber.scrub(snippet)",
            ),
        ),
    ),
    Mutant(
        "late-result-logged",
        "LOG-001",
        "A handler that outlives its execution timeout has its late result logged at DEBUG.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "result = self._executor.run(tool, arguments, self.execution_timeout)",
                "result = _run_logging_late(self, call, tool, arguments)",
                extra=_LATE_LOGGED,
            ),
        ),
    ),
    Mutant(
        "completion-queue",
        "INV1",
        "The executor waits on one queue of finished handlers, so the call after a timed-out "
        "one gets the late handler's result.",
        ((_REG, "Executor", _completion_queue),),
    ),
    Mutant(
        "shared-scrub-table",
        "INV1-ECHO",
        "The host keeps one scrub table, built by the latest call to resolve, so of two calls "
        "open at once the first is scrubbed of the second one's values.",
        (
            (_REG, "resolve", _remember_latest),
            line_patch(
                _REG,
                "Registry._govern",
                _SCRUBBER_LINE,
                "scrubber = Scrubber(_LATEST.get(self.vault, resolved)) if resolved else "
                "_NO_VALUES",
                extra=_SHARED,
            ),
        ),
    ),
    Mutant(
        "session-wide-scrub",
        "INV5",
        "Every value delivered in the session is scrubbed from every later result, so a "
        "reference-free call's result is changed.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                _SCRUBBER_LINE,
                "_SESSION.setdefault(self, []).extend(resolved)\n"
                "        scrubber = Scrubber(_SESSION[self]) if _SESSION[self] else _NO_VALUES",
                extra=_SHARED,
            ),
        ),
    ),
    Mutant(
        "deny-cache-misses-provider",
        "MSG-005",
        "DENY lookups are cached by tool and provider, and saving or revoking a provider's rule "
        "does not clear the cache, so a provider DENY saved after the tool was used is not "
        "applied.",
        (
            (_POLICY, "Rules.denied", _cached_denied),
            (_POLICY, "Rules.save_tool_rule", _clears_deny_cache),
            (_POLICY, "Rules.revoke_tool", _clears_deny_cache),
            (_POLICY, "Rules.reset", _clears_deny_cache),
        ),
    ),
    Mutant(
        "module-logger-warning",
        "LOG-001",
        "A handler's failure is logged at WARNING, with its text, on the executor module's own "
        "logger rather than the host's.",
        (("reference_impl._execute", "Executor.run", _warns_failures),),
    ),
    Mutant(
        "execution-timeout-recorded-as-no-error",
        "LEDG-001",
        "An approved call whose tool ran past the execution timeout is recorded with isError "
        "false, as if the tool had succeeded.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "ledger_id = self._record(call, disposition, result.is_error, snippet)",
                "ledger_id = self._record(\n"
                "            call,\n"
                "            disposition,\n"
                "            result.is_error\n"
                '            and not text.startswith(f"Tool {tool.name} timed out after"),\n'
                "            snippet,\n"
                "        )",
            ),
        ),
    ),
)
