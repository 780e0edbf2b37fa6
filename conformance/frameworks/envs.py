"""``python -m conformance.frameworks.envs``: build each framework's env, then run the matrix.

This module owns ``tox -e frameworks``'s work: each framework gets a venv of its own, made with
the Python it needs (found on ``PATH`` or under pyenv's versions, so a fresh machine needs no
set-up by hand), the framework installed at its pinned version from PyPI and this project
beside it without dependencies. The install time of each env is measured. A framework whose
Python is missing, or whose install failed, is said so in one line and left out of the matrix,
marked not run. The network is used while installing only; the checks run offline.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from conformance.frameworks import matrix


@dataclass(frozen=True)
class Pinned:
    """One framework: its adapter module, its pinned requirement and the Python it needs."""

    name: str
    module: str
    requirement: str
    python: str


#: Every framework of the matrix, pinned exactly.
FRAMEWORKS: Final = (
    Pinned("browser-use", "conformance.frameworks.browser_use", "browser-use==0.13.14", "3.11"),
)


def find_python(version: str) -> str | None:
    """Return an interpreter of ``version`` (``3.12``): on ``PATH``, then under pyenv."""
    found = shutil.which(f"python{version}")
    if found and _runs(found):
        return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for candidate in sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}")):
        if _runs(candidate):
            return candidate
    return None


def _runs(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def build(pinned: Pinned, root: Path, project: Path) -> tuple[str | None, str]:
    """Make ``pinned``'s venv under ``root``; return its Python (or ``None``) and a note."""
    python = find_python(pinned.python)
    if python is None:
        return None, f"{pinned.name}: no Python {pinned.python} on this machine"
    venv = root / pinned.name
    target = venv / "bin" / "python"
    started = time.monotonic()
    steps = [
        [python, "-m", "venv", "--clear", str(venv)],
        [str(target), "-m", "pip", "install", "-q", pinned.requirement],
        [str(target), "-m", "pip", "install", "-q", "--no-deps", str(project)],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None, f"{pinned.name}: the install failed (exit {done.returncode})"
    seconds = time.monotonic() - started
    return str(target), f"{pinned.name}: installed {pinned.requirement} in {seconds:.0f} s"


def main(argv: Sequence[str] | None = None) -> int:
    """Build every env, then measure every framework that installed; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.frameworks.envs")
    parser.add_argument("--root", type=Path, required=True, help="where the venvs go")
    parser.add_argument("--project", type=Path, default=Path.cwd())
    parser.add_argument("--reuse", action="store_true", help="keep venvs built before")
    options, rest = parser.parse_known_args(argv)
    commands: list[str] = []
    not_run: list[str] = []
    for pinned in FRAMEWORKS:
        existing = options.root / pinned.name / "bin" / "python"
        if options.reuse and existing.exists():
            python: str | None = str(existing)
            note = f"{pinned.name}: reused the env built before"
        else:
            python, note = build(pinned, options.root, options.project)
        print(note, flush=True)
        if python is None:
            not_run.append(note)
            continue
        commands += ["--framework", f"{python} -m {pinned.module}"]
    extra = [arg for line in not_run for arg in ("--not-run", line)]
    sys.stdout.flush()
    return matrix.main([*commands, *extra, *rest])


if __name__ == "__main__":
    raise SystemExit(main())
