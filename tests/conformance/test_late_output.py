"""The late-output barrier over standard error (decisions S1.9): every byte searched, or said not.

Unit tests of the search (forms cut across chunks, a stream cut by the spool's bound, one
adapter start never joined to the next), of the eviction of the per-check ``printed`` surface,
and of the barrier's check result; then end-to-end runs of the console script through a proxy
around the reference driver that writes a configured value on standard error where no check's
sweep reads it (``broken_hosts/late_stderr.py``). No test prints a value.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Final

import pytest

from conformance import _barrier
from conformance.canary import Detector, Guarded, Kind, Mint, Surface, required_forms
from conformance.host import Observation
from conformance.hosts._connection import Connection
from conformance.hosts._protocol import PRINTED_LIMIT_BYTES, HostCrashedError
from conformance.hosts._spool import Spool, search_spool
from conformance.late import (
    STDERR_REQUIREMENTS,
    FormSearch,
    LateReport,
    decoded,
    run_guarded,
)
from conformance.outcomes import Outcome
from conformance.report import NARROWED
from tests.conformance.suite_runs import console

HERE: Final = Path(__file__).parent
PROXY: Final = HERE / "broken_hosts" / "late_stderr.py"

#: One check that cites INV1 and invokes once with a configured value: a narrowed, quick run.
ONE_CHECK: Final = ("--requirements", "INV1-SHA256")
ONE_CHECK_K: Final = "test_sha256_returns_the_hash_only and plain and password"

#: Seconds one end-to-end run may take.
RUN_SECONDS: Final = 30.0


def _canaries(mint: Mint) -> list[Any]:
    return [mint.canary(kind, "password") for kind in Kind]


# --- the search ----------------------------------------------------------------------------


@pytest.mark.parametrize("stride", [1, 8])
def test_every_form_is_found_whatever_the_chunk_boundary(stride: int) -> None:
    """A form cut at any point between two pieces of the stream is still found."""
    canaries = _canaries(Mint())
    search = FormSearch(run_guarded(canaries), stride)
    assert search.stride == stride
    for canary in canaries:
        for name, form in required_forms(canary.value).items():
            text = "head " * 50 + form + " tail" * 50
            start = text.index(form)
            for cut in range(start, start + len(form) + 1):
                found = search.stream([text[:cut], text[cut:]])
                labels = {search.forms[number][:2] for number in found}
                assert any(item.label == canary.label and n == name for item, n in labels), (
                    f"{canary.label} form {name} cut at {cut - start} was missed"
                )


def test_a_form_spread_over_many_small_pieces_is_found() -> None:
    """Pieces shorter than the form: the overlap carries it over several of them."""
    canary = Mint().canary(Kind.SPECIAL, "password")
    search = FormSearch(run_guarded([canary]))
    text = "x" * 100 + canary.value + "y" * 100
    pieces = [text[at : at + 3] for at in range(0, len(text), 3)]
    assert {search.forms[number][1] for number in search.stream(pieces)} == {"a"}


def test_nothing_is_found_in_clean_text_and_near_misses() -> None:
    """A value with one character changed, or cut short by one, is no finding."""
    canary = Mint().canary(Kind.PLAIN, "password")
    search = FormSearch(run_guarded([canary]), 8)
    near = canary.value[:-1] + ("A" if canary.value[-1] != "A" else "B")
    assert search.stream(["clean " * 1000, near, canary.value[:-1]]) == set()


def test_a_character_cut_between_two_chunks_decodes_whole() -> None:
    """Standard error read in chunks decodes as the whole does: no form lost at a cut byte."""
    canary = Mint().canary(Kind.UNICODE, "password")
    data = b"\xff" + f"note {canary.value}".encode()
    search = FormSearch(run_guarded([canary]))
    for cut in range(1, len(data)):
        text = "".join(decoded([data[:cut], data[cut:]]))
        assert text == data.decode("utf-8", "replace")
        assert search.stream([text]), f"the value was missed with a cut at byte {cut}"


# --- the spool -----------------------------------------------------------------------------


def test_spool_finds_a_value_in_its_chunked_read_and_names_no_value() -> None:
    """Everything kept is searched, read back in small chunks; a finding holds labels only."""
    canaries = _canaries(Mint())
    spool = Spool()
    spool.segment()
    spool.write(1, b"x" * 5000 + canaries[2].value.encode() + b"y" * 5000)
    report = search_spool(spool, canaries, chunk=7)
    assert [(f.label, f.form) for f in report.findings] == [(canaries[2].label, "a")]
    assert report.searched == ["standard error"]
    assert report.unsearched == []
    described = report.findings[0].describe()
    assert canaries[2].value not in described
    assert "adapter start 1" in described
    assert report.findings[0].requirements == STDERR_REQUIREMENTS == ("INV1", "LOG-001")


@pytest.mark.parametrize("filler", [0, 300 * 1024, 1100 * 1024], ids=["short", "long", "strided"])
def test_spool_search_finds_every_kind_whatever_the_length(filler: int) -> None:
    """Short text is first narrowed to the canaries it may hold; long text is indexed, then
    strided: each way, every form of every kind is found, cut across the read's chunks."""
    mint = Mint()
    canaries = [mint.canary(kind, "password") for kind in Kind for _ in range(3)]
    wanted = canaries[::3]
    spool = Spool()
    spool.segment()
    spool.write(1, b"f" * filler)
    for canary in wanted:
        for form in required_forms(canary.value).values():
            spool.write(1, b" <" + form.encode("utf-8", "surrogatepass") + b"> ")
    report = search_spool(spool, canaries, chunk=4099)
    found = {(finding.label, finding.form) for finding in report.findings}
    expected = {(c.label, name) for c in wanted for name in required_forms(c.value)}
    assert found == expected


