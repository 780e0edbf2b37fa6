"""The model check's budget: how much it draws, from which seed, and how long a failure shrinks.

This module owns the budget of :mod:`conformance.model.machine`: the CI seed and the numbers of
examples and steps (docs/conformance.md, "The model check"), the campaign mode, the
:class:`Tally` of a run (how many examples and steps it took, where a failure was first seen,
and the steps of that example), and :func:`shrink`. Hypothesis's own shrinker is off: it
replays steps whose operators wait out real approval timeouts, with no bound in time (one
failure took minutes). The first failure ends the run instead, and its steps are shrunk here
for at most :data:`SHRINK_BUDGET_S`, dropping steps while the same requirements still fail.
Steps are printed as ids, field names and labels; a value never reaches them.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hypothesis import HealthCheck, Phase, Verbosity, settings

#: The CI budget: a fixed seed, examples and steps (docs/conformance.md, "The model check").
CI_SEED: Final = 20_240_617
CI_EXAMPLES: Final = 25
STEPS: Final = 20
#: The budget when the caller needs only the verdict (``--stop-when-decided``: the self-test
#: and the mutation runner).
VERDICT_EXAMPLES: Final = 12
#: Raises the budget and draws a fresh seed (campaign mode); ``SECREF_MODEL_SEED`` replays one.
EXAMPLES_ENV: Final = "SECREF_MODEL_EXAMPLES"
SEED_ENV: Final = "SECREF_MODEL_SEED"
#: Seeds are drawn below this bound, and a replayed one must be too.
SEED_BOUND: Final = 2**32
#: How long a failure may shrink, from the moment it was first seen.
SHRINK_BUDGET_S: Final = 30.0

#: One step as the machine took it: its rule's name and the arguments drawn for it.
Step = tuple[str, Mapping[str, Any]]


def step_line(step: Step) -> str:
    """Return one step as the reproducer prints it: ``state.<rule>(<name>=<repr>, ...)``."""
    name, arguments = step
    shown = ", ".join(f"{key}={value!r}" for key, value in sorted(arguments.items()))
    return f"state.{name}({shown})"


def kind(error: BaseException) -> tuple[str, tuple[str, ...]]:
    """Return what makes two failures the same: the error's type and the requirements named."""
    return (type(error).__name__, tuple(getattr(error, "requirements", ())))


#: How a failure's detail says where it was first seen (:meth:`Tally.found`), for readers of a
#: report such as ``secref-conformance reach``.
FIRST_SEEN: Final = re.compile(r"first seen at step \d+ of example \d+")


