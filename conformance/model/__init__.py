"""The model-based check family: any host against the reference host, step by step.

This package owns the state machine of ``conformance/checks/test_model.py``: what it draws
(:mod:`conformance.model.world`), how a host and the model are compared after a step and which
requirement a difference breaks (:mod:`conformance.model.compare`), and the machine and its
budget (:mod:`conformance.model.machine`). Nothing here prints a value.
"""
