"""What a mutant and a legal variant are, and how one is applied.

This module owns the :class:`Mutant` record (a name, the one requirement it violates, a
description and its patches), the :class:`Variant` record (a host that takes an alternative
the rulings allow, which the suite must pass), :func:`applied`, which swaps one attribute
of a ``reference_impl`` module or class for a function of the original and puts it back
afterwards, and :func:`line_patch`, which writes a one-line source mutant as such a patch: the
original function recompiled from its own source with one line changed. The mutants themselves
live in the ``catalog_*`` modules beside it, gathered in order by
:mod:`conformance.selftest.catalog`, and the variants in :mod:`conformance.selftest.variants`;
this module must never import them, nor anything that runs the suite. A mutant or variant
changes behaviour only; none may print a value.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import importlib
import inspect
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

#: A patch: (module, dotted attribute inside it, function of the original to the replacement).
Patch = tuple[str, str, Callable[[Any], Any]]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One broken reference host.

    Attributes:
        name: A stable name, used on the command line.
        requirement: The one requirement ID it violates; the suite must fail naming it.
        description: What is broken, in one sentence.
        patches: How it is broken.
        driver: Whether it can also run behind the reference driver (subprocess path).
        via: The path the self-test checks it through by default: ``"inprocess"``,
            ``"driver"`` (the reference driver in a subprocess) or ``"mcp"`` (the reference
            driver, its calls sent over its MCP endpoint with ``--via mcp``).
    """

    name: str
    requirement: str
    description: str
    patches: tuple[Patch, ...]
    driver: bool = True
    via: str = "inprocess"


@dataclass(frozen=True, slots=True)
class Variant:
    """One reference host changed to take an alternative the rulings allow (decisions S1.12).

    Attributes:
        name: A stable name, used on the command line.
        requirements: The requirement IDs whose checks it must pass, every one of them.
        description: What it does differently, in one sentence, and the ruling that allows it.
        patches: How it is changed, as a mutant's patches are.
        via: The path it is checked through, as :attr:`Mutant.via`.
        hidden: Capabilities its adapter hides (through ``conformance.strip``), so that the
            suite can learn what the variant shows only the way the variant shows it.
        differs: The SHOULD requirements among ``requirements`` it departs from, as a SHOULD
            lets a host do: the suite must report each non-strict, fail nothing and still
            judge every MUST beside it (decisions S1).
        takes: The (EITHER requirement, alternative) pairs it takes, each of which the suite
            must report for it: together with the reference host's own choices they cover
            every alternative of the catalog (decisions S1.12).
    """

    name: str
    requirements: tuple[str, ...]
    description: str
    patches: tuple[Patch, ...]
    via: str = "inprocess"
    hidden: tuple[str, ...] = ()
    differs: tuple[str, ...] = ()
    takes: tuple[tuple[str, str], ...] = ()


#: The decorators :func:`line_patch` takes off a function's source and puts back itself.
_WRAPPERS: Final = {"staticmethod": staticmethod, "classmethod": classmethod}

#: The compiler flags of the ``from __future__`` imports a function may have been compiled with.
_FUTURE_FLAGS: Final = {
    getattr(__future__, feature).compiler_flag for feature in __future__.all_feature_names
}


def _names(code: types.CodeType) -> Iterator[str]:
    """Every name ``code`` and the code inside it read or bind."""
    yield from code.co_names + code.co_varnames + code.co_cellvars
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