@dataclass(slots=True)
class Tally:
    """What one run has drawn so far, and its first failure.

    Attributes:
        examples: The examples begun.
        steps: The steps taken, over every example.
        trace: The current example's steps.
        first: ``(example, step of the example, steps of the run)`` where a failure was first
            seen.
        failing: The steps of the first failing example, up to the failing one.
        replaying: Whether a shrink replay is running: its steps are not counted.
    """

    examples: int = 0
    steps: int = 0
    trace: list[Step] = field(default_factory=list)
    first: tuple[int, int, int] | None = None
    failing: tuple[Step, ...] = ()
    replaying: bool = False

    def begin(self) -> None:
        """Begin an example."""
        self.trace = []
        if not self.replaying:
            self.examples += 1

    def step(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Count one step and add it to the example's trace."""
        self.trace.append((name, dict(arguments)))
        if not self.replaying:
            self.steps += 1

    def failed(self) -> None:
        """Note the current example's failure, if it is the run's first."""
        if self.first is None and not self.replaying:
            self.first = (self.examples, len(self.trace), self.steps)
            self.failing = tuple(self.trace)

    def found(self) -> str:
        """Return where the failure was first seen, for its detail."""
        if self.first is None:
            return ""
        example, step, run = self.first
        return f"first seen at step {step} of example {example}, {run} steps into the run"


def shrink(
    steps: Sequence[Step],
    error: BaseException,
    replay: Callable[[Sequence[Step]], BaseException | None],
    budget_s: float = SHRINK_BUDGET_S,
) -> tuple[tuple[Step, ...], BaseException]:
    """Drop steps from a failing sequence while it fails alike, until none can go or the budget
    is spent; return the shortest sequence and its failure.

    The first step (the configuration) stays. Runs of steps are dropped from the end first,
    halving the run's length down to one step (a bounded delta debugging): every replay costs
    real time, the operators' waits included, so the budget, not a fixed point, ends it.

    Args:
        steps: The failing steps, configuration first.
        error: Their failure.
        replay: Runs steps on fresh hosts and returns the failure, or ``None``.
        budget_s: How long shrinking may take.
    """
    deadline = time.monotonic() + budget_s
    best, best_error = tuple(steps), error
    chunk = max(1, (len(best) - 1) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        start = len(best) - chunk
        while start >= 1 and time.monotonic() < deadline:
            candidate = best[:start] + best[start + chunk :]
            got = replay(candidate)
            if got is not None and kind(got) == kind(error):
                best, best_error = candidate, got
            start -= chunk
        chunk //= 2
    return best, best_error


def _whole_number(name: str, low: int, high: int | None, expected: str) -> int | None:
    """Return the whole number the environment variable ``name`` holds, or ``None`` when unset.

    Raises:
        ValueError: the value is not a whole number from ``low`` to ``high`` (``None``: no
            upper bound); the message names the variable, ``expected`` and the value.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or number < low or (high is not None and number > high):
        raise ValueError(f"{name} must be a whole number {expected}, not {text!r}")
    return number


def examples_asked() -> int | None:
    """Return the examples ``SECREF_MODEL_EXAMPLES`` asks for, or ``None`` when it is unset.

    Raises:
        ValueError: the value is not a whole number of at least 1 (the message names it).
    """
    return _whole_number(EXAMPLES_ENV, 1, None, "of at least 1")


@contextlib.contextmanager
def first_example() -> Iterator[None]:
    """Have the suite runs started meanwhile, in this process or forked from it, draw only the
    first example of the CI seed, unless the caller already chose a budget or a seed.

    For runs that ask whether a check judges what it could not see, not how deep the model
    searches: the machine's rules are chosen from what the host announced, so a stripped
    capability is never drawn in any example, and every example observes the host as the
    first does.
    """
    if EXAMPLES_ENV in os.environ or SEED_ENV in os.environ:
        yield
        return
    os.environ[EXAMPLES_ENV] = "1"
    os.environ[SEED_ENV] = str(CI_SEED)
    try:
        yield
    finally:
        os.environ.pop(EXAMPLES_ENV, None)
        os.environ.pop(SEED_ENV, None)


def seed_asked() -> int | None:
    """Return the seed ``SECREF_MODEL_SEED`` replays, or ``None`` when it is unset.

    Raises:
        ValueError: the value is not a whole number from 0 to 2**32 - 1 (the message names it).
    """
    return _whole_number(SEED_ENV, 0, SEED_BOUND - 1, f"from 0 to {SEED_BOUND - 1}")


def narrowing() -> str | None:
    """Return how the budget narrows a run, or ``None`` when the model draws its whole budget.

    A campaign below :data:`CI_EXAMPLES` examples checks less than a run of the suite does, so
    the verdict line and every report name it, as they name ``-k`` (decisions S1.7): such a run
    never reads a plain ``conformant``. A larger campaign narrows nothing.

    Raises:
        ValueError: ``SECREF_MODEL_EXAMPLES`` is not a whole number of at least 1, or
            ``SECREF_MODEL_SEED`` is not a seed (both are read here, so that a bad value is
            refused before any check runs).
    """
    seed_asked()
    examples = examples_asked()
    if examples is None or examples >= CI_EXAMPLES:
        return None
    noun = "example" if examples == 1 else "examples"
    return f"the model check drew {examples} {noun} of its {CI_EXAMPLES} ({EXAMPLES_ENV})"


@contextlib.contextmanager
def same_draws_everywhere() -> Iterator[None]:
    """Have the seed draw the same steps whatever modules the process has imported.

    Hypothesis (6.131 and later) now and then draws a constant found in the source of the
    modules it takes for the caller's own (not installed, not tests), and that pool grows with
    every such module imported. Inside a user's pytest session, or with this project installed
    editable, the pool differed from a plain run's, and the CI seed drew other steps from its
    fifth example on: a fault one run met, another missed. While the model draws, the pool
    is empty; the constants Hypothesis ships with still come. On versions without the pool,
    nothing changes. With one version of Hypothesis, a seed then draws alike in every process.
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the module
        yield
        return
    found = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    make = getattr(providers, "Constants", None)
    if found is None or cache is None or make is None:
        yield
        return
    none = make()
    # Allowed constants are cached per choice with the pool folded in: dropped on both sides.
    cache.cache.clear()
    providers._get_local_constants = lambda: none
    try:
        yield
    finally:
        providers._get_local_constants = found
        cache.cache.clear()


def budget(verdict_only: bool) -> tuple[settings, int | None]:
    """Return the run's settings and, in campaign mode, its seed.

    CI (the default): :data:`CI_EXAMPLES` examples of at most :data:`STEPS` steps from the fixed
    seed :data:`CI_SEED`, no example database, the first failure ending the run. Under
    ``--stop-when-decided``, :data:`VERDICT_EXAMPLES`. With
    ``SECREF_MODEL_EXAMPLES=N``: N examples from a fresh seed, printed, or from
    ``SECREF_MODEL_SEED`` when it is set. ``SECREF_MODEL_SEED`` alone replays that seed with
    the default number of examples: a seed given to replay a failure is never ignored.
    """
    campaign = examples_asked()
    replayed = seed_asked()
    examples = VERDICT_EXAMPLES if verdict_only else CI_EXAMPLES
    chosen: int | None = None
    if campaign is not None or replayed is not None:
        examples = campaign if campaign is not None else examples
        chosen = replayed if replayed is not None else random.SystemRandom().randrange(SEED_BOUND)
        noun = "example" if examples == 1 else "examples"
        sys.stderr.write(f"model check campaign: {examples} {noun}, seed {chosen}\n")
    return (
        settings(
            # Every setting is given, none taken from the Hypothesis profile a caller has
            # loaded (a plugin run shares the user's session): the same seed then draws the
            # same steps in every session, and a verbose profile prints nothing more.
            backend="hypothesis",
            verbosity=Verbosity.normal,
            max_examples=examples,
            stateful_step_count=STEPS,
            database=None,
            deadline=None,
            derandomize=False,
            print_blob=False,
            # The first failure is the one shrunk and reported: a second one would double the
            # shrinking for nothing the verdict reads.
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            # Hypothesis's shrinker replays steps without a bound in time; the machine shrinks the
            # first failure itself, within SHRINK_BUDGET_S (:func:`shrink`).
            phases=(Phase.explicit, Phase.generate),
        ),
        chosen,
    )
