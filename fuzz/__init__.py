"""Fuzzing for the secret-reference contract: Hypothesis properties and atheris targets.

This package owns the generators of adversarial argument text (with the ground truth each one
was built from), the properties every host must satisfy on that text, the stateful model of the
registry, the atheris targets that reuse those properties, the differential runner and the
campaign driver. It is test code: nothing in the reference host imports it, and it must never
print a secret value (reports name references and lengths only).
"""
