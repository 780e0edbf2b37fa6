"""Tests of the grammar vector generator: the checked-in corpus and matrix are its output, IDs
are names, the matrix is full, and the cases the generator was written for are in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import vectorgen, vectors

GENERATED = vectors.load_generated()
#: The page is read from this checkout, not from beside the package: tox installs a wheel, and a
#: wheel carries no docs.
DOC = Path(__file__).resolve().parents[2] / "docs" / "vectors.md"
_BY_ID = {vector.id: vector for vector in GENERATED}


@pytest.mark.req("GRAM-011", "GRAM-012", "GRAM-014", "GRAM-040")
def test_checked_in_corpus_is_the_generators_output() -> None:
    """generated.json is byte for byte what the generator writes now."""
    want = vectorgen.render_json(vectorgen.build())
    have = vectorgen.OUTPUT.read_text(encoding="utf-8")
    assert have == want, f"generated.json is stale: run {vectorgen.REGENERATE}"


def test_docs_matrix_is_current_and_full() -> None:
    """docs/vectors.md holds the matrix of the checked-in corpus, and no cell of it is empty."""
    ids = [vector.id for vector in GENERATED]
    page = DOC.read_text(encoding="utf-8")
    assert page == vectorgen.render_doc(page, ids), (
        f"the matrix in docs/vectors.md is stale: run {vectorgen.REGENERATE}"
    )
    for cells in (vectorgen.matrix(ids), vectorgen.feature_matrix(ids)):
        empty = [
            f"{row} x {position}"
            for row, counts in cells.items()
            for position, count in counts.items()
            if count == 0
        ]
        assert empty == [], f"empty cells in the coverage matrix: {empty}"


def test_an_empty_cell_is_seen() -> None:
    """Leaving one feature group out of one position empties a cell, and the matrix shows it."""
    group = vectorgen.features()[0].group
    names = {f.name for f in vectorgen.features() if f.group == group}
    ids = [
        v.id
        for v in GENERATED
        if not (
            (split := vectorgen.feature_of(v.id)) is not None
            and split[0] in names
            and split[1] == "top-key"
        )
    ]
    assert vectorgen.matrix(ids)[group]["top-key"] == 0
    one = next(iter(names))
    ids = [v.id for v in GENERATED if v.id != vectorgen.vector_id(one, "root-array")]
    assert vectorgen.feature_matrix(ids)[one]["root-array"] == 0


def test_ids_are_named_after_feature_and_position() -> None:
    """Every crossed vector's ID is gen-<feature>--<position>; building twice gives one output."""
    first, second = vectorgen.build(), vectorgen.build()
    assert first == second
    crossed = {
        vectorgen.vector_id(feature.name, position.name)
        for feature in vectorgen.features()
        for position in vectorgen.POSITIONS
    }
    assert crossed <= set(_BY_ID)
    standalone = set(_BY_ID) - crossed
    assert all(vectorgen.feature_of(name) is None for name in standalone)
    assert len(_BY_ID) == len(GENERATED)


def test_ids_do_not_shift_when_a_feature_is_added() -> None:
    """A new feature adds IDs and changes none: the IDs depend on names, not on order."""
    extra = vectorgen.Feature(
        "zz-new", "spelling", "{{secret:x}}", vectorgen.MALFORMED, None,
        vectorgen.BAD_ID, (), (), "A new feature.",
    )  # fmt: skip
    before = {
        vectorgen.vector_id(f.name, p.name)
        for f in vectorgen.features()
        for p in vectorgen.POSITIONS
    }
    after = {
        vectorgen.vector_id(f.name, p.name)
        for f in (extra, *vectorgen.features())
        for p in vectorgen.POSITIONS
    }
    assert before < after
    assert len(after - before) == len(vectorgen.POSITIONS)


@pytest.mark.parametrize(
    ("vector_id", "expected", "pointer"),
    [
        # the three examples of class 3: an escaped marker in an array item, an escaped key in
        # an object inside an array, an unterminated marker in an array item inside an object
        ("gen-u-all-lower--array-item", "valid", None),
        ("gen-u-all-upper--deep-array-item", "valid", None),
        ("gen-u-all-lower--object-in-array-key", "invalid", "/a/1"),
        ("gen-unterminated-end--array-in-object-item", "invalid", "/a/b/1"),
        # class 4: spellings in other encodings stay literal
        ("gen-lit-pct-upper--top-value", "valid", None),
        ("gen-lit-html-decimal--top-key", "valid", None),
        ("gen-lit-double-escaped--root-string", "valid", None),
        # class 5: a member name a vault record really has
        ("gen-bad-field-website--nested-value", "invalid", "/a/k"),
        ("gen-bad-field-tags--array-item", "invalid", "/a/1"),
    ],
)
def test_the_issue_cases_are_in_the_corpus(
    vector_id: str, expected: str, pointer: str | None
) -> None:
    """The cases the generator exists for are present with the verdict the rulings give."""
    vector = _BY_ID[vector_id]
    assert vector.expected == expected
    assert vector.pointer == pointer
    if expected == "valid" and "no-marker" in vector.flags:
        assert vector.refs == ()
        assert "GRAM-040" in vector.requirements


def test_escaped_marker_tokens_are_escaped_in_the_raw_text() -> None:
    """An escaped spelling reaches the wire escaped: the raw args hold no literal marker."""
    vector = _BY_ID["gen-u-all-lower--array-item"]
    assert "{{secret:" not in vector.args.lower()
    assert json.loads(vector.args)["a"][1].startswith("{{secret:")


def test_standalone_cases_cover_every_cut_and_stray() -> None:
    """Truncation after each of { [ , : (short and padded past 256) and each stray is present."""
    for cut, _ in vectorgen._CUTS:
        for padding in ("short", "padded-before", "padded-after"):
            vector = _BY_ID[f"gen-truncated-after-{cut}-literal-{padding}"]
            assert vector.expected == "invalid"
            if padding != "short":
                assert len(vector.args) > 256
        assert _BY_ID[f"gen-truncated-after-{cut}-no-marker"].refs == ()
    for name, _ in vectorgen._STRAYS:
        assert _BY_ID[f"gen-stray-{name}-escaped"].expected == "invalid"
    for name in ("members", "key", "array", "plural"):
        assert _BY_ID[f"gen-lookalike-beside-{name}"].refs == (f"{vectorgen.ID_A}.password",)


def test_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--check exits 1 when the corpus differs from the generator's, and 0 once rewritten."""
    stale = tmp_path / "generated.json"
    stale.write_text("{}\n", encoding="utf-8")
    doc = tmp_path / "vectors.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(vectorgen, "OUTPUT", stale)
    monkeypatch.setattr(vectorgen, "DOC", doc)
    assert vectorgen.main(["--check"]) == 1
    assert vectorgen.main([]) == 0
    assert vectorgen.main(["--check"]) == 0


def test_missing_page_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run where the docs are absent (an installed wheel), the generator says so and exits 2."""
    monkeypatch.setattr(vectorgen, "DOC", tmp_path / "vectors.md")
    assert vectorgen.main(["--check"]) == 2
    assert "source checkout" in capsys.readouterr().err
