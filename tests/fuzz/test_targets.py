"""The atheris targets as the build script's smoke step would run them: each imports without
atheris and runs every seed of its corpus; every kept regression replays green."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz import campaign, regress

ROOT = Path(campaign.__file__).resolve().parent


@pytest.mark.req("GRAM-001", "INV1-ECHO", "SCRUB-009")
@pytest.mark.parametrize("target", campaign.TARGETS)
def test_each_target_imports_and_runs_its_seed_corpus(target: str) -> None:
    """A target's ``test_one_input`` accepts every seed, and it has a dictionary."""
    one_input = regress.target_input(target)
    seeds = sorted((ROOT / "corpus" / target).iterdir())
    assert seeds, f"{target} has no seed corpus"
    for seed in seeds:
        one_input(seed.read_bytes())
    one_input(b"")
    dictionary = (ROOT / "dicts" / f"{target}.dict").read_text(encoding="utf-8")
    assert any(line.startswith("tok_") for line in dictionary.splitlines())


@pytest.mark.req("GRAM-010", "GRAM-012", "INV1-ECHO")
@pytest.mark.parametrize("regression", regress.all_regressions(), ids=lambda r: r.id)
def test_regressions_stay_fixed(regression: regress.Regression) -> None:
    """Every input a fuzzer once failed on passes its target and its check again."""
    regress.replay(regression)


def test_regression_ids_are_unique_and_files_are_named_after_them() -> None:
    """Regression ids are never reused, and each file is named after its id and target."""
    regressions = regress.all_regressions()
    assert len({r.id for r in regressions}) == len(regressions)
    names = {path.name for path in regress.REGRESSIONS.glob("*.json")}
    assert names == {f"{r.id.lower()}-{r.target}.json" for r in regressions}


@pytest.mark.req("GRAM-001")
def test_the_clusterfuzzlite_build_script_smoke_step_runs() -> None:
    """The build script's local smoke step imports every target and runs one input."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    script = ROOT.parent / ".clusterfuzzlite" / "build.sh"
    done = subprocess.run(
        [bash, str(script), "--smoke"],
        cwd=ROOT.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for target in campaign.TARGETS:
        assert f"{target}: imported and ran one input" in done.stdout
