"""The masker suite tested: the reference scrubber passes, every broken masker is caught, a real
PyPI masker is measured, and the harness survives adapters that misbehave."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conformance.masker import cli, report
from conformance.masker.checks import Canaries, Status, run_checks
from conformance.masker.mutants import MUTANTS, reference_masker
from conformance.masker.protocol import (
    COMMAND,
    TEXT,
    InProcessMasker,
    Masker,
    MaskerError,
    MaskerInfo,
    MaskerStartError,
    Secret,
    SubprocessMasker,
    inert,
)

ADAPTERS = "conformance.masker.adapters"


def _rows(masker: object) -> dict[str, report.Row]:
    assert isinstance(masker, Masker)
    try:
        rows = report.fold(run_checks(masker))
    finally:
        masker.close()
    return {row.requirement.id: row for row in rows}


@pytest.mark.req("MASK-001", "MASK-005", "MASK-007", "MASK-012", "MASK-013", "MASK-017")
def test_reference_scrubber_passes_every_must_and_should_but_hardening() -> None:
    """The reference scrubber, as a buffering wrapper too, passes every MUST and SHOULD row."""
    rows = _rows(reference_masker())
    for row in rows.values():
        if row.requirement.level == "MUST":
            assert row.status is Status.PASS, (row.requirement.id, row.details)
    for requirement in ("MASK-013", "MASK-014", "MASK-015", "MASK-016", "MASK-017"):
        assert rows[requirement].status is Status.PASS, rows[requirement].details
    assert rows["MASK-006"].behaviour == "floor-8"
    assert rows["MASK-018"].status is Status.REPORTED
    assert report.verdict(list(rows.values())) == report.CONFORMANT


@pytest.mark.parametrize("item", MUTANTS, ids=[item.name for item in MUTANTS])
def test_every_broken_masker_is_caught_by_its_requirement(item: object) -> None:
    """Each broken masker shows in the row of the requirement it breaks."""
    from conformance.masker.mutants import MaskerMutant

    assert isinstance(item, MaskerMutant)
    row = _rows(item.masker())[item.requirement]
    if item.behaviour:
        assert row.behaviour == item.behaviour
    else:
        assert row.status is Status.FAIL, row.details


def test_the_mutant_catalog_is_broad_and_cites_known_requirements() -> None:
    """At least 8 broken maskers, each citing a catalog ID, none two with one name."""
    ids = {requirement.id for requirement in report.load_requirements()}
    assert len(MUTANTS) >= 8
    assert len({item.name for item in MUTANTS}) == len(MUTANTS)
    assert {item.requirement for item in MUTANTS} <= ids


def test_every_requirement_is_reached_by_some_check() -> None:
    """A run against the reference leaves no requirement without an outcome."""
    masker = reference_masker((TEXT,))
    try:
        cited = {outcome.requirement for outcome in run_checks(masker)}
    finally:
        masker.close()
    assert cited == {requirement.id for requirement in report.load_requirements()}


@pytest.mark.req("MASK-013")
def test_a_masker_without_paths_is_incomplete_never_conformant() -> None:
    """A masker that announced no path leaves every MUST unchecked: the verdict is incomplete."""
    masker = InProcessMasker("nothing", "1", lambda secrets, text: text, capabilities=())
    rows = _rows(masker)
    assert all(
        row.status is Status.UNCHECKED for row in rows.values() if row.requirement.level == "MUST"
    )
    assert report.verdict(list(rows.values())) == report.INCOMPLETE
    assert rows["MASK-013"].status is Status.NOT_APPLICABLE


def test_a_masker_that_masks_nothing_fails_every_form() -> None:
    """The identity masker fails forms a to d and every position."""
    rows = _rows(InProcessMasker("identity", "1", lambda secrets, text: text, (TEXT,)))
    for requirement in ("MASK-001", "MASK-002", "MASK-003", "MASK-004", "MASK-007", "MASK-012"):
        assert rows[requirement].status is Status.FAIL
    assert rows["MASK-001"].forms == ("a",)
    # Every form of the 8-character value leaks, as every form of the longer ones does: that is
    # the forms' rules broken, not the floor's (decisions S1.4).
    assert rows["MASK-005"].status is Status.UNCHECKED
    assert report.verdict(list(rows.values())) == report.NON_CONFORMANT


@pytest.mark.req("MASK-001", "MASK-016")
def test_reference_adapter_over_the_protocol_is_conformant(tmp_path: Path) -> None:
    """The reference scrubber behind its adapter subprocess is conformant; reports hold no value."""
    json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
    code = cli.main(
        [
            "--masker",
            f"{sys.executable} -m {ADAPTERS}.reference",
            "--report-json",
            str(json_path),
            "--report-md",
            str(md_path),
        ]
    )
    assert code == 0
    document = json.loads(json_path.read_text("utf-8"))
    cli.validate_report(document)
    cli.validate_report({"maskers": [document, document]})
    assert document["verdict"] == "conformant"
    assert document["masker"]["version"]
    rows = {row["id"]: row for row in document["requirements"]}
    assert rows["MASK-013"]["status"] == "not applicable"
    assert "| conformant |" in md_path.read_text("utf-8")


@pytest.mark.req("MASK-003", "MASK-004")
def test_ownlock_is_measured_and_its_url_forms_leak(tmp_path: Path) -> None:
    """ownlock (PyPI) masks forms a and b on both paths but leaks forms c and d of a value with
    ``*`` and ``~`` (its URL encoder keeps ``~`` and writes ``*`` as ``%2A``)."""
    pytest.importorskip("ownlock", reason="ownlock is installed by the test extra")
    masker = SubprocessMasker(f"{sys.executable} -m {ADAPTERS}.ownlock")
    assert masker.info.name == "ownlock"
    assert masker.info.capabilities == {TEXT, COMMAND}
    rows = _rows(masker)
    assert rows["MASK-001"].status is Status.PASS
    assert rows["MASK-002"].status is Status.PASS
    assert rows["MASK-003"].status is Status.FAIL
    assert rows["MASK-003"].forms == ("c",)
    assert rows["MASK-004"].forms == ("d",)
    assert set(rows["MASK-003"].paths) == {TEXT, COMMAND}


def _adapter(tmp_path: Path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text(textwrap.dedent(body), "utf-8")
    return f"{sys.executable} {script}"


HELLO = (
    'print(\'{"protocol": "secref-masker/1", "masker": {"name": "x", "version": "1"}, '
    '"capabilities": ["text"]}\', flush=True)\n'
)


def test_an_adapter_that_never_says_hello_is_a_start_error(tmp_path: Path) -> None:
    """An adapter silent past the start timeout cannot be started, and is killed."""
    command = _adapter(tmp_path, "import time\ntime.sleep(30)\n")
    with pytest.raises(MaskerStartError, match="no hello"):
        SubprocessMasker(command, start_timeout=1.0)


def test_an_adapter_of_another_protocol_is_a_start_error(tmp_path: Path) -> None:
    """A hello naming another protocol ends the run as a harness error."""
    command = _adapter(tmp_path, HELLO.replace("secref-masker/1", "secref-masker/9"))
    with pytest.raises(MaskerStartError):
        SubprocessMasker(command)
    assert cli.main(["--masker", command, "--report-json", str(tmp_path / "j")]) == 2


def test_garbage_and_hangs_are_unchecked_never_passed(tmp_path: Path) -> None:
    """An adapter that answers with garbage, then hangs, leaves its rows unchecked."""
    command = _adapter(
        tmp_path,
        HELLO + "import sys, time\nfor line in sys.stdin:\n"
        "    print('not json', flush=True)\n    time.sleep(30)\n",
    )
    masker = SubprocessMasker(command, call_timeout=1.0)
    secret = Canaries.mint().rich
    with pytest.raises(MaskerError, match="not JSON"):
        masker.mask_text([secret], "x")
    with pytest.raises(MaskerError):
        masker.mask_text([secret], "x")
    masker.close()


def test_an_error_that_echoes_a_value_is_quoted_without_it(tmp_path: Path) -> None:
    """A masker's refusal text is cleaned of every run of a value before it is quoted."""
    command = _adapter(
        tmp_path,
        HELLO + "import sys, json\nfor line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    v = r['secrets'][0]['value']\n"
        "    print(json.dumps({'id': r['id'], 'error': 'bad ' + v[2:14]}), flush=True)\n",
    )
    masker = SubprocessMasker(command)
    secret = Canaries.mint().plain
    with pytest.raises(MaskerError) as caught:
        masker.mask_text([secret], "x")
    masker.close()
    assert secret.value[2:10] not in str(caught.value)
    assert "????" in str(caught.value)


