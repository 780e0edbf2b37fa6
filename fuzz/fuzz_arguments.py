"""atheris target: generated argument trees, through the Hypothesis properties.

The first byte picks a property (parse, substitute, sanitizer, or raw text); for the first three
the rest drives that property's strategy through ``fuzz_one_input``, so the fuzzer's coverage
feedback steers the same generator, with the same ground truth, that the Hypothesis tests use.
For raw text the rest, decoded as UTF-8, is argument text that must never raise or be refused
without a marker, and, wrapped as one JSON string member, must be parsed exactly as the
hand-written scan of that string says.

Run: ``python fuzz/fuzz_arguments.py fuzz/corpus/fuzz_arguments``
``-dict=fuzz/dicts/fuzz_arguments.dict``;
reproduce a crash: ``python fuzz/fuzz_arguments.py crash-<sha1>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz._atheris import instrumented, run

with instrumented(__name__):
    import json

    import reference_impl as host
    from fuzz.oracles import own_scan
    from fuzz.properties import check_raw_text, fuzz_one_input

_KINDS = {
    "id": host.REASON_BAD_ID,
    "field": host.REASON_BAD_FIELD,
    "unterminated": host.REASON_UNTERMINATED,
}


def check_raw(data: bytes) -> None:
    """Raw argument text, and the same text as one JSON string member."""
    text = data.decode("utf-8", "surrogateescape")
    check_raw_text(text)
    found, bad = own_scan(text)
    outcome = host.parse_arguments('{"k":' + json.dumps(text) + "}")
    if bad is None:
        assert isinstance(outcome, host.ParsedArguments), "a string without a problem was refused"
        names = [reference.name for reference in outcome.references]
        want = list(dict.fromkeys(reference.name for reference, _, _ in found))
        assert names == want, f"references {names} differ from the hand scan's {want}"
        return
    offset, length, kind = bad
    located = f"{host.MALFORMED_PREFIX} at /k offset {offset} length {length}: {_KINDS[kind]}"
    assert isinstance(outcome, host.Refusal), "a malformed candidate was accepted"
    assert outcome.message == located, "the refusal does not locate the candidate"


PROPERTIES = ("parse", "substitute", "sanitize")
_RUNNERS = [*(fuzz_one_input(name) for name in PROPERTIES), check_raw]


def test_one_input(data: bytes) -> None:
    """Run the check the first byte picks on the rest of the input."""
    if not data:
        return
    _RUNNERS[data[0] % len(_RUNNERS)](data[1:])


if __name__ == "__main__":
    run(test_one_input)
