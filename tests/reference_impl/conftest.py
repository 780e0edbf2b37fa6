"""Collection rules for the reference host's unit tests.

Every test here cites at least one requirement with ``@pytest.mark.req(...)``, and every ID it
cites exists in ``conformance/requirements.yaml``; collection stops otherwise, so a typo in an ID
cannot make a test count for the wrong rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

_HERE = Path(__file__).parent
_CATALOG = _HERE.parent.parent / "conformance" / "requirements.yaml"


def _known_ids() -> frozenset[str]:
    data = yaml.safe_load(_CATALOG.read_text(encoding="utf-8"))
    return frozenset(str(entry["id"]) for entry in data["requirements"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a test of this directory that cites no requirement or an unknown one."""
    known = _known_ids()
    problems: list[str] = []
    for item in items:
        if _HERE not in Path(str(item.path)).parents:
            continue
        cited = [str(i) for mark in item.iter_markers("req") for i in mark.args]
        if not cited:
            problems.append(f"{item.nodeid}: no @pytest.mark.req")
        problems.extend(f"{item.nodeid}: unknown requirement {i}" for i in cited if i not in known)
    if problems:
        raise pytest.UsageError("requirement citations:\n" + "\n".join(problems))
