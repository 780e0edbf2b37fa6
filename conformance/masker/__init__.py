"""The masker suite: the scrub contract (decisions R5) checked against tools that mask secrets.

This package owns everything about maskers (decisions R10): the protocol that reaches them
(:mod:`~conformance.masker.protocol`, :mod:`~conformance.masker.kit`), the checks
(:mod:`~conformance.masker.checks`), the reports and matrix (:mod:`~conformance.masker.report`),
the broken maskers that test the checks (:mod:`~conformance.masker.mutants`) and the adapters for
real maskers (:mod:`conformance.masker.adapters`). Its requirement catalog is its own, so nothing
here changes the host suite's verdicts or self-checks.
"""
