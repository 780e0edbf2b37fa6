"""The property that ``Registry.invoke`` never raises, whatever the handler does.

A Hypothesis strategy draws handler behaviours: returning any object (plain values, results
whose fields are not text, objects whose ``__str__`` raises or returns a subclass), raising any
exception (``BaseException`` subclasses included) with hostile ``__str__`` and ``__repr__``,
sleeping past the execution timeout, and returning huge text or text with lone surrogates; many
of them carry the resolved value. Every call must end with a disposition and exactly one ledger
record, and no form of the value may appear in the result, the ledger or the host log
(decisions R5.4, R6.3, R6.6). It runs under every profile; ``nightly`` gives it 20,000 examples.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl import (
    SECRET_READ,
    CallOutcome,
    Disposition,
    InMemoryVault,
    MemoryLedger,
    Registry,
    Tool,
    ToolArguments,
    ToolResult,
    User,
    forms,
)
from tests.reference_impl.support import ID_A, args, record, ref

#: The canary: ASCII with a space, so its forms differ, and long enough to be scrubbed.
VALUE: Final = "Prop canary 7Kq2 value"

#: Seconds a handler may run in this property; a sleeping behaviour sleeps past it.
TIMEOUT: Final = 0.05

#: Characters of the huge results, past the 150,000-character cap.
HUGE: Final = 160_000


class _List(logging.Handler):
    """Keeps every host log record's text, exception text included."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += logging.Formatter().formatException(record.exc_info)
        with self.guard:
            self.texts.append(text)


class _Host:
    """One registry shared by every example; the tool's behaviour is swapped per example."""

    def __init__(self) -> None:
        self.behaviour: Callable[[str], object] = lambda _value: "ok"
        self.ledger = MemoryLedger()
        self.log = _List()
        logger = logging.Logger("invoke-property", logging.DEBUG)
        logger.addHandler(self.log)
        self.registry = Registry(
            vault=InMemoryVault([record(ID_A, "example.com", "prop-user", VALUE)]),
            ledger=self.ledger,
            user=User(name="dev", permissions=frozenset({SECRET_READ})),
            execution_timeout=TIMEOUT,
            logger=logger,
        )
        self.registry.register(Tool("t", "demo", self._handle))

    def _handle(self, arguments: ToolArguments) -> Any:
        value = arguments.string("v") or ""
        return self.behaviour(value)


_HOST = _Host()


# --- hostile objects --------------------------------------------------------------------------


class _HostileStr(str):
    """A string whose own methods raise, carrying the value."""

    def __str__(self) -> str:
        raise KeyboardInterrupt(str.__str__(self))

    def __format__(self, spec: str) -> str:
        raise SystemExit(str.__str__(self))


@dataclass(frozen=True)
class _Raising:
    """What a hostile ``__str__`` or ``__repr__`` does: raise this type carrying the value."""

    kind: type[BaseException]


def _hostile_object(str_raises: type[BaseException] | None, value: str) -> object:
    class Hostile:
        def __str__(self) -> str:
            if str_raises is not None:
                raise str_raises(value)
            return _HostileStr(value)

        def __repr__(self) -> str:
            raise KeyboardInterrupt(value)

    return Hostile()


_EXCEPTION_TYPES: Final = (
    Exception,
    ValueError,
    RuntimeError,
    KeyboardInterrupt,
    SystemExit,
    GeneratorExit,
    BaseException,
)


def _hostile_exception(base: type[BaseException], text_mode: str, value: str) -> BaseException:
    """Return an exception of ``base`` whose text carries the value, or whose text raises."""

    class Hostile(base):  # type: ignore[valid-type,misc]
        def __str__(self) -> str:
            if text_mode == "raises":
                raise KeyboardInterrupt(value)
            if text_mode == "not-str":
                return 42  # type: ignore[return-value]
            if text_mode == "subclass":
                return _HostileStr(value)
            return f"failed with {value}"

        def __repr__(self) -> str:
            raise SystemExit(value)

    return Hostile(value)


# --- the strategy over handler behaviours ----------------------------------------------------

