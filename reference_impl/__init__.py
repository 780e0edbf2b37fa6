"""A minimal reference host for secret references in MCP tool calls.

The package implements the whole governed path of the design, steps [0] to [14], with in-memory
ports for the vault, the operator, the clock and the ledger. Its private modules are named after
the steps; this facade is the public surface, and nothing here ever prints a value.
"""

__version__ = "0.1.0"

from reference_impl._arguments import ArgumentsUnavailableError, ToolArguments, substitute
from reference_impl._cap import cap
from reference_impl._clock import Clock, FixedClock, SystemClock
from reference_impl._execute import Handler, Tool
from reference_impl._grammar import (
    MALFORMED_PREFIX,
    NOT_OBJECT_MESSAGE,
    REASON_BAD_FIELD,
    REASON_BAD_ID,
    REASON_KEY,
    REASON_UNTERMINATED,
    Malformed,
    Occurrence,
    ParsedArguments,
    judge_body,
    parse_arguments,
    scan_string,
)
from reference_impl._ledger import (
    JsonlLedger,
    Ledger,
    LedgerContents,
    LedgerError,
    MemoryLedger,
    decode_record,
    encode_record,
    read_ledger,
)
from reference_impl._limits import (
    APPROVAL_TIMEOUT_SECONDS,
    PENDING_APPROVAL_LIMIT,
    RESULT_CAP_CHARS,
    SCRUB_MIN_CODE_POINTS,
    VAULT_PAGE_SIZE,
)
from reference_impl._operator import Operator, QueueOperator, ScriptedOperator
from reference_impl._policy import Decision, Policy, PolicyError, Rules, load_policy, parse_policy
from reference_impl._registry import (
    BEARING_DENIED_MESSAGE,
    DISABLED_MESSAGE,
    NO_PERMISSION_MESSAGE,
    STEP_ORDER,
    Registry,
)
from reference_impl._resolve import NO_VAULT_MESSAGE, resolve
from reference_impl._sanitize import REDACTED_CANDIDATE, redact_text, sanitize_arguments
from reference_impl._scan import has_marker
from reference_impl._scrub import Scrubber, form_encode, forms, json_escape, placeholder
from reference_impl._types import (
    BROAD_ANSWERS,
    SECRET_READ,
    WITHHELD,
    Answer,
    ApprovalRequest,
    CallOutcome,
    Disposition,
    Field,
    LedgerRecord,
    Reference,
    Refusal,
    Risk,
    Rule,
    SecretRecord,
    SecretValue,
    ToolResult,
    User,
)
from reference_impl._vault import InMemoryVault, Vault, VaultError

__all__ = [
    "APPROVAL_TIMEOUT_SECONDS",
    "BEARING_DENIED_MESSAGE",
    "BROAD_ANSWERS",
    "DISABLED_MESSAGE",
    "MALFORMED_PREFIX",
    "NOT_OBJECT_MESSAGE",
    "NO_PERMISSION_MESSAGE",
    "NO_VAULT_MESSAGE",
    "PENDING_APPROVAL_LIMIT",
    "REASON_BAD_FIELD",
    "REASON_BAD_ID",
    "REASON_KEY",
    "REASON_UNTERMINATED",
    "REDACTED_CANDIDATE",
    "RESULT_CAP_CHARS",
    "SCRUB_MIN_CODE_POINTS",
    "SECRET_READ",
    "STEP_ORDER",
    "VAULT_PAGE_SIZE",
    "WITHHELD",
    "Answer",
    "ApprovalRequest",
    "ArgumentsUnavailableError",
    "CallOutcome",
    "Clock",
    "Decision",
    "Disposition",
    "Field",
    "FixedClock",
    "Handler",
    "InMemoryVault",
    "JsonlLedger",
    "Ledger",
    "LedgerContents",
    "LedgerError",
    "LedgerRecord",
    "Malformed",
    "MemoryLedger",
    "Occurrence",
    "Operator",
    "ParsedArguments",
    "Policy",
    "PolicyError",
    "QueueOperator",
    "Reference",
    "Refusal",
    "Registry",
    "Risk",
    "Rule",
    "Rules",
    "ScriptedOperator",
    "Scrubber",
    "SecretRecord",
    "SecretValue",
    "SystemClock",
    "Tool",
    "ToolArguments",
    "ToolResult",
    "User",
    "Vault",
    "VaultError",
    "__version__",
    "cap",
    "decode_record",
    "encode_record",
    "form_encode",
    "forms",
    "has_marker",
    "json_escape",
    "judge_body",
    "load_policy",
    "parse_arguments",
    "parse_policy",
    "placeholder",
    "read_ledger",
    "redact_text",
    "resolve",
    "sanitize_arguments",
    "scan_string",
    "substitute",
]
