"""The frameworks matrix's JSON report holds to its schema, and the schema refuses what R11 does.

This module owns the check of ``conformance/schemas/frameworks.schema.json``: a report the
matrix writes (against the stand-in framework, sound and broken, with a framework marked not
run and an install time) validates, and documents the rulings forbid (a placeholder host
reported ``conformant``, a passing row that names a leaked form, a row missing) do not.
"""

from __future__ import annotations

import copy
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest

from conformance.frameworks import matrix

FAKE: Final = Path(__file__).parent / "fake_framework.py"


def _schema() -> dict[str, Any]:
    text = resources.files("conformance").joinpath("schemas", "frameworks.schema.json")
    schema: dict[str, Any] = json.loads(text.read_text("utf-8"))
    return schema


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("frameworks")
    code = matrix.main(
        [
            "--framework", f"{sys.executable} {FAKE}",
            "--framework", f"{sys.executable} {FAKE} log",
            "--not-run", "openhands-sdk: no Python 3.12 on this machine",
            "--install", "askui==0.48.0=470",
            "--install", "@playwright/mcp@0.0.83=2",
            "--report-json", str(out / "f.json"),
            "--report-md", str(out / "f.md"),
            "--timeout", "30",
        ]
    )  # fmt: skip
    assert code == 0
    document: dict[str, Any] = json.loads((out / "f.json").read_text("utf-8"))
    return document


def test_the_matrix_report_validates(report: dict[str, Any]) -> None:
    jsonschema.validate(report, _schema())
    assert [e["verdict"] for e in report["frameworks"]] == ["incomplete", "non-conformant"]


def _conformant(doc: dict[str, Any]) -> None:
    doc["frameworks"][0]["verdict"] = "conformant"


def _pass_with_forms(doc: dict[str, Any]) -> None:
    doc["frameworks"][0]["rows"]["SCRUB-003"]["forms"] = ["a"]


def _row_missing(doc: dict[str, Any]) -> None:
    del doc["frameworks"][0]["rows"]["INV2"]


def _install_unpinned(doc: dict[str, Any]) -> None:
    doc["installs"][0]["requirement"] = "askui>=0.48"


def _npm_install_unpinned(doc: dict[str, Any]) -> None:
    doc["installs"][1]["requirement"] = "@playwright/mcp@latest"


@pytest.mark.parametrize(
    "breaks",
    [_conformant, _pass_with_forms, _row_missing, _install_unpinned, _npm_install_unpinned],
)
def test_the_schema_refuses_what_the_rulings_forbid(report: dict[str, Any], breaks: Any) -> None:
    broken = copy.deepcopy(report)
    breaks(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, _schema())
