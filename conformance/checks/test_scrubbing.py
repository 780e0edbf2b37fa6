"""Checks of result scrubbing (decisions R5) and of the cap (R6.1), with scrub vectors.

Each scrub vector's designed value is stored in the vault and a static handler returns the
vector's template filled with forms a to d; the agent must read every form replaced by the
reference's placeholder, unless the value is under 8 code points, when nothing may be scrubbed.
Vectors sharing a ``group-`` flag are resolved in one call. The cap is checked with the
over-cap handler, and the hardening forms of R5.6 are looked for and reported, never failed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

import pytest

from conformance import vectors
from conformance.canary import (
    FORM_REQUIREMENTS,
    Kind,
    Mint,
    hardening_forms,
    json_escape,
    required_forms,
)
from conformance.host import HandlerKind, SecretSpec
from conformance.outcomes import accept, fail, hardening, not_applicable, require, unchecked
from conformance.scenario import (
    ECHO,
    THROWER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    new_id,
    placeholder,
    ref,
    tool,
    value_of,
)
from conformance.vectors import ScrubVector

#: The host's cap in characters, counting any note about the cut (decisions R6.1).
RESULT_CAP = 150_000

#: Room a host's note about the cut may take. Both over-cap texts the checks use are far longer
#: than the cap, so a cut that leaves fewer than ``RESULT_CAP - CAP_NOTE_ROOM`` characters threw
#: text away that the cap did not ask for (an unbounded note would hide the result too).
CAP_NOTE_ROOM = 1_000


def _groups() -> list[Any]:
    grouped: dict[str, list[ScrubVector]] = defaultdict(list)
    for vector in vectors.load_scrub():
        group = next((flag for flag in vector.flags if flag.startswith("group-")), vector.id)
        grouped[group].append(vector)
    params = []
    for name, members in grouped.items():
        ids = [member.id for member in members]
        requirements = list(dict.fromkeys(rid for m in members for rid in m.requirements))
        params.append(
            pytest.param(
                tuple(members),
                id=name if name.startswith("group-") else ids[0],
                marks=[pytest.mark.req(*requirements), pytest.mark.vector(*ids)],
            )
        )
    return params


def _secret_for(vector: ScrubVector, mint: Mint) -> SecretSpec:
    base = make_secret(mint)
    fields = {"password": base.password, "username": base.username, "notes": base.notes}
    fields[vector.field] = vector.value
    return SecretSpec(
        base.id, base.website, fields["username"], fields["password"], fields["notes"]
    )


@pytest.mark.req("SCRUB-010")
@pytest.mark.parametrize("members", _groups())
def test_scrub_vector(host: RecordingHost, mint: Mint, members: tuple[ScrubVector, ...]) -> None:
    """Every form of a vector's value in a result is replaced by its placeholder."""
    secrets = [_secret_for(vector, mint) for vector in members]
    text = "\n".join(vector.result_text() for vector in members)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config(secrets, tools=(static,)))
    args = args_json(
        {f"v{i}": ref(s.id, v.field) for i, (s, v) in enumerate(zip(secrets, members, strict=True))}
    )
    outcome = host.invoke(static.name, args)
    require(not outcome.is_error, "SCRUB-010", f"the call ended {outcome.disposition}")
    result = outcome.text
    for secret, vector in zip(secrets, members, strict=True):
        mine = placeholder(secret.id, vector.field)
        if "either-utf16" in vector.flags:
            # Either is legal, but one of them must be seen: the value, or its placeholder.
            require(
                vector.value in result or mine in result,
                "SCRUB-007",
                f"{vector.id}: neither the value nor its placeholder came back",
            )
            accept("SCRUB-002", "kept" if vector.value in result else "scrubbed")
            continue
        if not vector.scrubbed:
            require(
                vector.value in result,
                "SCRUB-001",
                f"{vector.id}: a value under 8 code points was scrubbed",
            )
            continue
        # A form spelled as an earlier one is the same text: the earlier form names it.
        distinct = {form: name for name, form in reversed(list(vector.forms.items()))}
        survived = sorted(name for form, name in distinct.items() if form in result)
        if survived:
            # Name the rule of each form that survived, not every form the vector lists
            # (decisions S1.4): a host that misses only the JSON escape fails SCRUB-004 alone.
            # When every form survived, the value was not covered at all (SCRUB-001).
            named = [FORM_REQUIREMENTS.get(name, "SCRUB-009") for name in survived]
            if len(survived) == len(distinct):
                named.insert(0, "SCRUB-001")
            fail(
                tuple(dict.fromkeys(named)),
                f"{vector.id}: form {', '.join(survived)} survived scrubbing",
            )
        if "shared" in vector.flags:
            # Either reference that holds the value may name it (decisions R5.3): the first in
            # order of use, as the reference host does, or the other.
            first = placeholder(secrets[0].id, members[0].field)
            sharing = [
                placeholder(other.id, m.field)
                for other, m in zip(secrets, members, strict=True)
                if "shared" in m.flags and m.value == vector.value
            ]
            require(
                any(name in result for name in sharing),
                "SCRUB-007",
                f"{vector.id}: no placeholder of either reference replaced the shared value",
            )
            accept("SCRUB-008", "first" if first in result else "other")
            continue
        require(
            mine in result
            or any(
                placeholder(other.id, m.field) in result
                for other, m in zip(secrets, members, strict=True)
            ),
            "SCRUB-007",
            f"{vector.id}: no [secret:<id>.<field>] placeholder replaced the value",
        )


