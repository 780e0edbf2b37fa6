"""Checks of the operator's broad answers to calls that carry no reference (design, "Approval
semantics").

A secret-bearing call turns every broad answer into one approval (decisions R3.3, checked in
test_approval); a reference-free call keeps the host's usual meaning, which the driver protocol
reports as the dispositions APPROVED_ALWAYS, APPROVED_PROVIDER and APPROVED_SESSION. Each answer
is given once, then a second call it covers must run without a prompt. These calls carry no
secret, and nothing here prints one.
"""

from __future__ import annotations

import pytest

from conformance.host import Answer, HandlerKind
from conformance.outcomes import should
from conformance.scenario import RECORDER, RecordingHost, answering, args_json, config, tool

#: Each broad answer, the disposition that records it, and the tool its grant must cover next.
_BROAD = {
    "always-allow": (Answer.ALWAYS_ALLOW, "APPROVED_ALWAYS", RECORDER.name),
    "trust-provider": (Answer.TRUST_PROVIDER, "APPROVED_PROVIDER", "sibling"),
    "trust-session": (Answer.TRUST_SESSION, "APPROVED_SESSION", RECORDER.name),
}


@pytest.mark.req("APPR-013")
@pytest.mark.parametrize("case", list(_BROAD))
def test_broad_answer_to_plain_call(host: RecordingHost, case: str) -> None:
    """A broad answer to a plain call is recorded as such and covers the next call it names."""
    answer, disposition, covered = _BROAD[case]
    sibling = tool("sibling", HandlerKind.RECORDER)
    host.reset(config((), tools=(RECORDER, sibling)))
    first = host.invoke(RECORDER.name, args_json({"x": "plain"}), answering(answer))
    if not should(not first.is_error, "APPR-013", f"a {case} answer ended {first.disposition}"):
        return
    should(
        first.disposition == disposition,
        "APPR-013",
        f"a {case} answer to a plain call was recorded {first.disposition}, not {disposition}",
    )
    prompts = len(host.observe().approval_requests)
    second = host.invoke(covered, args_json({"y": "plain"}), answering(Answer.DENY))
    should(
        not second.is_error and len(host.observe().approval_requests) == prompts,
        "APPR-013",
        f"after a {case} answer the next call it covers still prompted ({second.disposition})",
    )
