"""atheris target: the scrubber, through the Hypothesis scrub property.

The input drives the scrub strategy (overlapping values, prefixes, placeholder characters,
arbitrary Unicode around every form) through ``fuzz_one_input``; the property checks that no
form of a value of 8 or more code points survives and that the result equals the naive
leftmost-longest oracle.

Run: ``python fuzz/fuzz_scrub.py fuzz/corpus/fuzz_scrub -dict=fuzz/dicts/fuzz_scrub.dict``;
reproduce a crash: ``python fuzz/fuzz_scrub.py crash-<sha1>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz._atheris import instrumented, run

with instrumented(__name__):
    from fuzz.properties import fuzz_one_input

_SCRUB = fuzz_one_input("scrub")


def test_one_input(data: bytes) -> None:
    """Run the scrub property on one input."""
    _SCRUB(data)


if __name__ == "__main__":
    run(test_one_input)
