"""The ``secref_conformance`` pytest plugin: options, markers and the fixtures checks take.

This module is the ``pytest11`` entry point. It owns the plugin's options (in their own group),
its markers, and the fixtures a conformance check uses: ``host``, a recording wrapper around the
session's host under test, and ``mint``, the check's canary mint. The hooks live in
:mod:`conformance._hooks` and their state in ``config.stash``. Loaded into any pytest run, it
stays dormant until conformance checks are collected or one of its options is given; it never
builds a host unless a check asks for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest

from conformance import _barrier, _hooks, _rerun, _stop, _xdist, junit
from conformance.canary import Mint
from conformance.host import HostUnderTest
from conformance.hosts import HostSelectionError, build_host, describe, path_of
from conformance.hosts._framing import DEFAULT_MAX_LINE
from conformance.hosts._protocol import DEFAULT_START_TIMEOUT
from conformance.outcomes import not_applicable
from conformance.scenario import REFERENCE_CAPABILITY, RecordingHost

_HOOKS_NAME: Final = "secref-conformance-hooks"
_STOP_NAME: Final = "secref-conformance-stop"
_RERUN_NAME: Final = "secref-conformance-rerun"
_JUNIT_NAME: Final = "secref-conformance-junit"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the plugin's options, in the ``secref-conformance`` group."""
    group = parser.getgroup("secref-conformance", "secret-reference conformance suite")
    group.addoption(
        "--host",
        dest="secref_host",
        default=None,
        metavar="HOST",
        help="the host under test: 'inprocess' (the default reference host), "
        "'mutant:<name>', or a command that starts a driver-protocol adapter",
    )
    group.addoption(
        "--via",
        dest="secref_via",
        choices=("driver", "mcp"),
        default="driver",
        help="how calls reach a driver-protocol host: 'driver' (its invoke requests, the "
        "default) or 'mcp' (the official MCP client to the endpoint it announces; docs/mcp.md)",
    )
    group.addoption(
        "--report-json",
        dest="secref_report_json",
        default=None,
        metavar="PATH",
        help="write the JSON conformance report (schema conformance/schemas/report.schema.json)",
    )
    group.addoption(
        "--report-md",
        dest="secref_report_md",
        default=None,
        metavar="PATH",
        help="write the Markdown conformance report",
    )
    group.addoption(
        "--requirements",
        dest="secref_requirements",
        default=None,
        metavar="IDS",
        help="run only the checks citing one of these comma-separated requirement IDs",
    )
    group.addoption(
        "--expectations",
        dest="secref_expectations",
        default=None,
        metavar="FILE",
        help="the host's known failures and flaky checks (JSON or YAML, schema "
        "conformance/schemas/expectations.schema.json); strict: a listed failure that passes "
        "fails the run",
    )
    group.addoption(
        "--validate-protocol",
        dest="secref_validate_protocol",
        action="store_true",
        default=False,
        help="check every driver-protocol message in both directions against its JSON Schema",
    )
    group.addoption(
        "--host-timeout",
        dest="secref_host_timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds a driver-protocol host has to answer each request (default 30)",
    )
    group.addoption(
        "--host-start-timeout",
        dest="secref_host_start_timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT,
        metavar="SECONDS",
        help="seconds a driver-protocol host has to answer the handshake (default 8)",
    )
    group.addoption(
        "--host-max-line",
        dest="secref_host_max_line",
        type=int,
        default=DEFAULT_MAX_LINE,
        metavar="BYTES",
        help="bytes one line of a driver-protocol host's output may hold (default 16 MiB); "
        "a longer line, or as much text without a newline, ends the running check as errored",
    )

    group.addoption(
        "--stop-when-decided",
        dest="secref_stop_when_decided",
        nargs="?",
        const=_stop.VERDICT,
        default=None,
        metavar="IDS",
        help="end the run once it can no longer be conformant (a failed or errored check, or "
        "a MUST left unchecked), running the checks likeliest to decide it first; with "
        "comma-separated requirement IDs, once each of those is decided. For callers that "
        "need only the verdict, such as the self-test; the report names the stop",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and the hooks object."""
    config.addinivalue_line(
        "markers", "req(*ids): requirement IDs from conformance/requirements.yaml it checks"
    )
    config.addinivalue_line("markers", "vector(id): the conformance vector a case runs")
    if not config.pluginmanager.has_plugin(_HOOKS_NAME):
        hooks = _hooks.ConformanceHooks(config)
        config.pluginmanager.register(hooks, _HOOKS_NAME)
        flaky = hooks.expectations.flaky if hooks.expectations is not None else ()
        if flaky and not config.pluginmanager.has_plugin(_RERUN_NAME):
            # A check listed flaky that failed without a value runs again, bounded (S1.6).
            config.pluginmanager.register(_rerun.FlakyReruns(config, flaky), _RERUN_NAME)
    if (
        config.getoption("xmlpath", None)
        and not _xdist.is_worker(config)
        and not config.pluginmanager.has_plugin(_JUNIT_NAME)
    ):
        # The JUnit file says the verdict too (decisions S1.11); a worker writes no file.
        config.pluginmanager.register(junit.JunitVerdict(config), _JUNIT_NAME)
    parallel = _xdist.is_worker(config) or _xdist.is_controller(config)
    if parallel and not config.pluginmanager.has_plugin(_xdist.PLUGIN_NAME):
        config.pluginmanager.register(_xdist.XdistBridge(config), _xdist.PLUGIN_NAME)
    targets = _stop.targets_of(config.getoption("secref_stop_when_decided", None))
    if targets is not None and not config.pluginmanager.has_plugin(_STOP_NAME):
        if parallel:
            # Each worker would stop on what it alone saw, and the controller decides nothing.
            raise pytest.UsageError(
                "--stop-when-decided cannot be combined with --workers: a decision needs every "
                "check's outcome in one process"
            )
        if config.getoption("secref_expectations", None):
            # A listed failure is forgiven only when the run ends: a stop at it would be early.
            raise pytest.UsageError(
                "--stop-when-decided cannot be combined with --expectations: the expectations "
                "file is applied only once every check has run"
            )
        config.pluginmanager.register(_stop.DecidedStop(config, targets), _STOP_NAME)


@pytest.fixture(scope="session")
def secref_host(request: pytest.FixtureRequest) -> Iterator[HostUnderTest]:
    """The session's host under test, built from ``--host``; closed when the session ends."""
    selector = request.config.getoption("secref_host", None)
    try:
        host = build_host(
            selector,
            call_timeout=request.config.getoption("secref_host_timeout"),
            start_timeout=request.config.getoption("secref_host_start_timeout"),
            validate=request.config.getoption("secref_validate_protocol"),
            via=request.config.getoption("secref_via", "driver"),
            max_line=request.config.getoption("secref_host_max_line"),
        )
    except HostSelectionError as error:
        pytest.exit(f"secref-conformance: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
    state = request.config.stash.get(_hooks.STATE_KEY, None)
    if state is not None:
        state.host_info = _hooks.host_metadata(host.info(), describe(selector), state.path)
    # Searched for late output once the run ends, before the verdict (decisions S1.9).
    _barrier.keep(request.config, host)
    try:
        yield host
    finally:
        host.close()


@pytest.fixture
def host(request: pytest.FixtureRequest, secref_host: HostUnderTest) -> RecordingHost:
    """The host under test for one check, recorded for the canary sweep.

    A check of a ``reference-only`` requirement is skipped, with the reason, on any host that
    is not the reference implementation. The path under test comes from the suite's options,
    never from the host's description (decisions S1.8).
    """
    state = request.config.stash.get(_hooks.STATE_KEY, None)
    path = (
        state.path
        if state is not None
        else path_of(
            request.config.getoption("secref_host", None),
            request.config.getoption("secref_via", "driver"),
        )
    )
    recording = RecordingHost(secref_host, path)
    if state is not None and state.catalog and isinstance(request.node, pytest.Item):
        scoped = [
            rid
            for rid in _hooks.cited(request.node)
            if rid in state.catalog and state.catalog[rid].scope == "reference-only"
        ]
        if scoped and not recording.has(REFERENCE_CAPABILITY):
            not_applicable(f"{', '.join(scoped)} is about the reference implementation's own files")
    return recording


@pytest.fixture
def mint() -> Mint:
    """A canary mint for one check."""
    return Mint()
