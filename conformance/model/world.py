"""What the model-based check draws: configurations, arguments and operator plans.

This module owns the alphabet of the model check (:mod:`conformance.model.machine`): the
secret ids of its vault (fixed, so that a reproducer names them), the tools it registers, the
Hypothesis strategies for a configuration, for the items of a call's arguments (references in
every field and case, unknown ids, look-alikes that are no reference, plain values), and the
text of those arguments. A drawn step holds ids, field names and labels only: the canaries are
minted when a configuration is applied and never reach a step's printed form.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from secrets import token_hex
from typing import Any, Final

from hypothesis import strategies as st

from conformance import vectorgen
from conformance.alphabets import (
    AWKWARD_SHAPES,
    AWKWARD_SPLIT,
    KNOWN_VAULT_FAILURES,
    near_names,
    shaped,
    unknown_fields,
    vault_failure_kinds,
)
from conformance.canary import (
    CHARACTER_CLASSES,
    MIN_GUARDED_CODE_POINTS,
    Kind,
    Mint,
    hardening_forms,
    required_forms,
)
from conformance.host import HandlerKind, HostConfig, SecretSpec, ToolSpec
from conformance.scenario import ECHO, PROVIDER, RECORDER, THROWER, args_json, make_secret, tool

#: The vault's ids: fixed, so that a printed reproducer runs again as it reads.
SECRET_IDS: Final = tuple(f"5ec4e7a{n}-0000-4000-8000-00000000000{n}" for n in range(3))

#: Thirteen more entries every configuration holds, with notes, which only calls of many
#: references name: with the first three, sixteen secrets, so that such a call names more than
#: sixteen different values (a password and a username of each, and the notes of these
#: thirteen). Their values carry the texts of :data:`WIDE_TEXTS`.
WIDE_IDS: Final = tuple(f"5ec4e7b{n:x}-0000-4000-8000-0000000000{n:02x}" for n in range(13))
ALL_IDS: Final = SECRET_IDS + WIDE_IDS

#: What each wide entry's password holds after its first :data:`AWKWARD_SPLIT` characters:
#: every character of one class of :data:`conformance.canary.CHARACTER_CLASSES`, the twelve in
#: turn, each with a space after it (so that form c differs from the value whatever the class
#: is), then the corners a writer of form b or c meets: U+0000, a backslash and ``u`` with four
#: hex digits (no escape, text), the ideographic space and U+2029, a CRLF line break and a
#: character of plane 2. So the probe's calls of many references, to the echo and to
#: :data:`FORMS_NAME`, hold every class in every form at step 1 of every example, and a form a
#: host writes otherwise than the design stays in clear (SCRUB-004, SCRUB-005).
WIDE_TEXTS: Final = (
    *(chars + " " for chars in CHARACTER_CLASSES.values()),
    "\x00\\u0041\u3000\u2029\r\n\U0002000b",
)

#: The length of the last wide entry's username: the floor itself (decisions R5.1), the
#: shortest value that must be scrubbed.
FLOOR_LENGTH: Final = MIN_GUARDED_CODE_POINTS

#: The length of the first wide entry's notes: past any bound a scrubber might put on the
#: values it looks for (a key file kept in a secret's notes; SCRUB-001 has none).
LONG_NOTES: Final = 1_500

#: Three more entries every configuration holds, named by the probe's calls of resolution
#: (:class:`Probe`): an AI provider's key (tagged exactly ``ai-provider``, decisions R2), an
#: entry whose notes are empty, and one whose password holds the spelling of the first
#: secret's reference (:func:`holding`). Their indexes in :data:`VAULT_IDS` follow.
AI_ID: Final = "5ec4e7c0-0000-4000-8000-0000000000a1"
BARE_ID: Final = "5ec4e7c1-0000-4000-8000-0000000000b2"
HOLD_ID: Final = "5ec4e7c2-0000-4000-8000-0000000000c3"

#: Two more, named only by the probe: an entry the vault lists under its id in upper case
#: (the design lets a vault return either), whose password holds the characters a script-safe
#: JSON writer escapes (:data:`SCRIPTED`); and an AI provider's key whose tags are two, the
#: exact ``ai-provider`` second. Appended after the others, so no drawn index moves.
UPPER_ID: Final = "5ec4e7c3-0000-4000-8000-0000000000d4"
TAGGED_ID: Final = "5ec4e7c4-0000-4000-8000-0000000000e5"

#: One more, named only by the probe: an entry whose values are white space only
#: (:data:`BLANK_VALUES`), which are values, not empty fields (decisions R2.3).
BLANK_ID: Final = "5ec4e7c5-0000-4000-8000-0000000000f6"
VAULT_IDS: Final = (*ALL_IDS, AI_ID, BARE_ID, HOLD_ID, UPPER_ID, TAGGED_ID, BLANK_ID)
AI: Final = VAULT_IDS.index(AI_ID)
BARE: Final = VAULT_IDS.index(BARE_ID)
HOLD: Final = VAULT_IDS.index(HOLD_ID)
UPPER: Final = VAULT_IDS.index(UPPER_ID)
TAGGED: Final = VAULT_IDS.index(TAGGED_ID)
BLANK: Final = VAULT_IDS.index(BLANK_ID)

#: The blank entry's username, password and notes: blanks, a tab, line breaks. Too common to
#: be guarded, so no surface is searched for them; the comparison judges their delivery.
BLANK_VALUES: Final = ("\t", "   ", " \n ")

#: The ids of the filler entries of the probe's large vaults
#: (:func:`conformance.scenario.filler`), fixed as every id of the world is, and held by no
#: other entry.
FILLER_IDS: Final = tuple(f"5ec4e7f0-0000-4000-8000-{n:012x}" for n in range(2_640))

#: The characters form b keeps and a script-safe JSON writer writes as ``\u003c`` and so on.
SCRIPT_CHARS: Final = "<>&'="

#: What the upper-case entry's password holds: the script characters beside a quote and a
#: backslash, which form b escapes, so that form b differs from the raw value and a host that
#: builds form b otherwise leaves the real one in clear.
SCRIPTED: Final = SCRIPT_CHARS + '"\\'

#: The tagged key's tags: another tag first, so that only a lookup of each tag finds it.
TAGGED_TAGS: Final = ("billing", "ai-provider")

#: The tag that makes an entry an AI provider's key (decisions R2: exactly this).
AI_TAG: Final = "ai-provider"

#: Ids no vault the check configures holds. Two, and the second sorts before the first, so that
#: a call naming both in the drawn order tells the order of first use from a sorted one.
UNKNOWN_IDS: Final = (
    "fade0000-0000-4000-8000-00000000beef",
    "0badc0de-0000-4000-8000-00000000dead",
)

#: Four more ids no vault holds, for the probe's refusal of many unknown ids: six in all, past
#: a list a host might cut to three, listed in no sorted order.
MORE_UNKNOWN_IDS: Final = (
    "d00d0000-0000-4000-8000-00000000f00d",
    "1eaf0000-0000-4000-8000-00000000cafe",
    "ca7e0000-0000-4000-8000-00000000babe",
    "2bad0000-0000-4000-8000-00000000face",
)
ALL_UNKNOWN_IDS: Final = UNKNOWN_IDS + MORE_UNKNOWN_IDS

#: The echoing tool's name, the recorder's, and that of the tool that fails quoting its
#: arguments.
ECHO_NAME: Final = ECHO.name
RECORDER_NAME: Final = RECORDER.name
THROWER_NAME: Final = THROWER.name

#: The tool whose fixed text holds forms a to d of every value the probe's calls of many name,
#: as the design writes them (:func:`with_forms`): a host that writes a form otherwise, in its
#: scrubber and in its own echo alike, leaves the design's form in clear (SCRUB-004, SCRUB-005).
FORMS_NAME: Final = "forms"

#: The tool whose fixed text is ASCII alone and holds one form of each value the probe's
#: calls of many name, far apart (:func:`apart_text`): no two occurrences overlap, so a
#: scrubber's path for text with no overlaps meets forms of many values and lengths, and a
#: non-ASCII value's form c or d stands in a text with no non-ASCII character (SCRUB-020,
#: SCRUB-005). The forms tool's text, dense with forms of one value beside another, rarely
#: takes that path.
APART_FORMS_NAME: Final = "apart_forms"

#: What the gaps of :func:`apart_text` are made of: a character no value's
#: form is made of alone.
GAP_CHAR: Final = "."

#: The tool that, over MCP, puts every form of its values on every MCP surface: the text
#: items, an embedded resource, a link, structured content, ``_meta``, progress and log
#: notifications, members no client shows and requests to the client during the call (the
#: ``rich`` handler of docs/mcp.md). Registered only when the host is reached over MCP.
RICH: Final = tool("rich", HandlerKind.RICH, members=True, requests=True)

#: Which secrets the probe's call to :data:`RICH` names, as indexes in :data:`VAULT_IDS`: the
#: wide entries whose passwords hold controls, non-ASCII letters and the corner text.
RICH_SECRETS: Final = (len(SECRET_IDS) + 9, len(SECRET_IDS) + 10, len(SECRET_IDS) + 12)

#: What the forms tool's text holds before the forms and after them: a byte order mark, and
#: U+0000 with white space: a host must hand a result within the cap on whole (CAP-003).
FORMS_HEAD: Final = "\ufeff\n"
FORMS_TAIL: Final = "\n\x00 \t\n"

#: A second provider, so that a provider rule covers some tools and not others.
OTHER_PROVIDER: Final = "plugin.other"

#: The permission a user needs to use references at all, and the one the gated tool needs
#: (RBAC, decisions R2.3).
READ: Final = "secret.read"
GATE_PERMISSION: Final = "tool.gated"

AUX: Final = tool("aux", RECORDER.handler, provider=OTHER_PROVIDER)
GATED: Final = tool("gated", RECORDER.handler, permission=GATE_PERMISSION)

#: The tools every configuration registers, and the name of one it never does: the recorder's
#: name in capitals, the first near name a lookup that folds case confuses with a registered
#: tool (ORD-006), so that a call to it tells an exact lookup from a loose one.
TOOLS: Final[tuple[ToolSpec, ...]] = (RECORDER, ECHO, THROWER, AUX, GATED)
TOOL_NAMES: Final = tuple(spec.name for spec in TOOLS)
UNREGISTERED: Final = near_names(RECORDER.name, 1)[0]

#: A tool only the probe's calls meet, which holds a DENY in every example that can save one,
#: and echo tools registered beside it under its near names, from the open alphabet of
#: :func:`conformance.alphabets.near_names`: four differ from it in case only, others by a
#: separator, a letter or a prefix, so that a host that looks a rule up by a folded or loose
#: name gives one of them the DENY (POL-004). The rule is for this tool alone, so it changes
#: nothing the other steps meet.
RULED: Final = tool("send_mail", HandlerKind.ECHO)
TWIN_NAMES: Final = near_names(RULED.name, 24)
TWINS: Final = tuple(tool(name, HandlerKind.ECHO) for name in TWIN_NAMES)

#: A tool whose handler sleeps past the execution timeout the probe configures for it
#: (:data:`EXECUTION_TIMEOUT_S`): only the probe's configuration of running calls registers
#: it, so that every other configuration holds exactly the tools above.
SLOW_SLEEP_S: Final = 5.0
SLOW: Final = tool("slow", HandlerKind.TIMEOUT, seconds=SLOW_SLEEP_S)

#: The execution timeout of that configuration: far above what the recorder's handler takes on
#: a loaded machine, far below the slow handler's sleep.
EXECUTION_TIMEOUT_S: Final = 1.0

#: The tools a call names, the plain recorder likeliest, now and then one never registered.
CALLED: Final = (RECORDER.name,) * 5 + (ECHO.name, ECHO.name, THROWER.name, AUX.name, AUX.name)
CALLED_RARELY: Final = (GATED.name, UNREGISTERED)

#: The kinds of vault failure a configuration draws: the protocol's examples, then an open
#: alphabet of others (:func:`conformance.alphabets.vault_failure_kinds`), so that a host that
#: knows a few kinds and mishandles the rest meets one it does not know. The probe's failing
#: vault takes a kind of the open alphabet only.
OPEN_FAILURE_KINDS: Final = vault_failure_kinds(29)
FAILURE_KINDS: Final = KNOWN_VAULT_FAILURES + OPEN_FAILURE_KINDS

#: The fields a reference may not name, from the open alphabet of
#: :func:`conformance.alphabets.unknown_fields`: the words credential stores use, every small
#: edit of the three real names, and random words.
UNKNOWN_FIELDS: Final = unknown_fields(64)

#: How many references a call of many holds: 256, with which the echo's result holds the
#: passwords more than 500 times (the raw arguments and four forms), then past 16, 32 and 64.
#: The first is the simplest draw, so the run's first example holds it; with it, the thrower's
#: call also carries a filler past the result cap (which costs most over MCP).
MANY_COUNTS: Final = (256, 17, 33, 65)

#: The result cap (decisions R6.1): no text the agent reads is longer, a failure's included.
RESULT_CAP: Final = 150_000

#: The length of the filler a long call carries: past the result cap, so that a result or a
#: failure text quoting it must be cut.
FILLER_CHARS: Final = RESULT_CAP + 5_000

#: The tools a fenced call names: both of the provider whose rules the fence's controls move.
FENCED: Final = (RECORDER.name, ECHO.name)

#: The fields a reference may name; ``""`` leaves the field out (the password).
FIELDS: Final = ("", "password", "username", "notes")

#: Rule targets: ``(kind, name)`` for a tool or a provider.
TARGETS: Final = (
    ("tool", RECORDER.name),
    ("tool", ECHO.name),
    ("tool", AUX.name),
    ("provider", PROVIDER),
    ("provider", OTHER_PROVIDER),
)

#: Approval timeouts: long enough to hold a prompt open across steps, or short enough to let
#: one run out within a step.
LONG_TIMEOUT_S: Final = 20.0
SHORT_TIMEOUT_S: Final = 0.4

#: The awkward shapes (:data:`conformance.alphabets.AWKWARD_SHAPES`), in their order; the
#: first three secrets' values take three of them, :data:`SHAPE_STRIDE` apart, so that a
#: configuration drawn from the first shape holds a trailing line break (the first), a
#: decomposed letter (the ninth) and Unicode spaces (the seventeenth).
SHAPES: Final = tuple(AWKWARD_SHAPES)
SHAPE_STRIDE: Final = 8

#: The pending limits a configuration draws, the first (the simplest draw) two, so that the
#: first example can hold one prompt open and still open another.
PENDING_LIMITS: Final = (2, 1, 3)


def failure_words(mint: Mint) -> str:
    """Return a failing vault's own message, as a backend might word it, around a fresh
    canary from ``mint``."""
    return "connection reset by peer: " + mint.canary(Kind.PLAIN, "vault-failure").value


@dataclass(frozen=True, slots=True)
class Setup:
    """One drawn configuration, printed as the reproducer's first step.

    Attributes:
        secrets: For each vault entry, whether its notes are empty and whether its values hold
            spaces.
        vault: ``"present"``, ``"absent"`` or ``"failing:<kind>"``.
        policy: The policy file as an object, or ``None``.
        admin: Whether the user is an admin.
        permissions: The user's permissions.
        short_timeout: Whether the approval timeout is :data:`SHORT_TIMEOUT_S`.
        pending_limit: The pending-prompt limit.
        store_failing: Whether saving a rule fails to persist.
        failure_message: Whether a failing vault's own message is a fresh canary (the host
            announced ``vault.failure-message``), which no surface may show (MSG-009).
        shape: The index in :data:`SHAPES` of the first secret's awkward shape (the others
            follow :data:`SHAPE_STRIDE` apart), or ``None`` for plain values.
    """

    secrets: tuple[tuple[bool, bool], ...]
    vault: str
    policy: tuple[tuple[str, Any], ...] | None
    admin: bool
    permissions: tuple[str, ...]
    short_timeout: bool
    pending_limit: int
    store_failing: bool
    failure_message: bool = False
    shape: int | None = None

    def shapes(self) -> tuple[str | None, ...]:
        """Return the awkward shape of each of the first three secrets' values, or ``None``."""
        if self.shape is None:
            return (None,) * len(SECRET_IDS)
        return tuple(
            SHAPES[(self.shape + n * SHAPE_STRIDE) % len(SHAPES)] for n in range(len(SECRET_IDS))
        )

    def empty(self, index: int, field_name: str) -> bool:
        """Return whether the field ``field_name`` of the secret at ``index`` of
        :data:`VAULT_IDS` is empty: the notes of the bare entry, or of a secret drawn without."""
        if field_name != "notes":
            return False
        return index == BARE or (index < len(self.secrets) and self.secrets[index][0])

    def failure_text(self, mint: Mint) -> str | None:
        """Return a failing vault's own message, a fresh canary, or ``None``."""
        if not (self.failure_message and self.vault.startswith("failing:")):
            return None
        return failure_words(mint)

    def config(self, mint: Mint, failure_text: str | None = None) -> HostConfig:
        """Return the configuration, its secrets fresh canaries from ``mint`` and a failing
        vault's own message ``failure_text``."""
        secrets: list[SecretSpec] = []
        drawn = zip(SECRET_IDS, self.secrets, self.shapes(), strict=False)
        for sid, (empty, spaced), shape in drawn:
            spec = make_secret(
                mint, secret_id=sid, notes=not empty, kind=Kind.SPACED if spaced else Kind.PLAIN
            )
            if shape is not None:
                notes = shaped(spec.notes, shape) if spec.notes else ""
                spec = dataclasses.replace(spec, password=shaped(spec.password, shape), notes=notes)
            secrets.append(spec)
        secrets.extend(wide(mint, index) for index in range(len(WIDE_IDS)))
        secrets.append(make_secret(mint, secret_id=AI_ID, tags=(AI_TAG,)))
        secrets.append(make_secret(mint, secret_id=BARE_ID, notes=False))
        hold = make_secret(mint, secret_id=HOLD_ID)
        secrets.append(dataclasses.replace(hold, password=holding(hold.password)))
        upper = make_secret(mint, secret_id=UPPER_ID.upper())
        scripted = upper.password[:AWKWARD_SPLIT] + SCRIPTED + upper.password[AWKWARD_SPLIT:]
        secrets.append(dataclasses.replace(upper, password=scripted))
        secrets.append(make_secret(mint, secret_id=TAGGED_ID, tags=TAGGED_TAGS))
        username, password, notes = BLANK_VALUES
        secrets.append(SecretSpec(BLANK_ID, "blank.example", username, password, notes))
        return HostConfig(
            secrets=tuple(secrets),
            vault=self.vault,
            policy=_policy_object(self.policy),
            admin=self.admin,
            permissions=self.permissions,
            tools=(*TOOLS, RULED, *TWINS),
            approval_timeout_s=SHORT_TIMEOUT_S if self.short_timeout else LONG_TIMEOUT_S,
            pending_limit=self.pending_limit,
            policy_store="failing" if self.store_failing else "working",
            vault_failure_message=failure_text,
        )


