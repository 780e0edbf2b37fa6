"""A model-check campaign below the CI budget narrows the run, and says so (decisions S1.7).

``SECREF_MODEL_EXAMPLES=N`` sets how many examples the model check draws. Below the CI budget
the run checks less than a run of the suite does: its verdict line and every report must name
that, as they name ``-k``, and it must never read a plain ``conformant``. These check the
suite's own reporting rather than a host, so they cite no requirement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, Verbosity, settings

from conformance.model import budget
from conformance.report import NARROWED
from tests.conformance.suite_runs import console

#: A quick selection whose checks include the model check.
SELECTION = "APPR-003"


@pytest.mark.parametrize(
    ("value", "named"),
    [(None, False), ("1", True), ("24", True), ("25", False), ("400", False)],
)
def test_only_a_campaign_below_the_ci_budget_narrows(
    monkeypatch: pytest.MonkeyPatch, value: str | None, named: bool
) -> None:
    if value is None:
        monkeypatch.delenv(budget.EXAMPLES_ENV, raising=False)
    else:
        monkeypatch.setenv(budget.EXAMPLES_ENV, value)
    said = budget.narrowing()
    assert (said is not None) == named
    if said is not None:
        assert f"drew {value} example" in said
        assert budget.EXAMPLES_ENV in said


@pytest.mark.parametrize("value", ["0", "-3", "abc", "2.5", "1e3"])
def test_a_budget_that_is_no_count_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(budget.EXAMPLES_ENV, value)
    with pytest.raises(ValueError, match=budget.EXAMPLES_ENV):
        budget.narrowing()


@pytest.mark.parametrize("value", ["-1", "abc", "2.5", "4294967296", "0x10"])
def test_a_seed_that_is_no_seed_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.delenv(budget.EXAMPLES_ENV, raising=False)
    monkeypatch.setenv(budget.SEED_ENV, value)
    with pytest.raises(ValueError, match=f"{budget.SEED_ENV} must be a whole number"):
        budget.narrowing()


@pytest.mark.parametrize(("verdict_only", "examples"), [(False, 25), (True, 12)])
def test_a_seed_alone_is_replayed_with_the_default_examples(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    verdict_only: bool,
    examples: int,
) -> None:
    """A seed given to replay a failure is used, never silently replaced by the CI seed; with
    no campaign asked it draws the default examples, so it narrows nothing."""
    monkeypatch.delenv(budget.EXAMPLES_ENV, raising=False)
    monkeypatch.setenv(budget.SEED_ENV, "4294967295")
    chosen, seed = budget.budget(verdict_only)
    assert (chosen.max_examples, seed) == (examples, 4294967295)
    assert budget.narrowing() is None
    assert f"model check campaign: {examples} examples, seed 4294967295" in capsys.readouterr().err


def test_one_example_is_said_in_the_singular(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(budget.EXAMPLES_ENV, "1")
    monkeypatch.setenv(budget.SEED_ENV, "7")
    chosen, seed = budget.budget(False)
    assert (chosen.max_examples, seed) == (1, 7)
    assert "model check campaign: 1 example, seed 7\n" in capsys.readouterr().err


@pytest.mark.parametrize("verdict_only", [False, True], ids=["ci", "verdict"])
def test_the_budget_takes_nothing_from_the_loaded_profile(
    monkeypatch: pytest.MonkeyPatch, verdict_only: bool
) -> None:
    """A user's session may load any Hypothesis profile (the suite runs as their pytest
    plugin): every setting of the model check's budget is its own, so the same seed draws the
    same steps whatever profile is loaded."""
    monkeypatch.delenv(budget.EXAMPLES_ENV, raising=False)
    monkeypatch.delenv(budget.SEED_ENV, raising=False)
    ours, _ = budget.budget(verdict_only)
    previous = settings.get_current_profile_name()
    settings.register_profile(
        "secref-test-everything-else",
        backend="hypothesis-urandom",
        verbosity=Verbosity.debug,
        max_examples=3,
        stateful_step_count=2,
        derandomize=True,
        deadline=1,
        print_blob=True,
        report_multiple_bugs=True,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=[],
    )
    try:
        settings.load_profile("secref-test-everything-else")
        theirs, _ = budget.budget(verdict_only)
    finally:
        settings.load_profile(previous)
    names = [name for name in dir(ours) if not name.startswith("_")]
    fields = [name for name in names if not callable(getattr(ours, name))]
    assert {"backend", "verbosity", "phases", "stateful_step_count"} <= set(fields)
    assert {name: getattr(theirs, name) for name in fields} == {
        name: getattr(ours, name) for name in fields
    }


#: A seeded run of text and numbers, as the model's draws are made, printed as one digest:
#: ``imported`` first imports a module of the caller's own full of constants, ``guarded`` draws
#: under :func:`budget.same_draws_everywhere`.
_DRAWS = """
import contextlib, hashlib, importlib, sys
from hypothesis import Phase, given, seed, settings, strategies as st
from conformance.model import budget
drawn = []
@seed(budget.CI_SEED)
@settings(max_examples=150, database=None, derandomize=False, deadline=None,
          phases=(Phase.generate,))