def test_inert_hides_forms_and_runs() -> None:
    """inert replaces a value's forms by its name and hides any 8-character run of it."""
    secret = Canaries.mint().rich
    assert inert(f"a {secret.value} b", [secret]) == "a <MASK_RICH> b"
    cleaned = inert("x" + secret.value[3:12] + "y", [secret])
    assert secret.value[3:11] not in cleaned


def test_a_report_holding_a_run_of_a_value_is_refused() -> None:
    """ensure_clean refuses text with 8 characters of a canary, naming it by its name."""
    canaries = Canaries.mint()
    cli.ensure_clean("nothing here", canaries)
    with pytest.raises(cli.LeakInReport, match="MASK_PEM"):
        cli.ensure_clean("..." + canaries.pem.value[30:40], canaries)


def test_masker_text_in_markdown_is_inert() -> None:
    """A hostile masker name cannot break the matrix's table or inject markup."""
    document = report.to_json(MaskerInfo("| <b>x</b> `y`\n", "1|2", frozenset(), "library"), [])
    page = report.matrix_markdown([document])
    first_row = page.splitlines()[2]
    assert first_row.count(" | ") == 2 + len(report.load_requirements())
    assert "<b>" not in page
    assert "\n`" not in page


def test_catalog_ids_are_unique_and_valid() -> None:
    """The masker catalog loads against its schema, with MASK IDs in order and none repeated."""
    ids = [requirement.id for requirement in report.load_requirements()]
    assert ids == sorted(ids)
    assert ids[0] == "MASK-001"
    assert all(
        requirement.level in ("MUST", "SHOULD", "EITHER")
        for requirement in report.load_requirements()
    )


