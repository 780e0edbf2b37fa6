"""Step [11], execution: results, failure text, timeouts, and scrubbing of what comes back."""

from __future__ import annotations

import threading

import pytest

from reference_impl import Disposition, Tool, ToolArguments, ToolResult
from reference_impl._limits import ERROR_SNIPPET_CHARS, EXECUTION_TIMEOUT_SECONDS
from tests.reference_impl.support import ID_A, PASSWORD_A, args, build, leaks, ref


@pytest.mark.req("SUBST-003")
def test_text_and_results_both_count_as_results() -> None:
    """A handler may return text or a ToolResult; is_error is carried through."""
    tools = [
        Tool("text", "demo", lambda a: "plain"),
        Tool("failing", "demo", lambda a: ToolResult("bad input", is_error=True)),
    ]
    h = build(extra_tools=tools)
    plain = h.invoke("text", args())
    assert (plain.text, plain.is_error) == ("plain", False)
    failed = h.invoke("failing", args())
    assert (failed.text, failed.is_error) == ("bad input", True)
    assert h.records[-1].error_snippet == "bad input"
    assert h.records[0].error_snippet is None


@pytest.mark.req("MCP-003")
def test_rich_surfaces_travel_with_the_result() -> None:
    """A handler's rich result reaches the agent scrubbed, not dropped on the worker's thread."""
    tools = [Tool("rich", "demo", lambda a: ToolResult("t", rich={"note": str(a.get("v"))}))]
    h = build(extra_tools=tools)
    plain = h.invoke("rich", '{"v": "kept"}')
    assert plain.rich == {"note": "kept"}
    secret = h.invoke("rich", args(v=ref(ID_A)))
    assert secret.rich == {"note": f"[secret:{ID_A}.password]"}


@pytest.mark.req("SCRUB-010")
def test_an_exception_becomes_failure_text() -> None:
    """A raising handler gives failure text naming the tool."""

    def handler(arguments: ToolArguments) -> str:
        raise ValueError("no such file")

    h = build(extra_tools=[Tool("raiser", "demo", handler)])
    out = h.invoke("raiser", args())
    assert out.is_error
    assert out.text == "Tool raiser failed: no such file"


@pytest.mark.req("SCRUB-010")
def test_an_exception_that_cannot_format_itself_is_still_failure_text() -> None:
    """An exception whose own __str__ raises is named by its type; invoke never raises."""

    class UnprintableError(Exception):
        def __str__(self) -> str:
            raise RuntimeError("cannot format")

    def handler(arguments: ToolArguments) -> str:
        raise UnprintableError

    h = build(extra_tools=[Tool("odd", "demo", handler)])
    out = h.invoke("odd", args())
    assert out.text == "Tool odd failed: UnprintableError"
    assert h.records[-1].is_error


@pytest.mark.req("SCRUB-010", "INV1-THROW")
def test_failure_text_with_a_value_is_scrubbed() -> None:
    """A thrower that quotes its argument leaks nothing to the result or the ledger."""
    h = build()
    out = h.invoke("thrower", args(a="use " + ref(ID_A)))
    assert out.is_error
    assert out.text == f"Tool thrower failed: could not use a | use [secret:{ID_A}.password]"
    assert leaks(out.text) == []
    snippet = h.records[-1].error_snippet
    assert snippet is not None
    assert leaks(snippet) == []


@pytest.mark.req("SCRUB-010")
def test_a_handler_that_overruns_times_out() -> None:
    """Past the execution timeout the call ends with failure text; the worker is abandoned."""
    release = threading.Event()

    def slow(arguments: ToolArguments) -> str:
        release.wait(5)
        return "late " + arguments.raw

    h = build(extra_tools=[Tool("slow", "demo", slow)], execution_timeout=0.05)
    out = h.invoke("slow", args(a=ref(ID_A)))
    release.set()
    assert out.is_error
    assert out.text == "Tool slow timed out after 0.05 s"
    assert out.disposition is Disposition.APPROVED_ONCE
    assert EXECUTION_TIMEOUT_SECONDS == 60.0


@pytest.mark.req("LEDG-001")
def test_the_error_snippet_is_cut_to_500_characters() -> None:
    """errorSnippet keeps 500 characters, the note included; the result keeps everything."""
    h = build(extra_tools=[Tool("long", "demo", lambda a: ToolResult("e" * 2000, is_error=True))])
    out = h.invoke("long", args())
    assert len(out.text) == 2000
    snippet = h.records[-1].error_snippet
    assert snippet is not None
    assert len(snippet) == ERROR_SNIPPET_CHARS
    assert snippet.endswith("... [2000 characters, cut]")


@pytest.mark.req("CAP-001", "CAP-002", "SCRUB-011")
@pytest.mark.parametrize("shift", range(-12, 4))
def test_scrubbing_runs_before_the_cap(shift: int) -> None:
    """A value straddling the cut is scrubbed whole first; no 8 characters of it survive."""
    from reference_impl import RESULT_CAP_CHARS

    def overcap(arguments: ToolArguments) -> str:
        value = arguments.string("a") or ""
        note = 60  # roughly the cap's note; the shifts move the value across the cut
        filler = "f" * (RESULT_CAP_CHARS - note + shift)
        return filler + value + "g" * 100

    h = build(extra_tools=[Tool("overcap", "demo", overcap)])
    out = h.invoke("overcap", args(a=ref(ID_A)))
    assert len(out.text) <= RESULT_CAP_CHARS
    fragments = [
        start for start in range(len(PASSWORD_A) - 7) if PASSWORD_A[start : start + 8] in out.text
    ]
    assert fragments == []
