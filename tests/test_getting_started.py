"""What a new user touches first: the README's quick start, its links, and the package's metadata.

The quick start is exactly two commands, and neither installs into the system's Python (a
Debian or Ubuntu system Python refuses that, PEP 668); the second is the command ``.ci/run``
runs, word for word. The README's links to ``docs/`` are absolute, to the package's
``Documentation`` URL, so that they work from PyPI, and each names a file that exists. The
wheel holds a LICENSE with the Apache-2.0 text and the ``fuzz`` package with its data files.
Each reader below is also run on a broken variant, to show that it catches one.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest

ROOT: Final = Path(__file__).resolve().parent.parent

#: SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt, the canonical text.
APACHE_2_SHA256: Final = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def quick_start(readme: str) -> list[str]:
    """Return the commands of the README's quick start, comments removed, one per line."""
    section = re.search(r"^## Quick start\n(.*?)^## ", readme, re.M | re.S)
    if section is None:
        raise AssertionError("the README has no '## Quick start' section")
    block = re.search(r"^```sh\n(.*?)^```", section.group(1), re.M | re.S)
    if block is None:
        raise AssertionError("the quick start has no sh code block")
    return [_command(line) for line in block.group(1).splitlines() if _command(line)]


def _command(line: str) -> str:
    """Return the words of ``line`` (by the shell's rules, comment dropped), joined by spaces."""
    if line.lstrip().startswith("#"):
        return ""
    return " ".join(shlex.split(line, comments=True))


def problems(commands: list[str]) -> list[str]:
    """Return what is wrong with a quick start's commands; an empty list when nothing is."""
    found = []
    if len(commands) != 2:
        found.append(f"{len(commands)} commands, not 2")
    for command in commands:
        for step in command.split(" && "):
            words = shlex.split(step)
            # pip run by the system's Python, rather than a virtual environment's.
            if "pip" in words and not words[0].startswith(".venv/"):
                found.append(f"installs outside a virtual environment: {step}")
    if commands and not commands[0].endswith("tox -e conformance"):
        found.append("the first command does not run the conformance suite")
    if len(commands) > 1 and not commands[1].endswith(("-m tox", "-m tox run-parallel")):
        found.append("the second command does not run the whole test suite")
    return found


def ci_commands(script: str) -> list[str]:
    """Return the lines of ``.ci/run`` that run tox."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    return [_command(line) for line in lines if "tox" in line]


def doc_links(readme: str) -> list[str]:
    """Return the targets of the README's Markdown links that lead into ``docs/``."""
    return [target for target in re.findall(r"\]\(([^)]+)\)", readme) if "docs/" in target]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_quick_start_is_two_commands_that_install_only_into_a_venv() -> None:
    commands = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert problems(commands) == []


def test_ci_runs_the_quick_starts_test_command() -> None:
    commands = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert ci_commands((ROOT / ".ci" / "run").read_text(encoding="utf-8")) == [commands[1]]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("python3 -m pip install tox && python3 -m tox -e conformance\n", "installs outside"),
        ("python3 -m venv .venv && .venv/bin/python -m tox -e conformance\n", "1 commands"),
        (
            "python3 -m venv .venv && .venv/bin/python -m tox -e conformance\n"
            "python3 -m venv .venv && .venv/bin/python -m tox\n"
            "python3 -m venv .venv && .venv/bin/python -m tox -e fuzz  # a third\n",
            "3 commands",
        ),
        (
            "python3 -m venv .venv && .venv/bin/python -m tox -e lint\n"
            "python3 -m venv .venv && .venv/bin/python -m tox\n",
            "the first command",
        ),
    ],
)
def test_a_broken_quick_start_is_caught(block: str, expected: str) -> None:
    readme = f"# x\n\n## Quick start\n\n```sh\n{block}```\n\n## Next\n"
    assert any(expected in problem for problem in problems(quick_start(readme)))


def test_a_ci_script_that_runs_another_command_is_caught() -> None:
    commands = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    script = "#!/bin/sh\n# runs tox\npython3 -m pip install tox\npython3 -m tox\n"
    assert ci_commands(script) != [commands[1]]


def test_every_link_into_docs_is_absolute_and_names_a_file() -> None:
    base = _pyproject()["project"]["urls"]["Documentation"]
    links = doc_links((ROOT / "README.md").read_text(encoding="utf-8"))
    assert links, "the README links to no document"
    for link in links:
        assert link.startswith(base), f"{link} is not under {base}"
        assert (ROOT / "docs" / link.removeprefix(base).split("#")[0]).is_file(), link
    assert not doc_links("see [the protocol](docs/driver-protocol.md)")[0].startswith(base)


def test_the_project_urls_share_one_base() -> None:
    urls = _pyproject()["project"]["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues"}
    assert all(url.startswith(urls["Source"]) for url in urls.values())


def test_the_license_file_is_the_apache_2_text() -> None:
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_SHA256


def unpackaged(files: list[str], patterns: list[str]) -> list[str]:
    """Return the files (relative to ``fuzz/``) that no package-data pattern takes."""
    taken = {
        str(path.relative_to(ROOT / "fuzz")) for p in patterns for path in (ROOT / "fuzz").glob(p)
    }
    return [name for name in files if name not in taken]


def test_fuzz_and_its_data_files_are_in_the_wheel() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    assert "fuzz*" in setuptools["packages"]["find"]["include"]
    # Files a fuzz run leaves (ignored by git) are not the package's.
    scratch = {"__pycache__", "corpus-work", "artifacts"}
    fuzz = ROOT / "fuzz"
    listed = [
        path
        for path in fuzz.rglob("*")
        if path.is_file() and not scratch & set(path.relative_to(fuzz).parts)
    ]
    data = [str(path.relative_to(fuzz)) for path in listed if path.suffix != ".py"]
    assert data, "git lists no data file under fuzz/"
    assert unpackaged(data, setuptools["package-data"]["fuzz"]) == []
    assert unpackaged(data, ["dicts/*.dict"]) != []