#: Canary kinds whose values hold characters that only some forms change; ``CLASSES`` draws a
#: new mix per run, so it is tried three times.
_CLASS_KINDS = (Kind.SPECIAL, Kind.CLASSES, Kind.CLASSES, Kind.CLASSES)


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006", "SCRUB-007", "SCRUB-010")
@pytest.mark.parametrize(
    "kind",
    _CLASS_KINDS,
    ids=[f"{kind.value}-{n}" for n, kind in enumerate(_CLASS_KINDS)],
)
def test_every_form_of_a_class_canary_is_scrubbed(
    host: RecordingHost, mint: Mint, kind: Kind
) -> None:
    """A value holding a space, *, ~, +, %, a quote, a backslash, /, controls, non-ASCII and
    astral characters has four different forms; each is replaced, in the password and the
    notes alike."""
    secret = make_secret(mint, kind=kind)
    lines = []
    for field in ("password", "notes"):
        for name, form in required_forms(value_of(secret, field)).items():
            lines.append(f"{field} {name}: {form} .")
    static = tool("static", HandlerKind.STATIC, text="\n".join(lines))
    host.reset(config([secret], tools=(static,)))
    args = args_json({"p": ref(secret.id), "n": ref(secret.id, "notes")})
    outcome = host.invoke(static.name, args)
    require(not outcome.is_error, "SCRUB-010", f"the call ended {outcome.disposition}")
    require(
        placeholder(secret.id) in outcome.text and placeholder(secret.id, "notes") in outcome.text,
        "SCRUB-007",
        "the scrubbed forms did not come back as placeholders",
    )
    survived = [
        (field, name)
        for field in ("password", "notes")
        for name, form in required_forms(value_of(secret, field)).items()
        if form in outcome.text
    ]
    if survived:
        # Each surviving form names its own rule (decisions S1.4).
        fail(
            tuple(dict.fromkeys(FORM_REQUIREMENTS[name] for _, name in survived)),
            "forms survived scrubbing: "
            + ", ".join(f"{name} of a {kind.value} {field}" for field, name in survived),
        )


#: What the failure-forms check judges: failure text scrubbed, in each form.
_FAILURE_FORMS_RULES: Final = ("SCRUB-010", "SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006")


