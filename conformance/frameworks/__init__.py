"""Real agent frameworks as placeholder hosts (decisions R11): adapters, checks and matrix.

This package owns the adapters that serve a released agent framework over driver protocol v1
(:mod:`conformance.frameworks.base` and one module per framework), the local stdio MCP server
that serves the suite's handlers as MCP tools (:mod:`conformance.frameworks.mcp_tools`), the
checks a placeholder host is held to (:mod:`conformance.frameworks.checks`), the matrix and its
reports
(:mod:`conformance.frameworks.matrix`) and the per-framework envs of ``tox -e frameworks``
(:mod:`conformance.frameworks.envs`). It never holds a secret and never prints a value.
"""
