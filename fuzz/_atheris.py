"""The glue between a fuzz target and atheris: instrumentation, set-up and the run.

This module owns importing atheris (which ships no type stubs, and exists only on Linux), the
instrumentation of the reference host when a target runs as a script, and handing libFuzzer its
command line. It imports nothing of the reference host itself, so a target can instrument the
host before the first import; and a target imported by a test runs without atheris at all.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, Final

#: The packages whose code coverage guides the fuzzer.
INSTRUMENTED: Final = ("reference_impl",)


def _atheris() -> Any:
    import atheris  # type: ignore[import-untyped, unused-ignore]  # atheris ships no type stubs

    return atheris


@contextlib.contextmanager
def instrumented(module_name: str) -> Iterator[None]:
    """Instrument the reference host's imports when the target runs as a script.

    Args:
        module_name: The target's ``__name__``; only ``"__main__"`` instruments, so tests that
            import a target run it plain.
    """
    if module_name != "__main__":
        yield
        return
    with _atheris().instrument_imports(include=list(INSTRUMENTED)):
        yield


def run(test_one_input: Callable[[bytes], object], argv: list[str] | None = None) -> None:
    """Hand ``test_one_input`` to libFuzzer with this process's command line.

    A path given without flags runs that one input and exits, which is how a crash file is
    reproduced: ``python fuzz/fuzz_grammar.py crash-<sha1>``.
    """
    atheris = _atheris()
    atheris.Setup(argv if argv is not None else sys.argv, test_one_input)
    atheris.Fuzz()