@pytest.mark.req(*_FAILURE_FORMS_RULES)
@pytest.mark.parametrize("failure", ["raised", "returned"])
def test_every_form_in_a_failure_is_scrubbed(host: RecordingHost, mint: Mint, failure: str) -> None:
    """A failure that holds every form of a value, raised by the handler or returned as an
    error result (as MCP tools report failure), reaches the agent with no form left: failure
    text is scrubbed as results are, not of the value itself alone."""
    secret = make_secret(mint, kind=Kind.SPECIAL)
    forms = required_forms(secret.password)
    args = args_json({"v": ref(secret.id)})
    if failure == "raised":
        failing = tool("thrower-forms", HandlerKind.THROWER, forms=True)
        # The option is an adapter's to honour: with scrubbing off, a thrower that takes it
        # shows every form, and one that ignores it shows the value only.
        host.reset(config([secret], tools=(failing,), policy={"resultScrubbingEnabled": False}))
        probe = host.invoke(failing.name, args)
        if not probe.is_error or not all(form in probe.text for form in forms.values()):
            unchecked(
                _FAILURE_FORMS_RULES,
                "the host's thrower does not take the forms option, or its failure text does "
                "not quote the handler's message",
            )
            return
    else:
        failing = tool(
            "static-error", HandlerKind.STATIC, text="\n".join(forms.values()), isError=True
        )
    host.reset(config([secret], tools=(failing,)))
    outcome = host.invoke(failing.name, args)
    if not outcome.is_error:
        # Only the returned failure can come back as a success: a plugin API with no way to
        # return a failure cannot have this case (docs/driver-protocol.md, static).
        not_applicable("the host's tools cannot return a failure (static ignored isError)")
    survived = [name for name, form in forms.items() if form in outcome.text]
    if survived:
        fail(
            ("SCRUB-010", *dict.fromkeys(FORM_REQUIREMENTS[name] for name in survived)),
            f"a {failure} failure left forms {', '.join(survived)} of the value readable",
        )


@pytest.mark.req("SCRUB-009", "SCRUB-007")
def test_overlap_then_repeat(host: RecordingHost, mint: Mint) -> None:
    """After two values overlap, a later occurrence of the one passed over is still scrubbed."""
    x, y, z = (mint.canary(Kind.PLAIN, "piece").value[:10] for _ in range(3))
    first = SecretSpec(new_id(), "first.example", "user-first-x", x + y)
    second = SecretSpec(new_id(), "second.example", "user-second-x", y + z)
    static = tool("static", HandlerKind.STATIC, text=x + y + z + " then " + y + z)
    host.reset(config([first, second], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"a": ref(first.id), "b": ref(second.id)}))
    require(not outcome.is_error, "SCRUB-009", f"the call ended {outcome.disposition}")
    require(
        any(placeholder(secret.id) in outcome.text for secret in (first, second)),
        "SCRUB-007",
        "no placeholder came back where the overlapping values stood",
    )
    for number, secret in enumerate((first, second), start=1):
        for name, form in required_forms(secret.password).items():
            if form in outcome.text:
                fail("SCRUB-009", f"form {name} of overlapping value {number} survived scrubbing")


@pytest.mark.req("SCRUB-007")
def test_placeholder_names_lower_case_id(host: RecordingHost, mint: Mint) -> None:
    """The placeholder is [secret:<lower-case id>.<field>], whatever case the agent wrote."""
    secret = make_secret(mint)
    host.reset(config([secret], tools=(ECHO,)))
    outcome = host.invoke(ECHO.name, args_json({"v": ref(secret.id.upper(), "notes")}))
    require(
        f"[secret:{secret.id.lower()}.notes]" in outcome.text,
        "SCRUB-007",
        "the placeholder does not name the lower-case id and the field",
    )


