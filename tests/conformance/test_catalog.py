"""Tests of the requirement catalog: its schema, its self-checks and its rendered page.

Most tests here check the catalog tooling rather than a host, so they cite no requirement; the
ones about what the catalog says of particular requirements cite those requirements.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conformance import catalog, vectors

REPO = Path(__file__).resolve().parents[2]
CATALOG = catalog.load_catalog()
EITHER_IDS = tuple(r.id for r in CATALOG.requirements if r.level == catalog.EITHER)
EXCLUDED_IDS = tuple(r.id for r in CATALOG.requirements if r.level == catalog.EXCLUDED)


def _raw() -> dict[str, Any]:
    text = resources.files("conformance").joinpath("requirements.yaml").read_text("utf-8")
    document: dict[str, Any] = yaml.safe_load(text)
    return document


def test_packaged_catalog_matches_its_schema() -> None:
    """The YAML file validates against requirements.schema.json on its own."""
    schema = json.loads(
        resources.files("conformance")
        .joinpath("schemas", "requirements.schema.json")
        .read_text("utf-8")
    )
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_raw())


def test_catalog_is_typed_frozen_and_in_file_order() -> None:
    """load_catalog returns frozen Requirement values, in file order, with tuples."""
    raw_ids = [entry["id"] for entry in _raw()["requirements"]]
    assert CATALOG.ids() == tuple(raw_ids)
    first = CATALOG.requirements[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.level = "SHOULD"  # type: ignore[misc]
    for requirement in CATALOG.requirements:
        assert isinstance(requirement.alternatives, tuple)
        assert requirement.level in catalog.LEVELS
        assert requirement.scope in (catalog.ANY_HOST, catalog.REFERENCE_ONLY, catalog.MCP_SCOPE)
        assert CATALOG.get(requirement.id) is requirement


@pytest.mark.req(*EITHER_IDS)
def test_either_requirements_list_their_alternatives() -> None:
    """Every EITHER requirement names at least two accepted behaviours."""
    for requirement_id in EITHER_IDS:
        requirement = CATALOG.get(requirement_id)
        assert requirement is not None
        assert len(requirement.alternatives) >= 2, requirement_id


@pytest.mark.req(*EXCLUDED_IDS)
def test_excluded_requirements_give_a_reason() -> None:
    """Every excluded requirement says why the suite does not check it."""
    for requirement_id in EXCLUDED_IDS:
        requirement = CATALOG.get(requirement_id)
        assert requirement is not None
        assert requirement.reason, requirement_id


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: entry.update(level="EITHER"), "alternatives"),
        (lambda entry: entry.update(level="excluded"), "reason"),
        (lambda entry: entry.update(level="MAY"), "level"),
        (lambda entry: entry.update(alternatives=["a", "b"]), "alternatives"),
        (lambda entry: entry.update(scope="somewhere"), "scope"),
        (lambda entry: entry.pop("statement"), "statement"),
        (lambda entry: entry.update(id="gram-1"), "id"),
    ],
)
def test_schema_rejects_a_broken_entry(change: Any, message: str) -> None:
    """A broken entry fails the schema check, naming where."""
    document = copy.deepcopy(_raw())
    entry = next(e for e in document["requirements"] if e["level"] == "MUST")
    change(entry)
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.parse_catalog(document)


def test_ids_are_unique() -> None:
    """No requirement ID repeats in the packaged catalog."""
    catalog.check_ids_unique()
    assert len(set(CATALOG.ids())) == len(CATALOG.ids())


def test_a_repeated_id_is_reported() -> None:
    """check_ids_unique and parse_catalog both name an ID that repeats."""
    with pytest.raises(catalog.CatalogError, match="GRAM-001"):
        catalog.check_ids_unique(["GRAM-001", "GRAM-002", "GRAM-001"])
    document = copy.deepcopy(_raw())
    document["requirements"].append(copy.deepcopy(document["requirements"][0]))
    with pytest.raises(catalog.CatalogError, match=document["requirements"][0]["id"]):
        catalog.parse_catalog(document)


def test_unknown_ids_names_only_the_unknown() -> None:
    """unknown_ids returns exactly the cited IDs that the catalog lacks."""
    assert catalog.unknown_ids(["GRAM-001", "NOPE-999", "INV1-ECHO", "gram-0001"]) == {
        "NOPE-999",
        "gram-0001",
    }
    assert catalog.unknown_ids([]) == set()


def test_every_vector_cites_known_requirements() -> None:
    """Every requirement a vector cites exists in the catalog."""
    cited = [rid for ids in catalog.vector_citations().values() for rid in ids]
    assert cited
    assert catalog.unknown_ids(catalog.vector_citations()) == set()


def test_must_without_checks_counts_checks_and_vectors() -> None:
    """A MUST cited by neither a check nor a vector is reported; citing it clears it."""
    musts = {r.id for r in CATALOG.requirements if r.level == catalog.MUST}
    by_vectors = set(catalog.vector_citations())
    uncited = catalog.must_without_checks([])
    assert uncited == musts - by_vectors
    assert "GRAM-001" not in uncited  # the grammar vectors cite it
    assert "SCRUB-016" in uncited  # reference-only MUSTs count too
    assert catalog.must_without_checks(sorted(musts)) == set()
    some = sorted(uncited)[0]
    assert some not in catalog.must_without_checks([some])


def test_non_must_requirements_never_need_a_check() -> None:
    """SHOULD, EITHER and excluded requirements are never reported as uncited."""
    others = {r.id for r in CATALOG.requirements if r.level != catalog.MUST}
    assert not catalog.must_without_checks([]) & others


def test_rendered_page_is_current() -> None:
    """docs/requirements.md equals a fresh render; run the render command when this fails."""
    committed = (REPO / "docs" / "requirements.md").read_text("utf-8")
    assert committed == catalog.render_markdown(), (
        "docs/requirements.md is out of date: python -m conformance.catalog render"
    )


def test_render_is_deterministic_and_complete() -> None:
    """The page is the same on every render and has one row per requirement."""
    page = catalog.render_markdown()
    assert page == catalog.render_markdown()
    rows = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    ids = [row.split(" | ")[0].removeprefix("| ") for row in rows if not row.startswith("| ID ")]
    assert ids == [
        r.id
        for _, group in catalog.GROUPS
        for r in CATALOG.requirements
        if catalog._family(r.id) in group
    ]
    assert sorted(ids) == sorted(CATALOG.ids())


@pytest.mark.req(*EXCLUDED_IDS)
def test_excluded_rows_carry_their_reason() -> None:
    """Each excluded requirement's row on the page shows its reason."""
    page = catalog.render_markdown()
    for requirement_id in EXCLUDED_IDS:
        requirement = CATALOG.get(requirement_id)
        assert requirement is not None
        assert requirement.reason is not None
        row = next(line for line in page.splitlines() if line.startswith(f"| {requirement_id} |"))
        assert catalog._cell(requirement.reason) in row


