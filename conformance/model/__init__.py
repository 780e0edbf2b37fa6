"""The model-based check family: any host against the reference host, step by step.

This package owns the state machine of ``conformance/checks/test_model.py``: what it draws
(:mod:`conformance.model.world`), how a host and the model are compared after a step and which
requirement a difference breaks (:mod:`conformance.model.compare`), and the machine and its
budget (:mod:`conformance.model.machine`). Nothing here prints a value.
"""

from typing import Final

#: Where the model's reference driver is imported from, when set: a directory holding an
#: unmutated ``reference_impl``. Mutation testing sets it, since a mutant is written into the
#: copy of the host the suite judges, which the model would otherwise run too.
MODEL_PATH_ENV: Final = "SECREF_MODEL_PATH"

#: The directory of a mutation scratch copy that holds that unmutated copy.
MODEL_DIR: Final = "model"
