"""Adapter: the Apache Airflow task SDK's secrets masker (PyPI ``apache-airflow-task-sdk``).

A task registers a value with ``mask_secret`` and its logs pass through ``redact``; the adapter
resets the masker before each request so no value carries over.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow.sdk._shared.secrets_masker import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
    redact,
    reset_secrets_masker,
)
from airflow.sdk.log import mask_secret  # type: ignore[import-untyped, import-not-found, unused-ignore]

from conformance.masker.kit import serve, version_of


def text(secrets: Mapping[str, str], text: str) -> str:
    """Return what the task SDK's masker lets through of ``text``."""
    reset_secrets_masker()
    for value in secrets.values():
        mask_secret(value)
    return str(redact(text))


if __name__ == "__main__":
    raise SystemExit(
        serve(
            "apache-airflow-task-sdk masker",
            version_of("apache-airflow-task-sdk"),
            "library",
            text=text,
        )
    )