@given(st.text(max_size=12), st.integers(0, 10_000))
def draw(text, number):
    drawn.append((text, number))
if sys.argv[1] == "imported":
    sys.path.insert(0, sys.argv[3])
    importlib.import_module("constants_of_their_own")
with budget.same_draws_everywhere() if sys.argv[2] == "guarded" else contextlib.nullcontext():
    draw()
print(hashlib.sha256(repr(drawn).encode()).hexdigest())
"""


def test_the_seed_draws_alike_whatever_modules_are_imported(tmp_path: Path) -> None:
    """Hypothesis draws now and then from constants in the source of the modules it takes for
    the caller's own, so the same seed drew other model steps inside a user's session (or
    with this project installed editable) than in a plain run. Under the model's guard the
    draws are the same with and without such a module; without it, they differ."""
    providers = pytest.importorskip("hypothesis.internal.conjecture.providers")
    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this Hypothesis draws no constants from the caller's modules")
    names = ", ".join(f"'kq{number:03d}'" for number in range(300))
    numbers = ", ".join(str(1000 + number) for number in range(300))
    (tmp_path / "constants_of_their_own.py").write_text(
        f"NAMES = ({names},)\nNUMBERS = ({numbers},)\n", encoding="utf-8"
    )

    def digest(imported: str, guarded: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _DRAWS, imported, guarded, str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=True,
        )
        return done.stdout.strip()

    assert digest("imported", "guarded") == digest("plain", "guarded")
    # The module does reach the draws (else the first assertion would prove nothing).
    assert digest("imported", "unguarded") != digest("plain", "unguarded")


@pytest.mark.usefixtures("full_model_budget")
def test_a_small_campaign_is_named_in_the_verdict_and_the_report(tmp_path: Path) -> None:
    """The same selection with 2 examples and with the whole budget: only the first names the
    model check, and neither is a plain conformant."""
    small, _ = console(
        tmp_path,
        "--requirements",
        SELECTION,
        "--report-json",
        "small.json",
        env={budget.EXAMPLES_ENV: "2", budget.SEED_ENV: str(budget.CI_SEED)},
    )
    whole, _ = console(tmp_path, "--requirements", SELECTION, "--report-json", "whole.json")
    assert (small.returncode, whole.returncode) == (0, 0), small.stdout[-2000:]
    text = "the model check drew 2 examples of its 25"
    assert text in small.stdout
    assert text not in whole.stdout
    small_report = json.loads((tmp_path / "small.json").read_text(encoding="utf-8"))
    whole_report = json.loads((tmp_path / "whole.json").read_text(encoding="utf-8"))
    assert small_report["verdict"] == whole_report["verdict"] == NARROWED
    assert any(text in item for item in small_report["narrowed"])
    assert whole_report["narrowed"] == []
    assert text in small_report["verdictLine"]


@pytest.mark.usefixtures("full_model_budget")
def test_a_whole_run_with_a_small_campaign_is_never_plain_conformant(tmp_path: Path) -> None:
    """Without any other narrowing, a small campaign alone keeps the verdict from plain
    conformant (``-k`` keeps the run quick; the campaign is named beside it)."""
    done, _ = console(
        tmp_path,
        "--report-json",
        "r.json",
        "--",
        "-k",
        "test_model",
        env={budget.EXAMPLES_ENV: "1", budget.SEED_ENV: str(budget.CI_SEED)},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "verdict: conformant (narrowed: -k test_model; the model check drew 1 example" in (
        done.stdout
    )


@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (budget.EXAMPLES_ENV, "many", "must be a whole number of at least 1, not 'many'"),
        (budget.SEED_ENV, "lucky", "must be a whole number from 0 to 4294967295, not 'lucky'"),
    ],
    ids=["examples", "seed"],
)
def test_a_bad_budget_value_is_a_usage_error_before_any_check(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    """pytest refuses the run as a usage error; the console script's exit is a harness error."""
    done, _ = console(tmp_path, "--requirements", SELECTION, env={variable: value})
    output = done.stdout + done.stderr
    assert done.returncode == 2, done.stdout[-2000:]
    assert "no report was written (pytest exit status 4)" in output
    assert f"{variable} {said}" in output
    assert "passed" not in done.stdout


def test_first_example_sets_the_ci_seed_and_restores_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside first_example a run draws one example of the CI seed; after it the environment
    is as it was; a budget or seed the caller chose is left alone."""
    monkeypatch.delenv(budget.EXAMPLES_ENV, raising=False)
    monkeypatch.delenv(budget.SEED_ENV, raising=False)
    with budget.first_example():
        assert budget.examples_asked() == 1
        assert budget.seed_asked() == budget.CI_SEED
    assert budget.EXAMPLES_ENV not in os.environ
    assert budget.SEED_ENV not in os.environ
    monkeypatch.setenv(budget.EXAMPLES_ENV, "40")
    with budget.first_example():
        assert budget.examples_asked() == 40
        assert budget.seed_asked() is None
