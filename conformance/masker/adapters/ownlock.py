"""Adapter: ownlock's redactor (PyPI ``ownlock``), as ``ownlock run`` and its hook filter use it.

The text path is ``SecretRedactor(secrets).redact(text)``; the command path is the wrapper
``SecretRedactor(secrets).run_process(argv, env)`` that ``ownlock run -- child`` calls.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from ownlock.redactor import SecretRedactor  # type: ignore[import-untyped, import-not-found, unused-ignore]

from conformance.masker.kit import serve, version_of


def text(secrets: Mapping[str, str], text: str) -> str:
    """Return what ownlock's redactor lets through of ``text``."""
    return str(SecretRedactor(dict(secrets)).redact(text))


def command(secrets: Mapping[str, str], argv: Sequence[str]) -> str:
    """Return what ``ownlock run`` lets through of the child's standard output and error."""
    out, err = io.StringIO(), io.StringIO()
    SecretRedactor(dict(secrets)).run_process(list(argv), {}, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


if __name__ == "__main__":
    raise SystemExit(serve("ownlock", version_of("ownlock"), "wrapper", text=text, command=command))
