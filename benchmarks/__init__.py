"""Benchmarks of the reference host's hot paths, reported as ratios taken in one run.

Run them with ``python -m benchmarks.report`` (``tox -e bench``) or ``pytest benchmarks``. The
ordinary test suite never runs them; it asserts only the loose bounds in ``tests/bench``.
"""
