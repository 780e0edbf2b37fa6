"""The CI kit: ``action.yml`` and the GitLab CI template, checked and run as far as a machine
without GitHub or GitLab allows.

``action.yml`` is validated against SchemaStore's published schema for GitHub action metadata,
vendored beside this file as ``github-action.schema.json`` (from
https://github.com/SchemaStore/schemastore, ``src/schemas/json/github-action.json`` at commit
3b6446ad8a077bac56f4a4796c0b7fd88927fc8e; Apache License 2.0, as is that repository; the
file is unchanged). Then its ``run:`` steps are run here with bash, as the runner runs a composite
action's bash steps (``bash --noprofile --norc -eo pipefail``), with ``${{ inputs.* }}``,
``${{ github.action_path }}`` and ``${{ steps.*.outputs.* }}`` substituted and
``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` pointed at temporary files. Three steps do not run
here, and each run says which: the ``uses:`` steps (actions/setup-python and
actions/upload-artifact, which need GitHub's runner) and the install step, since the suite is
already installed in the environment running these tests and must not be reinstalled.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "action.yml"
SCHEMA = Path(__file__).with_name("github-action.schema.json")
GITLAB = REPO / "ci" / "gitlab" / "secref-conformance.gitlab-ci.yml"

#: The step of the action that installs the suite; not run here (see the module docstring).
INSTALL_STEP = "install"

#: Seconds one local run of the action may take: a narrowed run of one requirement.
RUN_TIMEOUT_S = 300.0

_EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def _action() -> dict[str, Any]:
    loaded = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _schema_errors(action: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    return [error.message for error in validator.iter_errors(action)]


def test_the_action_is_valid_action_metadata() -> None:
    assert _schema_errors(_action()) == []


@pytest.mark.parametrize(
    "break_it",
    [
        pytest.param(lambda a: a["runs"]["steps"][1].pop("shell"), id="run-step-without-shell"),
        pytest.param(lambda a: a["runs"].update(using="composite2"), id="unknown-runner"),
        pytest.param(lambda a: a["outputs"]["verdict"].pop("value"), id="output-without-value"),
        pytest.param(lambda a: a["inputs"]["host"].update(type="string"), id="unknown-input-key"),
    ],
)
def test_the_schema_check_catches_a_broken_action(break_it: Any) -> None:
    broken = copy.deepcopy(_action())
    break_it(broken)
    assert _schema_errors(broken), "the schema accepted a broken action"


def test_the_action_takes_its_inputs_as_data_not_as_script() -> None:
    """No ``${{ }}`` expression inside a ``run:`` script: inputs reach bash through ``env``, so
    an input holding shell syntax is never run as script."""
    for step in _action()["runs"]["steps"]:
        if "run" in step:
            assert not _EXPRESSION.search(step["run"]), step.get("name")


@dataclass
class LocalRun:
    """What one local run of the action left: its steps, outputs, summary and reports."""

    statuses: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    log: str = ""
    workdir: Path = Path()


def _parse_outputs(text: str) -> dict[str, str]:
    outputs: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            outputs[name] = value
    return outputs


def _run_action(tmp_path: Path, **given: str) -> LocalRun:
    """Run the action's ``run:`` steps in order, as a runner would, and return what they left."""
    action = _action()
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    unknown = set(given) - set(inputs)
    assert not unknown, f"the action has no inputs {sorted(unknown)}"
    inputs.update(given)
    steps_outputs: dict[str, dict[str, str]] = {}

    def substitute(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression == "github.action_path":
                return str(REPO)
            parts = expression.split(".")
            if parts[0] == "inputs" and len(parts) == 2:
                return inputs[parts[1]]
            if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
                return steps_outputs.get(parts[1], {}).get(parts[3], "")
            raise AssertionError(f"the local run cannot evaluate ${{{{ {expression} }}}}")

        return _EXPRESSION.sub(one, text)

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed, so the action's steps cannot run here")
    workdir = tmp_path / "workspace"
    workdir.mkdir()
    summary = tmp_path / "step_summary.md"
    summary.touch()
    run = LocalRun(workdir=workdir)
    for index, step in enumerate(action["runs"]["steps"]):
        name = str(step.get("id") or step.get("name") or index)
        if "uses" in step:
            run.skipped.append(f"{name}: uses {step['uses']}, which needs GitHub's runner")
            continue
        if step.get("id") == INSTALL_STEP:
            run.skipped.append(f"{name}: the suite is installed here already")
            continue
        assert step["shell"] == "bash"
        outputs_file = tmp_path / f"output-{index}"
        outputs_file.touch()
        env = {
            **os.environ,
            # The environment running the tests plays the Python that setup-python provides.
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
            "GITHUB_ACTION_PATH": str(REPO),
            "GITHUB_OUTPUT": str(outputs_file),
            "GITHUB_STEP_SUMMARY": str(summary),
            **{key: substitute(str(value)) for key, value in step.get("env", {}).items()},
        }
        script = tmp_path / f"step-{index}.sh"
        script.write_text(substitute(step["run"]), encoding="utf-8")
        done = subprocess.run(
            [bash, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        run.log += done.stdout + done.stderr
        run.statuses[name] = done.returncode
        steps_outputs[name] = _parse_outputs(outputs_file.read_text(encoding="utf-8"))
        if done.returncode != 0:
            break  # as on a runner: a failed step ends the job's later steps
    for output, spec in action["outputs"].items():
        run.outputs[output] = substitute(spec["value"])
    run.summary = summary.read_text(encoding="utf-8")
    return run


def _last_status(run: LocalRun) -> int:
    return list(run.statuses.values())[-1]


def test_the_action_passes_the_embedded_reference_host(tmp_path: Path) -> None:
    run = _run_action(tmp_path, requirements="SCRUB-001")
    print("steps not run here:", *run.skipped, sep="\n  ")
    assert len(run.skipped) == 3, run.skipped
    assert run.outputs["verdict"] == "conformant (narrowed)", run.log[-3000:]
    assert run.outputs["exit-code"] == "0"
    assert _last_status(run) == 0
    assert run.summary.startswith("## secref-conformance: conformant (narrowed) (exit code 0)")
    reports = run.workdir / run.outputs["reports-dir"]
    markdown = (reports / "conformance.md").read_text(encoding="utf-8")
    assert markdown.strip() in run.summary, "the summary does not hold the Markdown report"
    report = json.loads((reports / "conformance.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "conformant (narrowed)"
    junit = (reports / "conformance.junit.xml").read_text(encoding="utf-8")
    assert "<testsuite" in junit
    assert 'failures="0"' in junit


def test_the_action_fails_the_step_on_a_mutant(tmp_path: Path) -> None:
    run = _run_action(tmp_path, host="mutant:floor-nine", requirements="SCRUB-001")
    assert run.outputs["verdict"] == "not-conformant", run.log[-3000:]
    assert run.outputs["exit-code"] == "1"
    # The run step itself succeeds, so the reports are uploaded; the last step fails the job.
    assert run.statuses["run"] == 0
    assert _last_status(run) == 1
    assert run.summary.startswith("## secref-conformance: not-conformant (exit code 1)")
    assert "SCRUB-001" in run.summary
    junit = (run.workdir / "secref-reports" / "conformance.junit.xml").read_text(encoding="utf-8")
    assert 'failures="0"' not in junit


def test_the_action_reports_a_harness_error_with_exit_code_2(tmp_path: Path) -> None:
    """A host that cannot start is a harness error: exit code 2, said in the summary too."""
    run = _run_action(tmp_path, host="false", requirements="SCRUB-001", args="--host-timeout 5")
    assert run.outputs["exit-code"] == "2", run.log[-3000:]
    assert run.outputs["verdict"] == "harness-error"
    assert _last_status(run) == 2
    assert run.summary.startswith("## secref-conformance: harness-error (exit code 2)")


# --- GitLab CI ---------------------------------------------------------------------------------


def _gitlab_job() -> dict[str, Any]:
    template = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    assert isinstance(template, dict)
    job = template["secref-conformance"]
    assert isinstance(job, dict)
    return job


def test_the_gitlab_job_reports_the_junit_file_its_command_writes() -> None:
    job = _gitlab_job()
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always"
    junit = artifacts["reports"]["junit"]
    command = next(line for line in job["script"] if line.startswith("secref-conformance "))
    written = re.findall(r"--junit-?xml[= ](\S+)", command)
    assert written == [junit], "the JUnit report names another file than the command writes"
    set_args = " ".join(line for line in job["script"] if line.startswith("set -- "))
    for path in artifacts["paths"]:
        assert path == junit or path in set_args, f"no command writes the artifact {path}"
    assert {Path(path).suffix for path in artifacts["paths"]} == {".json", ".md", ".xml"}
