"""Adapter: ansible-core's ``no_log`` filter (PyPI ``ansible-core``).

A module's output passes through ``remove_values(value, no_log_strings)`` before Ansible shows
it; the values of parameters marked ``no_log`` are the strings it removes.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.module_utils.common.parameters import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
    remove_values,
)

from conformance.masker.kit import serve, version_of


def text(secrets: Mapping[str, str], text: str) -> str:
    """Return what Ansible's ``no_log`` filter lets through of ``text``."""
    return str(remove_values(text, set(secrets.values())))


if __name__ == "__main__":
    raise SystemExit(
        serve("ansible-core no_log filter", version_of("ansible-core"), "library", text=text)
    )
