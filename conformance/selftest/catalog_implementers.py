"""Mutants written as faults an independent implementer could plausibly make.

This module owns broken reference hosts written the way a host built from the design in another
language goes wrong: a loose boolean test, a pending slot kept on one rare path, a refusal found
one step too late, a queue consulted for a call that asks for no prompt, a failure text scrubbed
with less than the whole scrubber. The older checks let
each of them through; the checks named below were written or widened for them:

- ``policy-bools-take-zero-and-one``: ``test_policy.py::test_invalid_policy_fails_closed``
  (every non-boolean JSON value for each switch);
- ``persist-failure-keeps-slot``: ``test_queue_moments.py::test_limit_exact_after`` (the
  ``persist-failures`` ending);
- ``operator-error-keeps-slot``: ``test_mcp.py::test_no_elicitation_to_a_client_that_cannot``
  (more calls than the pending limit);
- ``lone-surrogate-refused-after-prompt``: ``test_scrubbing.py::test_lone_surrogate_value``
  (a refusal at resolution comes before the prompt);
- ``queue-full-refuses-unprompted-calls``:
  ``test_queue_moments.py::test_unprompted_call_runs_while_the_queue_is_full``;
- ``failure-text-scrubbed-raw-only`` and ``returned-error-results-unscrubbed``:
  ``test_scrubbing.py::test_every_form_in_a_failure_is_scrubbed`` (the ``thrower`` handler's
  ``forms`` option and the ``static`` handler's ``isError``).

Each changes behaviour only and never prints a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_REG: Final = "reference_impl._registry"
_POLICY: Final = "reference_impl._policy"


# --- helpers inserted into recompiled functions' globals -------------------------------------

#: A failure-text scrubber that knows the value itself only (form a), as ``str.replace`` does.
_RAW_SCRUB: Final = (
    "def _raw_scrub(resolved, text):\n"
    "    for reference, value in resolved:\n"
    "        plain = value.reveal()\n"
    "        if len(plain) >= 8:\n"
    "            text = text.replace(plain, '[secret:' + reference.name + ']')\n"
    "    return text\n"
)

#: A lone surrogate, found only once the substituted arguments are encoded (after the prompt).
_LONE: Final = "import re as _re\n_LONE = _re.compile('[\\ud800-\\udfff]')\n"


# --- whole-function patches --------------------------------------------------------------------


def _slot_freed_on_return_only(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``ApprovalGate.ask`` without ``finally``: an operator that raises keeps its slot."""

    def ask(self: Any, request: Any) -> Any:
        with self._lock:
            if self._open >= self.limit:
                return None
            self._open += 1
        answer = self.operator.ask(request, self.timeout)
        with self._lock:
            self._open -= 1
        return answer

    return ask


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "failure-text-scrubbed-raw-only",
        "SCRUB-010",
        "A failure text is scrubbed of each value itself (form a) only, as str.replace would; "
        "results get the whole scrubber. A handler whose error quotes its request's JSON or a "
        "URL it built leaks the value in forms b to d.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "        if scrubber and self.policy.result_scrubbing_enabled:\n"
                "            text = scrubber.scrub(text)\n",
                "        if scrubber and self.policy.result_scrubbing_enabled:\n"
                "            text = (\n"
                "                _raw_scrub(resolved, text)\n"
                "                if result.is_error\n"
                "                else scrubber.scrub(text)\n"
                "            )\n",
                extra=_RAW_SCRUB,
            ),
        ),
    ),
    Mutant(
        "returned-error-results-unscrubbed",
        "SCRUB-010",
        "A failure the handler returns (an error result, as MCP tools report failure) reaches "
        "the agent unscrubbed; results and the failure texts the host writes for a raised "
        "error or a timeout are scrubbed.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "        if scrubber and self.policy.result_scrubbing_enabled:\n",
                "        if (\n"
                "            scrubber\n"
                "            and self.policy.result_scrubbing_enabled\n"
                "            and not (\n"
                '                result.is_error and not text.startswith(f"Tool {tool.name} ")\n'
                "            )\n"
                "        ):\n",
            ),
        ),
    ),
    Mutant(
        "policy-bools-take-zero-and-one",
        "POL-002",
        "The policy file's switches are validated with 'value in (True, False)', which Python "
        "also answers yes for 0, 1, 0.0 and 1.0, so secretReferencesEnabled: 0 is read as "
        "false instead of making the file invalid and every tool DENY.",
        (
            line_patch(
                _POLICY,
                "parse_policy",
                "if name in data and not isinstance(data[name], bool):",
                "if name in data and data[name] not in (True, False):",
            ),
        ),
    ),
    Mutant(
        "queue-full-refuses-unprompted-calls",
        "APPR-009",
        "The host checks the approval queue at step [8] for every call, prompted or not, so "
        "with the pending limit's prompts open a reference-free call that an ALLOW rule, "
        "session trust or YOLO runs unasked ends QUEUE_FULL instead.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "        disposition = Disposition.ALLOWED\n",
                "        with self.gate._lock:\n"
                "            full = self.gate._open >= self.gate.limit\n"
                "        if full:\n"
                "            return self._refuse(\n"
                "                call,\n"
                "                Refusal(\n"
                "                    Disposition.QUEUE_FULL,\n"
                '                    "Too many approval requests are pending",\n'
                '                    "queue-full",\n'
                '                    "APPR-009",\n'
                "                ),\n"
                "            )\n"
                "        disposition = Disposition.ALLOWED\n",
            ),
        ),
    ),
    Mutant(
        "persist-failure-keeps-slot",
        "APPR-009",
        "A broad answer whose rule cannot be saved ends POLICY_PERSIST_FAILED but its prompt's "
        "pending slot is never freed (the slot is released after the save, which raised), so "
        "after as many failed saves as the pending limit every call ends QUEUE_FULL.",
        (
            line_patch(
                _REG,
                "Registry._approve",
                "        except PolicyPersistError:\n",
                "        except PolicyPersistError:\n"
                "            with self.gate._lock:\n"
                "                self.gate._open += 1\n",
            ),
        ),
    ),
    Mutant(
        "operator-error-keeps-slot",
        "APPR-009",
        "The approval gate frees a prompt's slot only when the operator answers, not when it "
        "raises, so each call refused because the MCP client cannot elicit keeps a slot: from "
        "the call after the pending limit's worth on, the call ends QUEUE_FULL with no prompt "
        "open, neither denied nor timed out.",
        (("reference_impl._approve", "ApprovalGate.ask", _slot_freed_on_return_only),),
        via="mcp",
    ),
    Mutant(
        "lone-surrogate-refused-after-prompt",
        "ORD-003",
        "A value holding a lone surrogate is found only when the substituted arguments are "
        "encoded, after the operator approved: the call is still refused SECRET_UNRESOLVED, "
        "but the operator was asked to approve a call that could not run.",
        (
            line_patch(
                _REG,
                "resolve",
                "        if not value or _LONE_SURROGATE.search(value.reveal()) is not None:",
                "        if not value:",
            ),
            line_patch(
                _REG,
                "Registry._govern",
                "        # [10] substitute, [11] execute.\n",
                "        for _reference, _value in resolved:\n"
                "            if _LONE.search(_value.reveal()) is not None:\n"
                "                return self._refuse(\n"
                "                    call,\n"
                "                    Refusal(\n"
                "                        Disposition.SECRET_UNRESOLVED,\n"
                '                        f"secret {_reference.id} "\n'
                '                        f"has no {_reference.field.value}",\n'
                '                        "empty-field",\n'
                '                        "MSG-008",\n'
                "                    ),\n"
                "                )\n"
                "        # [10] substitute, [11] execute.\n",
                extra=_LONE,
            ),
        ),
    ),
)