def with_forms(config: HostConfig, members: Sequence[Item]) -> HostConfig:
    """Return ``config`` with two static tools registered: :data:`FORMS_NAME`, whose fixed
    text holds forms a to d (decisions R5.2), computed by the suite, of each value ``members``
    name, one a line: only those, so that a call naming them all must leave none of its text
    in clear; and :data:`APART_FORMS_NAME`, whose text holds those of them
    :func:`apart_forms` keeps."""
    by_id = {spec.id.lower(): spec for spec in config.secrets}
    values: dict[str, None] = {}
    for item in members:
        if item.kind == "ref":
            spec = by_id[VAULT_IDS[item.secret]]
            values[getattr(spec, item.field or "password")] = None
    lines = [form for value in values for form in required_forms(value).values()]
    text = FORMS_HEAD + "\n".join(lines) + FORMS_TAIL
    forms = tool(FORMS_NAME, HandlerKind.STATIC, text=text)
    apart = tool(APART_FORMS_NAME, HandlerKind.STATIC, text=apart_text(tuple(values)))
    return dataclasses.replace(config, tools=(*config.tools, forms, apart))


def apart_text(values: Sequence[str]) -> str:
    """Return the text of :data:`APART_FORMS_NAME` for ``values``: the form
    :func:`apart_forms` keeps of each, one a line, each followed by a line of
    :data:`GAP_CHAR` as long as the longest form of any of them. A scrubber that steps past an
    occurrence by another form's length, or writes another reference's placeholder, lands in
    plain text, never on the next occurrence, and leaves its error in the result."""
    longest = max(len(form) for value in values for form in required_forms(value).values())
    gap = GAP_CHAR * longest
    return "\n".join(line for form in apart_forms(values) for line in (form, gap))


