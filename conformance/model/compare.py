"""Comparing a host with the model after one step, and naming the requirement a gap breaks.

This module owns the fields the model check compares (:data:`FIELD_REQUIREMENTS`): a call's
disposition, what the handler received, the ledger record, the prompts shown and the vault
reads, each mapped to the requirement IDs of the catalog that fix it. A difference is reported
with :func:`conformance.outcomes.fail` naming those IDs, most specific first; where a ruling
allows more than one answer it is accepted, recorded with :func:`conformance.outcomes.accept`
and held for the rest of the run (:class:`Held`). It never prints a value: details name
fields, dispositions, tools and reference names only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from conformance.host import Answer, CallResult, Receipt
from conformance.outcomes import UnlearnedDisposition, fail, should
from conformance.scenario import (
    THROWER,
    first_difference,
    names_vault_failure,
    require_snippet_fits,
)

#: Every compared field and the requirements that fix it (docs/conformance.md, "The model").
FIELD_REQUIREMENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "disposition": ("ORD-001", "APPR-001", "APPR-008", "APPR-009", "APPR-010", "FENCE-001"),
    "prompts.count": ("APPR-001", "ORD-003"),
    "prompts.refs": ("APPR-011",),
    "prompts.descriptors": ("APPR-002",),
    "prompts.risk": ("APPR-003",),
    "prompts.arguments": ("APPR-004",),
    "receipts.count": ("SUBST-004", "INV2", "APPR-006"),
    "receipts.raw": ("SUBST-005", "SUBST-003", "INV5"),
    "receipts.view": ("SUBST-001", "INV6"),
    "vault.reads": ("VAULT-001", "VAULT-002", "VAULT-003"),
    "ledger.count": ("LEDG-005",),
    "ledger.disposition": ("LEDG-005", "LEDG-008"),
    "ledger.isError": ("LEDG-001",),
    "ledger.secretRefs": ("LEDG-002",),
    "ledger.sanitizedArgs": ("LEDG-004",),
    "ledger.tool": ("LEDG-001",),
    "sweep": ("INV1",),
}

#: Dispositions of a reference-free call that only the host's usual rules decide (APPR-013).
_USUAL: Final = frozenset({"ALLOWED", "APPROVED_ALWAYS", "APPROVED_PROVIDER", "APPROVED_SESSION"})

#: Dispositions of a call that ran.
_RAN: Final = frozenset({"APPROVED_ONCE", *_USUAL})

#: Dispositions of a call withheld by the kill-switch or RBAC: their record is EITHER (LEDG-006).
WITHHELD_TOOL: Final = frozenset({"KILL_SWITCHED", "RBAC_DENIED"})

_RISKS: Final = ("LOW", "MEDIUM", "HIGH", "CRITICAL")


@dataclass(slots=True)
class Call:
    """One call as both hosts ran it, with what the machine knows of it.

    Attributes:
        step: The call's number in the run, for details.
        tool: The tool named.
        bearing: Whether its arguments hold a candidate.
        prompted: Whether the model showed a prompt for it.
        events: The controls applied while its prompt was open, in order, as ``(op, target)``.
        answer: The operator's answer's wire name.
        short: Whether its argument text is within :data:`KEPT_CHARS`.
        resolution: The refusals of resolution that apply to it (``"vault"``, ``"ai"``,
            ``"unknown"``, ``"empty"``), or ``None`` when not known: a host may name any of
            them first (ORD-002), none other.
        empty: The ``(id, field)`` of each empty field it names, any of which the empty-field
            refusal may name, or ``None`` when not known (then only the model's).
        deep: Whether a member stands deeper than a host must read (decisions R1.9): a host
            that stops reading refuses it with words of its own and cannot redact what it did
            not read, so neither the words nor ``sanitizedArgs`` are compared.
        swapped: Whether the host named another refusal of resolution first, accepted as the
            SHOULD it is (ORD-002), or refused a lost secret.read as POLICY_DENIED (FENCE-004):
            its record's disposition is then its own.
        quoted: Text of its malformed candidates that a malformed-reference refusal may not
            hold (decisions R2.1): the id each names, or its body where it names none.
    """

    step: int
    tool: str
    bearing: bool
    prompted: bool = False
    events: list[tuple[str, str]] = field(default_factory=list)
    answer: str = ""
    short: bool = True
    resolution: frozenset[str] | None = None
    empty: frozenset[tuple[str, str]] | None = None
    deep: bool = False
    swapped: bool = False
    quoted: frozenset[str] = frozenset()


#: How much of a call's arguments the reference host keeps in a prompt and in ``sanitizedArgs``
#: (LEDG-022). The bound is the reference host's own: another host may keep longer arguments
#: whole, or cut them elsewhere with other words, so for a call whose arguments are longer the
#: two texts are not compared (the sweep still reads them, and the targeted checks of long
#: arguments judge them).
KEPT_CHARS: Final = 10_000


@dataclass(slots=True)
class Held:
    """The alternatives the host took, held for the rest of the run (EITHER rulings)."""

    taken: dict[str, str] = field(default_factory=dict)
    off_model: bool = False
    """A reference-free call took another usual meaning than the model's (APPR-013): the two
    hosts' rules no longer agree, so the rest of the run is not compared."""

    def take(self, requirement: str, alternative: str, detail: str) -> None:
        """Record ``alternative`` of ``requirement``; fail if the run took another before."""
        earlier = self.taken.setdefault(requirement, alternative)
        if earlier != alternative:
            fail(requirement, f"{detail}: {alternative}, after taking {earlier} earlier in the run")


def reasons(disposition: str, text: str, call: Call) -> tuple[str, ...]:
    """Return the requirements that fix the model's ``disposition`` for ``call``.

    The model is the reference host, whose refusal messages are the design's (decisions R2):
    the text tells which rule refused.
    """
    after_prompt = call.prompted
    if disposition == "UNKNOWN_TOOL":
        return ("ORD-006",)
    if disposition in WITHHELD_TOOL:
        return ("ORD-004", "POL-004")
    table = {
        "QUEUE_FULL": ("APPR-009",),
        "TIMEOUT": ("APPR-008",),
        "DENIED": ("APPR-010",),
        "POLICY_PERSIST_FAILED": ("APPR-012",),
    }
    if disposition in table:
        return table[disposition]
    if disposition == "POLICY_DENIED" and after_prompt:
        return ("FENCE-001", "INV4") if "revoked" in text else ("FENCE-002", "INV4")
    if disposition == "SECRET_FORBIDDEN" and after_prompt:
        return ("FENCE-003",)
    if disposition == "SECRET_FORBIDDEN":
        forbidden: tuple[tuple[str, tuple[str, ...]], ...] = (
            ("disabled", ("MSG-003",)),
            ("permission", ("MSG-004", "INV3")),
            ("host policy", ("MSG-006", "INV3")),
        )
        for marker, ids in forbidden:
            if marker in text:
                return ids
        return ("MSG-011",)
    if disposition == "SECRET_UNRESOLVED" and call.deep:
        return ("GRAM-041", "GRAM-008", "MSG-001")
    if disposition == "SECRET_UNRESOLVED":
        unresolved: tuple[tuple[str, tuple[str, ...]], ...] = (
            ("Malformed", ("GRAM-008", "MSG-001")),
            ("no secret with id", ("MSG-007", "INV2", "SUBST-004")),
            ("has no", ("MSG-008", "INV2", "SUBST-004")),
            ("vault could not", ("MSG-009", "INV2")),
        )
        for marker, ids in unresolved:
            if marker in text:
                return ids
        return ("MSG-010",)
    if disposition == "POLICY_DENIED":
        return ("MSG-005", "INV3") if call.bearing else ("POL-004",)
    if call.bearing:
        return ("APPR-001", "APPR-006") if call.answer else ("APPR-001",)
    if disposition == "APPROVED_ONCE" and call.answer == Answer.APPROVE.value:
        # The operator approved this reference-free call once, in its own prompt: whatever a
        # host's usual meaning of broad answers (APPR-013), that approval is bound to this
        # call and decides it (design invariant 4), as a denial does (APPR-010).
        return ("APPR-011", "INV4")
    return ("APPR-013",)


def _fence5(call: Call) -> bool:
    """Whether a DENY was saved while the prompt was open and replaced before the answer by
    another rule for the same target, with no revocation or reset (decisions R3.4 v1.2)."""
    denied: set[str] = set()
    replaced = False
    for op, target in call.events:
        if op in ("revoke", "reset"):
            return False
        if op == "save:DENY":
            denied.add(target)
        elif op.startswith("save:") and target in denied:
            denied.discard(target)
            replaced = True
    return replaced and not denied


#: What a fence refuses an approved call as, for a revocation, a reset, a saved DENY or a lost
#: ``secret.read`` (decisions R3.4), and those events as :func:`controls.event` names them.
_FENCE_REFUSALS: Final = frozenset({"POLICY_DENIED", "SECRET_FORBIDDEN"})
_FENCE_EVENTS: Final = frozenset({"revoke", "reset", "save:DENY", "set_permissions"})


def _killed_while_open(call: Call) -> bool:
    """Whether the kill switch was pulled for the call's tool while its prompt was open."""
    return call.prompted and ("kill", call.tool) in call.events


#: Dispositions of calls that end before the pre-pass, so that no ledger record need name
#: them (design: the ledger records what reaches the pre-pass; decisions LEDG-006 EITHER).
UNRECORDED: Final = frozenset({"UNKNOWN_TOOL", *WITHHELD_TOOL})


#: The refusals of decisions R2 that the model can meet: a name, the words each begins with
#: (as the model's message shows them; the host's own text may follow), and the rule that fixes
#: them. The unknown-id refusal's words name the ids too: each once, lower case, in order of
#: first use (MSG-007), so they are the model's whole message. An empty field's and an AI
#: provider key's messages begin "secret <id> ...", matched by what follows the id.
_RULED_WORDS: Final = (
    ("malformed", "Malformed secret reference", ("MSG-001",)),
    ("off", "Secret references are disabled on this host", ("MSG-003",)),
    ("permission", "Secret references require the secret.read permission", ("MSG-004",)),
    ("bearing", "Secret-bearing calls are refused by host policy", ("MSG-006",)),
    ("vault", "the vault could not be read (", ("MSG-009",)),
    ("no-vault", "No secret vault is available on this host", ("MSG-010",)),
    ("unknown", "no secret with id ", ("MSG-007",)),
)
#: The refusals of resolution, whose order among themselves is a SHOULD (decisions R2.3,
#: ORD-002): a host that names another of them first is reported, never failed, for it.
_RESOLUTION: Final = frozenset({"vault", "ai", "unknown", "empty"})


#: The words of the empty-field and AI-provider refusals, with the id and the field they name.
_EMPTY_WORDS: Final = re.compile(r"secret (\S+) has no (password|username|notes)\b")
_AI_WORDS: Final = re.compile(r"secret (\S+) is an AI provider key")


def _refusal(text: str) -> tuple[str, str, tuple[str, ...]] | None:
    """Return which ruled refusal ``text`` is: its name, its ruled words and its rule."""
    for name, words, requirements in _RULED_WORDS:
        if text.startswith(words):
            return name, words, requirements
    if text.startswith("secret "):
        rest = text[len("secret ") :].split(" ", 1)[-1]
        if rest.startswith("has no "):
            return "empty", "secret ", ("MSG-008",)
        if rest.startswith("is an AI provider key"):
            return "ai", "secret ", ("MSG-011",)
    return None


def _other_order(call: Call, got: str, name: str) -> bool:
    """Return whether a host that refused for ``got`` where the model refused for ``name``
    took another order within resolution (a SHOULD, ORD-002), reporting it: both are refusals
    of resolution and ``got`` applies to the call. Fail when ``got`` does not apply."""
    if not {got, name} <= _RESOLUTION:
        return False
    if call.resolution is not None and got not in call.resolution:
        wanted = _refusal_requirements(name)
        fail(
            wanted,
            f"call {call.step}: refused for the {got} refusal, which does not apply to the call, "
            f"where the model refused for the {name} one",
        )
    should(
        False,
        "ORD-002",
        f"call {call.step}: resolution refused for the {got} refusal where the model refused "
        f"for the {name} one first",
    )
    return True


def _refusal_requirements(name: str) -> tuple[str, ...]:
    named = {"empty": ("MSG-008",), "ai": ("MSG-011",)}
    for rule, _words, requirements in _RULED_WORDS:
        named.setdefault(rule, requirements)
    return named[name]


#: The refusals whose ruled words name a secret (and, for an empty field, the field), each with
#: what a detail says the words must name.
_NAMING: Final = {
    "empty": (_EMPTY_WORDS, "'secret <id> has no <field>' naming an empty field of the call"),
    "ai": (_AI_WORDS, "'secret <id> is an AI provider key' naming the key the model names"),
}


def _named(pattern: re.Pattern[str], text: str) -> tuple[str, str] | None:
    """Return the (id, field) ``pattern``'s words name at the start of ``text``, the field
    ``""`` when the words name none."""
    match = pattern.match(text)
    if match is None:
        return None
    return match.group(1), match.group(2) if pattern.groups > 1 else ""


def _names_one_of(pattern: re.Pattern[str], text: str, allowed: frozenset[tuple[str, str]]) -> bool:
    """Return whether ``text`` begins with ``pattern``'s words naming one of ``allowed``: the id
    in any case (the rulings lower-case an id to name it, R1.2; the targeted checks hold the
    case), the field as written."""
    named = _named(pattern, text)
    return named is not None and (named[0].lower(), named[1]) in {
        (sid.lower(), name) for sid, name in allowed
    }


def ruled_words(call: Call, host: CallResult, model: CallResult) -> None:
    """Compare how a refusal before any prompt begins, where the rulings fix its words.

    Both hosts refused the call alike. The model is the reference host, whose messages begin
    with the ruled words (decisions R2), so the host's must begin with the same words; for
    unknown ids with the model's whole message; for an empty field and an AI provider key with
    the words naming the secret (and the field) the model names, or for an empty field any
    other empty field of the call; for a vault failure with the words and a kind alone in
    parentheses (MSG-009); for a malformed reference with the words and none of a malformed
    candidate's id or body (MSG-012). A host that names another refusal of resolution first, one
    that applies to the call, took another order among them, a SHOULD (ORD-002): reported, not
    failed. What follows the ruled words is the host's own, and refusals after a prompt are left
    to the fence checks.
    """
    if call.prompted or not model.is_error or call.deep:
        return
    wanted = _refusal(model.text)
    if wanted is None:
        return
    name, words, requirements = wanted
    got = _refusal(host.text)
    if got is not None and got[0] != name:
        if _other_order(call, got[0], name):
            return
        fail(
            (*requirements, "ORD-001"),
            f"call {call.step}: the {got[0]} refusal where the model's is the {name} one",
        )
    if name in _NAMING:
        pattern, spelled = _NAMING[name]
        named = _named(pattern, model.text)
        allowed = frozenset({named} if named else ())
        if name == "empty" and call.empty:
            allowed = call.empty  # any empty field of the call may be the one named
        if not _names_one_of(pattern, host.text, allowed):
            fail(requirements, f"call {call.step}: the refusal does not begin {spelled}")
        return
    if name == "unknown":
        if not host.text.startswith(model.text):
            fail(
                requirements,
                f"call {call.step}: the refusal does not name the unknown ids each once, lower "
                "case, in order of first use, as the model does",
            )
        return
    if not host.text.startswith(words):
        fail(requirements, f"call {call.step}: the refusal does not begin {words!r}")
    if name == "malformed" and any(t.casefold() in host.text.casefold() for t in call.quoted):
        # The words are followed by a location and a static reason, never the candidate.
        fail(("MSG-012",), f"call {call.step}: the malformed-reference refusal quotes a candidate")
    if name == "vault" and not names_vault_failure(host.text):
        # Only a kind of failure follows the words, in parentheses: the shape the named check
        # holds every generated kind to. A failure's own text brings colons or quotes.
        fail(requirements, f"call {call.step}: the vault failure is not named by a kind alone")


def scrubbed_text(call: Call, host: CallResult, model: CallResult, *, scrubbing: bool) -> None:
    """Compare the text of a result whose every value stands alone, each form on a line of its
    own (the forms tool, :func:`conformance.model.world.with_forms`): scrubbed, each occurrence
    becomes exactly its placeholder and nothing else of the text changes (decisions R5.3),
    whole within the cap (R6.1); with ``scrubbing`` off, the text arrives as the tool wrote it
    (R5.5). No ruling leaves that text open: no two of its values share a form, no occurrences
    overlap, and replacing the forms one after another gives the same. The detail names the
    first character that differs by its place, never the text."""
    if host.disposition not in _RAN or model.disposition not in _RAN:
        return
    if host.is_error or model.is_error or host.text == model.text:
        return
    first = first_difference(host.text, model.text)
    expected = (
        "the text with each occurrence replaced by its placeholder and nothing else changed"
        if scrubbing
        else "the text as the tool wrote it, with scrubbing off"
    )
    fail(
        ("SCRUB-020", "SCRUB-007", "CAP-003") if scrubbing else ("SCRUB-012", "CAP-003"),
        f"call {call.step} to {call.tool}: the result is not {expected}: {len(host.text)} "
        f"characters against the model's {len(model.text)}, the first difference at character "
        f"{first}",
    )


def dispositions(call: Call, host: CallResult, model: CallResult, held: Held) -> None:
    """Compare one call's disposition, and the ruled words of a refusal; fail naming what fixes
    the model's."""
    if isinstance(host.disposition, UnlearnedDisposition) and model.disposition in UNRECORDED:
        # Over MCP a refusal sent as a JSON-RPC error without data, for a call no ledger record
        # names, tells no client its disposition (decisions R9.5, R9.8): what is seen of it is
        # that it was refused, and the targeted checks of ORD-004 and ORD-006 judge the rest.
        if host.is_error is not model.is_error:
            fail(reasons(model.disposition, model.text, call), f"call {call.step} was not refused")
        return
    where = f"call {call.step} to {call.tool}"
    killed = model.disposition == "KILL_SWITCHED" and _killed_while_open(call)
    pulled = f"{where}: a kill switch pulled while its prompt was open"
    if host.disposition == model.disposition and host.is_error == model.is_error:
        if killed:
            held.take("FENCE-006", "refused", pulled)
        ruled_words(call, host, model)
        return
    pair = f"{host.disposition} where the model ended {model.disposition}"
    if killed and host.disposition in _RAN:
        # The fence's events leave the kill switch out (decisions R3.4): running the approved
        # call is the host's choice. The hosts' receipts and records part here, so the rest of
        # the example is not compared.
        held.take("FENCE-006", "runs", pulled)
        held.off_model = True
        return
    if killed:
        if host.disposition in _FENCE_REFUSALS and any(
            op in _FENCE_EVENTS for op, _target in call.events
        ):
            # The prompt met another control too, which the fence does see: a host that
            # leaves the kill switch out refuses for that one. Its record parts from the
            # model's, so the rest of the example is not compared.
            held.take("FENCE-006", "runs", pulled)
            held.off_model = True
            return
        fail(
            ("FENCE-006",),
            f"{pulled}, then approved, ended {host.disposition}: neither refused as "
            "KILL_SWITCHED nor run as approved",
        )
    if _resolved_otherwise(call, host, model):
        # An AI provider key's refusal (SECRET_FORBIDDEN) and another of resolution
        # (SECRET_UNRESOLVED) both apply: the order between them is a SHOULD (ORD-002).
        call.swapped = True
        return
    if not call.bearing and model.disposition in _USUAL and host.disposition in _USUAL:
        should(False, "APPR-013", f"{where}: a reference-free call ended {pair}")
        held.off_model = True
        return
    if (
        call.prompted
        and model.disposition == "SECRET_FORBIDDEN"
        and host.disposition == "POLICY_DENIED"
    ):
        should(False, "FENCE-004", f"{where}: a lost secret.read refused the call as POLICY_DENIED")
        # Its record says POLICY_DENIED too, the disposition accepted here (decisions R3.4).
        call.swapped = True
        return
    if _fence5(call) and {host.disposition, model.disposition} == {
        "POLICY_DENIED",
        "APPROVED_ONCE",
    }:
        taken = "refused" if host.disposition == "POLICY_DENIED" else "rule-at-answer"
        held.take("FENCE-005", taken, f"{where}: a DENY replaced before the answer was")
        return
    if host.disposition == model.disposition:
        fail(
            ("LEDG-008", "MCP-006"), f"{where}: isError {host.is_error}, the model {model.is_error}"
        )
    if host.disposition == "POLICY_DENIED" and model.disposition in _RAN:
        # A DENY the model's rules do not have: a rule applied to a tool or provider it was not
        # saved for, whether or not the call carries a reference (POL-004).
        fail(("POL-004",), f"{where}: refused by a DENY the model's rules do not have: {pair}")
    misapplied = _misapplied(call, host)
    if misapplied and not model.is_error:
        # The model ran the call (or its prompt was answered): the host's refusal of
        # resolution names what it got wrong. Where the model refused for an earlier step, the
        # order is at fault, and the model's own refusal names it below.
        fail(
            _MISAPPLIED[misapplied],
            f"{where}: refused for the {misapplied} refusal, which "
            f"does not apply to the call: {pair}",
        )
    ids = reasons(model.disposition, model.text, call)
    if host.disposition in ("APPROVED_ONCE", "ALLOWED") and model.disposition not in _USUAL:
        ids = (*ids, "SUBST-004") if model.disposition == "SECRET_UNRESOLVED" else ids
    if host.disposition == "QUEUE_FULL" and (call.bearing or model.disposition not in _USUAL):
        # Refused for a full queue: before its own refusal, which comes first (ORD-003), or
        # with fewer prompts open than the limit (APPR-009).
        first = "ORD-003" if model.is_error and not call.prompted else "APPR-009"
        ids = (first, *ids)
    fail(ids, f"{where} ended {pair}")


#: What a refusal of resolution says is wrong when it does not apply to the call: an empty
#: field the entry holds a value in (white space is a value, R2.3), an unknown id the vault
#: holds (listed in the other case, R1.2, or on a page the walk stopped before, R7.1), a vault
#: failure of a vault that was read, an AI provider key no reference names.
_MISAPPLIED: Final = {
    "empty": ("SUBST-005", "MSG-008"),
    "unknown": ("GRAM-004", "VAULT-002", "MSG-007"),
    "vault": ("MSG-009",),
    "ai": ("MSG-011",),
}


def _misapplied(call: Call, host: CallResult) -> str | None:
    """Return the refusal of resolution the host refused the call for, when it does not apply
    to the call; else ``None``."""
    if not host.is_error or call.resolution is None:
        return None
    got = _refusal(host.text)
    if got is None or got[0] not in _RESOLUTION or got[0] in call.resolution:
        return None
    return got[0]


def _resolved_otherwise(call: Call, host: CallResult, model: CallResult) -> bool:
    """Return whether both hosts refused the call before any prompt for two different refusals
    of resolution of different dispositions, the host's one that applies (reported, ORD-002)."""
    if call.prompted or not (host.is_error and model.is_error) or call.deep:
        return False
    got, wanted = _refusal(host.text), _refusal(model.text)
    if got is None or wanted is None or got[0] == wanted[0]:
        return False
    return _other_order(call, got[0], wanted[0])


def prompts(
    call: Call | None,
    host: Sequence[Mapping[str, Any]],
    model: Sequence[Mapping[str, Any]],
    *,
    exact_raw: bool = True,
) -> None:
    """Compare the prompts one step showed; ``exact_raw`` compares the arguments' text byte for
    byte (the driver path; over MCP, where the layer may re-serialize them, as JSON values,
    decisions R9.2)."""
    where = f"call {call.step} to {call.tool}" if call else "the step"
    if len(host) != len(model):
        shown = f"{where}: {len(host)} prompts shown where the model showed {len(model)}"
        if len(host) > len(model) and (call is None or call.bearing):
            fail(("ORD-003",), shown)
        if call is not None and not call.bearing:
            # A reference-free call prompted where the model's broad answer runs it unasked, or
            # run unasked where the model prompts: APPR-013, a SHOULD, never a failure.
            should(False, "APPR-013", shown)
            return
        fail(("APPR-001", "INV3"), f"{where}: {len(host)} prompts shown, the model {len(model)}")
    for mine, theirs in zip(host, model, strict=True):
        if (mine.get("tool"), mine.get("provider")) != (theirs.get("tool"), theirs.get("provider")):
            fail("APPR-011", f"{where}: the prompt names another tool or provider")
        if list(mine.get("secretRefs", ())) != list(theirs.get("secretRefs", ())):
            fail("APPR-011", f"{where}: the prompt's references are not the model's")
        if list(mine.get("descriptors", ())) != list(theirs.get("descriptors", ())):
            fail("APPR-002", f"{where}: the prompt's descriptors are not the model's")
        if theirs.get("secretRefs") and _risk(mine) < _RISKS.index("HIGH"):
            fail("APPR-003", f"{where}: a secret-bearing prompt's risk is below HIGH")
        if (call is None or call.short) and not _same_text(
            mine.get("arguments"), theirs.get("arguments"), exact_raw
        ):
            fail("APPR-004", f"{where}: the prompt does not show the arguments as written")


def _same_text(mine: Any, theirs: Any, exact: bool) -> bool:
    if mine == theirs:
        return True
    if exact or not isinstance(mine, str) or not isinstance(theirs, str):
        return False
    return bool(_parsed(mine) == _parsed(theirs))


def _risk(request: Mapping[str, Any]) -> int:
    risk = str(request.get("risk", ""))
    return _RISKS.index(risk) if risk in _RISKS else -1


def receipts(
    call: Call, host: Sequence[Receipt], model: Sequence[Receipt], *, exact_raw: bool
) -> None:
    """Compare what the handler received in one step; ``exact_raw`` compares raw bytes of a
    reference-free call (the driver path; over MCP only the JSON value, decisions R9.2)."""
    where = f"call {call.step} to {call.tool}"
    if len(host) != len(model):
        ids = ("APPR-006", "ORD-005") if host and model else ("SUBST-004", "INV2", "ORD-005")
        fail(ids, f"{where}: the handler ran {len(host)} times, in the model {len(model)}")
    for mine, theirs in zip(host, model, strict=True):
        if call.bearing:
            if _parsed(mine.raw) != _parsed(theirs.raw):
                fail(("SUBST-005", "INV2"), f"{where}: the handler received other arguments")
            if mine.view is not None and theirs.view is not None and mine.view != theirs.view:
                fail(("SUBST-001", "INV6"), f"{where}: the handler's per-key view differs")
        elif (mine.raw != theirs.raw) if exact_raw else (_parsed(mine.raw) != _parsed(theirs.raw)):
            fail(("SUBST-003", "INV5"), f"{where}: a reference-free call's arguments changed")


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return ("not json", raw)


def vault_reads(call: Call | None, host: Sequence[int], model: Sequence[int]) -> None:
    """Compare the vault pages one step read."""
    if list(host) == list(model):
        return
    where = f"call {call.step} to {call.tool}" if call else "the step"
    ids: tuple[str, ...]
    if not model:
        ids = ("VAULT-001", "INV3") if call is None or call.bearing else ("VAULT-003", "INV5")
    else:
        ids = ("VAULT-002",)
    fail(ids, f"{where}: the vault pages read were {list(host)}, in the model {list(model)}")


#: The record fields compared, each with the requirements that fix it.
_RECORD_FIELDS: Final = (
    ("toolName", "ledger.tool"),
    ("providerId", "ledger.tool"),
    ("approvalDisposition", "ledger.disposition"),
    ("isError", "ledger.isError"),
    ("secretRefs", "ledger.secretRefs"),
    ("sanitizedArgs", "ledger.sanitizedArgs"),
)


def _record_key(record: Mapping[str, Any]) -> str:
    # The arguments' text is left out: over MCP it may be written otherwise (decisions R9.2).
    kept = [record.get(name) for name, _key in _RECORD_FIELDS if name != "sanitizedArgs"]
    return json.dumps(kept, sort_keys=True)


#: A reference's name as a record lists it (decisions R1.2): the lower-case id and the field.
_NAME: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(?:password|username|notes)"
)


