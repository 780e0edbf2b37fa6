"""The survivor classes of mutation testing, each killed by the check written for it.

A fresh-seed mutation run left survivors in six classes: what the ledger records for refused
calls and host failures, which calls carry an errorSnippet, stray characters at JSON's
separator places, a pending limit above small numbers, a revocation spanning the prompts of
several calls, and a look-alike marker beside a real reference. Each case below is a one-line
mutant of the reference host of that class (cosmic-ray's operators, or the same kind of
change), which the checks before these let through; its targeted check module must fail on a
scratch copy holding it, and pass on one without it. They change a scratch copy only and never
print a value.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from conformance.selftest import mutation_judge, mutation_sample

REPO: Final = Path(__file__).resolve().parents[2]

#: (id, module, line before, line after, line hint, the check module that kills it).
CASES: Final = (
    (
        "refusal-recorded-as-no-error",
        "_registry",
        "call, refusal.disposition, True, cut(refusal.message, ERROR_SNIPPET_CHARS)",
        "call, refusal.disposition, False, cut(refusal.message, ERROR_SNIPPET_CHARS)",
        560,
        "conformance/checks/test_ledger_outcomes.py",
    ),
    (
        "host-failure-recorded-without-snippet",
        "_registry",
        "ledger_id = self._record(call, disposition, True, INTERNAL_FAILURE_MESSAGE)",
        "ledger_id = self._record(call, disposition, True, None)",
        413,
        "conformance/checks/test_ledger_outcomes.py",
    ),
    (
        "host-failure-hides-its-lost-record",
        "_registry",
        "ledger_error=call.ledger_error if ledger_id is None else None,",
        "ledger_error=call.ledger_error if not ledger_id is None else None,",
        420,
        "conformance/checks/test_ledger_outcomes.py",
    ),
    (
        "snippet-on-every-call",
        "_registry",
        "if result.is_error:",
        "if result.is_error or True:",
        360,
        "conformance/checks/test_ledger_outcomes.py",
    ),
    (
        "reader-inverts-error-snippet",
        "_ledger",
        "error_snippet=None if snippet is None else str(snippet),",
        "error_snippet=None if not snippet is None else str(snippet),",
        274,
        "conformance/checks/test_ledger_outcomes.py",
    ),
    (
        "low-characters-taken-for-a-comma",
        "_grammar",
        'if char == ",":',
        'if char <= ",":',
        295,
        "conformance/checks/test_separators.py",
    ),
    (
        "high-characters-close-a-container",
        "_grammar",
        'if char == ("}" if top.is_object else "]"):',
        'if char >= ("}" if top.is_object else "]"):',
        302,
        "conformance/checks/test_separators.py",
    ),
    (
        "parse-position-compared-by-identity",
        "_grammar",
        'char = raw[pos] if pos < n else ""',
        'char = raw[pos] if pos is not n else ""',
        294,
        "conformance/checks/test_separators.py",
    ),
    (
        "pending-count-compared-by-identity",
        "_approve",
        "if self._open >= self.limit:",
        "if self._open is self.limit:",
        38,
        "conformance/checks/test_large_limits.py",
    ),
    (
        "tool-stamp-moves-once",
        "_policy",
        "self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) + 1",
        "self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) | 1",
        228,
        "conformance/checks/test_fence_spans.py",
    ),
    (
        "provider-stamp-moves-once",
        "_policy",
        "self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) + 1",
        "self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) | 1",
        237,
        "conformance/checks/test_fence_spans.py",
    ),
    (
        "look-alike-read-beside-a-real-marker",
        "_grammar",
        "while (marker := MARKER_RE.search(text, pos)) is not None:",
        "while (marker := _LOOSE_RE.search(text, pos) or MARKER_RE.search(text, pos)) is not None:",
        146,
        "conformance/checks/test_lookalike_beside.py",
    ),
)

#: Appended to ``_grammar`` for the look-alike case: the candidate pattern as it was before
#: the scan was bound to the ASCII marker, so that it also reads a long s.
_LOOSE: Final = '\n_LOOSE_RE = re.compile(r"\\{\\{secret:([^{}]*+)\\}\\}", re.IGNORECASE)\n'


def _run_check(root: Path, check: str, env: dict[str, str]) -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", check],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "before", "after", "line", "check"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_class_mutant_is_killed_by_its_check(
    module: str, before: str, after: str, line: int, check: str, tmp_path: Path
) -> None:
    """The targeted check fails on the mutant; the unmutated copy's run of it passes."""
    scratch = mutation_judge.make_scratch(REPO, tmp_path)
    path = scratch.root / "reference_impl" / f"{module}.py"
    source = path.read_text("utf-8")
    mutated = mutation_sample.apply_line_mutation(source, before, after, line)
    if "_LOOSE_RE" in after:
        mutated += _LOOSE
    path.write_text(mutated, "utf-8")
    assert _run_check(scratch.root, check, scratch.env()) == 1, f"{check} let the mutant through"
    path.write_text(source, "utf-8")
    assert _run_check(scratch.root, check, scratch.env()) == 0, f"{check} fails unmutated"


def test_class_mutants_still_apply() -> None:
    """Each case's line is still in its module, so the slow test mutates something."""
    for _, module, before, after, line, check in CASES:
        source = (REPO / "reference_impl" / f"{module}.py").read_text("utf-8")
        assert mutation_sample.apply_line_mutation(source, before, after, line) != source
        assert (REPO / check).is_file()