def apart_forms(values: Sequence[str]) -> list[str]:
    """Return, for each of ``values`` that has one, its first form a to d that a text in ASCII
    alone, one form a line, can hold with no two occurrences of any form overlapping: in
    ASCII, without a line break, held by that value alone and holding no other form of any of
    them, those a host may scrub beyond the design (decisions R5.6) included. So no ruling
    leaves the text's scrubbing open: no shared forms, no overlaps, nothing a hardened host
    scrubs otherwise; and a non-ASCII value is there by form c or d."""
    owners: dict[str, set[str]] = {}
    for value in values:
        for form in (*required_forms(value).values(), *hardening_forms(value).values()):
            owners.setdefault(form, set()).add(value)

    def apart(form: str) -> bool:
        return (
            form.isascii()
            and "\n" not in form
            and len(owners[form]) == 1
            and not any(other != form and other in form for other in owners)
        )

    kept = (next(filter(apart, required_forms(value).values()), None) for value in values)
    return [form for form in kept if form is not None]


def wide(mint: Mint, index: int) -> SecretSpec:
    """Return the wide entry at ``index`` of :data:`WIDE_IDS`, fresh canaries from ``mint``:
    its password holds the text of :data:`WIDE_TEXTS` at ``index``; the first's notes are
    :data:`LONG_NOTES` characters long and the last's username :data:`FLOOR_LENGTH`."""
    spec = make_secret(mint, secret_id=WIDE_IDS[index])
    inner = WIDE_TEXTS[index]
    password = spec.password[:AWKWARD_SPLIT] + inner + spec.password[AWKWARD_SPLIT:]
    notes, username = spec.notes, spec.username
    if index == 0:
        # One canary, then random hex in words: no stretch of it repeats, and the run mints
        # no more canaries for it than for any other entry.
        words = (token_hex(16) for _ in range(LONG_NOTES // 33 + 1))
        notes = " ".join((notes, *words))[:LONG_NOTES]
    if index == len(WIDE_IDS) - 1:
        username = username[:FLOOR_LENGTH]
    return dataclasses.replace(spec, password=password, notes=notes, username=username)


def holding(core: str) -> str:
    """Return ``core`` with the first secret's reference spelt inside it: a value that one
    rewrite delivers as text, and that a host replacing references one after another resolves
    a second time when that reference follows it in the same string (SUBST-005)."""
    return core[:AWKWARD_SPLIT] + _reference(SECRET_IDS[0], "") + core[AWKWARD_SPLIT:]


def _policy_object(policy: tuple[tuple[str, Any], ...] | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    data: dict[str, Any] = {}
    for key, value in policy:
        if key in ("tools", "providers"):
            data.setdefault(key, {}).update(dict(value))
        else:
            data[key] = value
    return data


_RULES: Final = ("ALLOW", "ASK", "DENY")


def _policy_items() -> st.SearchStrategy[tuple[str, Any]]:
    return st.one_of(
        st.tuples(st.just("defaultRule"), st.sampled_from(("ALLOW", "ASK"))),
        st.tuples(st.just("yolo"), st.booleans()),
        st.tuples(st.just("secretBearingCalls"), st.sampled_from(("ASK", "ASK", "ASK", "DENY"))),
        st.tuples(st.just("secretReferencesEnabled"), st.sampled_from((True, True, True, False))),
        st.tuples(st.just("resultScrubbingEnabled"), st.sampled_from((True, True, False))),
        st.tuples(
            st.just("tools"),
            st.tuples(st.tuples(st.sampled_from(TOOL_NAMES[:4]), st.sampled_from(_RULES))),
        ),
        st.tuples(
            st.just("providers"),
            st.tuples(
                st.tuples(st.sampled_from((PROVIDER, OTHER_PROVIDER)), st.sampled_from(_RULES))
            ),
        ),
    )


def _vault(state: str) -> st.SearchStrategy[str]:
    if state != "failing":
        return st.just(state)
    return st.sampled_from(FAILURE_KINDS).map(lambda kind: f"failing:{kind}")


def setups(
    *, absent: bool, failing: bool, store_failing: bool, failure_message: bool = False
) -> st.SearchStrategy[Setup]:
    """Return configurations using only what the host announced.

    Args:
        absent: The host can be built without a vault (``vault.absent``).
        failing: Its vault can be made to fail (``vault.failing``), with any kind of failure.
        store_failing: Its policy store can be made to fail (``policy.store-failing``).
        failure_message: A failing vault's own message can be chosen
            (``vault.failure-message``).
    """
    vaults = ["present"] * 6 + (["absent"] if absent else []) + (["failing"] if failing else [])
    return st.builds(
        Setup,
        secrets=st.lists(
            st.tuples(st.sampled_from((False, False, True)), st.booleans()), min_size=3, max_size=3
        ).map(tuple),
        vault=st.sampled_from(vaults).flatmap(_vault),
        # Most runs keep the default policy, so that most calls get as far as their prompt.
        policy=st.one_of(
            st.none(), st.none(), st.none(), st.lists(_policy_items(), max_size=3).map(tuple)
        ),
        admin=st.sampled_from((False, False, True)),
        permissions=st.sampled_from(
            (
                (READ,),
                (READ,),
                (READ, GATE_PERMISSION),
                (READ,),
                (),
            )
        ),
        short_timeout=st.sampled_from((False, False, True)),
        pending_limit=st.sampled_from(PENDING_LIMITS),
        # A store that cannot save makes every saved rule of the example, the fence's saved
        # DENY among them, fail: one configuration in four.
        store_failing=(
            st.sampled_from((False, False, False, True)) if store_failing else st.just(False)
        ),
        failure_message=st.just(failure_message),
        # Awkward values in most configurations, from the first shape in the simplest draw.
        shape=st.integers(0, len(SHAPES)).map(lambda n: n if n < len(SHAPES) else None),
    )


# --- a call's arguments ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One argument member: a reference, an unknown id, a look-alike, or a plain value.

    Attributes:
        kind: ``"ref"``, ``"unknown"``, ``"lookalike"``, ``"malformed"``, ``"plain"``,
            ``"filler"`` (:data:`FILLER_CHARS` characters), ``"pair"`` (two passwords'
            references in one string) or ``"deep"`` (a malformed candidate
            :data:`DEEP_LEVELS` levels down).
        secret: The index in :data:`VAULT_IDS` of the id a reference names; for an unknown id,
            its index in :data:`ALL_UNKNOWN_IDS`.
        field: The field it names (``""`` for none); for a malformed member, a field the
            contract does not have (:data:`UNKNOWN_FIELDS`), or ``""`` for the fixed shapes.
        upper: Whether the id is written in upper case.
        shape: Which look-alike, or where a plain value sits; for a pair, the index of the
            second reference's secret.
    """

    kind: str
    secret: int = 0
    field: str = ""
    upper: bool = False
    shape: int = 0


#: Where the generated grammar's two ids point in the model's vault: two wide entries, whose
#: fields are never empty, so that a call of every spelling is refused for nothing else.
SPELLED_IDS: Final = {vectorgen.ID_A: WIDE_IDS[1], vectorgen.ID_B: WIDE_IDS[2]}


@dataclass(frozen=True, slots=True)
class Spelled:
    """One feature of the generated grammar (:func:`conformance.vectorgen.features`) written
    on the model's vault: a spelling of a reference, of a malformed candidate or of text that
    only looks like one.

    Attributes:
        name: The feature's name.
        group: The feature's group (``spelling``, ``case``, ``bad-id``, ...).
        token: The string's content as written between its JSON quotes, escapes and all, with
            the generated grammar's ids replaced by those of :data:`SPELLED_IDS`.
        outcome: ``ref``, ``malformed`` or ``literal`` (:data:`conformance.vectorgen.REF`).
        member: For a reference, the member that names the same value plainly.
        quoted: Fragments of the string no refusal may hold (decisions R2.1); a field's name
            is left out, as for every malformed member (:func:`quoted_texts`).
        requirements: The requirements the feature checks, named when a call of it fails.
        as_key: Whether the string stands as an object's key rather than a value
            (:data:`SPELLED_KEYED`, :data:`SPELLED_LITERAL_KEYS`).
        place: For a key, where its object stands (:data:`KEY_PLACES`).
    """

    name: str
    group: str
    token: str
    outcome: str
    member: Item | None
    quoted: frozenset[str]
    requirements: tuple[str, ...]
    as_key: bool = False
    place: int = 0


def _spelled() -> tuple[Spelled, ...]:
    """Every feature of the generated grammar on the model's vault, but those whose id is
    written with escapes: replacing the id's text would leave one no vault holds."""
    found: list[Spelled] = []
    for feature in vectorgen.features():
        token = feature.token
        for vector_id, world_id in SPELLED_IDS.items():
            token = token.replace(vector_id, world_id).replace(vector_id.upper(), world_id.upper())
        decoded = json.loads(f'"{token}"').casefold()
        if any(vector_id in decoded for vector_id in SPELLED_IDS):
            continue
        member = None
        if feature.ref is not None:
            named, field = feature.ref.split(".", 1)
            member = Item("ref", secret=VAULT_IDS.index(SPELLED_IDS[named]), field=field)
        quoted = frozenset(() if feature.group == "bad-field" else feature.canaries)
        requirements = feature.requirements or ("GRAM-001",)
        found.append(
            Spelled(
                feature.name, feature.group, token, feature.outcome, member, quoted, requirements
            )
        )
    return tuple(found)


def _round_robin(spelled: Sequence[Spelled]) -> tuple[Spelled, ...]:
    """``spelled`` taken one of each group in turn, so that any few in a row differ in group."""
    groups: dict[str, list[Spelled]] = {}
    for each in spelled:
        groups.setdefault(each.group, []).append(each)
    longest = max(map(len, groups.values()))
    return tuple(group[n] for n in range(longest) for group in groups.values() if n < len(group))


#: The generated grammar's features on the model's vault (:func:`_spelled`), by outcome: the
#: probe's call of every reference spelling, its call of every look-alike, and the malformed
#: candidates it walks, one group after another (:func:`_round_robin`).
SPELLED: Final = _spelled()
SPELLED_REFS: Final = tuple(each for each in SPELLED if each.outcome == vectorgen.REF)
SPELLED_LITERALS: Final = tuple(each for each in SPELLED if each.outcome == vectorgen.LITERAL)
SPELLED_MALFORMED: Final = _round_robin(
    [each for each in SPELLED if each.outcome == vectorgen.MALFORMED]
)

#: How many of :data:`SPELLED_MALFORMED` each example calls, each alone: a malformed candidate
#: refuses its whole call, so that it would hide any other.
MALFORMED_PER_EXAMPLE: Final = 6

#: Where a key stands (:func:`spelled_arguments`): in a member's object, in an object one level
#: further down, in an object inside an array, and as a member of the arguments themselves.
KEY_PLACES: Final = ("object", "nested object", "object in an array", "top level")


def _as_keys(
    spelled: Sequence[Spelled], places: int, first: tuple[str, ...]
) -> tuple[Spelled, ...]:
    """``spelled`` as keys, the places taken in turn (the first ``places`` of
    :data:`KEY_PLACES`), each naming the requirements ``first`` before its own."""
    return tuple(
        dataclasses.replace(
            each,
            as_key=True,
            place=number % places,
            requirements=tuple(dict.fromkeys((*first, *each.requirements))),
        )
        for number, each in enumerate(spelled)
    )


#: Every spelling of a marker, of a reference or of a malformed candidate, as a key: each
#: refuses its call as a malformed reference, a key is never resolved (decisions R1.6), whatever
#: the case, the escapes or the depth. One group after another, the places taken in turn.
SPELLED_KEYED: Final = _as_keys(
    _round_robin([each for each in SPELLED if each.outcome != vectorgen.LITERAL]),
    len(KEY_PLACES),
    ("GRAM-014",),
)

#: Every string that only looks like a reference, as a key: plain text, so a call of them all
#: is reference-free and reaches its tool byte for byte (GRAM-040, INV5). Each stands in an
#: object of its own below the top level, so that no two keys of one object, once unescaped,
#: can be equal (duplicate keys are a host's choice, decisions R1.8).
SPELLED_LITERAL_KEYS: Final = _as_keys(SPELLED_LITERALS, len(KEY_PLACES) - 1, ())

#: How many of :data:`SPELLED_KEYED` each example calls, each alone: a key holding a marker
#: refuses its whole call, so that it would hide any other.
KEYED_PER_EXAMPLE: Final = 3


def spelled_at(spelled: Sequence[Spelled], raw: str, other: str) -> list[Spelled]:
    """Return the strings of ``spelled`` whose members differ between two texts a handler
    received for :func:`spelled_arguments` of them: none where either is no JSON object with
    exactly those members, so that texts of another call name none."""
    try:
        mine, theirs = json.loads(raw), json.loads(other)
    except ValueError:
        return []
    keys = {f"k{number}" for number in range(len(spelled))}
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return []
    if mine.keys() != keys or theirs.keys() != keys:
        return []
    return [
        each
        for number, each in enumerate(spelled)
        if mine.get(f"k{number}") != theirs.get(f"k{number}")
    ]


def spelled_bearing(spelled: Sequence[Spelled]) -> bool:
    """Return whether the strings of ``spelled`` hold a candidate, valid or not."""
    return any(each.outcome != vectorgen.LITERAL for each in spelled)


def spelled_arguments(spelled: Sequence[Spelled]) -> str:
    """Return an argument text holding each string of ``spelled`` as written: a value in turn
    as a member's value, as a nested object's and as an array's second item; a key at its
    place (:data:`KEY_PLACES`), its value 0."""
    members = []
    for number, each in enumerate(spelled):
        quoted = f'"{each.token}"'
        if each.as_key and each.place == len(KEY_PLACES) - 1:
            members.append(f"{quoted}:0")
            continue
        if each.as_key:
            key = "{" + quoted + ":0}"
            value = (key, '{"inner":' + key + "}", '["x",' + key + "]")[each.place]
        else:
            value = (quoted, '{"inner":' + quoted + "}", '["x",' + quoted + "]")[number % 3]
        members.append(f'"k{number}":{value}')
    return "{" + ",".join(members) + "}"


#: Text that looks like a reference and is none: no candidate, so the call is reference-free.
_LOOKALIKES: Final = (
    "{secret:%s}",
    "{{ secret:%s}}",
    "{{secrets:%s}}",
    "%%7B%%7Bsecret:%s%%7D%%7D",
    "[secret:%s.password]",
    "{{secret%s}}",
)


#: How often each kind of member is drawn: references likeliest, and the members that refuse the
#: whole call (an unknown id, a malformed candidate) rare enough that most calls resolve.
_KINDS: Final = ("ref",) * 14 + ("lookalike",) * 2 + ("plain",) * 2 + ("unknown", "malformed")


def items() -> st.SearchStrategy[Item]:
    """Return one argument member, references likeliest."""
    return st.builds(
        Item,
        kind=st.sampled_from(_KINDS),
        secret=st.integers(0, 2),
        field=st.sampled_from(FIELDS),
        upper=st.sampled_from((False, False, True)),
        shape=st.integers(0, len(_LOOKALIKES) - 1),
    )


def _ref(fields: st.SearchStrategy[str], secret: st.SearchStrategy[int]) -> st.SearchStrategy[Item]:
    return st.builds(
        Item, kind=st.just("ref"), secret=secret, field=fields, upper=st.sampled_from((False, True))
    )


def _plain() -> st.SearchStrategy[Item]:
    return st.builds(Item, kind=st.just("plain"), shape=st.integers(0, 3))


def _two_fields() -> st.SearchStrategy[tuple[Item, ...]]:
    """Two fields of one secret, in either order, now and then beside a plain value."""
    return st.tuples(
        st.integers(0, 2),
        st.lists(st.sampled_from(FIELDS), min_size=2, max_size=2, unique=True),
        st.booleans(),
    ).map(
        lambda p: (
            *(Item("ref", secret=p[0], field=name) for name in p[1]),
            *((Item("plain", shape=1),) if p[2] else ()),
        )
    )


@dataclass(frozen=True, slots=True)
class Probe:
    """Where an example's walk of the open alphabets starts, and how its calls of many
    references and its attribution call are made, printed in its first step.

    Attributes:
        fields: The index in :data:`UNKNOWN_FIELDS` of the first of four fields.
        names: The index in :data:`TWIN_NAMES` of the first of three tool names.
        secret: Which of the first three secrets the probe's references name.
        bearing: Whether the calls to those tools carry a reference.
        count: How many references each call of many holds (:data:`MANY_COUNTS`).
        offset: The secret the calls of many name first (:func:`many`).
        unknown_at: Where the attribution call's first unknown id stands among its three
            known references (:func:`attribution`).
        ai_at: Where the AI provider key's reference stands among three known ones: second,
            third or last (:func:`ai_call`).
        ai_field: Which of its fields it names (:data:`AI_FIELDS`).
        earlier: Which field of the bare entry is asked before its empty notes
            (:data:`EARLIER_FIELDS`, :func:`empty_call`).
        full: Whether the example also makes the probe's calls that hold prompts open, run
            past the execution timeout or wait out the approval timeout (the first example
            does).
    """

    fields: int
    names: int
    secret: int
    bearing: bool
    count: int
    offset: int
    unknown_at: int
    ai_at: int = 0
    ai_field: int = 0
    earlier: int = 0
    full: bool = True


def probes() -> st.SearchStrategy[Probe]:
    """Return where an example's walk of the open alphabets starts, and its calls of many."""
    return st.builds(
        Probe,
        fields=st.integers(0, len(UNKNOWN_FIELDS) - 1),
        names=st.integers(0, len(TWIN_NAMES) - 1),
        secret=st.integers(0, 2),
        bearing=st.booleans(),
        count=st.sampled_from(MANY_COUNTS),
        offset=st.integers(0, len(ALL_IDS) - 1),
        unknown_at=st.integers(0, 2),
        ai_at=st.integers(0, 2),
        ai_field=st.integers(0, len(AI_FIELDS) - 1),
        earlier=st.integers(0, len(EARLIER_FIELDS) - 1),
        # The calls that hold prompts and wait out timeouts cost about two seconds: the first
        # example (the simplest draw) and one in six of the others make them.
        full=st.sampled_from((True, False, False, False, False, False)),
    )


def attribution(unknown_at: int, secret: int) -> tuple[Item, ...]:
    """Return three known references with both unknown ids among them: the first at
    ``unknown_at`` (first, second or third), the second after the next known reference, so
    that one stands between known references whatever ``unknown_at`` is, and the two are
    listed in the order opposite to the sorted one (:data:`UNKNOWN_IDS`). A host that looks
    up only some references, or names the ids sorted, is told from one that does neither on
    the first such call, not when the dice fall right."""
    known = [Item("ref", secret=(secret + n) % 3, field=("", "username")[n % 2]) for n in range(3)]
    members = [*known[:unknown_at], Item("unknown", 0), known[unknown_at], Item("unknown", 1)]
    return (*members, *known[unknown_at + 1 :])


#: The fields of the AI provider key the probe's call names, the first (the simplest draw) one
#: other than the password, so that a host that refuses only a key's password is met at once.
AI_FIELDS: Final = ("notes", "username", "password")

#: The field of the bare entry asked before its empty notes: a host that names the first field
#: asked names one of these, never the notes.
EARLIER_FIELDS: Final = ("password", "username", "")


def ai_call(at: int, field: int, secret: int) -> tuple[Item, ...]:
    """Return three known passwords with a reference to the AI provider key's field
    ``AI_FIELDS[field]`` after the first ``1 + at`` of them: never first, so that a refusal
    naming the call's first secret is told from one naming the key (MSG-011)."""
    members = [Item("ref", secret=(secret + n) % len(SECRET_IDS)) for n in range(3)]
    members.insert(1 + at, Item("ref", secret=AI, field=AI_FIELDS[field]))
    return tuple(members)


def unknown_call(secret: int) -> tuple[Item, ...]:
    """Return two known references and all six unknown ids (:data:`ALL_UNKNOWN_IDS`), every
    other one in upper case and the first used again last: the refusal names six ids, lower
    case, once each, in order of first use (MSG-007), past a list cut to three."""
    unknown = [Item("unknown", n, upper=n % 2 == 1) for n in range(len(ALL_UNKNOWN_IDS))]
    known = (Item("ref", secret), Item("ref", (secret + 1) % len(SECRET_IDS), "username"))
    return (known[0], *unknown[:2], known[1], *unknown[2:], Item("unknown", 0, "username"))


def tagged_call(secret: int) -> tuple[Item, ...]:
    """Return a known password, then the password of the key tagged ``billing`` and
    ``ai-provider``: refused as an AI provider's key, whatever tag stands beside the exact one
    (MSG-011)."""
    return (Item("ref", secret), Item("ref", secret=TAGGED))


def upper_call(secret: int) -> tuple[Item, ...]:
    """Return the password of the entry the vault lists in upper case, named in lower and in
    upper case, and its notes, beside a known password: one secret whatever the case, its
    script characters delivered and scrubbed in every form (GRAM-004, SCRUB-004)."""
    return (
        Item("ref", secret=UPPER),
        Item("ref", secret),
        Item("ref", secret=UPPER, field="password", upper=True),
        Item("ref", secret=UPPER, field="notes"),
    )


def blank_call(secret: int) -> tuple[Item, ...]:
    """Return a known password, then each field of the entry whose values are white space
    only: delivered as they are, never refused as empty fields (SUBST-005)."""
    return (
        Item("ref", secret),
        Item("ref", secret=BLANK),
        Item("ref", secret=BLANK, field="username"),
        Item("ref", secret=BLANK, field="notes"),
    )


def plain_call() -> tuple[Item, ...]:
    """Return every plain value, and no candidate: a reference-free call, whose argument text
    (compact, a character outside ASCII as written, an escaped quote and backslash) reaches
    the handler byte for byte (SUBST-003, INV5)."""
    return tuple(Item("plain", shape=shape) for shape in range(4))


def both_call() -> tuple[Item, ...]:
    """Return a reference to the AI provider key and an unknown id: both refusals apply, and a
    host may name either first (ORD-002 is a SHOULD)."""
    return (Item("ref", secret=AI), Item("unknown", 2))


def empty_call(earlier: int, secret: int) -> tuple[Item, ...]:
    """Return a known password, then the bare entry's field ``EARLIER_FIELDS[earlier]``, then
    its empty notes: the refusal names the notes, not the field asked first (MSG-008)."""
    return (
        Item("ref", secret),
        Item("ref", secret=BARE, field=EARLIER_FIELDS[earlier]),
        Item("ref", secret=BARE, field="notes"),
    )


def awkward_call(empty: Sequence[bool]) -> tuple[Item, ...]:
    """Return the password and the notes (where not ``empty``) of each of the first three
    secrets, whose values take awkward shapes (:meth:`Setup.shapes`), then one string naming
    the entry whose password spells the first secret's reference and, after it, that
    reference: each value is delivered as it is, in one rewrite (SUBST-005)."""
    members: list[Item] = []
    for index, bare in enumerate(empty):
        members.append(Item("ref", index))
        if not bare:
            members.append(Item("ref", index, "notes"))
    members.append(Item("pair", HOLD, shape=0))
    return tuple(members)


def many(count: int, offset: int, *, filler: bool) -> tuple[Item, ...]:
    """Return ``count`` references for a call of many: each of the sixteen secrets in turn
    from ``offset``, with the password (plainly named the first time round), then the
    username, then the notes (the password by name for the first three secrets, whose notes a
    configuration may leave empty), then the password by name, so that a call of more than
    sixteen references names more than sixteen different values and the first and the
    seventeenth always differ, and one of 256 names 45, past a table of 32;
    ``filler`` adds :data:`FILLER_CHARS` plain characters after the references."""
    fields = ("", "username", "notes", "password")
    count_of_ids = len(ALL_IDS)
    members = []
    for number in range(count):
        secret = (offset + number) % count_of_ids
        field = fields[(number // count_of_ids) % len(fields)]
        if field == "notes" and secret < len(SECRET_IDS):
            field = "password"
        members.append(Item("ref", secret=secret, field=field))
    if filler:
        members.append(Item("filler"))
    return tuple(members)


def several() -> st.SearchStrategy[tuple[Item, ...]]:
    """Return two to four references, of any secrets, each a password or a username: fields
    every drawn secret holds, so that the call gets as far as its prompt."""
    fields = st.sampled_from(("", "password", "username"))
    return st.lists(_ref(fields, st.integers(0, 2)), min_size=2, max_size=4).map(tuple)


def _attribution() -> st.SearchStrategy[tuple[Item, ...]]:
    """Two to four known references (:func:`several`) with one or two unknown ids among them,
    each at any place:
    first, in the middle or last; two unknown ids in either order, or one twice; now and then
    an unknown id in upper case, which the refusal names in lower case."""

    def placed(drawn: tuple[tuple[Item, ...], list[tuple[int, int, bool]]]) -> tuple[Item, ...]:
        known, unknown = drawn
        placed_members = list(known)
        for position, which, upper in unknown:
            member = Item("unknown", secret=which, upper=upper)
            placed_members.insert(min(position, len(placed_members)), member)
        return tuple(placed_members)

    unknown = st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 1), st.sampled_from((False, False, True))),
        min_size=1,
        max_size=2,
    )
    return st.tuples(several(), unknown).map(placed)


def narrow() -> st.SearchStrategy[tuple[Item, ...]]:
    """Return the members of a call a shortcut could wave through: usernames only (one to
    three), or one reference, or two fields of one secret."""
    return st.one_of(
        st.lists(_ref(st.just("username"), st.integers(0, 2)), min_size=1, max_size=3).map(tuple),
        st.tuples(_ref(st.sampled_from(FIELDS), st.integers(0, 2))),
        _two_fields(),
    )


def members() -> st.SearchStrategy[tuple[Item, ...]]:
    """Return one call's members, in one of the roles a reference can take.

    The roles are drawn about equally often: a mix of every kind, the only reference of a
    call, one of several, two fields of one secret, usernames only, and unknown ids among known
    references. A fault that shows only with two or more references, only when every reference
    is a username, or only when an unknown id sits between known ones or follows another, is
    then met within a few calls, not left to the odds of a mixed draw. Calls of many
    references, fields and tool names from open alphabets, and an attribution call that tells
    first use from sorted order are made at the start of each example (:class:`Probe`).
    """
    any_field = st.sampled_from(FIELDS)
    any_secret = st.integers(0, 2)
    return st.one_of(
        # A mix of every kind.
        st.lists(items(), min_size=1, max_size=4).map(tuple),
        # The only reference of a call, beside plain values or none.
        st.tuples(_ref(any_field, any_secret), st.lists(_plain(), max_size=2)).map(
            lambda p: (p[0], *p[1])
        ),
        # One of several: two to five references, any secrets and fields.
        st.lists(_ref(any_field, any_secret), min_size=2, max_size=5).map(tuple),
        # Two fields of one secret in one call.
        _two_fields(),
        # Usernames only: the call a trusted, YOLO or low-risk shortcut could wave through.
        st.lists(_ref(st.just("username"), any_secret), min_size=1, max_size=3).map(tuple),
        # Attribution: unknown ids first, between known references or last (all or nothing,
        # and the refusal naming each unknown id once, in order of first use).
        _attribution(),
    )


def _reference(secret_id: str, field: str) -> str:
    return "{{secret:" + secret_id + (f".{field}" if field else "") + "}}"


#: How many levels down a deep member's string stands, the argument object counted: past 64,
#: the least depth a host may stop reading at without a note (decisions R1.9).
DEEP_LEVELS: Final = 100

#: The malformed candidate a deep member holds: refused wherever a host reads it, and a call a
#: host does not read to the bottom must be refused too (fail closed, R1.9).
_DEEP_TEXT: Final = "a {{secret:not-a-uuid}} b"


def _deep() -> Any:
    nested: Any = _DEEP_TEXT
    for level in range(DEEP_LEVELS - 1):
        nested = [nested] if level % 2 == 0 else {"k": nested}
    return nested


def item_text(item: Item) -> Any:
    """Return the JSON value one member holds."""
    if item.kind == "ref":
        sid = VAULT_IDS[item.secret]
        return _reference(sid.upper() if item.upper else sid, item.field)
    if item.kind == "pair":
        first, second = VAULT_IDS[item.secret], VAULT_IDS[item.shape]
        return "<" + _reference(first, "") + "|" + _reference(second, "") + ">"
    if item.kind == "deep":
        return _deep()
    if item.kind == "unknown":
        unknown = ALL_UNKNOWN_IDS[item.secret % len(ALL_UNKNOWN_IDS)]
        return "key=" + _reference(unknown.upper() if item.upper else unknown, item.field)
    if item.kind == "lookalike":
        return _LOOKALIKES[item.shape] % SECRET_IDS[item.secret]
    if item.kind == "malformed":
        if item.field not in FIELDS:
            return _reference(SECRET_IDS[item.secret], item.field)
        return ("{{secret:not-a-uuid}}", "{{secret:" + SECRET_IDS[0] + ".totp}}")[item.shape % 2]
    if item.kind == "filler":
        return "z" * FILLER_CHARS
    return ("plain", 1.50, ["a", {"b": None}], 'héllo \\ "quoted"')[item.shape % 4]


def arguments(members: Sequence[Item]) -> str:
    """Return a call's argument text: one member per item, references in their own strings, and
    every second reference nested one level down."""
    data: dict[str, Any] = {}
    for number, item in enumerate(members):
        value = item_text(item)
        data[f"k{number}"] = {"inner": value} if number % 2 else value
    return args_json(data)


def carries_reference(members: Sequence[Item]) -> bool:
    """Return whether the arguments hold a candidate, valid or not."""
    return any(item.kind in ("ref", "unknown", "malformed", "pair", "deep") for item in members)


def _named(members: Sequence[Item]) -> Iterator[tuple[int, str]]:
    """The secrets (indexes in :data:`VAULT_IDS`) and fields the valid references name."""
    for item in members:
        if item.kind == "ref":
            yield item.secret, item.field or "password"
        elif item.kind == "pair":
            yield item.secret, "password"
            yield item.shape, "password"


def resolution(members: Sequence[Item], setup: Setup) -> frozenset[str]:
    """Return the refusals of resolution (decisions R2.3) that apply to a call of ``members``
    under ``setup``: ``"vault"`` (a failing vault), ``"ai"`` (a reference to either AI
    provider's key, in any field), ``"unknown"`` (an id no vault holds), ``"empty"`` (an empty
    field). A host may name any of them first (the order is a SHOULD, ORD-002), and none
    other."""
    named = list(_named(members))
    unknown = any(item.kind == "unknown" for item in members)
    found: set[str] = set()
    if setup.vault.startswith("failing:") and (named or unknown):
        found.add("vault")
    if any(index in (AI, TAGGED) for index, _ in named):
        found.add("ai")
    if unknown:
        found.add("unknown")
    if any(setup.empty(index, name) for index, name in named):
        found.add("empty")
    return frozenset(found)


def empty_fields(members: Sequence[Item], setup: Setup) -> frozenset[tuple[str, str]]:
    """Return the ``(id, field)`` of every empty field the references of ``members`` name: the
    empty-field refusal may name any of them (the rulings name none first)."""
    return frozenset(
        (VAULT_IDS[index], name) for index, name in _named(members) if setup.empty(index, name)
    )


def quoted_texts(members: Sequence[Item]) -> frozenset[str]:
    """Return the text of the malformed candidates of ``members`` that no refusal may hold
    (decisions R2.1): the id each names, or its whole body where it names none. A field's name
    is left out: a short one (``user``) stands in the ruled reasons' own words."""
    opening, closing = "{{secret:", "}}"
    return frozenset(
        str(item_text(item))[len(opening) : -len(closing)].split(".", 1)[0]
        for item in members
        if item.kind == "malformed"
    )


def is_deep(members: Sequence[Item]) -> bool:
    """Return whether a member stands deeper than a host must read (decisions R1.9)."""
    return any(item.kind == "deep" for item in members)
