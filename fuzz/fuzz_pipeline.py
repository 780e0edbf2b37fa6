"""atheris target: the whole governed path, with the echo handler.

The input, decoded as UTF-8, is one call's argument text to the ``echo`` tool of a registry
over a canary vault whose ids are in the dictionary. The call must never raise; a refused call
never reaches the handler; a call without a marker arrives byte for byte; and no form of any
value appears in the result, the ledger, an approval request or the host log. A failure names
references and lengths, never a value.

Run: ``python fuzz/fuzz_pipeline.py fuzz/corpus/fuzz_pipeline -dict=fuzz/dicts/fuzz_pipeline.dict``;
reproduce a crash: ``python fuzz/fuzz_pipeline.py crash-<sha1>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz._atheris import instrumented, run

with instrumented(__name__):
    from fuzz.properties import check_pipeline_text


def test_one_input(data: bytes) -> None:
    """Run one call through the governed path and check every surface."""
    check_pipeline_text(data.decode("utf-8", "replace"))


if __name__ == "__main__":
    run(test_one_input)
