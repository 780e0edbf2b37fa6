"""Fuzz regressions: a crash found once is replayed in CI for good.

This module owns ``fuzz/regressions/*.json``. Each file keeps one input that once broke a
target: the target's name, the input bytes (base64), and, for the targets driven by Hypothesis,
the decoded argument text or scrub case (for a sanitizer case, the text with the canaries and
spellings it was built with), so the regression stays meaningful when the strategies change.
``python -m fuzz.regress promote <target> <crash-file>`` writes one; ``python -m
fuzz.regress replay`` (and ``tests/fuzz/test_regressions.py``) runs them all. Files are never
edited once written; a new finding is a new file with the next ``FUZZ-NNNN`` id. A regression
becomes a conformance vector by copying its argument text into a new vector with a new id.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hypothesis import given

from conformance.arguments import OneLineParser, add_version
from fuzz import properties
from fuzz.strategies import ArgCase, ScrubCase, Template

REGRESSIONS: Final = Path(__file__).resolve().parent / "regressions"
_ID_PREFIX: Final = "FUZZ-"


@dataclass(frozen=True, slots=True)
class Regression:
    """One kept input.

    Attributes:
        id: ``FUZZ-NNNN``, never reused.
        target: The atheris target that found it.
        data: The input bytes as the target read them.
        case: The decoded case, for targets driven by Hypothesis (``{"raw": ...}`` or a scrub
            case), or ``None``.
        note: What broke, in words (no value).
    """

    id: str
    target: str
    data: bytes
    case: dict[str, Any] | None
    note: str


def load(path: Path) -> Regression:
    """Read one regression file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return Regression(
        id=data["id"],
        target=data["target"],
        data=base64.b64decode(data["input_base64"]),
        case=data.get("case"),
        note=data.get("note", ""),
    )


def all_regressions() -> list[Regression]:
    """Read every regression file, in id order."""
    return sorted((load(path) for path in REGRESSIONS.glob("*.json")), key=lambda r: r.id)


def target_input(target: str) -> Callable[[bytes], object]:
    """Return a target's ``test_one_input``, imported without instrumentation."""
    module = importlib.import_module(f"fuzz.{target}")
    one: Callable[[bytes], object] = module.test_one_input
    return one


def replay(regression: Regression) -> None:
    """Run a regression: its bytes through its target, and its decoded case through the check.

    Raises:
        AssertionError: The regression is back.
    """
    target_input(regression.target)(regression.data)
    case = regression.case
    if case is None:
        return
    if "resolved" in case:
        properties.check_scrub(ScrubCase.from_json(case))
    elif case.get("property") == "sanitize":
        properties.check_sanitize(
            ArgCase(
                raw=case["raw"],
                template=Template("object"),
                references=(),
                problem=None,
                shape="object",
                marker=True,
                canaries=tuple(case["canaries"]),
                spellings=tuple(case["spellings"]),
            )
        )
    else:
        properties.check_raw_text(case["raw"])
        properties.check_pipeline_text(case["raw"])


def decode_case(target: str, data: bytes) -> dict[str, Any] | None:
    """Return what a Hypothesis-driven target generated from ``data``, as data."""
    if target == "fuzz_scrub":
        name, buffer = "scrub", data
    elif target == "fuzz_arguments" and data and data[0] % 4 < 3:
        name, buffer = ("parse", "substitute", "sanitize")[data[0] % 4], data[1:]
    elif target == "fuzz_arguments":
        return {"raw": data[1:].decode("utf-8", "surrogateescape")} if data else None
    elif target == "fuzz_pipeline":
        return {"raw": data.decode("utf-8", "replace")}
    else:
        return {"raw": data.decode("utf-8", "surrogateescape")}
    strategy, _ = properties.PROPERTIES[name]
    seen: list[Any] = []

    def keep(case: Any) -> None:
        seen.append(case)

    capture: Any = properties.FUZZ_SETTINGS(given(strategy)(keep))
    capture.hypothesis.fuzz_one_input(buffer)
    if not seen:
        return None
    case = seen[0]
    case = getattr(case, "case", case)  # a substitution case keeps its arguments
    result: dict[str, Any] = case.to_json()
    return result


def promote(target: str, crash: Path, note: str) -> Path:
    """Keep a crashing input as the next regression file.

    Returns:
        The file written.
    """
    data = crash.read_bytes()
    numbers = [int(r.id.removeprefix(_ID_PREFIX)) for r in all_regressions()]
    regression_id = f"{_ID_PREFIX}{max(numbers, default=0) + 1:04d}"
    body: dict[str, Any] = {
        "id": regression_id,
        "target": target,
        "input_base64": base64.b64encode(data).decode("ascii"),
        "sha1": hashlib.sha1(data).hexdigest(),  # noqa: S324 - names the libFuzzer artifact
        "note": note,
    }
    case = decode_case(target, data)
    if case is not None:
        body["case"] = case
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"{regression_id.lower()}-{target}.json"
    path.write_text(json.dumps(body, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    """``promote <target> <crash-file> [--note ...]`` or ``replay``."""
    parser = OneLineParser(
        prog="python -m fuzz.regress",
        description="Keep a crashing input as a regression file, or replay every regression.",
    )
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    keep = sub.add_parser("promote", help="keep a crashing input as a regression")
    keep.add_argument("target", help="the fuzz target that crashed, e.g. fuzz_grammar")
    keep.add_argument("crash", type=Path, help="the crashing input libFuzzer wrote")
    keep.add_argument(
        "--note",
        default="found by the fuzzer",
        help="what the regression is about (default: %(default)r)",
    )
    sub.add_parser("replay", help="replay every regression")
    options = parser.parse_args(argv)
    if options.command == "promote":
        print(promote(options.target, options.crash, options.note))
        return 0
    failures = 0
    for regression in all_regressions():
        try:
            replay(regression)
        except AssertionError as error:
            failures += 1
            print(f"{regression.id} ({regression.target}): {error}")
        else:
            print(f"{regression.id} ({regression.target}): ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
