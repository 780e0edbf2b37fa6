"""The mutants of the open alphabets pass every older check of their requirement; the check that
draws its names from a generator catches them on every run (test_caught_every_time.py holds
that).

``unknown-vault-kinds-echoed`` reports a vault failure by kind for the three kinds the older
checks try and by its own message for any other; ``tool-rules-case-folded`` gives a tool without
a rule the rule of a tool whose name differs in case only; ``tool-lookup-case-folded`` runs that
tool when a call names it in another case. The older checks of MSG-009, POL-004 and ORD-006 name
no kind and no tool outside their fixed lists, so the mutants pass them; the generated names
catch each, and since the generator is seeded, on every run. The model check now draws from
the same alphabets (its unregistered tool is the recorder's name in capitals, its probe calls
tools registered under near names of one that holds a DENY, and a failing vault fails with any
of 32 kinds), so for each mutant both it and the generated check are the new ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.suite_runs import run_suite

#: (mutant, the requirement it breaks, the checks that draw the names it trips on).
CASES = (
    # The model check draws from the same alphabets, so it finds these too.
    ("unknown-vault-kinds-echoed", "MSG-009", "test_generated_vault_failure_kinds or test_model"),
    ("tool-rules-case-folded", "POL-004", "test_near_named_tool_keeps_its_own_rule or test_model"),
    ("tool-lookup-case-folded", "ORD-006", "test_near_names_are_unknown_tools or test_model"),
)


@pytest.mark.history
@pytest.mark.parametrize(("mutant", "requirement", "check"), CASES, ids=[c[0] for c in CASES])
def test_older_checks_pass_the_mutant(
    tmp_path: Path, mutant: str, requirement: str, check: str
) -> None:
    """Every check of the requirement but the generated one passes the mutant."""
    run = run_suite(
        tmp_path,
        "--host",
        f"mutant:{mutant}",
        "--requirements",
        requirement,
        "-k",
        f"not ({check})",
    )
    ran = [row for row in run.report()["checks"] if row["outcome"] == "pass"]
    assert run.status == 0, f"an older check of {requirement} caught {mutant}"
    assert ran, f"no older check of {requirement} ran"
