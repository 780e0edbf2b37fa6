"""Adapter: the reference host's own result scrubber (decisions R5), driven as a library masker.

Each secret becomes a reference named after it; the scrubber is built per request, as the
reference host builds one per call. It must never keep a value past the request.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.masker.kit import serve, version_of
from reference_impl._scrub import Scrubber
from reference_impl._types import Field, Reference, SecretValue


def mask(secrets: Mapping[str, str], text: str) -> str:
    """Return ``text`` scrubbed of every value in ``secrets``, in the reference host's way."""
    pairs = [
        (Reference(name.lower(), Field.PASSWORD), SecretValue(v)) for name, v in secrets.items()
    ]
    return Scrubber(pairs).scrub(text)


if __name__ == "__main__":
    raise SystemExit(
        serve("secref reference scrubber", version_of("secref-suite"), "library", text=mask)
    )
