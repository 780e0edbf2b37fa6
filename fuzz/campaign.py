"""A short campaign: every atheris target for a fixed time, with executions per second.

This module owns ``python -m fuzz.campaign`` (``tox -e fuzz``): it runs each target in its own
process for ``--seconds`` (``FUZZ_SECONDS``, 60 by default), with the target's seed corpus and
dictionary, new units kept in a scratch directory so the checked-in seeds stay as they are. It
prints progress as the fuzzer reports it, then a table of executions per second per target,
parsed from libFuzzer's ``-print_final_stats=1``. A crash fails the run and prints the one
command that reproduces it. It must never print a value: targets name references and lengths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO

from conformance.arguments import OneLineParser, add_version

ROOT: Final = Path(__file__).resolve().parent
TARGETS: Final = ("fuzz_grammar", "fuzz_arguments", "fuzz_scrub", "fuzz_pipeline")
SECONDS_ENV: Final = "FUZZ_SECONDS"
DEFAULT_SECONDS: Final = 60

#: libFuzzer's largest input per target: references are short, so the grammar target fuzzes
#: short strings fast; argument trees and whole calls get more room.
MAX_LEN: Final = {
    "fuzz_grammar": 128,
    "fuzz_arguments": 2048,
    "fuzz_scrub": 1024,
    "fuzz_pipeline": 2048,
}

_STAT_RE: Final = re.compile(r"^stat::(\w+):\s+(\d+)", re.MULTILINE)
_PULSE_RE: Final = re.compile(r"^#(\d+)\s+(pulse|NEW|REDUCE|DONE)\b.*?exec/s: (\d+)")
_ARTIFACT_RE: Final = re.compile(r"Test unit written to (\S+)")


@dataclass(frozen=True, slots=True)
class TargetRun:
    """One target's campaign: whether it stayed green and what libFuzzer counted."""

    target: str
    seconds: int
    returncode: int
    executions: int
    exec_per_sec: int
    new_units: int
    artifact: str | None

    @property
    def ok(self) -> bool:
        """Whether the target ran to its time limit without a crash."""
        return self.returncode == 0 and self.artifact is None


def command(target: str, seconds: int, work: Path, artifacts: Path) -> list[str]:
    """Return the command line that fuzzes ``target`` for ``seconds``."""
    return [
        sys.executable,
        str(ROOT / f"{target}.py"),
        str(work),
        str(ROOT / "corpus" / target),
        f"-dict={ROOT / 'dicts' / f'{target}.dict'}",
        f"-max_total_time={seconds}",
        f"-max_len={MAX_LEN[target]}",
        f"-artifact_prefix={artifacts}/{target}-",
        "-print_final_stats=1",
        "-timeout=25",
        "-rss_limit_mb=2048",
    ]


def run_target(target: str, seconds: int, artifacts: Path, out: TextIO = sys.stdout) -> TargetRun:
    """Fuzz one target, echoing progress at most every few seconds.

    Args:
        target: The target's module name.
        seconds: How long to fuzz.
        artifacts: Where a crashing input is written.
        out: Where progress goes.

    Returns:
        What the run counted.
    """
    with tempfile.TemporaryDirectory(prefix=f"{target}-") as scratch:
        process = subprocess.Popen(
            command(target, seconds, Path(scratch), artifacts),
            cwd=ROOT.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert process.stdout is not None
        lines: list[str] = []
        shown = 0.0
        for line in process.stdout:
            lines.append(line)
            pulse = _PULSE_RE.match(line)
            if pulse and (time.monotonic() - shown > 5 or pulse.group(2) == "DONE"):
                shown = time.monotonic()
                runs, rate = int(pulse.group(1)), int(pulse.group(3))
                print(
                    f"  {target}: {runs:>10,} runs, {rate:>7,} exec/s",
                    file=out,
                    flush=True,
                )
        returncode = process.wait()
    output = "".join(lines)
    stats = {name: int(value) for name, value in _STAT_RE.findall(output)}
    artifact = _ARTIFACT_RE.search(output)
    if returncode != 0 or artifact:
        # The traceback names references and lengths only; show its tail.
        print("".join(lines[-40:]), file=out)
    return TargetRun(
        target=target,
        seconds=seconds,
        returncode=returncode,
        executions=stats.get("number_of_executed_units", 0),
        exec_per_sec=stats.get("average_exec_per_sec", 0),
        new_units=stats.get("new_units_added", 0),
        artifact=artifact.group(1) if artifact else None,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; return 0 when every target stayed green."""
    parser = OneLineParser(
        prog="python -m fuzz.campaign",
        description="Run every atheris target (or those named) for a fixed time each, with its "
        "seed corpus and dictionary, and print executions per second per target. A crash fails "
        "the run (exit 1) and prints the one command that reproduces it.",
    )
    add_version(parser)
    parser.add_argument(
        "--seconds",
        type=int,
        default=int(os.environ.get(SECONDS_ENV, DEFAULT_SECONDS)),
        help=f"seconds per target (env {SECONDS_ENV}; default {DEFAULT_SECONDS})",
    )
    parser.add_argument(
        "--targets",
        nargs="+",
        choices=TARGETS,
        default=list(TARGETS),
        metavar="TARGET",
        help=f"the targets to run, of {', '.join(TARGETS)} (default: every one)",
    )
    parser.add_argument(
        "--artifacts",
        type=Path,
        default=Path("fuzz-artifacts"),
        help="where crashes are kept (default: %(default)s)",
    )
    options = parser.parse_args(argv)
    options.artifacts.mkdir(parents=True, exist_ok=True)
    runs = []
    for target in options.targets:
        print(f"{target}: fuzzing for {options.seconds} s", flush=True)
        runs.append(run_target(target, options.seconds, options.artifacts.resolve()))
    print("\ntarget            executions   exec/s   new units   result")
    for run in runs:
        result = "ok" if run.ok else f"CRASH (exit {run.returncode})"
        print(
            f"{run.target:<16} {run.executions:>11,} {run.exec_per_sec:>8,} {run.new_units:>11,}"
            f"   {result}"
        )
    failed = [run for run in runs if not run.ok]
    for run in failed:
        if run.artifact:
            print(f"\nreproduce: python fuzz/{run.target}.py {run.artifact}")
            print(f"keep it:   python -m fuzz.regress promote {run.target} {run.artifact}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