def test_fresh_canaries_every_run_with_the_awkward_characters() -> None:
    """Each run mints new values; the rich one holds a space, quote, slash, *, ~ and non-ASCII."""
    first, second = Canaries.mint(), Canaries.mint()
    assert first.rich.value != second.rich.value
    for char in ' "/*~é':
        assert char in first.rich.value
    assert "*" not in first.quoted.value
    assert "~" not in first.quoted.value
    assert len(first.eight.value) == 8
    assert len(first.short_bytes.value) == 7
    assert len(first.short_bytes.value.encode()) == 8
    assert len(first.short_units.value) == 7
    assert len(first.short_units.value.encode("utf-16-le")) == 16
    assert "\n" in first.pem.value
    assert first.second.value.startswith(first.first.value[-8:])
    assert first.inner.value in first.first.value
    assert len(first.one.value) == len(first.other.value) < len(first.longer.value)
    assert isinstance(first.rich, Secret)
    assert "value" not in repr(first.rich)


def test_a_flooding_adapter_is_cut_off_at_the_line_bound(tmp_path: Path) -> None:
    """A line past the bound fails the request instead of growing without end."""
    command = _adapter(
        tmp_path,
        HELLO + "import sys\nfor line in sys.stdin:\n"
        "    sys.stdout.write('x' * (9 * 1024 * 1024))\n    sys.stdout.flush()\n",
    )
    masker = SubprocessMasker(command, call_timeout=10.0)
    with pytest.raises(MaskerError, match="longer than"):
        masker.mask_text([Canaries.mint().plain], "x")
    masker.close()


def test_the_published_matrix_has_the_current_columns_and_four_real_maskers() -> None:
    """docs/maskers.md shows the remaking command and a matrix over today's catalog."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "maskers.md").read_text("utf-8")
    assert "tox -e maskers" in page
    ids = [requirement.id for requirement in report.load_requirements()]
    header = "| masker | version | verdict | " + " | ".join(ids) + " |"
    assert header in page
    rows = page[page.index(header) :].split("\n\n", 1)[0].splitlines()[2:]
    names = [row.split(" | ")[0].removeprefix("| ") for row in rows]
    assert len([name for name in names if "reference" not in name]) >= 4


def test_inert_escapes_control_characters() -> None:
    """Adapter text quoted on a terminal cannot move the cursor or change colours."""
    assert inert("a\x1b[2Jb\x07", []) == "a\\x1b[2Jb\\x07"


@pytest.mark.req("MASK-013")
def test_stream_pieces_path_catches_a_filter_that_masks_each_piece_alone() -> None:
    """Through ``stream-pieces``, masking each piece alone fails MASK-013; buffering passes."""
    from conformance.masker.mutants import reference_function
    from conformance.masker.protocol import STREAM_PIECES

    for chunked, expected in ((True, Status.FAIL), (False, Status.PASS)):
        masker = InProcessMasker(
            "filter", "1", reference_function, (TEXT, STREAM_PIECES), chunked=chunked
        )
        row = _rows(masker)["MASK-013"]
        assert row.status is expected
        assert row.paths == (STREAM_PIECES,)


def test_the_python_kit_answers_an_unannounced_path_with_an_error() -> None:
    """An adapter built on the kit refuses a path it did not announce, naming no value."""
    import subprocess

    secret = Canaries.mint().plain
    request = {"id": 1, "op": "command", "secrets": [{"name": secret.name, "value": secret.value}]}
    request["argv"] = ["true"]
    completed = subprocess.run(
        [sys.executable, "-m", f"{ADAPTERS}.reference"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    hello, answer = (json.loads(line) for line in completed.stdout.splitlines())
    assert hello["capabilities"] == ["text"]
    assert answer == {"id": 1, "error": "the masker raised KeyError"}
