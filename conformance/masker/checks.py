"""The masker checks (decisions R10): what each one sends, and what it concludes from the answer.

This module owns the canaries of one run (fresh values holding a space, a quote, a slash, ``*``,
``~`` and a non-ASCII letter, an 8-code-point value at the floor, values under it, a PEM block,
overlapping pairs, and the values the replacement checks compare) and one function per group of
requirements. Each function drives a :class:`~conformance.masker.protocol.Masker` through every
path it announced that the rule applies to, and returns :class:`Outcome` values naming the
requirement, the path, the forms that survived and the secrets' names. The form oracles are the
suite's own (:mod:`conformance.canary`), never a masker's. A path the masker did not announce
gives an unchecked outcome with the reason, never a pass. Nothing here may put a value in an
outcome.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from conformance.canary import Kind, Mint, hardening_forms, required_forms
from conformance.masker.protocol import (
    COMMAND,
    STREAM_PIECES,
    TEXT,
    Masker,
    MaskerError,
    NotAnnounced,
    Secret,
)

#: The floor of decisions R5.1: values of at least this many code points must be masked.
FLOOR: Final = 8

#: The marks the long-line check straddles: the common 8 KiB read size and the 64 KiB Linux
#: pipe buffer, where a wrapper that masks each read on its own splits a value.
STRADDLED_MARKS: Final = (8192, 65536)

#: Characters of the long line: past the last straddled mark.
LONG_LINE_CHARS: Final = 70_000

#: Characters a replacement may share with a value at its start or end before it counts as
#: showing them (varlock shows two), and the run that counts anywhere in it.
EDGE_CHARS: Final = 2
RUN_CHARS: Final = 4

#: Hex characters of a digest that, found in a replacement, count as that digest.
DIGEST_PREFIX_CHARS: Final = 6

#: The filler of the long line and of untouched text; ``l`` and ``o`` are outside the canary
#: alphabet, so no run of a canary can form in it.
_FILLER: Final = "lorem ipsum dolor sol "


class Status(enum.Enum):
    """What a check concluded about one requirement on one path."""

    PASS = "pass"
    FAIL = "fail"
    UNCHECKED = "unchecked"
    NOT_APPLICABLE = "not applicable"
    REPORTED = "reported"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One conclusion of one check.

    Attributes:
        requirement: The MASK ID.
        status: What was concluded.
        path: The path it was reached through (``text``, ``command``, ``stream-pieces``), or
            ``""`` when none could be.
        detail: A value-free sentence: the secrets' names, the forms, the reason.
        forms: The forms that survived (``a`` to ``d``, or hardening form names).
        behaviour: For an EITHER requirement, the behaviour seen.
    """

    requirement: str
    status: Status
    path: str
    detail: str = ""
    forms: tuple[str, ...] = ()
    behaviour: str = ""


def _core(mint: Mint, role: str) -> str:
    return mint.canary(Kind.PLAIN, role).value


@dataclass(frozen=True, slots=True)
class Canaries:
    """The values of one run, minted fresh; each is a :class:`Secret` named after its role."""

    rich: Secret
    quoted: Secret
    eight: Secret
    short: Secret
    short_bytes: Secret
    short_units: Secret
    pem: Secret
    plain: Secret
    first: Secret
    second: Secret
    inner: Secret
    one: Secret
    other: Secret
    longer: Secret

    @classmethod
    def mint(cls) -> Canaries:
        """Return a fresh set of values; no two runs share one."""
        mint = Mint()
        rich = _core(mint, "rich")
        quoted = _core(mint, "quoted")
        first = _core(mint, "first")
        one, other = _core(mint, "one"), _core(mint, "other")
        while one[:EDGE_CHARS] == other[:EDGE_CHARS] or one[-EDGE_CHARS:] == other[-EDGE_CHARS:]:
            other = _core(mint, "other")
        pem_lines = [_core(mint, "pem") + _core(mint, "pem") for _ in range(2)]
        return cls(
            rich=Secret("MASK_RICH", rich[:9] + ' "/*~é' + rich[9:]),
            quoted=Secret("MASK_QUOTED", quoted[:9] + ' "/é' + quoted[9:]),
            eight=Secret("MASK_EIGHT", (e := _core(mint, "eight"))[:4] + "/" + e[4:7]),
            short=Secret("MASK_SHORT", _core(mint, "short")[:7]),
            short_bytes=Secret("MASK_SHORT_BYTES", _core(mint, "short")[:6] + "é"),
            short_units=Secret("MASK_SHORT_UNITS", _core(mint, "short")[:6] + "\U0001f511"),
            pem=Secret(
                "MASK_PEM",
                "-----BEGIN TEST KEY-----\n" + "\n".join(pem_lines) + "\n-----END TEST KEY-----",
            ),
            plain=Secret("MASK_PLAIN", _core(mint, "plain")),
            first=Secret("MASK_FIRST", first),
            second=Secret("MASK_SECOND", first[-8:] + _core(mint, "second")[:14]),
            inner=Secret("MASK_INNER", first[5:17]),
            one=Secret("MASK_KEY", one),
            other=Secret("MASK_KEY", other),
            longer=Secret("MASK_KEY", one[:11] + _core(mint, "longer")[:8] + one[11:]),
        )

    def all(self) -> tuple[Secret, ...]:
        """Return every value of the run, for cleaning adapter text."""
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)


