"""The governed path end to end: the transparency tax, and resolution from a large vault."""

from __future__ import annotations

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import workloads
from reference_impl import Policy, Registry, Rule, Tool, ToolArguments, ToolResult, resolve


def _write_file(arguments: ToolArguments) -> ToolResult:
    """A file-write handler that reads its arguments and writes nowhere."""
    content = arguments.view()["content"]
    assert isinstance(content, str)
    return ToolResult(f"wrote {len(content)} characters")


@pytest.fixture(scope="module")
def registry() -> Registry:
    """A registry whose policy allows the file-write tool, so no call waits on a prompt."""
    host = Registry(policy=Policy(tools={"write_file": Rule.ALLOW}))
    host.register(Tool("write_file", "files", _write_file))
    return host


def test_invoke(benchmark: BenchmarkFixture, registry: Registry) -> None:
    """A reference-free call through ``Registry.invoke``: what the governed path costs in all."""
    raw = workloads.file_write_arguments()
    outcome = benchmark(registry.invoke, "write_file", raw)
    assert not outcome.is_error
    assert not outcome.secret_refs


def test_handler_direct(benchmark: BenchmarkFixture) -> None:
    """The same handler called directly: the baseline of the transparency tax."""
    raw = workloads.file_write_arguments()
    benchmark(lambda: _write_file(ToolArguments(raw)))


def test_resolve(benchmark: BenchmarkFixture) -> None:
    """Resolution of three references on the last page of 10,000 secrets: a 50-page walk."""
    vault = workloads.vault()
    references = workloads.last_page_references()
    result = benchmark(resolve, vault, references)
    assert isinstance(result, tuple)
    assert len(result[0]) == len(references)
