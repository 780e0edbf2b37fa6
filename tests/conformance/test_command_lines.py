"""Every command line of the project: help with defaults, ``--version``, one-line usage errors.

Each program's argument parser is taken from its ``main`` (``parse_args`` is replaced by one
that hands the parser back unparsed), so the rules below hold for the parsers the programs
really use: every option and argument has help text; one with a default worth stating names
it; a description holds no Sphinx markup; the console scripts and the ``python -m`` tools a
user runs answer ``--version``; and a usage error is one line on standard error with exit
status 2. The rules are also applied to a parser built to break each, to show they catch it.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

#: (module, function to call with an argument list, whether the program answers --version).
PROGRAMS: Final = (
    ("conformance.cli", "_parser", True),
    ("conformance.listing", "main", True),
    ("conformance.masker.cli", "main", True),
    ("conformance.smoke", "main", True),
    ("conformance.strip", "main", True),
    ("conformance.selftest.runner", "main", True),
    ("conformance.selftest.mutation", "main", True),
    ("conformance.catalog", "main", False),
    ("conformance.vectorgen", "main", False),
    ("conformance.hosts._measure", "main", False),
    ("fuzz.campaign", "main", True),
    ("fuzz.differential", "main", True),
    ("fuzz.regress", "main", True),
    ("benchmarks.report", "main", False),
    ("reference_impl.cli", "build_parser", True),
    ("reference_impl.driver", "main", True),
)

_SPHINX: Final = re.compile(r"``|:(mod|func|class|data|meth|attr):`")


class _CapturedError(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def parser_of(module: str, function: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Return the parser ``module.function`` builds (its own, or the one its main parses with)."""

    def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> Any:
        raise _CapturedError(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    call: Callable[..., Any] = getattr(importlib.import_module(module), function)
    try:
        built = call() if function in ("_parser", "build_parser") else call([])
    except _CapturedError as captured:
        return captured.parser
    assert isinstance(built, argparse.ArgumentParser), f"{module}.{function} built no parser"
    return built


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Yield ``parser`` and every subcommand's parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from parsers(sub)


def problems(parser: argparse.ArgumentParser) -> list[str]:
    """Return what breaks the rules in ``parser`` and its subcommands' parsers."""
    found = []
    quiet = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    for each in parsers(parser):
        if each.description and _SPHINX.search(each.description):
            found.append(f"{each.prog}: the description holds Sphinx markup")
        for action in each._actions:
            if isinstance(action, quiet):
                continue
            name = "/".join(action.option_strings) or action.dest
            if not action.help:
                found.append(f"{each.prog} {name}: no help")
                continue
            stated = action.default not in (None, False, [], argparse.SUPPRESS)
            if stated and "default" not in action.help:
                found.append(f"{each.prog} {name}: its default {action.default!r} is not named")
    return found


def has_version(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(action, argparse._VersionAction) for action in parser._actions)


@pytest.mark.parametrize(("module", "function", "versioned"), PROGRAMS)
def test_every_option_has_help_with_its_default(
    module: str, function: str, versioned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = parser_of(module, function, monkeypatch)
    assert problems(parser) == []
    assert has_version(parser) or not versioned, f"{parser.prog} has no --version"


def test_the_rules_catch_a_broken_parser() -> None:
    parser = argparse.ArgumentParser(prog="broken", description="see :mod:`x` and ``y``")
    parser.add_argument("--bare")
    parser.add_argument("--limit", type=int, default=5, help="how many")
    parser.add_subparsers().add_parser("sub").add_argument("name")
    assert problems(parser) == [
        "broken: the description holds Sphinx markup",
        "broken --bare: no help",
        "broken --limit: its default 5 is not named",
        "broken sub name: no help",
    ]
    assert not has_version(parser)


@pytest.mark.parametrize(
    ("module", "argv", "expected"),
    [
        ("conformance.cli", ["--host-timeout", "-5"], "seconds must be a number above 0"),
        ("conformance.cli", ["--host-start-timeout", "nan"], "seconds must be a number above 0"),
        ("conformance.cli", ["--host-max-line", "0"], "at least 1"),
        ("conformance.cli", ["--no-such-option"], "unrecognized arguments"),
        ("conformance.listing", ["nothing"], "invalid choice"),
        ("conformance.masker.cli", ["--masker", "reference", "--timeout", "0"], "above 0"),
        ("conformance.smoke", ["--host", "x", "--host-timeout", "inf"], "above 0"),
        ("conformance.strip", ["observe.ledgr", "--", "true"], "not a capability"),
        ("conformance.strip", ["ALL"], "give the adapter command"),
        ("fuzz.differential", ["--host", "x", "--examples", "0"], "at least 1"),
        ("reference_impl.driver", ["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_a_usage_error_is_one_line_on_stderr_with_exit_2(
    module: str, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main = importlib.import_module(module).main
    if module == "conformance.cli":
        main = importlib.import_module(module)._main  # no sweep of this process's children
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert expected in err, err


def test_a_plain_argparse_error_is_not_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        argparse.ArgumentParser(prog="plain").parse_args(["--no-such-option"])
    assert capsys.readouterr().err.count("\n") > 1


@pytest.mark.parametrize(
    ("module", "function"),
    [("conformance.cli", "_main"), ("conformance.listing", "main"), ("reference_impl.cli", "main")],
)
def test_version_names_the_program_and_the_package(
    module: str, function: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib import metadata

    try:  # secref's main returns the exit status; the others raise SystemExit
        status = getattr(importlib.import_module(module), function)(["--version"])
    except SystemExit as exit_info:
        status = exit_info.code
    assert status == 0
    out = capsys.readouterr().out
    assert re.fullmatch(
        rf"\S.* \(secref-suite\) {re.escape(metadata.version('secref-suite'))}\n", out
    )
