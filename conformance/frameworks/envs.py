"""``python -m conformance.frameworks.envs``: build each framework's env, then run the matrix.

This module owns ``tox -e frameworks``'s work: each framework gets a venv of its own, made with
the Python it needs (found on ``PATH`` or under pyenv's versions, so a fresh machine needs no
set-up by hand), the framework installed at its pinned version from PyPI and this project
beside it without dependencies. A framework from npm (Playwright MCP) is installed instead with
``npm install --prefix <root>/<name>`` at its pinned version, and its adapter runs with this
env's own Python, which holds this project and the ``mcp`` SDK; it needs ``node``, ``npm`` and
Debian's chromium, which this step does not install (browser-use's agent needs that browser
too). The install time of each env is measured. A framework whose Python, node, npm or browser
is missing, or whose install failed, is said so in one line and left out of the matrix, marked
not run. The network is used while installing only; the checks run offline.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import re
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
    """One framework: its adapter module, its pinned requirement, the Python it needs, paths.

    ``paths`` are the adapter's arguments for each path under test measured (its own tools,
    its MCP tools), one matrix row each. ``registry`` is ``pypi`` or ``npm``; an npm package's
    ``python`` is unused (its adapter runs with this env's Python). ``browser``: its adapter
    drives Debian's chromium (:data:`CHROMIUM`), which this step does not install.
    """

    name: str
    module: str
    requirement: str
    python: str
    paths: tuple[str, ...] = ("",)
    registry: str = "pypi"
    browser: bool = False


#: Every framework of the matrix, pinned exactly.
FRAMEWORKS: Final = (
    Pinned(
        "browser-use",
        "conformance.frameworks.browser_use",
        "browser-use==0.13.14",
        "3.11",
        ("", " --mcp"),
        browser=True,
    ),
    Pinned("askui", "conformance.frameworks.askui", "askui==0.48.0", "3.11", ("", " --mcp")),
    Pinned("openhands-sdk", "conformance.frameworks.openhands", "openhands-sdk==1.58.2", "3.12"),
    Pinned(
        "playwright-mcp",
        "conformance.frameworks.playwright_mcp",
        "@playwright/mcp@0.0.83",
        "",
        ("", " --debug-all"),
        "npm",
    ),
)

#: The browser Playwright MCP is given: Debian's chromium, never a download.
CHROMIUM: Final = Path("/usr/bin/chromium")


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


#: The lines of an installer's error output that name its cause: npm's error code, pip's error.
_CAUSE: Final = re.compile(r"^(?:npm (?:error|ERR!) code |ERROR: )")
#: The characters of a cause kept in the one-line note.
CAUSE_CHARS: Final = 160


def install_failed(name: str, code: int, stderr: str | bytes) -> str:
    """The one-line note of a failed install: the exit status, and the installer's cause.

    The cause is npm's error code line or pip's first ``ERROR:`` line, else the last line the
    installer wrote, with control characters dropped and cut to :data:`CAUSE_CHARS`, so that
    a failure on a fresh machine (a registry that timed out, a version withdrawn) says why
    without a rerun by hand.
    """
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    chosen = next((line for line in lines if _CAUSE.match(line)), lines[-1] if lines else "")
    cause = "".join(char for char in chosen if char.isprintable())[:CAUSE_CHARS]
    note = f"{name}: the install failed (exit {code})"
    return f"{note}: {cause}" if cause else note


def build(pinned: Pinned, root: Path, project: Path) -> tuple[str | None, str, float]:
    """Make ``pinned``'s venv under ``root``; return its Python (or ``None``), a note, seconds."""
    python = find_python(pinned.python)
    if python is None:
        return None, f"{pinned.name}: no Python {pinned.python} on this machine", 0.0
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
            return None, install_failed(pinned.name, done.returncode, done.stderr), 0.0
    seconds = time.monotonic() - started
    note = f"{pinned.name}: installed {pinned.requirement} in {seconds:.0f} s"
    return str(target), note, seconds


def build_npm(pinned: Pinned, root: Path, reuse: bool) -> tuple[str | None, str, float]:
    """Install ``pinned`` from npm under ``root``; return its adapter's command, a note, seconds.

    The command runs the adapter with this env's Python; ``None`` when something it needs is
    missing or the install failed, the note then saying which in one line.
    """
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return None, f"{pinned.name}: no {' and no '.join(missing)} on this machine", 0.0
    if not CHROMIUM.exists():
        return None, f"{pinned.name}: no chromium at {CHROMIUM} (Debian's package chromium)", 0.0
    if importlib.util.find_spec("mcp") is None:
        return None, f"{pinned.name}: no mcp SDK beside this project (its extra mcp)", 0.0
    prefix = root / pinned.name
    command = f"{sys.executable} -m {pinned.module} --prefix {prefix}"
    installed = prefix / "node_modules" / "@playwright" / "mcp" / "package.json"
    if reuse and installed.exists():
        return command, f"{pinned.name}: reused the install made before", -1.0
    started = time.monotonic()
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    step = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    done = subprocess.run([*step, pinned.requirement], capture_output=True, check=False)
    if done.returncode != 0:
        return None, install_failed(pinned.name, done.returncode, done.stderr), 0.0
    seconds = time.monotonic() - started
    return command, f"{pinned.name}: installed {pinned.requirement} in {seconds:.0f} s", seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Build every env, then measure every framework that installed; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.frameworks.envs")
    parser.add_argument("--root", type=Path, required=True, help="where the venvs go")
    parser.add_argument("--project", type=Path, default=Path.cwd())
    parser.add_argument("--reuse", action="store_true", help="keep venvs built before")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        choices=[pinned.name for pinned in FRAMEWORKS],
        help="build and measure this framework only (may be given more than once)",
    )
    options, rest = parser.parse_known_args(argv)
    commands: list[str] = []
    not_run: list[str] = []
    installs: list[str] = []
    for pinned in FRAMEWORKS:
        if options.only and pinned.name not in options.only:
            continue
        existing = options.root / pinned.name / "bin" / "python"
        if pinned.browser and not CHROMIUM.exists():
            note = f"{pinned.name}: no chromium at {CHROMIUM} (Debian's package chromium)"
            print(note, flush=True)
            not_run.append(note)
            continue
        if pinned.registry == "npm":
            command, note, seconds = build_npm(pinned, options.root, options.reuse)
            print(note, flush=True)
            if command is None:
                not_run.append(note)
                continue
            installs += ["--install", f"{pinned.requirement}={seconds:.0f}"]
            commands += [arg for p in pinned.paths for arg in ("--framework", command + p)]
            continue
        if options.reuse and existing.exists():
            # The framework stays as built; this project's copy is brought up to date.
            python: str | None = str(existing)
            note, seconds = f"{pinned.name}: reused the env built before", -1.0
            step = [
                str(existing),
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--force-reinstall",
                str(options.project),
            ]
            if subprocess.run(step, capture_output=True, check=False).returncode != 0:
                python, note = None, f"{pinned.name}: this project did not install in its env"
        else:
            python, note, seconds = build(pinned, options.root, options.project)
        print(note, flush=True)
        if python is None:
            not_run.append(note)
            continue
        installs += ["--install", f"{pinned.requirement}={seconds:.0f}"]
        commands += [
            arg for p in pinned.paths for arg in ("--framework", f"{python} -m {pinned.module}{p}")
        ]
    extra = [*installs, *(arg for line in not_run for arg in ("--not-run", line))]
    sys.stdout.flush()
    return matrix.main([*commands, *extra, *rest])


if __name__ == "__main__":
    raise SystemExit(main())