def _withheld_names_carried(call: Call | None, got: list[Any], model: Mapping[str, Any]) -> bool:
    """Return whether ``got``, the host's secretRefs of a call the kill-switch or RBAC withheld,
    is a legal list where the model, which never reads a withheld call's arguments, lists none.

    Whether a withheld call is recorded at all is EITHER (decisions R6.3); a record that names
    the references its arguments carry follows R6.2 as much as one that names none. So the
    names must be distinct reference names that the arguments spell, in the order of their
    first use (judged where the model's ``sanitizedArgs`` keeps the whole text).
    """
    if model.get("approvalDisposition") not in WITHHELD_TOOL or model.get("secretRefs"):
        return False
    names = [name for name in got if isinstance(name, str) and _NAME.fullmatch(name)]
    if len(names) != len(got) or len(set(names)) != len(names):
        return False
    if call is None or call.deep or not call.short:
        return True
    text = str(model.get("sanitizedArgs", "")).lower()
    places = [_first_use(text, name) for name in names]
    return all(place >= 0 for place in places) and places == sorted(places)


def _first_use(text: str, name: str) -> int:
    """Return where ``text`` (lower case) first spells the reference ``name``, or -1."""
    secret_id, field = name.split(".", 1)
    spellings = [f"{secret_id}.{field}}}}}"] + ([f"{secret_id}}}}}"] if field == "password" else [])
    found = [place for place in (text.find(spelling) for spelling in spellings) if place >= 0]
    return min(found, default=-1)


