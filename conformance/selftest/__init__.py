"""How the suite proves itself: the mutant catalog, the capability-stripping tables, the runs
that spread them over the machine's cores, and mutation testing of the reference host.

This package owns the self-test (``secref-conformance selftest``). It runs the suite against
hosts broken on purpose and holds every run to one rule: a broken host is never certified. It
never weakens a check to make a mutant pass, and it prints no value.
"""
