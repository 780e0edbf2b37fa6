"""Concurrent calls against one registry: whole ledger lines, one per call, and a revocation
made while a prompt is open always stops its call."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from reference_impl import (
    Answer,
    ApprovalRequest,
    Disposition,
    InMemoryVault,
    JsonlLedger,
    Registry,
    Rule,
    ScriptedOperator,
    Tool,
    ToolArguments,
    read_ledger,
)
from tests.reference_impl.support import (
    ID_A,
    ID_B,
    SECRET_USER,
    ledger_file_leaks,
    ref,
    standard_records,
)

THREADS = 8
CALLS = 200


def mode_of(index: int) -> str:
    """The kind of call number ``index`` of a thread makes."""
    return {3: "revoke", 7: "deny", 5: "plain", 9: "malformed"}.get(index % 10, "secret")


EXPECTED = {
    "revoke": Disposition.POLICY_DENIED,
    "deny": Disposition.POLICY_DENIED,
    "plain": Disposition.APPROVED_ONCE,
    "malformed": Disposition.SECRET_UNRESOLVED,
    "secret": Disposition.APPROVED_ONCE,
}


def arguments_for(thread: int, index: int) -> str:
    mode = mode_of(index)
    call = f"{thread}-{index}"
    if mode == "plain":
        return json.dumps({"call": call, "mode": mode, "text": "no reference"})
    if mode == "malformed":
        return json.dumps({"call": call, "mode": mode, "text": "{{secret:nope}}"})
    return json.dumps({"call": call, "mode": mode, "text": ref(ID_A) + ref(ID_B, "username")})


@pytest.mark.req("LEDG-010", "LEDG-005", "FENCE-001", "FENCE-002", "INV4")
def test_eight_threads_two_hundred_calls_each(tmp_path: Path) -> None:
    """8 x 200 calls, some revoked or denied mid-prompt: every ledger line parses, there is one
    per call, and no revoked call's handler ran."""
    ran: set[str] = set()
    ran_lock = threading.Lock()

    def handler(arguments: ToolArguments) -> str:
        call = arguments.string("call")
        assert call is not None
        with ran_lock:
            ran.add(call)
        return "done " + arguments.raw

    registries: list[Registry] = []

    def answer(request: ApprovalRequest) -> Answer:
        # The request shows the agent's own arguments, so the operator can read the mode.
        written = json.loads(request.arguments)
        rules = registries[0].rules
        if written["mode"] == "revoke":
            rules.revoke_tool(request.tool_name)
        elif written["mode"] == "deny":
            rules.save_tool_rule(request.tool_name, Rule.DENY)
        return Answer.APPROVE

    path = tmp_path / "mcp-calls.jsonl"
    registry = Registry(
        vault=InMemoryVault(standard_records()),
        operator=ScriptedOperator(answer),
        ledger=JsonlLedger(path),
        user=SECRET_USER,
        pending_limit=THREADS,
    )
    registries.append(registry)
    for thread in range(THREADS):
        registry.register(Tool(f"t{thread}", "shared-provider", handler))

    outcomes: dict[str, Disposition] = {}
    outcome_lock = threading.Lock()
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def worker(thread: int) -> None:
        try:
            barrier.wait()
            tool = f"t{thread}"
            for index in range(CALLS):
                out = registry.invoke(tool, arguments_for(thread, index))
                with outcome_lock:
                    outcomes[f"{thread}-{index}"] = out.disposition
                if mode_of(index) == "deny":
                    registry.rules.save_tool_rule(tool, Rule.ASK)  # the operator lifts it
        except BaseException as error:  # surfaced below, in the test's own thread
            errors.append(error)

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for started in workers:
        started.start()
    for started in workers:
        started.join(60)
    assert errors == []
    assert not any(started.is_alive() for started in workers)

    contents = read_ledger(path)
    assert contents.problems == ()
    assert len(path.read_bytes().splitlines()) == THREADS * CALLS
    assert len(contents.records) == THREADS * CALLS
    assert len({record.id for record in contents.records}) == THREADS * CALLS

    revoked = {call for call in outcomes if mode_of(int(call.split("-")[1])) in ("revoke", "deny")}
    assert len(revoked) == THREADS * CALLS // 5
    assert ran.isdisjoint(revoked)
    wrong = {
        call: disposition
        for call, disposition in outcomes.items()
        if disposition is not EXPECTED[mode_of(int(call.split("-")[1]))]
    }
    assert wrong == {}
    assert ran == {call for call, d in outcomes.items() if d is Disposition.APPROVED_ONCE}

    by_call = {
        json.loads(record.sanitized_args)["call"]: record.approval_disposition
        for record in contents.records
    }
    assert by_call == outcomes
    assert ledger_file_leaks(path.read_bytes()) == []