def test_spool_beyond_its_bound_is_not_searched() -> None:
    """Bytes past the bound are counted, never kept: the stream is not searched whole."""
    canary = Mint().canary(Kind.PLAIN, "password")
    spool = Spool(limit=1000)
    spool.segment()
    spool.write(1, b"z" * 990)
    spool.write(1, canary.value.encode())  # straddles the bound: only its start is kept
    report = search_spool(spool, [canary])
    assert report.findings == []
    assert report.searched == []
    assert report.unsearched
    assert report.unsearched[0][0] == "standard error"
    assert "beyond the 1000 kept" in report.unsearched[0][1]
    assert spool.size == 1000
    assert spool.dropped == len(canary.value) - 10


def test_spool_under_its_bound_keeps_what_came_before_the_cut() -> None:
    """A value before the bound is found even when later bytes were dropped."""
    canary = Mint().canary(Kind.PLAIN, "password")
    spool = Spool(limit=100)
    spool.segment()
    spool.write(1, canary.value.encode() + b"w" * 200)
    report = search_spool(spool, [canary])
    assert [f.label for f in report.findings] == [canary.label]
    assert report.unsearched


def test_two_starts_of_the_adapter_are_never_joined() -> None:
    """A form split between the output of two processes is not one the host wrote."""
    canary = Mint().canary(Kind.PLAIN, "password")
    value = canary.value.encode()
    spool = Spool()
    first = spool.segment()
    spool.write(first, value[:12])
    second = spool.segment()
    spool.write(second, value[12:])
    spool.write(first, value)  # a late reader of the first start: counted, not kept
    report = search_spool(spool, [canary])
    assert report.findings == []
    assert spool.dropped == len(value)


def test_sealed_spool_counts_later_writes_as_not_searched() -> None:
    spool = Spool()
    spool.segment()
    spool.seal()
    spool.write(1, b"after the barrier")
    assert search_spool(spool, []).unsearched


# --- the per-check printed surface ---------------------------------------------------------


def test_a_cut_printed_surface_is_not_searched() -> None:
    """An observation whose standard error was cut is reported unsearched; what is left is
    still searched (decisions S1.3, S1.9)."""
    canary = Mint().canary(Kind.PLAIN, "password")
    detector = Detector((Guarded(canary.label, canary.value),))
    base = Observation(b"", (), (), (), (), printed="clean")
    cut = Observation(b"", (), (), (), (), printed=f"left {canary.value}", printed_whole=False)
    assert Surface.PRINTED not in detector.sweep((), base).unsearched
    swept = detector.sweep((), cut)
    assert Surface.PRINTED in swept.unsearched
    assert [finding.surface for finding in swept.leaks] == [Surface.PRINTED]