_surrogates = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(max_codepoint=0x7F),
    ),
    max_size=40,
)

_plain_objects = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.binary(max_size=40),
    st.text(max_size=40),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _returns(drawn: object) -> Callable[[str], object]:
    return lambda _value: drawn


@st.composite
def behaviours(draw: st.DrawFn) -> tuple[str, Callable[[str], object]]:
    """Draw one handler behaviour, with a label for the failure report."""
    kind = draw(
        st.sampled_from(
            [
                "plain",
                "value-in-object",
                "result-fields",
                "hostile-object",
                "raise",
                "sleep",
                "huge",
                "surrogates",
            ]
        )
    )
    if kind == "plain":
        return kind, _returns(draw(_plain_objects))
    if kind == "value-in-object":
        shape = draw(st.sampled_from(["list", "dict", "bytes", "tuple", "text"]))
        builders: dict[str, Callable[[str], object]] = {
            "list": lambda value: [value, 1],
            "dict": lambda value: {"k": value},
            "bytes": lambda value: value.encode("ascii"),
            "tuple": lambda value: (value,),
            "text": lambda value: f"echo {value} echo",
        }
        return f"{kind}:{shape}", builders[shape]
    if kind == "result-fields":
        text = draw(st.one_of(st.none(), st.binary(max_size=10), st.integers(), st.just("VALUE")))
        flag = draw(st.one_of(st.booleans(), st.none(), st.integers(), st.just("yes")))

        def result(value: str) -> object:
            return ToolResult(value if text == "VALUE" else text, flag)  # type: ignore[arg-type]

        return f"{kind}:{type(text).__name__}:{type(flag).__name__}", result
    if kind == "hostile-object":
        raises = draw(st.sampled_from([None, *_EXCEPTION_TYPES]))
        return f"{kind}:{raises}", lambda value: _hostile_object(raises, value)
    if kind == "raise":
        base = draw(st.sampled_from(_EXCEPTION_TYPES))
        mode = draw(st.sampled_from(["value", "raises", "not-str", "subclass"]))

        def raiser(value: str) -> object:
            raise _hostile_exception(base, mode, value)

        return f"{kind}:{base.__name__}:{mode}", raiser
    if kind == "sleep":

        def sleeper(value: str) -> object:
            time.sleep(TIMEOUT * 3)
            return value

        return kind, sleeper
    if kind == "huge":
        where = draw(st.integers(min_value=0, max_value=HUGE))
        return f"{kind}:{where}", lambda value: "x" * where + value + "y" * (HUGE - where)
    text = draw(_surrogates)
    return f"{kind}", lambda value: text + value + text


def _surfaces_leak(outcome: CallOutcome, records: list[Any], log: list[str]) -> list[str]:
    """Return the surfaces holding any scrubbed form of the value, by name."""
    surfaces = {
        "result": outcome.text,
        "ledger": "\n".join(repr(item) for item in records),
        "log": "\n".join(log),
    }
    return [name for name, text in surfaces.items() if any(form in text for form in forms(VALUE))]


@pytest.mark.req("LEDG-016", "SCRUB-010", "LOG-001")
@given(behaviours(), st.booleans())
def test_invoke_never_raises(behaviour: tuple[str, Callable[[str], object]], bearing: bool) -> None:
    """Every handler behaviour ends with a disposition and one record; no value on any surface."""
    label, act = behaviour
    host = _HOST
    host.behaviour = act
    before = len(host.ledger.records)
    with host.log.guard:
        host.log.texts.clear()
    call_args = args(v=ref(ID_A)) if bearing else args(v=VALUE)
    outcome = host.registry.invoke("t", call_args)
    assert isinstance(outcome, CallOutcome), label
    assert isinstance(outcome.disposition, Disposition), label
    assert type(outcome.text) is str, label
    records = host.ledger.records[before:]
    assert len(records) == 1, label
    assert outcome.ledger_id == records[0].id, label
    if bearing:
        # The value was resolved for this call, so scrubbing applies to every surface.
        with host.log.guard:
            log = list(host.log.texts)
        assert _surfaces_leak(outcome, records, log) == [], label