#: The paths that take a whole text, in the order the checks try them.
WHOLE_TEXT_PATHS: Final = (TEXT, COMMAND)


def _through(masker: Masker, path: str, secrets: Sequence[Secret], text: str) -> str:
    if path == TEXT:
        return masker.mask_text(secrets, text)
    return masker.run(secrets, [text])


def _survivors(secrets: Iterable[Secret], output: str) -> list[tuple[Secret, str]]:
    """Return (secret, form name) for every required form of every guarded value in ``output``."""
    return [
        (secret, name)
        for secret in secrets
        if len(secret.value) >= FLOOR
        for name, form in required_forms(secret.value).items()
        if form in output
    ]


@dataclass(frozen=True, slots=True)
class _Probe:
    """One text sent to the masker: a form that survives in it breaks ``requirement``; the
    ``keep`` marks must come back too (MASK-017)."""

    requirement: str
    what: str
    secrets: tuple[Secret, ...]
    text: str
    keep: tuple[str, ...] = ()


def _run_probes(masker: Masker, probes: Sequence[_Probe]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for path in WHOLE_TEXT_PATHS:
        for probe in probes:
            try:
                output = _through(masker, path, probe.secrets, probe.text)
            except NotAnnounced:
                outcomes.append(
                    Outcome(probe.requirement, Status.UNCHECKED, path, f"no {path} path announced")
                )
                continue
            except MaskerError as error:
                outcomes.append(
                    Outcome(probe.requirement, Status.UNCHECKED, path, f"{probe.what}: {error}")
                )
                continue
            leaks = _survivors(probe.secrets, output)
            if leaks:
                names = sorted({secret.name for secret, _ in leaks})
                forms = tuple(sorted({form for _, form in leaks}))
                outcomes.append(
                    Outcome(
                        probe.requirement,
                        Status.FAIL,
                        path,
                        f"{probe.what}: {', '.join(names)} left in form {', '.join(forms)}"
                        if len(probe.secrets) > 1
                        else f"{probe.what}: left readable",
                        forms,
                    )
                )
            else:
                outcomes.append(Outcome(probe.requirement, Status.PASS, path, probe.what))
            missing = [mark for mark in probe.keep if mark not in output]
            if missing:
                outcomes.append(
                    Outcome(
                        "MASK-017",
                        Status.FAIL,
                        path,
                        f"{probe.what}: the text around the value was changed",
                    )
                )
    # A path that is not announced yields one unchecked outcome per probe; one per path is enough.
    unique: dict[tuple[str, Status, str, str], Outcome] = {}
    for outcome in outcomes:
        unique.setdefault(
            (outcome.requirement, outcome.status, outcome.path, outcome.detail), outcome
        )
    return list(unique.values())


#: Which requirement each required form comes from (decisions R5.2 a to d).
FORM_REQUIREMENTS: Final = {"a": "MASK-001", "b": "MASK-002", "c": "MASK-003", "d": "MASK-004"}


def _form_probes(
    secret: Secret, where: str, override: Mapping[str, str] | None = None
) -> list[_Probe]:
    """Return one probe per required form of ``secret``, each citing its form's requirement
    unless ``override`` names another for that form."""
    probes = []
    for name, form in required_forms(secret.value).items():
        own = (override or {}).get(name, FORM_REQUIREMENTS[name])
        probes.append(
            _Probe(
                own,
                f"{secret.name} in form {name} {where}",
                (secret,),
                f"before {form} after\n",
                ("before ", " after"),
            )
        )
    return probes


def check_forms(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-001..005: every required form of values with every awkward character, and the floor.

    A form of the 8-code-point value that survives breaks the floor (MASK-005) only when the
    masker masked that form of the longer values on the same path; otherwise the form's own
    rule is what it broke (decisions S1.4), and the outcome cites that.

    Args:
        masker: The masker under test.
        canaries: The run's values.

    Returns:
        One outcome per requirement and path (and one per surviving form).
    """
    at_floor = dict.fromkeys(FORM_REQUIREMENTS, "MASK-005")
    probes = [
        *_form_probes(canaries.rich, "mid-line"),
        *_form_probes(canaries.quoted, "mid-line"),
        *_form_probes(canaries.eight, "at the floor", at_floor),
    ]
    outcomes = _run_probes(masker, probes)
    failed = {
        (item.path, form)
        for item in outcomes
        if item.status is Status.FAIL and item.requirement != "MASK-005"
        for form in item.forms
    }
    judged: list[Outcome] = []
    for item in outcomes:
        if (
            item.requirement == "MASK-005"
            and item.status is Status.FAIL
            and all((item.path, form) in failed for form in item.forms)
        ):
            judged.append(replace(item, requirement=FORM_REQUIREMENTS[item.forms[0]]))
            reason = "the floor cannot be judged: longer values leak in the same form"
            judged.append(Outcome("MASK-005", Status.UNCHECKED, item.path, reason))
        else:
            judged.append(item)
    return judged


def check_short(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-006: whether values under the floor are masked; reported, never failed.

    Three values of 7 code points: ASCII, one that takes 8 UTF-8 bytes, and one that takes 8
    UTF-16 units (decisions R5.1 makes that last case EITHER for hosts too).

    Returns:
        One reported outcome per path, naming the behaviour: ``floor-8`` or ``masks-shorter``.
    """
    outcomes = []
    for path in WHOLE_TEXT_PATHS:
        masked = []
        try:
            for secret, what in (
                (canaries.short, "7 ASCII characters"),
                (canaries.short_bytes, "7 code points in 8 UTF-8 bytes"),
                (canaries.short_units, "7 code points in 8 UTF-16 units"),
            ):
                output = _through(masker, path, (secret,), f"before {secret.value} after\n")
                if secret.value not in output:
                    masked.append(what)
        except NotAnnounced:
            outcomes.append(Outcome("MASK-006", Status.UNCHECKED, path, f"no {path} path"))
            continue
        except MaskerError as error:
            outcomes.append(Outcome("MASK-006", Status.UNCHECKED, path, str(error)))
            continue
        behaviour = "masks-shorter" if masked else "floor-8"
        detail = f"masks a value of {' and of '.join(masked)}" if masked else "leaves them"
        outcomes.append(Outcome("MASK-006", Status.REPORTED, path, detail, behaviour=behaviour))
    return outcomes


def _long_line(value: str) -> str:
    line = (_FILLER * (LONG_LINE_CHARS // len(_FILLER) + 1))[:LONG_LINE_CHARS]
    for mark in reversed(STRADDLED_MARKS):
        at = mark - len(value) // 2
        line = line[:at] + value + line[at + len(value) :]
    return "start " + line + "\n"


def check_positions(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-007..012: a value at each position decisions R10.2 lists.

    Returns:
        One outcome per requirement and path (and one per surviving form).
    """
    rich, plain = canaries.rich.value, canaries.plain.value
    both = (canaries.rich, canaries.plain)
    first, second, inner = canaries.first, canaries.second, canaries.inner
    pem = canaries.pem
    probes = [
        _Probe("MASK-007", "a value opening the text", (canaries.rich,), rich + " tail\n"),
        _Probe("MASK-007", "a value closing the text", (canaries.rich,), "head " + rich),
        _Probe("MASK-007", "a value that is the whole text", (canaries.rich,), rich),
        _Probe("MASK-008", "two values side by side", both, f"x {rich}{plain} y\n"),
        _Probe("MASK-008", "two values side by side, swapped", both, f"x {plain}{rich} y\n"),
        _Probe(
            "MASK-009",
            "two overlapping occurrences",
            (first, second),
            f"x {first.value}{second.value[8:]} y\n",
        ),
        _Probe(
            "MASK-009", "a value that lies inside another", (first, inner), f"x {inner.value} y\n"
        ),
        _Probe("MASK-009", "a value holding another one", (first, inner), f"x {first.value} y\n"),
        _Probe("MASK-010", "a value three times", (canaries.rich,), f"{rich} and {rich}, {rich}\n"),
        _Probe("MASK-010", "a value twice in a row", (canaries.rich,), f"x {rich}{rich} y\n"),
        _Probe(
            "MASK-011", "a value on a line of its own", (canaries.rich,), f"one\n{rich}\nthree\n"
        ),
        _Probe("MASK-011", "a value inside a long line", (canaries.rich,), _long_line(rich)),
        *_form_probes(pem, "across line breaks", {"a": "MASK-012"}),
        _Probe("MASK-012", "a PEM block among lines", (pem,), f"key:\n{pem.value}\nend\n"),
    ]
    return _run_probes(masker, probes)


def check_pieces(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-013: a value that reaches a wrapper or stream masker in two pieces.

    Returns:
        An outcome per piece path; not applicable for a library masker with neither path.
    """
    rich = canaries.rich
    half = len(rich.value) // 2
    pieces = ["head " + rich.value[:half], rich.value[half:] + " tail\n"]
    outcomes = []
    for path, call in ((COMMAND, masker.run), (STREAM_PIECES, masker.mask_pieces)):
        try:
            output = call((rich,), pieces)
        except NotAnnounced:
            continue
        except MaskerError as error:
            outcomes.append(Outcome("MASK-013", Status.UNCHECKED, path, str(error)))
            continue
        leaks = _survivors((rich,), output)
        if leaks:
            forms = tuple(sorted({form for _, form in leaks}))
            outcomes.append(
                Outcome(
                    "MASK-013",
                    Status.FAIL,
                    path,
                    f"{rich.name} written in two pieces survived",
                    forms,
                )
            )
        else:
            outcomes.append(Outcome("MASK-013", Status.PASS, path, "a value in two writes"))
    if not outcomes:
        if masker.info.shape == "library":
            reason = "not applicable: a library call is given the whole text, never pieces"
            outcomes.append(Outcome("MASK-013", Status.NOT_APPLICABLE, "", reason))
        else:
            reason = f"a {masker.info.shape} that announced neither a command nor a stream path"
            outcomes.append(Outcome("MASK-013", Status.UNCHECKED, "", reason))
    return outcomes


def _replacement(masker: Masker, path: str, secret: Secret) -> str | None:
    output = _through(masker, path, (secret,), f"<<{secret.value}>>")
    if not output.startswith("<<") or not output.endswith(">>") or secret.value in output:
        return None
    return output[2:-2]


def _shows_characters(value: str, shown: str, control: str) -> bool:
    """Whether ``shown`` holds an edge or a run of ``value`` that ``control`` does not."""
    pieces = {value[:EDGE_CHARS], value[-EDGE_CHARS:]}
    pieces |= {value[at : at + RUN_CHARS] for at in range(len(value) - RUN_CHARS + 1)}
    return any(piece in shown and piece not in control for piece in pieces)


def _digests(value: str) -> dict[str, str]:
    data = value.encode("utf-8")
    return {
        name: hashlib.new(name, data).hexdigest() for name in ("md5", "sha1", "sha256", "sha512")
    }


def _shows_digest(value: str, shown: str) -> str:
    lowered = shown.lower()
    for name, digest in _digests(value).items():
        if digest[:DIGEST_PREFIX_CHARS] in lowered:
            return name
    return ""


def _shows_length(value: str, longer: str, shown: str, shown_longer: str) -> bool:
    if shown == shown_longer:
        return False
    if len(shown_longer) - len(shown) == len(longer) - len(value):
        return True
    for size, size_longer in (
        (len(value), len(longer)),
        (len(value.encode("utf-8")), len(longer.encode("utf-8"))),
    ):
        if str(size) in shown and str(size_longer) in shown_longer:
            return True
    return False


def check_replacement(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-014..016: what a replacement reveals of the value it stands for.

    Two values of one length and a third that differs from the first only in length are each
    masked alone, under the same name; what differs between their replacements is what the
    replacement reveals. A replacement that depends on the value is then looked at for a digest
    of it, and asked for again after a restart: the same answer means a dictionary can be tried
    against it.

    Returns:
        One outcome for each of MASK-014, MASK-015 and MASK-016.
    """
    ids = ("MASK-014", "MASK-015", "MASK-016")
    for path in WHOLE_TEXT_PATHS:
        try:
            shown = _replacement(masker, path, canaries.one)
            shown_other = _replacement(masker, path, canaries.other)
            shown_longer = _replacement(masker, path, canaries.longer)
        except NotAnnounced:
            continue
        except MaskerError as error:
            return [Outcome(id_, Status.UNCHECKED, path, str(error)) for id_ in ids]
        if shown is None or shown_other is None or shown_longer is None:
            reason = "the value was not masked, or the text around it was changed"
            return [Outcome(id_, Status.UNCHECKED, path, reason) for id_ in ids]
        one, other, longer = canaries.one.value, canaries.other.value, canaries.longer.value
        outcomes = []
        characters = _shows_characters(one, shown, shown_other) or _shows_characters(
            other, shown_other, shown
        )
        outcomes.append(
            Outcome(
                "MASK-014",
                Status.FAIL if characters else Status.PASS,
                path,
                "the replacement shows characters of the value"
                if characters
                else "the replacement shows no character of the value",
            )
        )
        length = _shows_length(one, longer, shown, shown_longer)
        outcomes.append(
            Outcome(
                "MASK-015",
                Status.FAIL if length else Status.PASS,
                path,
                "the replacement changes with the value's length"
                if length
                else "values that differ in length get the same replacement",
            )
        )
        outcomes.append(_hash_outcome(masker, path, canaries, shown, shown_other))
        return outcomes
    return [Outcome(id_, Status.UNCHECKED, "", "no whole-text path announced") for id_ in ids]


def _hash_outcome(
    masker: Masker, path: str, canaries: Canaries, shown: str, shown_other: str
) -> Outcome:
    if shown == shown_other:
        return Outcome(
            "MASK-016", Status.PASS, path, "the replacement does not depend on the value"
        )
    digest = _shows_digest(canaries.one.value, shown)
    if digest:
        return Outcome("MASK-016", Status.FAIL, path, f"the replacement holds a {digest} digest")
    try:
        masker.restart()
        again = _replacement(masker, path, canaries.one)
    except MaskerError as error:
        return Outcome("MASK-016", Status.UNCHECKED, path, f"after a restart: {error}")
    if again == shown:
        return Outcome(
            "MASK-016",
            Status.FAIL,
            path,
            "the replacement depends on the value alone: it is the same after a restart",
        )
    return Outcome("MASK-016", Status.PASS, path, "the replacement is salted afresh per run")


def check_untouched(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-017: text that holds no value comes back as it went in.

    Returns:
        One outcome per whole-text path.
    """
    rich = canaries.rich
    text = (
        "plain line\n\tindented  with two spaces \nΩé 🔑 ünïcödé\n"
        f'near miss: {rich.value[: FLOOR - 1]}\n{{"json": "x\\"y"}}\n{_FILLER}\n'
    )
    outcomes = []
    for path in WHOLE_TEXT_PATHS:
        try:
            output = _through(masker, path, (rich,), text)
        except NotAnnounced:
            continue
        except MaskerError as error:
            outcomes.append(Outcome("MASK-017", Status.UNCHECKED, path, str(error)))
            continue
        same = output == text
        outcomes.append(
            Outcome(
                "MASK-017",
                Status.PASS if same else Status.FAIL,
                path,
                "text without a value came back unchanged"
                if same
                else "text without a value was changed",
            )
        )
    return outcomes or [Outcome("MASK-017", Status.UNCHECKED, "", "no whole-text path announced")]


def check_hardening(masker: Masker, canaries: Canaries) -> list[Outcome]:
    """MASK-018: the hardening forms of decisions R5.6; reported, never a failure of the run.

    Returns:
        One outcome per whole-text path, listing the forms that survived.
    """
    rich = canaries.rich
    forms = hardening_forms(rich.value)
    outcomes = []
    for path in WHOLE_TEXT_PATHS:
        survived = []
        try:
            for name, form in forms.items():
                if form in _through(masker, path, (rich,), f"x {form} y\n"):
                    survived.append(name)
        except NotAnnounced:
            continue
        except MaskerError as error:
            outcomes.append(Outcome("MASK-018", Status.UNCHECKED, path, str(error)))
            continue
        masked = f"{len(forms) - len(survived)} of {len(forms)} masked"
        outcomes.append(
            Outcome("MASK-018", Status.REPORTED, path, masked, tuple(survived), behaviour=masked)
        )
    return outcomes or [Outcome("MASK-018", Status.UNCHECKED, "", "no whole-text path announced")]


#: Every check, in the order a run makes them; the replacement check restarts the masker, so it
#: runs last but one.
CHECKS: Final = (
    check_forms,
    check_short,
    check_positions,
    check_pieces,
    check_untouched,
    check_hardening,
    check_replacement,
)


def run_checks(masker: Masker, canaries: Canaries | None = None) -> list[Outcome]:
    """Run every masker check against ``masker``.

    Args:
        masker: The masker under test.
        canaries: The run's values; fresh ones when ``None``.

    Returns:
        Every outcome, in check order.

    Raises:
        MaskerStartError: The masker could not be started again after a restart.
    """
    canaries = canaries or Canaries.mint()
    outcomes: list[Outcome] = []
    for check in CHECKS:
        outcomes.extend(check(masker, canaries))
    return outcomes
