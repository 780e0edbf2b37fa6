"""Mutants of values, vault walks and queues in roles the older checks never gave them.

This module owns broken reference hosts of the second set of independent-implementer faults
that concern what a call resolves and how its prompt is counted: ids matched as the vault
stores them, a tag list compared as one string, a walk with a safety cap, values kept across
calls, blank values taken for empty ones, a JSON escape that is safe for scripts, prompts of
username-only calls kept off the queue. The whole suite let each of them through, or caught it
only when a random draw fell on it; the checks named below were written or widened for them:

- ``vault-ids-matched-as-stored``: ``test_vault_walks.py::test_vault_id_in_upper_case_resolves``
  (GRAM-004);
- ``ai-tag-compared-as-one-string``: ``test_ordering.py::test_only_exact_ai_provider_tag_forbids``
  (the tag among others, before and after them; MSG-011);
- ``json-escape-script-safe``:
  ``test_dice_hunt.py::test_every_drawn_character_scrubbed_in_every_form``, through the
  canaries' new ``script`` character class (SCRUB-004);
- ``username-prompts-uncounted``: ``test_queue_moments.py::test_every_prompt_counts`` (the
  ``username-held-beyond`` mix; APPR-009);
- ``blank-values-refused-as-empty``:
  ``test_awkward_values.py::test_blank_values_delivered_exactly`` (SUBST-005);
- ``vault-cached-for-session``: ``test_vault_walks.py::test_every_call_walks_the_vault``
  (VAULT-002);
- ``vault-walk-capped-at-ten-pages``: ``test_vault_walks.py::test_walk_past_ten_pages``
  (VAULT-002);
- ``vault-later-page-failure-ends-walk``:
  ``test_vault_walks.py::test_vault_failing_in_the_middle_of_a_walk`` (MSG-009).

Each changes behaviour only and never prints a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_RESOLVE: Final = "reference_impl._resolve"
_REG: Final = "reference_impl._registry"
_SCRUB: Final = "reference_impl._scrub"
_APPROVE: Final = "reference_impl._approve"

#: Pages a capped vault walk reads at most: 2,000 secrets, "more than anyone has".
_PAGE_CAP: Final = 10


# --- whole-function patches --------------------------------------------------------------------


def _script_safe_json_escape(original: Callable[..., str]) -> Callable[..., str]:
    """Form b from a script-safe JSON writer: ``<`` is written ``\\u003c``."""

    def json_escape(value: str) -> str:
        return original(value).replace("<", "\\u003c")

    return json_escape


def _username_prompts_uncounted(original: Callable[..., Any]) -> Callable[..., Any]:
    """``ApprovalGate.ask`` that keeps prompts of username-only calls off the pending count."""

    def ask(self: Any, request: Any) -> Any:
        names = request.secret_refs
        if names and all(name.endswith(".username") for name in names):
            return self.operator.ask(request, self.timeout)
        return original(self, request)

    return ask


def _vault_cached_for_session(original: Callable[..., Any]) -> Callable[..., Any]:
    """A vault walk served from the records earlier walks of the session found: the network
    read is skipped when every id wanted is already known."""
    import weakref

    cache: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()

    def _walk(vault: Any, wanted: set[str]) -> dict[str, Any]:
        known = cache.setdefault(vault, {})
        found: dict[str, Any]
        if wanted and wanted <= known.keys():
            found = {key: known[key] for key in wanted}
            wanted.clear()
            return found
        found = original(vault, wanted)
        known.update(found)
        return found

    return _walk


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "vault-ids-matched-as-stored",
        "GRAM-004",
        "References are lower-cased but the vault's ids are compared as the vault stores them, "
        "so a secret whose id the vault lists in upper case is refused as unknown.",
        (line_patch(_RESOLVE, "_walk", "key = record.id.lower()", "key = record.id"),),
    ),
    Mutant(
        "ai-tag-compared-as-one-string",
        "MSG-011",
        "A secret's tags are compared as one comma-joined string with 'ai-provider', so an AI "
        "provider's key that carries any other tag as well resolves and is delivered.",
        (
            line_patch(
                _REG,
                "resolve",
                "if record is not None and AI_PROVIDER_TAG in record.tags:",
                'if record is not None and ",".join(record.tags) == AI_PROVIDER_TAG:',
            ),
        ),
    ),
    Mutant(
        "json-escape-script-safe",
        "SCRUB-004",
        "Form b is built by a script-safe JSON writer that writes '<' as \\u003c, so the real "
        "form b of a value holding '<' and a character JSON escapes survives scrubbing.",
        ((_SCRUB, "json_escape", _script_safe_json_escape),),
    ),
    Mutant(
        "username-prompts-uncounted",
        "APPR-009",
        "Prompts of calls whose references are all usernames (metadata shown in the dialog "
        "anyway) bypass the pending limit: they neither count against it nor end QUEUE_FULL.",
        ((_APPROVE, "ApprovalGate.ask", _username_prompts_uncounted),),
    ),
    Mutant(
        "blank-values-refused-as-empty",
        "SUBST-005",
        "A field is judged empty after trimming white space (strings.TrimSpace), so a value of "
        "blanks or line breaks only is refused as 'has no <field>' instead of delivered.",
        (
            line_patch(
                _REG,
                "resolve",
                "if not value or _LONE_SURROGATE",
                "if not value.reveal().strip() or _LONE_SURROGATE",
            ),
        ),
    ),
    Mutant(
        "vault-cached-for-session",
        "VAULT-002",
        "Records a vault walk found are kept for the session and a later call whose ids are all "
        "known is served from them without reading the vault, so values outlive the call that "
        "read them and a rotated or deleted secret is delivered as it was.",
        ((_RESOLVE, "_walk", _vault_cached_for_session),),
    ),
    Mutant(
        "vault-walk-capped-at-ten-pages",
        "VAULT-002",
        "The vault walk stops after 10 pages (2,000 secrets) as a guard against a server that "
        "never returns a short page, so a secret past the 2,000th is refused as unknown.",
        (
            line_patch(
                _RESOLVE,
                "_walk",
                "    while wanted:\n",
                f"    while wanted and page < {_PAGE_CAP}:\n",
            ),
        ),
    ),
    Mutant(
        "vault-later-page-failure-ends-walk",
        "MSG-009",
        "A page after the first that cannot be read is taken for the vault's end, so a vault "
        "that fails in the middle of a walk is reported as ids it does not hold, never as the "
        "vault failure it is.",
        (
            line_patch(
                _RESOLVE,
                "_walk",
                "        records = vault.read_page(page, VAULT_PAGE_SIZE)\n",
                "        try:\n"
                "            records = vault.read_page(page, VAULT_PAGE_SIZE)\n"
                "        except VaultError:\n"
                "            if page == 0:\n"
                "                raise\n"
                "            break\n",
            ),
        ),
    ),
)