def test_connection_marks_the_printed_surface_cut_and_spools_every_byte() -> None:
    """Past the per-check bound, ``printed`` is cut and says so; the spool keeps it all."""
    total = PRINTED_LIMIT_BYTES + 65536
    # The host writes once told to, after the check's mark: a host that wrote at once could be
    # read whole before the mark, leaving nothing after it to cut.
    script = (
        "import sys; sys.stdin.readline(); "
        f"sys.stderr.buffer.write(b'q' * {total}); sys.stderr.flush()"
    )
    spool = Spool()
    connection = Connection(
        [sys.executable, "-c", script],
        on_prompt=lambda *_: None,
        schemas=None,
        redact=lambda text: text,
        env=None,
        cwd=None,
        spool=spool,
    )
    try:
        connection.mark_printed()
        assert connection.process.stdin is not None
        os.write(connection.process.stdin.fileno(), b"go\n")
        deadline = time.monotonic() + 20
        # The reader writes each chunk to the spool before it trims the printed surface, so
        # both are waited for: the spool alone can be whole a moment before the cut is marked.
        while (spool.size < total or not connection.printed_cut) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert connection.printed_cut
        assert len(connection.printed()) == PRINTED_LIMIT_BYTES
    finally:
        connection.close()
    assert spool.size == total
    assert spool.gaps() == []
    connection.mark_printed()
    assert not connection.printed_cut


def test_standard_error_is_read_to_its_end_after_the_host_failed() -> None:
    """What a host writes on its way down, after its check met a failure, is kept."""
    canary = Mint().canary(Kind.PLAIN, "password")
    script = (
        "import sys, time; time.sleep(0.3); "
        f"sys.stderr.write('dying: ' + {canary.value!r}); sys.stderr.flush()"
    )
    spool = Spool()
    connection = Connection(
        [sys.executable, "-c", script],
        on_prompt=lambda *_: None,
        schemas=None,
        redact=lambda text: text,
        env=None,
        cwd=None,
        spool=spool,
    )
    try:
        connection.failure = HostCrashedError("the check met a failure")
        connection.supervised.wait(10)
    finally:
        connection.close()
    assert [f.label for f in search_spool(spool, [canary]).findings] == [canary.label]


# --- the barrier's check -------------------------------------------------------------------


def test_barrier_fails_with_a_leak_on_a_finding() -> None:
    canary = Mint().canary(Kind.PLAIN, "password")
    spool = Spool()
    spool.segment()
    spool.write(1, canary.value.encode())
    result = _barrier.judged(search_spool(spool, [canary]))
    assert result.outcome is Outcome.FAIL
    assert result.leak
    assert result.failed == ("INV1", "LOG-001")
    assert result.detail is not None
    assert canary.label in result.detail
    assert canary.value not in result.detail


def test_barrier_leaves_its_requirements_unchecked_when_not_searched_whole() -> None:
    result = _barrier.judged(LateReport(unsearched=[("standard error", "cut")]))
    assert result.outcome is Outcome.SKIPPED
    assert {rid for rid, _ in result.unchecked} == {"INV1", "LOG-001"}
    assert result.not_searched == ("standard error",)


def test_barrier_passes_when_everything_was_searched_clean() -> None:
    result = _barrier.judged(LateReport(searched=["standard error"]))
    assert result.outcome is Outcome.PASS
    assert not result.unchecked


def test_workers_barriers_fold_into_one() -> None:
    clean = _barrier.judged(LateReport(searched=["standard error"]))
    unread = _barrier.judged(LateReport(unsearched=[("standard error", "cut")]))
    canary = Mint().canary(Kind.PLAIN, "password")
    spool = Spool()
    spool.segment()
    spool.write(1, canary.value.encode())
    leaked = _barrier.judged(search_spool(spool, [canary]))
    assert _barrier.merged([clean, clean]).outcome is Outcome.PASS  # type: ignore[union-attr]
    assert _barrier.merged([clean, unread]).outcome is Outcome.SKIPPED  # type: ignore[union-attr]
    folded = _barrier.merged([clean, leaked, unread])
    assert folded is not None
    assert folded.outcome is Outcome.FAIL
    assert folded.leak
    assert folded.nodeid == _barrier.NODE_ID
    assert folded.unchecked
    assert _barrier.merged([]) is None


def test_a_host_that_keeps_no_late_output_adds_no_check() -> None:
    assert _barrier.search([object()], []) is None


# --- end to end ----------------------------------------------------------------------------


def _run(tmp_path: Path, host: str, *options: str, env: dict[str, str] | None = None) -> Any:
    """Run the console script narrowed to one check; return (status, report, JUnit root)."""
    done, seconds = console(
        tmp_path,
        "--host",
        host,
        *ONE_CHECK,
        "--report-json",
        str(tmp_path / "report.json"),
        "--report-md",
        str(tmp_path / "report.md"),
        *options,
        "--",
        "--junitxml",
        str(tmp_path / "junit.xml"),
        "-p",
        "no:cacheprovider",
        "-k",
        ONE_CHECK_K,
        timeout=RUN_SECONDS * 2,
        env=env,
    )
    assert seconds < RUN_SECONDS
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    junit = ElementTree.parse(tmp_path / "junit.xml").getroot()  # noqa: S314 (our own file)
    return done.returncode, report, junit, done.stdout + done.stderr


