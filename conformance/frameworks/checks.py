"""The checks a placeholder host is held to (decisions R11.2), run over driver protocol v1.

This module owns the framework checks: non-disclosure of every delivered value in forms a to d
on every surface the adapter announced (the result, failure text, the framework's log at every
level, what it persists, and its standard error), all or nothing with an unknown placeholder
among known ones, transparency (a call without placeholders, and a string that merely equals a
secret's name), keys, consistency of what the tool receives, and bounded work on adversarial
placeholder text. Each check gets fresh canaries. A check returns rows keyed by the catalog's
requirement IDs; its details name the form letters and surfaces, never a value and never text
the framework wrote. The rules of the ``{{secret:`` spelling (R1, R2) are not applicable here
(R11.1), and approval, the fence, ordering and dispositions are not offered by these hosts, so
no verdict of this module is ever ``conformant``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from conformance.canary import Kind, Mint, required_forms
from conformance.frameworks.base import secret_name
from conformance.host import CallResult, HostConfig, Observation, SecretSpec
from conformance.hosts._protocol import HostError
from conformance.hosts.subprocess import SubprocessHost
from conformance.scenario import ECHO, RECORDER, SHA256, THROWER, config, make_secret, ref

#: The requirements a placeholder host is held to, in the matrix's column order (R11.2).
COLUMNS: Final = (
    "INV1-ECHO",
    "INV1-THROW",
    "INV1-SHA256",
    "SCRUB-003",
    "SCRUB-004",
    "SCRUB-005",
    "SCRUB-006",
    "LOG-001",
    "LEDG-004",
    "INV2",
    "INV5",
    "GRAM-014",
    "INV6",
    "SUBST-005",
    "INV7",
)

#: What these hosts do not offer, reported beside every row: the verdict is never conformant.
NOT_OFFERED: Final = (
    "approval (R3), the fence (R3.4), refusal order (R2.3, ORD-*), dispositions and the "
    "ledger's record format (R6), policy and vault reads (R7): unchecked, not offered"
)

#: Why R1 and R2 are not judged (decisions R11.1).
NOT_APPLICABLE: Final = (
    "not applicable: R1 and R2 are rules of the {{secret:}} spelling; this host spells "
    "references {spelling} (decisions R11.1)"
)

#: A call's work on adversarial text may grow at most this much when the text grows 4 times.
GROWTH_LIMIT: Final = 12.0

#: The smaller adversarial text is doubled until its call takes this long beyond a trivial one.
TIMED_FLOOR_S: Final = 0.05

#: ... but never beyond this many characters (the larger text is 4 or 8 times as long).
MAX_SMALL_CHARS: Final = 100_000

#: How many times each text of the bounded-work check is timed; the least reading counts.
TIMINGS: Final = 3

#: A call of the bounded-work check that takes longer than this fails it at once.
SLOWEST_CALL_S: Final = 20.0

#: The bounded-work check judges processor time when the adapter's tree spent at least this
#: share of the largest call's wall time working; below it the work is elsewhere (a service
#: the adapter calls) and the wall clock judges.
CPU_SHARE: Final = 0.05

#: A call whose processor time reaches this (50 clock ticks) is not timed again.
DECISIVE_CPU_S: Final = 0.5


@dataclass
class Row:
    """One requirement's outcome for one framework: ``pass``, ``fail`` or ``unchecked``."""

    status: str = "pass"
    forms: set[str] = field(default_factory=set)
    surfaces: set[str] = field(default_factory=set)
    details: list[str] = field(default_factory=list)

    def fail(self, detail: str, forms: Iterable[str] = (), surfaces: Iterable[str] = ()) -> None:
        """Mark the requirement failed, naming what leaked and where."""
        self.status = "fail"
        self.forms.update(forms)
        self.surfaces.update(surfaces)
        if detail not in self.details:
            self.details.append(detail)

    def unchecked(self, detail: str) -> None:
        """Mark it unchecked (a surface or feature the adapter did not announce)."""
        if self.status == "pass":
            self.status = "unchecked"
        self.details.append(detail)

    def wire(self) -> dict[str, Any]:
        """Return the row as the JSON report holds it."""
        return {
            "status": self.status,
            "forms": sorted(self.forms),
            "surfaces": sorted(self.surfaces),
            "details": list(self.details),
        }


