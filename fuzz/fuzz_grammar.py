"""atheris target: the grammar on one decoded string.

The input's bytes, decoded as UTF-8 with undecodable bytes kept as lone surrogates, are scanned
as one decoded string and compared with the hand-written scan of the design's grammar (every
reference with its identity and span; the first malformed candidate with its offset, length
and static reason), and the marker pre-scan must never answer a false "no". The target is kept
lean so it runs fast; argument text around strings is the arguments target's job.

Run: ``python fuzz/fuzz_grammar.py fuzz/corpus/fuzz_grammar -dict=fuzz/dicts/fuzz_grammar.dict``;
reproduce a crash: ``python fuzz/fuzz_grammar.py crash-<sha1>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz._atheris import instrumented, run

with instrumented(__name__):
    import reference_impl as host
    from fuzz.properties import check_scan
    from fuzz.strategies import carries_marker


def test_one_input(data: bytes) -> None:
    """Check the grammar on one input."""
    text = data.decode("utf-8", "surrogateescape")
    check_scan(text)
    assert host.has_marker(text) or not carries_marker(text), "the pre-scan missed a marker"


if __name__ == "__main__":
    run(test_one_input)