@pytest.mark.req("SCRUB-001")
@pytest.mark.parametrize("length", [7, 8])
def test_length_floor(host: RecordingHost, mint: Mint, length: int) -> None:
    """A value of 8 code points is scrubbed in every form; one of 7 is left in every form."""
    core = mint.canary(Kind.PLAIN, "short").value
    value = core[: length - 2] + " /"
    secret = SecretSpec(new_id(), "short.example", "user-name-x", value)
    template = "\n".join(f"{name}={form}" for name, form in required_forms(value).items())
    static = tool("static", HandlerKind.STATIC, text=template)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
    kept = [name for name, form in required_forms(value).items() if form in outcome.text]
    if length >= 8:
        require(not kept, "SCRUB-001", f"forms {kept} of an 8-code-point value were not scrubbed")
    else:
        require(
            len(kept) == len(required_forms(value)),
            "SCRUB-001",
            "a value under 8 code points was scrubbed in some form",
        )


@pytest.mark.req("SCRUB-012", "SCRUB-014", "SCRUB-013")
def test_scrubbing_off(host: RecordingHost, mint: Mint) -> None:
    """Scrubbing off: the result holds the value; every other surface still holds none."""
    secret = make_secret(mint, kind=Kind.SPECIAL)
    host.reset(config([secret], policy={"resultScrubbingEnabled": False}))
    args = args_json({"v": ref(secret.id)})
    echoed = host.invoke(ECHO.name, args)
    require(
        secret.password in echoed.text,
        "SCRUB-012",
        "with resultScrubbingEnabled false the result was still scrubbed",
    )
    thrown = host.invoke(THROWER.name, args)
    require(thrown.is_error, "SCRUB-012", "the thrower did not fail")
    records = ledger_records(host.observe())
    snippet = str(records[-1].get("errorSnippet") or "")
    holds = any(form in snippet for form in required_forms(secret.password).values())
    accept("SCRUB-013", "holds-value" if holds else "clean")


