"""A host team's expectations file: read, bounded and checked against its schema.

This module owns reading ``--expectations FILE`` (JSON or YAML, checked against
``conformance/schemas/expectations.schema.json``) into an
:class:`~conformance.kernel.baseline.Expectations`, and the terminal lines that summarize what
applying it did. What an entry may change in a run is the verdict kernel's
(:mod:`conformance.kernel.baseline`): a known failure is baselined, a flaky entry forgives
nothing, and a leak is never flaky (decisions S1.6). It reads only the file it is given and
reports only IDs, reasons and issue links, never a value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance.kernel.baseline import (
    Applied,
    Entry,
    Expectations,
    apply,
    requirement_outcome,
    rerun_entry,
)
from conformance.kernel.records import BASELINED_REQUIREMENT

__all__ = [
    "BASELINED_REQUIREMENT",
    "EXPECTATIONS_VERSION",
    "MAX_FILE_BYTES",
    "Applied",
    "Entry",
    "Expectations",
    "ExpectationsError",
    "apply",
    "check_declarations",
    "load",
    "parse",
    "requirement_outcome",
    "rerun_entry",
    "schema",
    "summary",
]

#: The format version this module reads.
EXPECTATIONS_VERSION: Final = 1

#: Bytes an expectations file may hold. A real file lists a few hundred entries at most; the
#: bound matches the driver protocol's line limit, so no input the suite reads is unbounded.
MAX_FILE_BYTES: Final = 16 * 1024 * 1024

_KINDS: Final = ("check", "vector", "requirement")


class ExpectationsError(ValueError):
    """The expectations file cannot be read or does not match its schema: a harness error."""


def schema() -> dict[str, Any]:
    """Return the expectations file's JSON Schema."""
    text = (
        resources.files("conformance")
        .joinpath("schemas", "expectations.schema.json")
        .read_text(encoding="utf-8")
    )
    document: dict[str, Any] = json.loads(text)
    return document


def parse(document: object, source: str = "<expectations>") -> Expectations:
    """Return ``document`` (the decoded file) as :class:`Expectations`.

    Raises:
        ExpectationsError: It does not match the schema.
    """
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    if errors:
        lines = [
            f"/{'/'.join(str(part) for part in error.absolute_path)}: {error.message}"
            for error in errors[:5]
        ]
        raise ExpectationsError(f"{source} does not match its schema: " + "; ".join(lines))
    assert isinstance(document, dict)

    def entries(key: str) -> tuple[Entry, ...]:
        found: list[Entry] = []
        for item in document.get(key, ()):
            kind = next(name for name in _KINDS if name in item)
            found.append(Entry(kind, str(item[kind]), str(item["reason"]), item.get("issue")))
        return tuple(found)

    host = document.get("host")
    return Expectations(
        source, entries("knownFailures"), entries("flaky"), host, entries("unchecked")
    )


def load(path: str | Path) -> Expectations:
    """Read an expectations file: JSON when it ends in ``.json``, YAML otherwise.

    The file must be a regular file of at most :data:`MAX_FILE_BYTES`; YAML anchors and aliases
    are refused, since an alias can make a file of a kilobyte expand without bound.

    Raises:
        ExpectationsError: The file cannot be read, is not a regular file, is too large, uses a
            YAML alias, cannot be decoded, or does not match the schema.
    """
    target = Path(path)
    text = _read_bounded(target)
    try:
        if target.suffix.lower() == ".json":
            document: object = json.loads(text)
        else:
            document = _safe_yaml(text, target)
    except ExpectationsError:
        raise
    except json.JSONDecodeError as error:
        raise ExpectationsError(
            f"{target} is not valid JSON: line {error.lineno} column {error.colno}: {error.msg}"
        ) from error
    except ValueError as error:
        raise ExpectationsError(f"{target} is not valid JSON or YAML: {error}") from error
    except Exception as error:  # RecursionError, MemoryError, and yaml's errors
        where = _yaml_mark(error)
        if where is not None:
            raise ExpectationsError(f"{target} is not valid YAML: {where}") from error
        raise ExpectationsError(f"{target} cannot be decoded ({type(error).__name__})") from error
    try:
        return parse(document, str(target))
    except ExpectationsError:
        raise
    except Exception as error:  # a document deep enough to break the schema check, say
        raise ExpectationsError(
            f"{target} cannot be checked against its schema ({type(error).__name__})"
        ) from error


def _read_bounded(target: Path) -> str:
    """Return the text of ``target``, a regular file of at most :data:`MAX_FILE_BYTES`."""
    import stat

    try:
        # Non-blocking, so that opening a FIFO cannot hang the run before it is refused.
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ExpectationsError(f"{target} is not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ExpectationsError(f"{target} cannot be read ({type(error).__name__})") from error
    if len(data) > MAX_FILE_BYTES:
        raise ExpectationsError(f"{target} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ExpectationsError(f"{target} is not UTF-8") from error


def _yaml_mark(error: BaseException) -> str | None:
    """Return "line L column C: problem" for a YAML syntax error, or ``None`` for another."""
    import yaml

    if not isinstance(error, yaml.MarkedYAMLError):
        return None
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or "not valid YAML"
    if mark is None:
        return problem
    return f"line {mark.line + 1} column {mark.column + 1}: {problem}"


def _safe_yaml(text: str, target: Path) -> object:
    """Decode YAML that uses no anchor and no alias; refuse the file otherwise."""
    import yaml

    # The event stream is read linearly and expands nothing, so a file built to expand is
    # refused before any of it is built.
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            mark = event.start_mark
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ExpectationsError(
                f"{target} uses a YAML anchor or alias{where}; "
                "expectations files must spell every entry out"
            )
    return yaml.safe_load(text)


def check_declarations(expectations: Expectations, levels: Mapping[str, str]) -> None:
    """Refuse a declaration of an unchecked requirement that cannot mean what it says.

    Only a MUST of the catalog can be declared unchecked (decisions S1.2): a SHOULD or an EITHER
    never makes a run incomplete, and an ID the catalog does not hold (a typo, say) would
    declare nothing while its author believes otherwise.

    Args:
        expectations: The parsed file.
        levels: Each catalog requirement's level, by ID.

    Raises:
        ExpectationsError: An ``unchecked`` entry names something else than a MUST.
    """
    for entry in expectations.unchecked:
        level = levels.get(entry.id)
        if level is None:
            raise ExpectationsError(
                f"{expectations.source}: unchecked entry {entry.id} is not a requirement of the "
                "catalog (docs/requirements.md lists them)"
            )
        if level != "MUST":
            raise ExpectationsError(
                f"{expectations.source}: unchecked entry {entry.id} is a {level}; only a MUST "
                "can be declared unchecked"
            )


def summary(applied: Mapping[str, Any]) -> list[str]:
    """Return terminal lines for a report's ``expectations`` section."""
    lines = [
        f"expectations {applied['file']}: {len(applied['baselined'])} baselined, "
        f"{len(applied['flaky'])} flaky, {len(applied['unexpectedPasses'])} unexpected passes, "
        f"{len(applied['unused'])} unused entries"
    ]
    for item in applied["unexpectedPasses"]:
        lines.append(f"unexpected pass: {item['entry']} is listed as failing but passed")
    return lines
