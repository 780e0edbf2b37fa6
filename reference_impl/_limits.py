"""Named limits of the governed path.

This module owns every number the reference host enforces, each with the place it comes from.
It must never hold behaviour: code elsewhere imports these names instead of writing the figures.
"""

from __future__ import annotations

from typing import Final

#: The host's result cap in characters, counting the note appended about the cut (design,
#: "[13] cap"; decisions R6.1).
RESULT_CAP_CHARS: Final = 150_000

#: Values shorter than this many code points are not scrubbed in any form, because they would
#: match inside ordinary words (design, "Result scrubbing"; decisions R5.1).
SCRUB_MIN_CODE_POINTS: Final = 8

#: Secrets per vault page; a resolution walks pages until every id is found or a page comes back
#: short (design, "Cost, measured"; decisions R7.1).
VAULT_PAGE_SIZE: Final = 200

#: Seconds an approval prompt stays open before the call ends as TIMEOUT (decisions R3.5).
APPROVAL_TIMEOUT_SECONDS: Final = 45.0

#: Prompts that may be open at once; one more ends as QUEUE_FULL (decisions R3.5).
PENDING_APPROVAL_LIMIT: Final = 4

#: Seconds a handler may run. The design keeps the host's existing execution timeout without
#: giving a figure; 60 s is this reference host's choice, configurable per registry.
EXECUTION_TIMEOUT_SECONDS: Final = 60.0

#: Characters of failure text kept in a ledger record's ``errorSnippet``. The design names the
#: field but not its size; 500 is this reference host's choice.
ERROR_SNIPPET_CHARS: Final = 500

#: Characters of the agent's argument text kept in ``sanitizedArgs`` and in an approval request.
#: The design gives no figure; 10,000 is this reference host's choice, with a note at the cut.
SANITIZED_ARGS_CHARS: Final = 10_000

#: The tag that marks an AI provider's key, which references never resolve (decisions R2).
AI_PROVIDER_TAG: Final = "ai-provider"

#: Bytes a file the reference host reads at start-up (vault, policy) may hold; a bigger one is
#: refused before any call runs, so ``--vault /dev/zero`` cannot exhaust memory (decisions R7.3).
INPUT_FILE_MAX_BYTES: Final = 16 * 1024 * 1024

#: Characters of an unknown member's name an error may quote, and then only when every one is
#: printable ASCII; any other name is "an unknown member" (decisions R7.3).
QUOTED_MEMBER_MAX_CHARS: Final = 32
