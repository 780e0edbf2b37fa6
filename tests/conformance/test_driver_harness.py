"""The subprocess host survives adapters that hang, crash, write garbage or break the schema.

Each broken adapter is a tiny standalone script (``broken_hosts/broken_host.py``); every test
bounds its own time, so a regression shows as a failure, never as a hung test run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.host import HandlerKind, HostConfig, ToolSpec
from conformance.hosts import _connection
from conformance.hosts.subprocess import (
    LINE_EXCERPT_CHARS,
    MAX_CONSECUTIVE_HANGS,
    HarnessError,
    HostAbandonedError,
    HostCrashedError,
    HostHungError,
    ProtocolViolationError,
    SubprocessHost,
)

BROKEN = Path(__file__).parent / "broken_hosts" / "broken_host.py"
CONFIG = HostConfig(
    tools=(ToolSpec("recorder", "plugin.test", HandlerKind.RECORDER),),
    approval_timeout_s=0.05,
    execution_timeout_s=0.05,
)


def broken(mode: str, **options: float | bool) -> SubprocessHost:
    """Return a subprocess host over the broken adapter in ``mode``."""
    return SubprocessHost([sys.executable, str(BROKEN), mode], **options)  # type: ignore[arg-type]


@pytest.fixture
def hung() -> Iterator[SubprocessHost]:
    host = broken("hang", call_timeout=0.4)
    yield host
    host.close()


def test_hung_host_errors_within_its_timeout_and_is_restarted(hung: SubprocessHost) -> None:
    """A host that never answers invoke ends the call as hung, quickly, and starts again."""
    hung.reset(CONFIG)
    started = time.monotonic()
    with pytest.raises(HostHungError, match="did not answer invoke within"):
        hung.invoke("recorder", "{}")
    assert time.monotonic() - started < 0.4 + 0.1 + 2.0  # the call timeout, plus margin
    with pytest.raises(HostHungError):
        hung.observe()  # the failed check cannot read a fresh host's empty surfaces
    hung.reset(CONFIG)
    assert hung.restarts == 1


def test_hung_host_is_abandoned_after_consecutive_hangs() -> None:
    """After a few checks in a row hang, later checks error at once instead of waiting."""
    host = broken("hang", call_timeout=0.2)
    try:
        for _ in range(MAX_CONSECUTIVE_HANGS):
            host.reset(CONFIG)
            with pytest.raises(HostHungError):
                host.invoke("recorder", "{}")
        started = time.monotonic()
        with pytest.raises(HostAbandonedError, match="abandoned"):
            host.reset(CONFIG)
        assert time.monotonic() - started < 1.0
    finally:
        host.close()


@pytest.mark.parametrize("reader_delay", [0.0, 0.4], ids=["prompt-reader", "late-reader"])
def test_crashing_host_names_its_exit_status_and_stderr(
    monkeypatch: pytest.MonkeyPatch, reader_delay: float
) -> None:
    """A host that exits mid-call ends the call as crashed, quoting its status and log, even
    when the standard error reader lags the exit (a loaded machine): the report waits for it."""
    if reader_delay:
        read_stderr = _connection.Connection._read_stderr

        def late(self: _connection.Connection, fd: int) -> None:
            time.sleep(reader_delay)
            read_stderr(self, fd)

        monkeypatch.setattr(_connection.Connection, "_read_stderr", late)
    host = broken("crash")
    try:
        host.reset(CONFIG)
        with pytest.raises(HostCrashedError, match="exited with status 3") as caught:
            host.invoke("recorder", "{}")
        assert "giving up on purpose" in str(caught.value)
        host.reset(CONFIG)  # restarted
        assert host.restarts == 1
    finally:
        host.close()


def test_garbage_line_is_quoted_cut_to_200_characters() -> None:
    """A line that is not JSON ends the call as a protocol violation quoting 200 characters."""
    host = broken("garbage")
    try:
        host.reset(CONFIG)
        with pytest.raises(ProtocolViolationError, match="not protocol") as caught:
            host.invoke("recorder", "{}")
        message = str(caught.value)
        quoted = message[message.index("'") + 1 : message.rindex("'")]
        assert quoted.startswith("this is not protocol ###")
        assert len(quoted) == LINE_EXCERPT_CHARS + 1  # the cut is marked with an ellipsis
        host.reset(CONFIG)
        assert host.restarts == 1
    finally:
        host.close()


def test_schema_validation_catches_a_malformed_result() -> None:
    """With validation on, a result that breaks its schema names the schema and the path."""
    host = broken("malformed", validate=True)
    try:
        host.reset(CONFIG)
        with pytest.raises(ProtocolViolationError, match=r"invoke\.response\.schema\.json"):
            host.invoke("recorder", "{}")
    finally:
        host.close()


def test_malformed_result_without_validation_is_still_an_error() -> None:
    """Without validation, a result the suite cannot read is an error, never a pass."""
    host = broken("malformed")
    try:
        host.reset(CONFIG)
        with pytest.raises(ProtocolViolationError, match="no valid disposition, isError"):
            host.invoke("recorder", "{}")
    finally:
        host.close()


def test_version_mismatch_is_a_harness_error() -> None:
    """A host that answers the handshake with another version stops the run."""
    with pytest.raises(HarnessError, match="protocol 2"):
        broken("version")


def test_silent_host_fails_the_handshake_in_time() -> None:
    """A host that never answers the handshake is a harness error after the start timeout."""
    started = time.monotonic()
    with pytest.raises(HarnessError, match="did not answer start"):
        broken("silent", start_timeout=0.3)
    assert time.monotonic() - started < 5.0


def test_missing_command_is_a_harness_error(tmp_path: Path) -> None:
    """A command that cannot be run is a harness error naming it."""
    with pytest.raises(HarnessError, match="could not be run"):
        SubprocessHost([str(tmp_path / "no-such-adapter")])
