"""What the model-based check draws: configurations, arguments and operator plans.

This module owns the alphabet of the model check (:mod:`conformance.model.machine`): the
secret ids of its vault (fixed, so that a reproducer names them), the tools it registers, the
Hypothesis strategies for a configuration, for the items of a call's arguments (references in
every field and case, unknown ids, look-alikes that are no reference, plain values), and the
text of those arguments. A drawn step holds ids, field names and labels only: the canaries are
minted when a configuration is applied and never reach a step's printed form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st

from conformance.alphabets import (
    KNOWN_VAULT_FAILURES,
    near_names,
    unknown_fields,
    vault_failure_kinds,
)
from conformance.canary import Kind, Mint
from conformance.host import HandlerKind, HostConfig, SecretSpec, ToolSpec
from conformance.scenario import ECHO, PROVIDER, RECORDER, THROWER, args_json, make_secret, tool

#: The vault's ids: fixed, so that a printed reproducer runs again as it reads.
SECRET_IDS: Final = tuple(f"5ec4e7a{n}-0000-4000-8000-00000000000{n}" for n in range(3))

#: Thirteen more entries every configuration holds, plain and with notes, which only calls of
#: many references name: with the first three, sixteen secrets, so that such a call names more
#: than sixteen different values (a password and a username of each).
WIDE_IDS: Final = tuple(f"5ec4e7b{n:x}-0000-4000-8000-0000000000{n:02x}" for n in range(13))
ALL_IDS: Final = SECRET_IDS + WIDE_IDS

#: Ids no vault the check configures holds. Two, and the second sorts before the first, so that
#: a call naming both in the drawn order tells the order of first use from a sorted one.
UNKNOWN_IDS: Final = (
    "fade0000-0000-4000-8000-00000000beef",
    "0badc0de-0000-4000-8000-00000000dead",
)

#: The echoing tool's name, the recorder's, and that of the tool that fails quoting its
#: arguments.
ECHO_NAME: Final = ECHO.name
RECORDER_NAME: Final = RECORDER.name
THROWER_NAME: Final = THROWER.name

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

#: The tools a call names, the plain recorder likeliest, now and then one never registered.
CALLED: Final = (RECORDER.name,) * 5 + (ECHO.name, ECHO.name, THROWER.name, AUX.name, AUX.name)
CALLED_RARELY: Final = (GATED.name, UNREGISTERED)

#: The kinds of vault failure a configuration draws: the protocol's examples, then an open
#: alphabet of others (:func:`conformance.alphabets.vault_failure_kinds`), so that a host that
#: knows a few kinds and mishandles the rest meets one it does not know.
FAILURE_KINDS: Final = KNOWN_VAULT_FAILURES + vault_failure_kinds(29)

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

    def failure_text(self, mint: Mint) -> str | None:
        """Return a failing vault's own message, a fresh canary, or ``None``."""
        if not (self.failure_message and self.vault.startswith("failing:")):
            return None
        return "connection reset by peer: " + mint.canary(Kind.PLAIN, "vault-failure").value

    def config(self, mint: Mint, failure_text: str | None = None) -> HostConfig:
        """Return the configuration, its secrets fresh canaries from ``mint`` and a failing
        vault's own message ``failure_text``."""
        secrets: list[SecretSpec] = [
            make_secret(
                mint, secret_id=sid, notes=not empty, kind=Kind.SPACED if spaced else Kind.PLAIN
            )
            for sid, (empty, spaced) in zip(SECRET_IDS, self.secrets, strict=False)
        ]
        secrets.extend(make_secret(mint, secret_id=sid) for sid in WIDE_IDS)
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
        pending_limit=st.integers(1, 3),
        # A store that cannot save makes every saved rule of the example, the fence's saved
        # DENY among them, fail: one configuration in four.
        store_failing=(
            st.sampled_from((False, False, False, True)) if store_failing else st.just(False)
        ),
        failure_message=st.just(failure_message),
    )


# --- a call's arguments ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One argument member: a reference, an unknown id, a look-alike, or a plain value.

    Attributes:
        kind: ``"ref"``, ``"unknown"``, ``"lookalike"``, ``"malformed"``, ``"plain"`` or
            ``"filler"`` (:data:`FILLER_CHARS` characters).
        secret: The index of the vault id a reference names.
        field: The field it names (``""`` for none); for a malformed member, a field the
            contract does not have (:data:`UNKNOWN_FIELDS`), or ``""`` for the fixed shapes.
        upper: Whether the id is written in upper case.
        shape: Which look-alike, or where a plain value sits.
    """

    kind: str
    secret: int = 0
    field: str = ""
    upper: bool = False
    shape: int = 0


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
    """

    fields: int
    names: int
    secret: int
    bearing: bool
    count: int
    offset: int
    unknown_at: int


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


def many(count: int, offset: int, *, filler: bool) -> tuple[Item, ...]:
    """Return ``count`` references for a call of many: each of the sixteen secrets in turn
    from ``offset``, with the password (plainly named the first time round), then the
    username, then the password by name, so that a call of more than sixteen references names
    more than sixteen different values and the first and the seventeenth always differ;
    ``filler`` adds :data:`FILLER_CHARS` plain characters after the references."""
    fields = ("", "username", "password")
    wide = len(ALL_IDS)
    members = [
        Item("ref", secret=(offset + number) % wide, field=fields[(number // wide) % 3])
        for number in range(count)
    ]
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


def item_text(item: Item) -> Any:
    """Return the JSON value one member holds."""
    if item.kind == "ref":
        sid = ALL_IDS[item.secret]
        return _reference(sid.upper() if item.upper else sid, item.field)
    if item.kind == "unknown":
        unknown = UNKNOWN_IDS[item.secret % 2]
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
    return any(item.kind in ("ref", "unknown", "malformed") for item in members)