def _proxy(mode: str) -> str:
    return f"{sys.executable} {PROXY} {mode} -- {sys.executable} -m reference_impl.driver"


def _check(report: dict[str, Any], nodeid: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["checks"] if c["id"] == nodeid)
    return found


def _verdict_case(junit: ElementTree.Element) -> ElementTree.Element:
    return next(
        case
        for case in junit.iter("testcase")
        if case.get("classname") == "secref-conformance" and case.get("name") == "verdict"
    )


def test_value_written_after_the_response_is_found(tmp_path: Path) -> None:
    """A value on standard error 0.3 s after the invoke response: not conformant, exit 1,
    the JUnit verdict case failed; the barrier's check names the label, never the value."""
    status, report, junit, output = _run(tmp_path, _proxy("late"))
    assert report["verdict"] == "not-conformant"
    assert status == 1 == report["exitCode"]
    late = _check(report, _barrier.NODE_ID)
    assert late["outcome"] == "fail"
    assert late["leak"]
    assert set(late["failedRequirements"]) == {"INV1", "LOG-001"}
    assert "adapter start 1" in late["detail"]
    assert _verdict_case(junit).find("failure") is not None
    markdown = (tmp_path / "report.md").read_text("utf-8")
    assert _barrier.NODE_ID in markdown
    # The terminal says it too: the verdict, and the failing requirement's row.
    assert "verdict: not-conformant" in output
    assert re.search(r"^ *LOG-001 +MUST +fail", output, re.MULTILINE), output[-2000:]


def test_value_pushed_out_of_the_printed_bound_is_found(tmp_path: Path) -> None:
    """A value then 8 MiB of filler: the check's printed surface is not searched (its INV1
    unchecked), and the barrier, which kept every byte, finds the value: not conformant."""
    status, report, junit, _ = _run(tmp_path, _proxy("evicted"))
    assert report["verdict"] == "not-conformant"
    assert status == 1
    checks = [c for c in report["checks"] if c["id"] != _barrier.NODE_ID]
    assert checks
    assert all("printed output" in c["sweep"]["notSearched"] for c in checks)
    assert all(
        any(item["requirement"] == "INV1" for item in check["unchecked"]) for check in checks
    )
    assert _check(report, _barrier.NODE_ID)["outcome"] == "fail"
    assert _verdict_case(junit).find("failure") is not None


def test_reference_driver_behind_the_proxy_stays_conformant(tmp_path: Path) -> None:
    """The proxy that leaks nothing, around the unchanged reference driver: the barrier
    searched standard error whole and the narrowed run is conformant, exit 0."""
    status, report, junit, _ = _run(tmp_path, _proxy("none"))
    assert report["verdict"] == NARROWED
    assert status == 0 == report["exitCode"]
    late = _check(report, _barrier.NODE_ID)
    assert late["outcome"] == "pass"
    assert late["sweep"]["calls"][0]["searched"] == ["standard error"]
    assert _verdict_case(junit).find("failure") is None


def test_reference_driver_with_workers_stays_conformant_with_one_barrier_check(
    tmp_path: Path,
) -> None:
    """Two workers, each with its own adapter: one barrier check reaches the report."""
    host = f"{sys.executable} -m reference_impl.driver"
    status, report, _, _ = _run(tmp_path, host, "--workers", "2")
    assert status == 0, report["verdict"]
    assert [c["id"] for c in report["checks"]].count(_barrier.NODE_ID) == 1
    assert _check(report, _barrier.NODE_ID)["outcome"] == "pass"


def test_late_value_with_workers_reaches_the_controller(tmp_path: Path) -> None:
    """In a parallel run the worker's barrier result crosses to the controller and fails it."""
    status, report, _, _ = _run(tmp_path, _proxy("late"), "--workers", "2")
    assert report["verdict"] == "not-conformant"
    assert status == 1
    assert _check(report, _barrier.NODE_ID)["outcome"] == "fail"


def test_late_value_over_mcp_is_found_in_the_drivers_standard_error(tmp_path: Path) -> None:
    """Over MCP the adapter's standard error is searched too: a value written 0.3 s after
    ``configure`` is found by the barrier, not conformant."""
    status, report, junit, _ = _run(tmp_path, _proxy("late-configure"), "--via", "mcp")
    assert report["verdict"] == "not-conformant"
    assert status == 1
    assert _check(report, _barrier.NODE_ID)["outcome"] == "fail"
    assert _verdict_case(junit).find("failure") is not None