def line_patch(module: str, dotted: str, before: str, after: str, extra: str = "") -> Patch:
    """Return a patch that recompiles ``module``'s ``dotted`` function with ``before`` read as
    ``after``: a one-line source mutant, applied the way every other patch is.

    The transform reads the original's source, takes off its decorators (``staticmethod``,
    ``classmethod`` or ``property``, put back around the new function as the original had
    them), replaces the one occurrence of ``before`` (which may span lines, indented as the
    module has them, to tell two like lines apart) and compiles the result, inside an
    ``if True:`` block when the definition is indented (a method), under the original's file
    name, ``from __future__`` flags and line numbers, in the original's module globals.
    ``extra``, when given, is run first in a copy of those globals, for a helper the changed
    line names; the recompiled function then sees the module's globals as they were when the
    patch was applied, and live ones otherwise.

    Raises (when the patch is applied):
        ValueError: ``before`` is not in the source exactly once; the function is not a plain
            function of the source it was read from (a closure, a zero-argument ``super()``,
            a name mangled inside its class, another decorator), so recompiling it on its
            own would change it.
    """
    where = f"{module}.{dotted}"

    def transform(original: Any) -> Any:
        wrapper: Any = None
        function = original
        if isinstance(original, staticmethod | classmethod):
            wrapper, function = type(original), original.__func__
        elif isinstance(original, property):
            wrapper, function = original.getter, original.fget
        if not isinstance(function, types.FunctionType):
            raise ValueError(f"line mutant of {where}: not a function ({type(function).__name__})")
        if function.__code__.co_freevars:
            raise ValueError(
                f"line mutant of {where}: it reads {', '.join(function.__code__.co_freevars)} "
                "from an enclosing scope (a closure or a zero-argument super()), which a "
                "recompile on its own would lose"
            )
        lines, first_line = inspect.getsourcelines(function)
        # An indented definition is compiled inside ``if True:``, not dedented, so that no
        # string that spans lines in it changes.
        header = "if True:\n" if lines[0][:1].isspace() else ""
        tree = ast.parse(header + "".join(lines))
        definition = tree.body[0].body[0] if header else tree.body[0]  # type: ignore[attr-defined]
        assert isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef)
        for decorator in definition.decorator_list:
            named = ast.unparse(decorator)
            if wrapper is None or not (named in _WRAPPERS or named == "property"):
                raise ValueError(f"line mutant of {where}: it is decorated with {named}")
        # From the ``def`` line on: the decorators are put back as ``wrapper``, once.
        start = definition.lineno - 1 - len(header.splitlines())
        source = "".join(lines[start:])
        found = source.count(before)
        if found != 1:
            raise ValueError(
                f"line mutant of {where}: the text to change occurs {found} times in its "
                "source, not once"
            )
        flags = 0
        for flag in _FUTURE_FLAGS:
            if function.__code__.co_flags & flag:
                flags |= flag
        filename = function.__code__.co_filename
        # Blank lines before, so that the recompiled function keeps its lines in tracebacks.
        padding = "\n" * (first_line + start - 1 - len(header.splitlines()))

        def compiled(text: str) -> types.CodeType:
            code: types.CodeType = compile(
                padding + header + text, filename, "exec", flags=flags, dont_inherit=True
            )
            return code

        # A private name is mangled with its class's name inside the class only.
        classes = [part for part in function.__qualname__.split(".")[:-1] if part != "<locals>"]
        mangled = tuple(f"_{part.lstrip('_')}__" for part in classes)
        if mangled and any(name.startswith(mangled) for name in _names(function.__code__)):
            raise ValueError(
                f"line mutant of {where}: it names a private attribute, which its class "
                "mangles and a recompile on its own would not"
            )
        namespace: dict[str, Any] = {}
        globals_ = function.__globals__
        if extra:
            globals_ = dict(globals_)
            # The catalog's own helper text, run in a copy of the module's globals.
            exec(compile(extra, filename, "exec", flags=flags, dont_inherit=True), globals_)  # noqa: S102
        # The original's source with the catalog's one change: the mutant itself.
        exec(compiled(source.replace(before, after)), globals_, namespace)  # noqa: S102
        new = namespace[function.__name__]
        new.__qualname__ = function.__qualname__
        new.__doc__ = function.__doc__
        new.__defaults__ = function.__defaults__
        new.__kwdefaults__ = function.__kwdefaults__
        new.__dict__.update(function.__dict__)
        return new if wrapper is None else wrapper(new)

    return (module, dotted, transform)


def _resolve(module_name: str, dotted: str) -> tuple[Any, str]:
    owner: Any = importlib.import_module(module_name)
    *parents, attribute = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, attribute


@contextlib.contextmanager
def applied(mutant: Mutant | Variant) -> Iterator[None]:
    """Apply ``mutant``'s (or a variant's) patches for the duration of the block, then undo
    them."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for module_name, dotted, transform in mutant.patches:
            owner, attribute = _resolve(module_name, dotted)
            original = (
                owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
            )
            undo.append((owner, attribute, original))
            setattr(owner, attribute, transform(original))
        yield
    finally:
        for owner, attribute, original in reversed(undo):
            setattr(owner, attribute, original)