@pytest.mark.req("SCRUB-015")
@pytest.mark.parametrize("kind", [Kind.SPECIAL, Kind.UNICODE], ids=["special", "unicode"])
def test_hardening_forms(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """Forms beyond the design are looked for and reported in the hardening table only."""
    secret = make_secret(mint, kind=kind)
    forms = hardening_forms(secret.password)
    text = "\n".join(f"{name}: {form}" for name, form in forms.items())
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
    if outcome.is_error or not all(f"{name}: " in outcome.text for name in forms):
        # The handler's own lines did not come back, so a missing form says nothing.
        unchecked("SCRUB-015", "the static handler's text did not come back")
        return
    for name, form in forms.items():
        hardening(name, "result", form not in outcome.text)


#: How far before the cap the over-cap handler centres the value. A host's note about the cut
#: counts toward the cap, so the real cut sits that note's length earlier; these offsets put the
#: value across the cut for notes of up to about 90 characters.
_CUT_OFFSETS = (0, 20, 35, 40, 45, 50, 55, 60, 70, 80)


def _longest_fragment(value: str, text: str) -> int:
    """Return the length of the longest piece of ``value`` that ``text`` contains."""
    best = 0
    for start in range(len(value)):
        low, high = best, len(value) - start
        while low < high:
            middle = (low + high + 1) // 2
            if value[start : start + middle] in text:
                low = middle
            else:
                high = middle - 1
        best = max(best, low)
    return best


@pytest.mark.req("CAP-001", "CAP-002", "SCRUB-011")
@pytest.mark.parametrize("kind", [Kind.PLAIN, Kind.SPECIAL], ids=["plain", "special"])
@pytest.mark.parametrize("offset", _CUT_OFFSETS, ids=[f"cut-{offset}" for offset in _CUT_OFFSETS])
def test_cap_never_leaves_a_fragment(
    host: RecordingHost, mint: Mint, kind: Kind, offset: int
) -> None:
    """A result straddling the cut is at most 150,000 characters with no 8-character piece."""
    secret = make_secret(mint, kind=kind)
    overcap = tool("overcap", HandlerKind.OVERCAP, cut=RESULT_CAP - offset)
    host.reset(config([secret], tools=(overcap,)))
    outcome = host.invoke(overcap.name, args_json({"v": ref(secret.id)}))
    require(
        len(outcome.text) <= RESULT_CAP,
        "CAP-001",
        f"the result is {len(outcome.text)} characters, over the cap",
    )
    require(
        len(outcome.text) >= RESULT_CAP - CAP_NOTE_ROOM,
        "CAP-001",
        f"the result was cut to {len(outcome.text)} characters, far under the cap",
    )
    longest = max(
        _longest_fragment(
            form, outcome.text[-2_000:] if len(outcome.text) > 2_000 else outcome.text
        )
        for form in required_forms(value_of(secret, "password")).values()
    )
    require(
        longest < 8,
        ("SCRUB-011", "CAP-002"),
        f"the cut left {longest} characters of the value readable",
    )


@pytest.mark.req("CAP-001")
def test_reference_free_result_capped(host: RecordingHost) -> None:
    """A reference-free result over the cap is cut to at most 150,000 characters."""
    static = tool("static", HandlerKind.STATIC, text="z" * (RESULT_CAP + 5_000))
    host.reset(config((), tools=(static,)))
    outcome = host.invoke(static.name, "{}")
    require(len(outcome.text) <= RESULT_CAP, "CAP-001", "an over-cap result was not cut")
    require(
        len(outcome.text) >= RESULT_CAP - CAP_NOTE_ROOM,
        "CAP-001",
        f"an over-cap result was cut to {len(outcome.text)} characters, far under the cap",
    )


def _surrogate_spellings(value: str) -> dict[str, str]:
    """Return forms a to d of a value holding lone surrogates (decisions R5.2).

    Form b writes each lone surrogate as ``\\udxxx`` in lower-case hex; forms c and d encode the
    value's WTF-8 bytes (a lone surrogate's three bytes), as :func:`required_forms` already does.
    """
    spellings = dict(required_forms(value))
    spellings["b"] = "".join(
        f"\\u{ord(char):04x}" if 0xD800 <= ord(char) <= 0xDFFF else char
        for char in json_escape(value)
    )
    return spellings


@pytest.mark.req("SCRUB-017", "SCRUB-018", "ORD-003")
def test_lone_surrogate_value(host: RecordingHost, mint: Mint) -> None:
    """A value holding a lone surrogate is refused at resolution, before any prompt, or
    delivered with no spelling left readable."""
    base = make_secret(mint)
    value = base.password[:4] + "\ud800" + base.password[4:]
    secret = SecretSpec(base.id, base.website, base.username, value)
    host.reset(config([secret]))
    outcome = host.invoke(ECHO.name, args_json({"v": ref(secret.id)}))
    if outcome.disposition == "SECRET_UNRESOLVED":
        accept("SCRUB-018", "refused")
        # Refused at resolution (R5.2): like every refusal up to resolution, before the
        # operator is asked to approve a call that cannot run (ORD-003).
        seen = host.observe()
        if seen.judges("observe.requests", "ORD-003"):
            require(
                seen.approval_requests == (),
                "ORD-003",
                "a lone-surrogate value was refused after its prompt was shown",
            )
        return
    # Delivered: the echo must come back scrubbed, or a missing spelling proves nothing.
    require(
        placeholder(secret.id) in outcome.text,
        "SCRUB-017",
        f"a delivered lone-surrogate value came back unscrubbed ({outcome.disposition})",
    )
    observation = host.observe()
    surfaces = {
        "result": outcome.text,
        "ledger": observation.ledger_bytes.decode("utf-8", "surrogateescape"),
        "log": "\n".join(record.message for record in observation.log_records),
    }
    for surface, text in surfaces.items():
        for form, spelling in _surrogate_spellings(value).items():
            require(
                spelling not in text,
                "SCRUB-017",
                f"a delivered lone-surrogate value left form {form} readable in the {surface}",
            )
    accept("SCRUB-018", "scrubbed")