class Run:
    """The checks against one adapter, with the rows they fill."""

    def __init__(self, host: SubprocessHost) -> None:
        self.host = host
        self.mint = Mint()
        self.rows: dict[str, Row] = {column: Row() for column in COLUMNS}
        self.capabilities = host.info().capabilities
        #: Whether the adapter announced what each tool received: without it, whether the tool
        #: ran and with what is unseen, never a pass.
        self.receipts = "observe.receipts" in self.capabilities
        if "observe.log" not in self.capabilities:
            self.rows["LOG-001"].unchecked("the adapter announced no log (observe.log)")

    def _unseen(self, column: str) -> bool:
        """Mark ``column`` unchecked and return true when no receipt was announced."""
        if not self.receipts:
            self.rows[column].unchecked(
                "the adapter announced no receipts (observe.receipts): what the tool received "
                "is unseen"
            )
        return not self.receipts

    # --- helpers ----------------------------------------------------------------------------

    def _call(self, cfg: HostConfig, tool: str, members: Any) -> tuple[CallResult, Observation]:
        self.host.reset(cfg)
        outcome = self.host.invoke(tool, json.dumps(members, ensure_ascii=False))
        return outcome, self.host.observe()

    def _leaks(self, secrets: Iterable[SecretSpec], texts: dict[str, str]) -> dict[str, set[str]]:
        """Return, per surface, the form letters of any value it holds."""
        found: dict[str, set[str]] = {}
        values = [v for s in secrets for v in (s.password, s.username, s.notes) if len(v) >= 8]
        for surface, text in texts.items():
            for value in values:
                for letter, form in required_forms(value).items():
                    if form in text:
                        found.setdefault(surface, set()).add(letter)
        return found

    def _surfaces(self, outcome: CallResult, seen: Observation) -> dict[str, str]:
        texts = {"result" if not outcome.is_error else "failure text": outcome.text}
        if "observe.log" in self.capabilities:
            texts["log"] = "\n".join(record.message for record in seen.log_records)
        texts["stderr"] = seen.printed
        if "observe.ledger" in self.capabilities:
            texts["persisted"] = seen.ledger_bytes.decode("utf-8", "replace")
        return texts

    def _judge(self, name: str, secrets: list[SecretSpec], texts: dict[str, str]) -> None:
        """Fail ``name`` and each form's and surface's requirement for every leak found."""
        for surface, letters in self._leaks(secrets, texts).items():
            detail = f"{surface}: form {', '.join(sorted(letters))} readable"
            self.rows[name].fail(detail, letters, [surface])
            for letter in letters:
                column = {"a": "SCRUB-003", "b": "SCRUB-004", "c": "SCRUB-005", "d": "SCRUB-006"}
                self.rows[column[letter]].fail(f"{name} {detail}", letter, [surface])
            if surface == "log":
                self.rows["LOG-001"].fail(f"{name}: form {', '.join(sorted(letters))}", letters)
            if surface == "persisted":
                self.rows["LEDG-004"].fail(f"{name}: form {', '.join(sorted(letters))}", letters)

    # --- the checks -------------------------------------------------------------------------

    def non_disclosure(self) -> None:
        """Echo, throw and hash every field of entries of every shape; search every surface."""
        for kind in (Kind.SPECIAL, Kind.CLASSES, Kind.SPACED, Kind.UNICODE):
            secret = make_secret(self.mint, kind=kind)
            members = {
                "password": ref(secret.id),
                "username": ref(secret.id, "username"),
                "notes": ref(secret.id, "notes"),
            }
            cfg = config([secret])
            for tool, column in ((ECHO, "INV1-ECHO"), (THROWER, "INV1-THROW")):
                outcome, seen = self._call(cfg, tool.name, members)
                self._judge(column, [secret], self._surfaces(outcome, seen))
                if self.receipts and not seen.receipts:
                    self.rows["SUBST-005"].fail(f"{tool.name}: the tool never ran")
            outcome, seen = self._call(cfg, SHA256.name, members)
            self._judge("INV1-SHA256", [secret], self._surfaces(outcome, seen))
            # A framework may frame the result (a heading, a step tag): each hash must be there.
            wanted = [
                hashlib.sha256(v.encode("utf-8")).hexdigest()
                for v in (secret.password, secret.username, secret.notes)
            ]
            if any(digest not in outcome.text for digest in wanted):
                self.rows["INV1-SHA256"].fail(f"{kind.value}: the hashes are not the values'")
                self.rows["SUBST-005"].fail(
                    f"{kind.value}: the tool did not receive each field's value"
                )
        if "observe.ledger" not in self.capabilities:
            self.rows["LEDG-004"].unchecked("the framework persists nothing the adapter can read")

    def all_or_nothing(self) -> None:
        """A known placeholder beside an unknown one never reaches the tool."""
        known = make_secret(self.mint)
        unknown = make_secret(self.mint)
        members = {"a": ref(known.id), "b": ref(unknown.id), "c": ref(known.id, "username")}
        outcome, seen = self._call(config([known]), RECORDER.name, members)
        if not self._unseen("INV2") and seen.receipts:
            view = json.dumps(seen.receipts[0].view, ensure_ascii=False)
            some = any(form in view for form in required_forms(known.password).values())
            self.rows["INV2"].fail(
                "the tool ran with the unknown placeholder left as text"
                + (" and the known one substituted" if some else "")
            )
        self._judge("INV2", [known], self._surfaces(outcome, seen))

    def transparency(self, name_of: Callable[[str, str], str], spelling: str) -> None:
        """A call without placeholders, and a string equal to a secret's name, pass unchanged."""
        if self._unseen("INV5"):
            return
        secret = make_secret(self.mint)
        name = name_of(secret.id, "password")
        opening = spelling.split("{name}")[0]
        cases = {
            "no placeholder": {"n": 1.5, "s": "plain", "l": [True, None, {"k": "v"}]},
            "a secret's name": {"k": name},
            "a secret's name in a list": {"l": [name, f"x{name}y"]},
            "an opening without its close": {"k": opening + name},
        }
        for label, members in cases.items():
            _, seen = self._call(config([secret]), RECORDER.name, members)
            if not seen.receipts:
                self.rows["INV5"].fail(f"{label}: the tool never ran")
            elif seen.receipts[0].view != members:
                self.rows["INV5"].fail(f"{label}: the tool received other arguments")

    def keys(self) -> None:
        """A placeholder written as a key is never substituted."""
        secret = make_secret(self.mint)
        members = {ref(secret.id): "v", "o": {ref(secret.id, "username"): 1}}
        outcome, seen = self._call(config([secret]), RECORDER.name, members)
        for receipt in () if self._unseen("GRAM-014") else seen.receipts:
            keys = json.dumps(_keys(receipt.view), ensure_ascii=False)
            letters = self._leaks([secret], {"keys": keys}).get("keys")
            if letters:
                self.rows["GRAM-014"].fail("a key was substituted", letters, ["tool"])
        self._judge("GRAM-014", [secret], self._surfaces(outcome, seen))

    def consistency(self) -> None:
        """What the tool receives is the one rewrite of the argument tree the call asked for."""
        secret = make_secret(self.mint, kind=Kind.SPECIAL)
        members = {
            "z": ref(secret.id),
            "a": [ref(secret.id, "username"), {"deep": [ref(secret.id, "notes")]}],
            "mid": f"<{ref(secret.id)}>",
            "n": 1.5,
        }
        wanted = {
            "z": secret.password,
            "a": [secret.username, {"deep": [secret.notes]}],
            "mid": f"<{secret.password}>",
            "n": 1.5,
        }
        if self._unseen("INV6"):
            return
        _, seen = self._call(config([secret]), RECORDER.name, members)
        if not seen.receipts:
            self.rows["INV6"].fail("the tool never ran")
        elif seen.receipts[0].view != wanted:
            self.rows["INV6"].fail("the tool received another tree than the one rewrite")
            self.rows["SUBST-005"].fail("nested or embedded placeholders were not each replaced")

    def bounded(self, spelled: str, name: str) -> None:
        """Adversarial placeholder text costs work linear in its length (R8).

        Openings without a close, then whole placeholders: a scan that looks for the close
        from every opening does quadratic work. Then the whole placeholder with its last
        character cut off, repeated: a scan that reads a name or a default up to a close
        that never comes does the same. Text 4 times as long may take at most
        :data:`GROWTH_LIMIT` times as long (8 times as long, twice that); a call the host
        never answers fails too. Only the call is timed (the least of :data:`TIMINGS` calls), not
        the configuration before it, and less the time of a call with one character, so that a
        framework's fixed cost per call does not hide the growth; the smaller text is doubled
        until its call takes :data:`TIMED_FLOOR_S` beyond that. The unclosed placeholders grow
        8 times, since their first size already costs a framework's per-character work.

        Each call is read on two clocks (:class:`Reading`): the wall clock, and the processor
        time of the adapter's process tree where the system tells it. The growth is judged on
        the processor time when the tree did at least :data:`CPU_SHARE` of the largest call's
        work by it, since a busy machine stretches wall readings unevenly (a quadratic scan
        read as linear growth, with the test jobs side by side); otherwise (the work done
        outside the tree, or no ``/proc``) on the wall clock.
        """
        head = spelled.split(name)[0] or spelled[:2]
        texts: dict[str, tuple[Callable[[int], str], tuple[int, int]]] = {
            "openings": (lambda size: (head * size) + (head + name) * (size // 10), (1_000, 4_000)),
            "unclosed placeholders": (lambda size: spelled[:-1] * size, (250, 2_000)),
        }
        secret = make_secret(self.mint)

        def timed(text: str) -> Reading:
            # The least of a few calls: load on a shared machine only ever adds time, so the
            # least reading is the closest to the host's own work (one reading under load let
            # a quadratic scan through). A call past the bound fails anyway; it is not repeated.
            wall = cpu = float("inf")
            known = True
            for _ in range(TIMINGS):
                self.host.reset(config([secret]))
                before = self.host.cpu_seconds()
                started = time.perf_counter()
                self.host.invoke(RECORDER.name, json.dumps({"k": text}))
                wall = min(wall, time.perf_counter() - started)
                after = self.host.cpu_seconds()
                # No processor time, or a restart between the readings, leaves this text's
                # processor time unknown: the wall clock judges it.
                if before is None or after is None or after < before:
                    known = False
                else:
                    cpu = min(cpu, after - before)
                # Processor time is not stretched by load: once the tree did the work and it
                # spans enough clock ticks, another call would read the same.
                if wall > SLOWEST_CALL_S or (
                    known and cpu >= DECISIVE_CPU_S and cpu >= CPU_SHARE * wall
                ):
                    break
            return Reading(wall, cpu if known else None)

        try:
            base = timed("x")
            for label, (text_of, (size, large_size)) in texts.items():
                grown = large_size // size
                # The smaller text must cost enough to be timed above the call's own noise on
                # the clock that will judge it: double it until it does (a host slow on it
                # stops this at once).
                small = timed(text_of(size)).less(base)
                while not small.measurable() and len(text_of(size)) < MAX_SMALL_CHARS:
                    size *= 2
                    small = timed(text_of(size)).less(base)
                measured = small.measurable()
                large = timed(text_of(size * grown)).less(base)
                if large.wall <= SLOWEST_CALL_S:
                    # Timed again after the large text, so that the two least readings come
                    # from the same stretch of time: a small text timed while the machine was
                    # busy and a large one after it was not read as linear growth.
                    small = small.least(timed(text_of(size)).less(base))
                steep = too_steep(small, large, grown, measured)
                if steep is not None:
                    self.rows["INV7"].fail(f"{spelled_label(spelled, name)} {label}: {steep}")
        except HostError as error:
            self.rows["INV7"].fail(f"{spelled_label(spelled, name)}: {type(error).__name__}")


@dataclass(frozen=True)
class Reading:
    """The least time of one text's calls, on the wall clock and in the tree's processor time.

    ``cpu`` is ``None`` where the processor time is unknown (no ``/proc``, or the adapter was
    started again between two readings).
    """

    wall: float
    cpu: float | None

    def less(self, base: Reading) -> Reading:
        """Return this reading less a trivial call's, never below zero."""
        cpu = None if self.cpu is None or base.cpu is None else max(0.0, self.cpu - base.cpu)
        return Reading(max(0.0, self.wall - base.wall), cpu)

    def least(self, other: Reading) -> Reading:
        """Return the lesser of two readings of the same text, clock by clock."""
        cpu = None if self.cpu is None or other.cpu is None else min(self.cpu, other.cpu)
        return Reading(min(self.wall, other.wall), cpu)

    def on_cpu(self) -> bool:
        """Return whether the tree did enough of this call's work to be judged by it."""
        return self.cpu is not None and self.cpu >= CPU_SHARE * self.wall

    def measurable(self) -> bool:
        """Return whether the call lasted long enough to be timed on the clock that judges it:
        :data:`TIMED_FLOOR_S` on the wall clock, and in processor time too while the tree did
        the work (a wall reading stretched by a busy machine may hold few clock ticks)."""
        return self.wall >= TIMED_FLOOR_S and (
            not self.on_cpu() or self.judged(self) >= TIMED_FLOOR_S
        )

    def judged(self, large: Reading) -> float:
        """Return this reading on the clock the large text's reading chose."""
        return self.cpu if large.on_cpu() and self.cpu is not None else self.wall


def too_steep(small: Reading, large: Reading, grown: int, measured: bool) -> str | None:
    """Return why the large text's call grew too fast against the small one's, or ``None``.

    Args:
        small: The small text's least reading, less a trivial call's.
        large: The text ``grown`` times as long, the same way.
        grown: How many times as long the large text is.
        measured: Whether the small text's first readings reached :data:`TIMED_FLOOR_S`.

    A call past :data:`SLOWEST_CALL_S` is too slow whatever the small one took. Otherwise the
    ratio may be at most :data:`GROWTH_LIMIT` per 4 times the text. A small reading under the
    floor is too short to divide by: once the small text was measured, the floor stands in
    for it, which only lowers the ratio (a reading taken again after the large one may fall
    under the floor, and a quadratic scan then went unjudged); a small text never measured is
    not judged.
    """
    limit = GROWTH_LIMIT * grown / 4
    clock = "processor" if large.on_cpu() else "wall"
    low, high = small.judged(large), large.judged(large)
    if measured:
        low = max(low, TIMED_FLOOR_S)
    if large.wall > SLOWEST_CALL_S or (low >= TIMED_FLOOR_S and high / low > limit):
        return (
            f"{grown} times the text took {high / max(low, 1e-6):.0f} times as long "
            f"({low:.2f} s, then {high:.2f} s, {clock} time)"
        )
    return None


def spelled_label(spelled: str, name: str) -> str:
    """Return the spelling of one placeholder with ``NAME`` for the name, for a detail."""
    return spelled.replace(name, "NAME")


def _keys(node: object) -> list[str]:
    """Return every member name of ``node``, at any depth."""
    if isinstance(node, dict):
        return [*node.keys(), *(k for v in node.values() for k in _keys(v))]
    if isinstance(node, list):
        return [k for item in node for k in _keys(item)]
    return []


def run_checks(host: SubprocessHost, patterns: dict[str, Any]) -> dict[str, Row]:
    """Run every framework check against ``host``; return its rows by requirement ID.

    Args:
        host: The adapter, started.
        patterns: The ``placeholder`` member of its handshake (R11.1).
    """
    run = Run(host)
    spelling = str(patterns.get("spelling", "{name}"))
    sample = secret_name("00000000-0000-4000-8000-000000000000", "password")
    run.non_disclosure()
    run.all_or_nothing()
    run.transparency(secret_name, spelling)
    run.keys()
    run.consistency()
    # Every spelling the adapter announced (R11.1), the main one first.
    variants = [spelling, *(v for v in patterns.get("variants", ()) if v != spelling)]
    for variant in variants:
        run.bounded(str(variant).replace("{name}", sample), sample)
    return run.rows
