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

from conformance.alphabets import near_names
from conformance.canary import Kind, Mint
from conformance.host import HostConfig, SecretSpec, ToolSpec
from conformance.scenario import ECHO, PROVIDER, RECORDER, THROWER, args_json, make_secret, tool

#: The vault's ids: fixed, so that a printed reproducer runs again as it reads.
SECRET_IDS: Final = tuple(f"5ec4e7a{n}-0000-4000-8000-00000000000{n}" for n in range(3))

#: Ids no vault the check configures holds. Two, and the second sorts before the first, so that
#: a call naming both in the drawn order tells the order of first use from a sorted one.
UNKNOWN_IDS: Final = (
    "fade0000-0000-4000-8000-00000000beef",
    "0badc0de-0000-4000-8000-00000000dead",
)

#: The echoing tool's name.
ECHO_NAME: Final = ECHO.name

#: A second provider, so that a provider rule covers some tools and not others.
OTHER_PROVIDER: Final = "plugin.other"

#: The permission the gated tool needs (RBAC, decisions R2.3).
GATE_PERMISSION: Final = "tool.gated"

AUX: Final = tool("aux", RECORDER.handler, provider=OTHER_PROVIDER)
GATED: Final = tool("gated", RECORDER.handler, permission=GATE_PERMISSION)

#: The tools every configuration registers, and the name of one it never does: the recorder's
#: name in capitals, the first near name a lookup that folds case confuses with a registered
#: tool (ORD-006), so that a call to it tells an exact lookup from a loose one.
TOOLS: Final[tuple[ToolSpec, ...]] = (RECORDER, ECHO, THROWER, AUX, GATED)
TOOL_NAMES: Final = tuple(spec.name for spec in TOOLS)
UNREGISTERED: Final = near_names(RECORDER.name, 1)[0]

#: The tools a call names, the plain recorder likeliest, now and then one never registered.
CALLED: Final = (RECORDER.name,) * 5 + (ECHO.name, ECHO.name, THROWER.name, AUX.name, AUX.name)
CALLED_RARELY: Final = (GATED.name, UNREGISTERED)

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
    """

    secrets: tuple[tuple[bool, bool], ...]
    vault: str
    policy: tuple[tuple[str, Any], ...] | None
    admin: bool
    permissions: tuple[str, ...]
    short_timeout: bool
    pending_limit: int
    store_failing: bool

    def config(self, mint: Mint) -> HostConfig:
        """Return the configuration, its secrets fresh canaries from ``mint``."""
        secrets: list[SecretSpec] = [
            make_secret(
                mint, secret_id=sid, notes=not empty, kind=Kind.SPACED if spaced else Kind.PLAIN
            )
            for sid, (empty, spaced) in zip(SECRET_IDS, self.secrets, strict=False)
        ]
        return HostConfig(
            secrets=tuple(secrets),
            vault=self.vault,
            policy=_policy_object(self.policy),
            admin=self.admin,
            permissions=self.permissions,
            tools=TOOLS,
            approval_timeout_s=SHORT_TIMEOUT_S if self.short_timeout else LONG_TIMEOUT_S,
            pending_limit=self.pending_limit,
            policy_store="failing" if self.store_failing else "working",
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


def setups(*, absent: bool, failing: bool, store_failing: bool) -> st.SearchStrategy[Setup]:
    """Return configurations using only what the host announced.

    Args:
        absent: The host can be built without a vault (``vault.absent``).
        failing: Its vault can be made to fail (``vault.failing``).
        store_failing: Its policy store can be made to fail (``policy.store-failing``).
    """
    vaults = (
        ["present"] * 10 + (["absent"] if absent else []) + (["failing:offline"] if failing else [])
    )
    return st.builds(
        Setup,
        secrets=st.lists(
            st.tuples(st.sampled_from((False, False, True)), st.booleans()), min_size=3, max_size=3
        ).map(tuple),
        vault=st.sampled_from(vaults),
        # Most runs keep the default policy, so that most calls get as far as their prompt.
        policy=st.one_of(
            st.none(), st.none(), st.none(), st.lists(_policy_items(), max_size=3).map(tuple)
        ),
        admin=st.sampled_from((False, False, True)),
        permissions=st.sampled_from(
            (
                ("secret.read",),
                ("secret.read",),
                ("secret.read", GATE_PERMISSION),
                ("secret.read",),
                (),
            )
        ),
        short_timeout=st.sampled_from((False, False, True)),
        pending_limit=st.integers(1, 3),
        store_failing=st.booleans() if store_failing else st.just(False),
    )


# --- a call's arguments ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One argument member: a reference, an unknown id, a look-alike, or a plain value.

    Attributes:
        kind: ``"ref"``, ``"unknown"``, ``"lookalike"``, ``"malformed"`` or ``"plain"``.
        secret: The index of the vault id a reference names.
        field: The field it names (``""`` for none).
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
    then met within a few calls, not left to the odds of a mixed draw.
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
        sid = SECRET_IDS[item.secret]
        return _reference(sid.upper() if item.upper else sid, item.field)
    if item.kind == "unknown":
        unknown = UNKNOWN_IDS[item.secret % 2]
        return "key=" + _reference(unknown.upper() if item.upper else unknown, item.field)
    if item.kind == "lookalike":
        return _LOOKALIKES[item.shape] % SECRET_IDS[item.secret]
    if item.kind == "malformed":
        return ("{{secret:not-a-uuid}}", "{{secret:" + SECRET_IDS[0] + ".totp}}")[item.shape % 2]
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