def ledger(
    call: Call | None,
    host: Sequence[Mapping[str, Any]],
    model: Sequence[Mapping[str, Any]],
    held: Held,
    *,
    exact_raw: bool = True,
    ordered: bool = True,
) -> None:
    """Compare the ledger records one step appended; ``exact_raw`` as for :func:`prompts`.
    Unless ``ordered``, the records of calls that ended on their own clocks (timeouts) are
    matched in no order: each host's are sorted by the fields compared, the arguments' text
    aside."""
    where = f"call {call.step} to {call.tool}" if call else "the step"
    # Only a call the kill switch or RBAC withholds at step [0] may go unrecorded (LEDG-006,
    # EITHER); one refused with the same disposition at the fence, after its prompt, reached
    # the pre-pass and is recorded like any refusal (R6.3). Such a call ends at its own invoke
    # step, unprompted, so the step's withheld record is its own.
    at_gate = call is not None and not call.prompted
    if not ordered:
        host, model = sorted(host, key=_record_key), sorted(model, key=_record_key)
    if len(host) != len(model):
        withheld = [r for r in model if r.get("approvalDisposition") in WITHHELD_TOOL]
        if at_gate and len(model) - len(host) == len(withheld) == 1:
            held.take("LEDG-006", "not-recorded", f"{where}: a withheld call was")
            return
        fail("LEDG-005", f"{where}: {len(host)} ledger records, the model {len(model)}")
    for mine, theirs in zip(host, model, strict=True):
        if at_gate and theirs.get("approvalDisposition") in WITHHELD_TOOL:
            held.take("LEDG-006", "recorded", f"{where}: a withheld call was")
        for name, key in _RECORD_FIELDS:
            if name == "sanitizedArgs" and call is not None and (call.deep or not call.short):
                continue
            if name == "approvalDisposition" and call is not None and call.swapped:
                continue
            got, want = mine.get(name), theirs.get(name)
            if name == "secretRefs":
                got, want = list(got or ()), list(want or ())
                if _withheld_names_carried(call, got, theirs):
                    continue
            if got == want or (name == "sanitizedArgs" and _same_text(got, want, exact_raw)):
                continue
            if (
                name == "sanitizedArgs"
                and call is not None
                and "{{secret:[REDACTED]}}" in str(want)
            ):
                should(False, "LEDG-007", f"{where}: a malformed candidate is redacted otherwise")
                continue
            fail(FIELD_REQUIREMENTS[key], f"{where}: the record's {name} differs from the model's")
        _snippet(call, where, mine, theirs)


def _snippet(
    call: Call | None, where: str, mine: Mapping[str, Any], theirs: Mapping[str, Any]
) -> None:
    """Hold one record's ``errorSnippet`` to what the record says of the call, as the named
    check of outcomes does (``test_ledger_outcomes.py``): a call that did not fail carries
    none, and a call whose handler ran and raised carries one, as text (LEDG-001). Whether a
    refusal or a timeout carries one is not ruled, so neither is judged; nor are its words."""
    thrown = (
        call is not None
        and call.tool == THROWER.name
        and theirs.get("approvalDisposition") in _RAN
        and theirs.get("isError") is True
    )
    require_snippet_fits(
        where,
        mine.get("errorSnippet"),
        failed=mine.get("isError") is not False,
        raised=thrown and mine.get("isError") is True,
    )
