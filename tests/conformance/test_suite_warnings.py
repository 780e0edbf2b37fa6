"""The suite's runs turn every warning into an error, except one pytest raises about itself.

pytest's cleanup of its numbered temporary directories can stop part way through a listing
when another pytest session on the machine removes the same directories (the self-test runs
suites side by side); the garbage collector then closes the listing and warns. Under ``-W
error`` that warning became an error of the whole run, so a self-test or a verdict run could
end as a crash for a reason that has nothing to do with the host. The suite's own arguments
ignore that one warning; every other stays an error. The leak is made here by hand, in a run
of its own.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from conformance.arguments import base_arguments

#: The filter the suite's runs carry for pytest's own unclosed listing.
FILTER = "ignore:unclosed scandir iterator:ResourceWarning"

LEAKY = textwrap.dedent(
    """
    import gc
    import os
    import warnings


    def test_leaves_a_listing_open():
        listing = os.scandir(".")
        next(listing, None)
        del listing
        gc.collect()


    def test_other_warnings_stay_errors():
        warnings.warn("still an error", DeprecationWarning)
    """
)


def _run(tmp_path: Path, arguments: list[str]) -> str:
    module = tmp_path / "test_leaky.py"
    module.write_text(LEAKY, encoding="utf-8")
    script = (
        "import sys, pytest; "
        "sys.exit(pytest.main(sys.argv[1:] + ['-p', 'no:secref_conformance', '-rA']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def test_an_unclosed_listing_is_not_an_error_of_the_run(tmp_path: Path) -> None:
    """With the suite's arguments the leak passes; the other warning still fails."""
    arguments = base_arguments((str(tmp_path / "test_leaky.py"),))
    assert FILTER in arguments
    out = _run(tmp_path, arguments)
    assert re.search(r"PASSED \S*::test_leaves_a_listing_open", out), out[-2000:]
    assert re.search(r"FAILED \S*::test_other_warnings_stay_errors", out), out[-2000:]


def test_without_the_filter_the_leak_fails_the_run(tmp_path: Path) -> None:
    """The same run without the filter fails on the leak: the case above can tell."""
    arguments = base_arguments((str(tmp_path / "test_leaky.py"),))
    at = arguments.index(FILTER)
    out = _run(tmp_path, arguments[: at - 1] + arguments[at + 1 :])
    assert re.search(r"FAILED \S*::test_leaves_a_listing_open", out), out[-2000:]
