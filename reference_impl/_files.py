"""Reading the files the reference host loads at start-up: the vault and the policy.

This module owns the safe read of such a file (decisions R7.3): a regular file only, opened
without blocking so that a FIFO cannot hang start-up, at most 16 MiB, decoded as strict UTF-8,
parsed as JSON in which no object writes a member twice (R7.2). Every error is one line that names
the file, where in it the problem is and what kind it is. It must never quote the file's content:
the one exception is an unknown member's name, and only when that name is short printable ASCII.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Final

from reference_impl._limits import INPUT_FILE_MAX_BYTES, QUOTED_MEMBER_MAX_CHARS

#: What :func:`file_kind` calls each kind of file that is not a regular one.
_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputFileError(ValueError):
    """A file the host reads is unusable; the message is one line and quotes no content."""


def file_kind(mode: int) -> str:
    """Return how an error names a file of ``mode`` that is not regular, e.g. ``"a FIFO"``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def quoted_member(name: str) -> str | None:
    """Return a member's name quoted for an error, or ``None`` when it must not be quoted.

    Args:
        name: The member's name as the file writes it.

    Returns:
        ``"<name>"`` in double quotes when it is at most 32 printable ASCII characters; else
        ``None``, since a longer or unprintable name could be a value written in the wrong
        place (decisions R7.3).
    """
    if len(name) <= QUOTED_MEMBER_MAX_CHARS and all(" " <= char <= "~" for char in name):
        return json.dumps(name)
    return None


def unknown_member(name: str) -> str:
    """Return how an error names an unknown member: ``the unknown member "x"`` or ``an unknown
    member`` (decisions R7.3)."""
    quoted = quoted_member(name)
    return "an unknown member" if quoted is None else f"the unknown member {quoted}"


def read_input_file(path: str | os.PathLike[str], what: str) -> str:
    """Read a start-up file as text.

    Args:
        path: The file.
        what: How errors name it, e.g. ``"vault file vault.json"``.

    Returns:
        The file's text.

    Raises:
        FileNotFoundError: Nothing is at ``path``; callers decide what a missing file means.
        InputFileError: It is not a regular file, is over 16 MiB, cannot be read, or is not UTF-8.
    """
    try:
        # O_NONBLOCK: opening a FIFO for reading waits for a writer without it.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise InputFileError(f"{what} cannot be opened ({_errno_name(error)})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise InputFileError(f"{what} is {file_kind(status.st_mode)}, not a regular file")
        if status.st_size > INPUT_FILE_MAX_BYTES:
            raise InputFileError(f"{what} is over {INPUT_FILE_MAX_BYTES} bytes")
        chunks: list[bytes] = []
        size = 0
        # A file that grows while it is read is still held to the limit.
        while chunk := os.read(descriptor, 1 << 20):
            size += len(chunk)
            if size > INPUT_FILE_MAX_BYTES:
                raise InputFileError(f"{what} is over {INPUT_FILE_MAX_BYTES} bytes")
            chunks.append(chunk)
    except OSError as error:
        raise InputFileError(f"{what} cannot be read ({_errno_name(error)})") from None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(f"{what} is not UTF-8 (byte {error.start + 1})") from None


def _errno_name(error: OSError) -> str:
    import errno

    if error.errno is not None and error.errno in errno.errorcode:
        return errno.errorcode[error.errno]
    return type(error).__name__


class DuplicateMemberError(ValueError):
    """An object writes one member twice; the message names the member as :func:`member_name`."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            quoted = quoted_member(key)
            raise DuplicateMemberError(
                "a member is written twice" if quoted is None else f"{quoted} is written twice"
            )
        result[key] = value
    return result


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str, what: str) -> Any:
    """Parse a start-up file's text as strict JSON, refusing a member written twice.

    Args:
        text: The text.
        what: How errors name the file.

    Returns:
        The decoded value.

    Raises:
        InputFileError: The text is not JSON, nests too deeply, or writes a member twice.
    """
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except DuplicateMemberError as error:
        raise InputFileError(f"{what} is ambiguous: {error}") from None
    except json.JSONDecodeError as error:
        # The decoder's own message is static text about the grammar, never the file's.
        raise InputFileError(
            f"{what} is not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        ) from None
    except (ValueError, RecursionError):
        raise InputFileError(f"{what} is not valid JSON (nested too deeply, or NaN)") from None
