"""The conformance suite for hosts that resolve secret references in MCP tool calls.

The package holds the requirement catalog, the vectors, the checks, the canary leak detector,
the reports, the pytest plugin (``secref_conformance``), the console script
``secref-conformance`` and the mutant hosts. It never holds a secret and never prints a value.
"""

from __future__ import annotations

__version__ = "0.1.0"