def test_render_lists_the_vectors_that_cite_a_requirement() -> None:
    """A requirement's row lists its vectors, consecutive IDs as ranges."""
    fake = {"GRAM-001": ("gram-0001", "gram-0002", "gram-0003", "gram-0007", "scrub-0002")}
    page = catalog.render_markdown(citations=fake)
    row = next(line for line in page.splitlines() if line.startswith("| GRAM-001 |"))
    assert row.endswith("| gram-0001…0003, gram-0007, scrub-0002 |")
    grammar = [v.id for v in vectors.load_grammar() if "GRAM-014" in v.requirements]
    real = next(
        line for line in catalog.render_markdown().splitlines() if line.startswith("| GRAM-014 |")
    )
    assert grammar[0] in real


def test_render_escapes_markdown() -> None:
    """Pipes, angle brackets and asterisks in statements cannot break the table."""
    assert catalog._cell("a | b <id> *x*") == "a \\| b &lt;id&gt; \\*x\\*"


def test_render_refuses_a_requirement_outside_every_table() -> None:
    """A new ID family must be given a table before the page can render."""
    stray = catalog.Requirement("ZZZ-001", "MUST", "R1", "x", (), None, catalog.ANY_HOST)
    odd = catalog.Catalog(1, (stray,), {"ZZZ-001": stray})
    with pytest.raises(catalog.CatalogError, match="ZZZ-001"):
        catalog.render_markdown(odd, {})


def test_render_command_writes_and_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`render --check` fails on a stale page and passes once `render` has written it."""
    output = tmp_path / "requirements.md"
    output.write_text("stale\n", "utf-8")
    assert catalog.main(["render", "--output", str(output), "--check"]) == 1
    assert catalog.main(["render", "--output", str(output)]) == 0
    assert output.read_bytes() == catalog.render_markdown().encode("utf-8")
    assert catalog.main(["render", "--output", str(output), "--check"]) == 0
    capsys.readouterr()


def test_every_requirement_has_a_short_title() -> None:
    """Each entry has a title of at most 70 characters on one line, loaded by the catalog."""
    raw = {entry["id"]: entry for entry in _raw()["requirements"]}
    assert set(raw) == set(CATALOG.ids())
    for requirement in CATALOG.requirements:
        assert requirement.title == raw[requirement.id]["title"]
        assert 0 < len(requirement.title) <= 70, requirement.id
        assert "\n" not in requirement.title, requirement.id


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: entry.pop("title"), "title"),
        (lambda entry: entry.update(title="x" * 71), "title"),
        (lambda entry: entry.update(title=""), "title"),
    ],
)
def test_schema_rejects_a_missing_or_long_title(change: Any, message: str) -> None:
    """An entry without a title, or with one longer than 70 characters, breaks the schema."""
    document = copy.deepcopy(_raw())
    change(document["requirements"][0])
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.parse_catalog(document)


def test_the_rendered_catalog_leads_each_statement_with_its_title() -> None:
    """docs/requirements.md shows each checked requirement's title, in bold, before its rule."""
    page = catalog.render_markdown()
    for requirement in CATALOG.requirements:
        if requirement.level == "excluded":
            continue
        row = next(line for line in page.splitlines() if line.startswith(f"| {requirement.id} |"))
        assert f"| **{catalog._cell(requirement.title)}" in row, requirement.id
