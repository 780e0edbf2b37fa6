"""The model check's comparison of the prompts a step showed: a reference-free call prompted
where the model runs it unasked, or run unasked where the model prompts, is APPR-013, a SHOULD:
noted non-strict and never a failure, so the run goes on. A secret-bearing call is held to the
MUSTs: a prompt the model did not show is ORD-003, a missing one APPR-001.
"""

from __future__ import annotations

import pytest

from conformance.model import compare
from conformance.outcomes import RequirementError, recording

#: One prompt as the comparison reads it; only the count matters here.
PROMPT = {"toolName": "recorder", "secretRefs": []}


@pytest.mark.parametrize(("host", "model"), [(1, 0), (0, 1)], ids=["extra", "missing"])
def test_a_reference_free_call_is_non_strict(host: int, model: int) -> None:
    call = compare.Call(3, "recorder", bearing=False)
    with recording("probe") as record:
        compare.prompts(call, [PROMPT] * host, [PROMPT] * model)
    assert [requirement for requirement, _ in record.non_strict] == ["APPR-013"]


@pytest.mark.parametrize(("host", "model", "requirement"), [(1, 0, "ORD-003"), (0, 1, "APPR-001")])
def test_a_secret_bearing_call_fails(host: int, model: int, requirement: str) -> None:
    call = compare.Call(3, "recorder", bearing=True)
    with recording("probe"), pytest.raises(RequirementError) as raised:
        compare.prompts(call, [PROMPT] * host, [PROMPT] * model)
    assert raised.value.requirements[0] == requirement
