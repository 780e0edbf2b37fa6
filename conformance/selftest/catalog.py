"""The mutant catalog in its order: every broken reference host the self-test runs.

This module owns the order of the catalog (:data:`ORDER`, the order ``list`` prints and the
self-test runs and prints its rows in), gathers the mutants of the ``catalog_*`` modules into
:data:`MUTANTS` in that order, and looks a mutant up by name. A mutant is defined in the module
of the area it breaks; this module only orders them, and it refuses to load when a mutant is
missing from :data:`ORDER`, named twice, or named in :data:`ORDER` but defined nowhere. It must
never run the suite nor import what does (:mod:`conformance.selftest.runner`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from conformance.selftest import (
    catalog_approval,
    catalog_classes,
    catalog_grammar,
    catalog_invariants,
    catalog_ledger,
    catalog_lines,
    catalog_mcp,
    catalog_messages,
    catalog_model,
    catalog_moments,
    catalog_operations,
    catalog_outputs,
    catalog_policy,
    catalog_records,
    catalog_scrub,
    catalog_substitution,
    catalog_survivors,
)
from conformance.selftest.base import Mutant

__all__ = ["BY_NAME", "MUTANTS", "ORDER", "Mutant", "get"]

#: Each area's mutants: R1 to R7, the invariants, operating the host, the MCP layer (R9), the
#: gaps mutation testing found, the classes only counts, long texts or a forced order show, the
#: model check's, and mutation testing's survivor classes as the one line each changes.
_AREAS: Final = (
    catalog_grammar.MUTANTS,
    catalog_messages.MUTANTS,
    catalog_policy.MUTANTS,
    catalog_approval.MUTANTS,
    catalog_substitution.MUTANTS,
    catalog_scrub.MUTANTS,
    catalog_ledger.MUTANTS,
    catalog_invariants.MUTANTS,
    catalog_operations.MUTANTS,
    catalog_mcp.MUTANTS,
    catalog_survivors.MUTANTS,
    catalog_classes.MUTANTS,
    catalog_model.MUTANTS,
    catalog_lines.MUTANTS,
    catalog_records.MUTANTS,
    catalog_moments.MUTANTS,
    catalog_outputs.MUTANTS,
)

#: The catalog's order, by name: the first mutants, then the grammar and message mutants, the
#: governed path's, the MCP layer's and the survivors'. A new mutant goes at the end.
ORDER: Final[tuple[str, ...]] = (
    "ledger-substituted-args",
    "scrub-after-cap",
    "trust-answers-secret-call",
    "vault-read-before-deny",
    "partial-substitution",
    "case-sensitive-prefix",
    "escaped-marker-passes",
    "keys-pass-through",
    "pct20-not-scrubbed",
    "floor-nine",
    "fence-stamp-ignored",
    "refusal-echoes-candidate",
    "ai-provider-resolves",
    "vault-read-twice",
    "debug-log-holds-value",
    "descriptors-missing",
    "risk-not-raised",
    "policy-fails-open",
    "timeout-approves",
    "views-disagree",
    "reference-free-reencoded",
    "reference-free-reads-vault",
    "quadratic-scrub",
    "cap-note-outside",
    "secret-refs-duplicated",
    "refusals-not-recorded",
    "feature-switch-ignored",
    "bearing-deny-first",
    "broad-answer-grants",
    "queue-unbounded",
    "lost-permission-ignored",
    "json-escape-not-scrubbed",
    "scrubbing-switch-ignored",
    "failure-text-unscrubbed",
    "rbac-ignored",
    "surplus-braces-swallowed",
    "uuid-last-group-eleven",
    "id-case-kept",
    "upper-case-fields",
    "malformed-body-skipped",
    "unterminated-marker-skipped",
    "rescan-after-cut",
    "nested-strings-ignored",
    "scalars-scanned-as-text",
    "non-object-passes",
    "invalid-json-refused",
    "lone-surrogate-not-json",
    "malformed-prefix-wrong",
    "key-prefix-wrong",
    "permission-message-wrong",
    "deny-as-forbidden",
    "bearing-deny-as-policy",
    "unknown-ids-semicolons",
    "empty-field-message",
    "vault-error-echoed",
    "no-vault-message",
    "empty-field-after-prompt",
    "ledger-at-prompt",
    "array-item-escapes-kept",
    "percent-encoded-marker",
    "escape-after-backslash-missed",
    "redaction-stops-at-first-brace",
    "record-members-as-fields",
    "escape-after-letter-missed",
    "request-args-substituted",
    "risk-note-repeats-usernames",
    "denial-approves",
    "stamp-without-provider",
    "saved-deny-not-rechecked",
    "wrong-field-substituted",
    "identity-form-not-scrubbed",
    "plus-not-encoded",
    "star-form-encoded",
    "tilde-form-kept",
    "placeholder-without-field",
    "overlap-drops-form",
    "scrubbing-off-request-substituted",
    "scrub-rescans-placeholders",
    "scrub-stops-at-cut",
    "ledger-field-renamed",
    "ledger-duration-zero",
    "old-records-undecodable",
    "forbidden-recorded-as-denied",
    "ledger-mode-0644",
    "ledger-two-writes",
    "torn-line-fatal",
    "ledger-follows-symlinks",
    "ledger-failure-runs-calls",
    "ledger-error-misnamed",
    "damage-called-torn",
    "glued-record-dropped",
    "secret-refs-not-validated",
    "ledger-deep-line-raises",
    "ledger-appends-onto-torn-line",
    "hostile-exception-text-escapes",
    "policy-last-member-wins",
    "vault-file-unbounded",
    "lone-surrogate-delivered-unscrubbed",
    "bearing-default-deny",
    "tool-allow-beats-provider-deny",
    "one-field-per-secret-scrubbed",
    "first-occurrence-scrubbed",
    "sha256-scrubbed-away",
    "failure-snippet-unscrubbed",
    "empty-field-resolves",
    "permission-checked-after-prompt",
    "reset-keeps-stamps",
    "stale-secret-refs",
    "view-top-level-only",
    "list-columns-swapped",
    "cli-prompt-hidden",
    "kill-after-prepass",
    "kill-all-ignored",
    "allow-outranks-kill",
    "unknown-tool-reads-vault",
    "persist-failure-ignored",
    "queue-slots-never-freed",
    "second-revocation-restores-stamp",
    "timeout-text-unscrubbed",
    "vault-failure-message-copied",
    "old-records-undecodable-via-driver",
    "existing-ledger-emptied",
    "overlap-rescan-near-only",
    "placeholder-swallows-next-char",
    "scrub-shortest-first",
    "cap-cuts-to-a-few",
    "cap-cuts-at-the-limit",
    "string-accessor-stringifies",
    "mcp-structured-unscrubbed",
    "mcp-progress-unscrubbed",
    "mcp-error-data-holds-value",
    "mcp-link-uri-unscrubbed",
    "mcp-log-when-scrubbing-off",
    "mcp-elicitation-substituted",
    "mcp-meta-reference-resolved",
    "mcp-cap-first-item-only",
    "mcp-decline-approves",
    "mcp-elicits-undeclared",
    "mcp-listing-holds-value",
    "mcp-refusal-behind-banner",
    "mcp-numbers-as-strings",
    "pending-slot-freed-twice",
    "stamps-or-generation",
    "stamps-xor-generation",
    "saved-rule-toggles-stamp",
    "one-placeholder-per-pass",
    "window-restart-late",
    "string-member-unread",
    "prescan-counts-from-start",
    "redaction-keeps-second-brace",
    "withheld-calls-unredacted",
    "kept-arguments-unbounded",
    "host-failure-unrecorded",
    "vault-port-bug-crashes-call",
    "mcp-refusal-error-behind-banner",
    "mcp-schema-holds-password",
    "mcp-error-data-misnames-denial",
    "ends-only-resolved",
    "sixteen-reference-slots",
    "scrub-stops-after-500",
    "failure-text-uncapped",
    "unknown-ids-sorted",
    "descriptors-sorted",
    "token-field-accepted",
    "yolo-usernames-unasked",
    "fence-blind-to-two-references",
    "trusted-usernames-unasked",
    "unknown-vault-kinds-echoed",
    "tool-rules-case-folded",
    "tool-lookup-case-folded",
    "refusal-recorded-as-no-error",
    "host-failure-recorded-without-snippet",
    "host-failure-hides-its-lost-record",
    "snippet-on-every-call",
    "reader-inverts-error-snippet",
    "low-characters-taken-for-a-comma",
    "high-characters-close-a-container",
    "parse-position-compared-by-identity",
    "pending-count-compared-by-identity",
    "tool-stamp-moves-once",
    "provider-stamp-moves-once",
    "look-alike-read-beside-a-real-marker",
    "policy-error-names-second-unknown",
    "overlap-test-inverted",
    "ai-refusal-reworded",
    "ai-refusal-names-first-id",
    "ai-tag-password-only",
    "unknown-ids-capped",
    "empty-field-names-first-field",
    "sequential-replace",
    "value-newline-stripped",
    "value-nfc-normalised",
    "deep-strings-unread",
    "queue-full-recorded-as-no-error",
    "queue-full-recorded-as-timeout",
    "execution-timeout-recorded-as-timeout",
    "timeout-frees-slot-twice",
    "queue-full-frees-a-slot",
    "plain-prompts-uncounted",
    "pending-limit-per-tool",
    "late-answer-accepted",
    "timeout-keeps-its-slot",
    "queue-full-before-resolution",
    "timeout-falls-back-to-rule",
    "countdown-restarts-for-all",
    "plain-prompt-standard-timeout",
    "slot-held-while-executing",
    "reset-empties-queue",
    "secret-read-given-back-forgiven",
    "scrub-budget-per-form",
    "cap-counts-utf8-bytes",
    "huge-result-capped-first",
    "scrub-in-blocks",
    "cap-decided-on-raw-length",
    "cap-off-with-scrubbing-off",
    "crlf-normalized",
    "result-rstripped",
    "ascii-text-skips-non-ascii-values",
    "json-result-values-only",
    "floor-only-for-passwords",
    "snippet-cut-then-scrubbed",
    "late-result-logged",
    "completion-queue",
    "shared-scrub-table",
    "session-wide-scrub",
    "deny-cache-misses-provider",
    "module-logger-warning",
    "execution-timeout-recorded-as-no-error",
)


def _in_order(areas: Iterable[tuple[Mutant, ...]], order: tuple[str, ...]) -> tuple[Mutant, ...]:
    """Return every mutant of ``areas`` in ``order``.

    Raises:
        ValueError: A name is defined twice, or is in one of ``areas`` and ``order`` only.
    """
    defined: dict[str, Mutant] = {}
    for mutant in (mutant for area in areas for mutant in area):
        if mutant.name in defined:
            raise ValueError(f"mutant {mutant.name!r} is defined twice")
        defined[mutant.name] = mutant
    unordered = sorted(defined.keys() - set(order))
    undefined = sorted(set(order) - defined.keys())
    if unordered or undefined or len(set(order)) != len(order):
        raise ValueError(
            f"the catalog's order does not match its mutants: not in ORDER {unordered}, "
            f"defined nowhere {undefined}, or a name twice in ORDER"
        )
    return tuple(defined[name] for name in order)


#: The catalog. Each mutant breaks one requirement of the requirement catalog.
MUTANTS: Final[tuple[Mutant, ...]] = _in_order(_AREAS, ORDER)

#: Mutants by name.
BY_NAME: Final = {mutant.name: mutant for mutant in MUTANTS}


def get(name: str) -> Mutant:
    """Return the mutant called ``name``.

    Raises:
        KeyError: No mutant has that name.
    """
    return BY_NAME[name]
