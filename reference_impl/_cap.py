"""Step [13], the cap: no result the agent reads is longer than the host's limit.

This module owns cutting a result to 150,000 characters, counting the note that says it was cut
(decisions R6.1). It runs after scrubbing, so a cut can never leave part of a value readable.
"""

from __future__ import annotations

from reference_impl._limits import RESULT_CAP_CHARS


def cap(text: str, limit: int = RESULT_CAP_CHARS) -> str:
    """Cut ``text`` so that it and the note about the cut fit in ``limit`` characters.

    Args:
        text: A scrubbed result or failure text.
        limit: The most characters the agent may read.

    Returns:
        ``text`` itself when it fits; else its head and a note giving the original length.
    """
    if len(text) <= limit:
        return text
    note = f"\n[result cut to {limit} characters; it had {len(text)}]"
    return text[: limit - len(note)] + note
