"""The conformance checks: pytest test modules that take a ``host`` fixture.

Each module checks one part of the contract and cites the requirement IDs it checks with
``@pytest.mark.req``; parametrized cases carry their vector IDs as pytest ids and ``vector``
marks. The ``secref_conformance`` plugin provides the fixtures (``host``, ``mint``), so another
project can run the whole package (``pytest --pyargs conformance.checks``) or import single
modules into its own test files, in the manner of trio's and fsspec's importable checks.
Checks reach a host only through :class:`conformance.host.HostUnderTest`, mint every secret
as a canary, and never print one.
"""
