"""What a host says about itself is data, never the suite's state (decisions S1.8).

The capabilities an adapter may announce are the protocol's published list, one constant read
from the protocol schema; an unknown name, or a name of the suite's own such as ``via.mcp``, is
refused at ``start`` with one line on standard error and exit status 2. The path under test
(in process, driver, MCP) comes from the suite's options alone. A host that restarts as another
(another name or other capabilities) is a harness error for the run, never a failed check,
whatever the expectations file says. The attacks run the console script against the small
adapters of ``broken_hosts/``: a proxy that adds names to the reference driver's announcement,
and an adapter that crashes once and comes back as another host.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from conformance.host import HandlerKind, HostConfig, ToolSpec
from conformance.hosts import path_of
from conformance.hosts._protocol import (
    PUBLISHED_CAPABILITIES,
    ProtocolSchemas,
    UnpublishedCapabilityError,
    published_capabilities,
)
from conformance.hosts.subprocess import (
    HostAbandonedError,
    HostChangedError,
    HostCrashedError,
    SubprocessHost,
)
from conformance.report import EXIT_CODES, HARNESS_ERROR, run_scopes
from conformance.scenario import RecordingHost
from conformance.via import DRIVER, INPROCESS, MCP, same_arguments, via_mcp
from tests.conformance.suite_runs import console

BROKEN: Final = Path(__file__).parent / "broken_hosts"
PROXY: Final = BROKEN / "announcing_proxy.py"
ADAPTER: Final = BROKEN / "failing_adapter.py"
DOC: Final = Path(__file__).resolve().parents[2] / "docs" / "driver-protocol.md"
SCHEMA: Final = Path(__file__).resolve().parents[2] / "conformance" / "schemas" / "protocol"

#: Seconds a run refused at the handshake may take: about one to start the interpreter and the
#: adapter; loose, because the machine may be shared.
REFUSED_LIMIT_S: Final = 20.0

CONFIG: Final = HostConfig(tools=(ToolSpec("recorder", "plugin.test", HandlerKind.RECORDER),))


def proxied(names: str) -> str:
    """Return the reference driver behind the proxy that adds ``names`` to its announcement."""
    return shlex.join(
        [sys.executable, str(PROXY), names, "--", sys.executable, "-m", "reference_impl.driver"]
    )


# --- the published list ------------------------------------------------------------------------


def test_the_published_list_is_one_constant_from_the_schema() -> None:
    """The list is the schema's enum, the document's table, and covers what the reference
    host announces; no name of the suite's own is in it."""
    common = json.loads((SCHEMA / "common.schema.json").read_text(encoding="utf-8"))
    assert frozenset(common["$defs"]["capability"]["enum"]) == PUBLISHED_CAPABILITIES
    table = DOC.read_text(encoding="utf-8").split("## Capabilities", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z.\-]+)` \|", table, re.MULTILINE))
    assert documented == PUBLISHED_CAPABILITIES
    from reference_impl.harness import CAPABILITIES

    assert set(CAPABILITIES) <= PUBLISHED_CAPABILITIES
    assert not any(name.startswith("via") for name in PUBLISHED_CAPABILITIES)


@pytest.mark.parametrize(
    ("announced", "cause"),
    [
        (["start", "via.mcp"], "a name of the suite's own"),
        (["via"], "a name of the suite's own"),
        (["via.driver", "teleport"], "a name of the suite's own"),
        (["start", "teleport"], "does not publish: 'teleport'"),
        (["observe.ledger", "observe.everything"], "does not publish: 'observe.everything'"),
        ("via.mcp", "as str, not as a list"),
        ([1], "not a string (int)"),
    ],
)
def test_unpublished_names_are_refused_with_the_cause(announced: object, cause: str) -> None:
    """Each way of announcing what the protocol does not publish is refused, the cause named."""
    with pytest.raises(UnpublishedCapabilityError, match=re.escape(cause)) as refused:
        published_capabilities(announced)
    assert "\n" not in str(refused.value)


def test_a_refused_name_is_quoted_inert_and_cut() -> None:
    """Control characters are shown escaped, a long name is cut, and many are counted."""
    names = ["\x1b[31mred\nline", "x" * 500, *(f"n{number}" for number in range(10))]
    with pytest.raises(UnpublishedCapabilityError) as refused:
        published_capabilities(names)
    text = str(refused.value)
    assert "\x1b" not in text
    assert "\n" not in text
    assert "x" * 100 not in text
    assert "and 7 more" in text


def test_every_published_name_is_accepted() -> None:
    """The published list itself, in any order and with repeats, is accepted as it is."""
    names = sorted(PUBLISHED_CAPABILITIES)
    assert published_capabilities([*names, names[0]]) == PUBLISHED_CAPABILITIES
    assert published_capabilities([]) == frozenset()


def test_schema_validation_refuses_by_name() -> None:
    """With ``--validate-protocol`` the start answer is refused with the same named cause."""
    message = {
        "id": 0,
        "result": {
            "protocol": 1,
            "host": {"name": "h", "version": "1", "language": "go", "capabilities": ["via.mcp"]},
        },
    }
    with pytest.raises(UnpublishedCapabilityError, match="a name of the suite's own"):
        ProtocolSchemas().check("start.response", message, "host")
    message["result"]["host"]["capabilities"] = ["start"]  # type: ignore[index]
    ProtocolSchemas().check("start.response", message, "host")


# --- the path under test is the suite's own ----------------------------------------------------


class _Announcing:
    """A host whose description announces whatever it is given (the unit tests' stand-in)."""

    def __init__(self, capabilities: frozenset[str]) -> None:
        self.capabilities = capabilities

    def info(self) -> Any:
        from conformance.host import HostInfo

        return HostInfo("liar", "0", "python", self.capabilities)


def test_the_path_comes_from_the_options_never_the_host() -> None:
    """A host's announcement changes neither the path nor the comparison by value."""
    assert path_of(None, MCP) == INPROCESS
    assert path_of("mutant:floor-nine", MCP) == INPROCESS
    assert path_of("python -m adapter", "driver") == DRIVER
    assert path_of("python -m adapter", MCP) == MCP
    liar = RecordingHost(_Announcing(frozenset({"via.mcp", "start"})), DRIVER)  # type: ignore[arg-type]
    assert not via_mcp(liar)
    # Equal as JSON, not byte for byte: only a run the suite sends through MCP may say so.
    assert not same_arguments(liar, '{"a": 1}', '{"a":1}')
    wire = RecordingHost(_Announcing(frozenset()), MCP)  # type: ignore[arg-type]
    assert via_mcp(wire)
    assert same_arguments(wire, '{"a": 1}', '{"a":1}')
    assert "mcp" not in run_scopes({"capabilities": ["via.mcp"], "via": DRIVER})
    assert "mcp" in run_scopes({"capabilities": [], "via": MCP})
    with pytest.raises(ValueError, match="no path under test"):
        RecordingHost(_Announcing(frozenset()), "via.mcp")  # type: ignore[arg-type]


# --- refused at start ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "validate", "cause"),
    [
        ("via.mcp", False, "'via.mcp', a name of the suite's own"),
        ("via.mcp", True, "'via.mcp', a name of the suite's own"),
        ("teleport", False, "does not publish: 'teleport'"),
    ],
)
def test_a_proxy_that_adds_a_name_is_refused_at_start(
    tmp_path: Path, names: str, validate: bool, cause: str
) -> None:
    """The attack of S1.8: the name is refused at the handshake, one line, exit 2, no run."""
    options = ["--validate-protocol"] if validate else []
    done, seconds = console(tmp_path, "--host", proxied(names), *options)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("secref-conformance: ")
    assert cause in lines[0]
    assert not (tmp_path / "reports").exists(), "no check may run"
    assert seconds < REFUSED_LIMIT_S, f"took {seconds:.1f} s"


def test_the_proxy_alone_passes(tmp_path: Path) -> None:
    """The proxy adding a published name the driver already has changes nothing: the refusal
    is of the name, not of the proxy."""
    done, _seconds = console(tmp_path, "smoke", "--host", proxied("start"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


# --- a host that restarts as another -----------------------------------------------------------


def adapter(mode: str, starts: Path) -> str:
    """Return the command line of the failing adapter in ``mode``, counting its starts."""
    return shlex.join([sys.executable, str(ADAPTER), mode, str(starts)])


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("rename", "its name was 'failing adapter', now 'another adapter'"),
        ("recapable", "capabilities added: observe.ledger"),
    ],
)
def test_a_restart_as_another_host_ends_the_host(tmp_path: Path, mode: str, cause: str) -> None:
    """The check that met the restart errors with the cause; the host is abandoned."""
    host = SubprocessHost(adapter(mode, tmp_path / "starts"), call_timeout=5.0)
    try:
        host.reset(CONFIG)
        with pytest.raises(HostCrashedError):
            host.invoke("recorder", "{}")
        with pytest.raises(HostChangedError, match=re.escape(cause)) as changed:
            host.reset(CONFIG)
        assert "harness error for the run" in str(changed.value)
        with pytest.raises(HostAbandonedError, match=re.escape(cause)):
            host.reset(CONFIG)
    finally:
        host.close()


@pytest.mark.parametrize("mode", ["rename", "recapable"])
def test_a_restart_as_another_host_is_a_harness_error(tmp_path: Path, mode: str) -> None:
    """Exit 2 and ``harness-error``, never a failed check, even with every check's failure
    listed as known in the expectations file."""
    expectations = tmp_path / "expect.yaml"
    expectations.write_text(
        "version: 1\nknownFailures:\n  - requirement: VAULT-003\n    reason: anything\n",
        encoding="utf-8",
    )
    done, _seconds = console(
        tmp_path,
        "--host",
        adapter(mode, tmp_path / "starts"),
        "--requirements",
        "VAULT-003",
        "--expectations",
        str(expectations),
        "--report-json",
        str(tmp_path / "report.json"),
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"] == HARNESS_ERROR
    assert EXIT_CODES[report["verdict"]] == 2
    outcomes = {check["outcome"] for check in report["checks"]}
    assert "fail" not in outcomes
    changed = [check for check in report["checks"] if check["harnessError"]]
    assert changed, "the check that met the restart must say so"
    assert all(check["outcome"] == "error" for check in changed)
    assert any("restarted as another host" in problem for problem in report["problems"])
    assert "restarted as another host" in done.stdout
