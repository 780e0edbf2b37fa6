"""The requirement catalog: every rule of the contract, with a stable ID, as typed values.

This module owns reading ``conformance/requirements.yaml`` through ``importlib.resources``,
checking it against ``conformance/schemas/requirements.schema.json``, the self-checks the suite
runs over it (an ID that repeats, an ID a check cites that the catalog lacks, a MUST that no
check or vector cites), and rendering it as ``docs/requirements.md``
(``python -m conformance.catalog render``). IDs are never renumbered or reused; a retired rule
keeps its ID as ``excluded``, with a reason. The render must stay deterministic, because a test
compares the committed page with a fresh one.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import jsonschema
import yaml

#: The levels a requirement can have (the rulings' preamble); ``excluded`` needs a reason.
MUST: Final = "MUST"
SHOULD: Final = "SHOULD"
EITHER: Final = "EITHER"
EXCLUDED: Final = "excluded"
LEVELS: Final = (MUST, SHOULD, EITHER, EXCLUDED)

#: Who a requirement binds: every host, or the reference host's own files and tools only.
ANY_HOST: Final = "any-host"
REFERENCE_ONLY: Final = "reference-only"
#: The scope of rules that arise only on a run via MCP (decisions R9).
MCP_SCOPE: Final = "mcp"

#: Where ``render`` writes by default, relative to the working directory (the repository root).
DEFAULT_OUTPUT: Final = Path("docs") / "requirements.md"

#: The tables of the rendered page, in order: a title and the ID families it holds.
GROUPS: Final = (
    ("Grammar (decisions R1)", ("GRAM",)),
    ("Refusal messages (decisions R2)", ("MSG",)),
    ("Ordering (decisions R2.3, design steps)", ("ORD",)),
    ("Approval (decisions R3)", ("APPR",)),
    ("Revocation fence (decisions R3.4)", ("FENCE",)),
    ("Substitution and transparency (decisions R4)", ("SUBST",)),
    ("Scrubbing (decisions R5)", ("SCRUB",)),
    ("Cap, ledger and log (decisions R6)", ("CAP", "LEDG", "LOG")),
    ("Vault and policy (decisions R7)", ("VAULT", "POL")),
    ("The MCP wire (decisions R9)", ("MCP",)),
    ("Invariants (design)", ("INV",)),
    ("Operating and cost (design, decisions R8)", ("OPS", "COST")),
    ("Excluded (design non-goals and future work)", ("EXCL",)),
)

_FAMILY_RE: Final = re.compile(r"[A-Z]+")
_VECTOR_ID_RE: Final = re.compile(r"([a-z]+)-([0-9]+)")


class CatalogError(ValueError):
    """The catalog breaks its schema or one of its rules."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One normative statement of the contract.

    Attributes:
        id: The stable ID, e.g. ``GRAM-004``.
        level: ``MUST``, ``SHOULD``, ``EITHER`` or ``excluded``.
        section: Where it comes from: a ruling (``R1.2``) or a part of the design.
        statement: The rule, in this project's words.
        alternatives: For EITHER: the behaviours accepted.
        reason: For excluded: why the suite does not check it.
        scope: ``any-host``; ``reference-only`` for the reference host's own files and tools;
            ``mcp`` for rules that arise only on a run via MCP (decisions R9).
        title: A short name of at most 70 characters, shown beside the ID in every report.
    """

    id: str
    level: str
    section: str
    statement: str
    alternatives: tuple[str, ...]
    reason: str | None
    scope: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class Catalog:
    """The whole catalog, in file order.

    Attributes:
        version: The catalog format's version.
        requirements: Every requirement, in file order.
        by_id: The same requirements by ID.
    """

    version: int
    requirements: tuple[Requirement, ...]
    by_id: Mapping[str, Requirement] = field(compare=False, repr=False)

    def get(self, requirement_id: str) -> Requirement | None:
        """Return the requirement with this ID, or ``None``."""
        return self.by_id.get(requirement_id)

    def ids(self) -> tuple[str, ...]:
        """Return every ID, in file order."""
        return tuple(requirement.id for requirement in self.requirements)


def _read_yaml() -> Any:
    """Read the catalog with the safe loader, in C when PyYAML was built with libyaml: every
    suite process reads it at its start, in 5 ms instead of the pure-Python loader's 50."""
    text = resources.files("conformance").joinpath("requirements.yaml").read_text("utf-8")
    if getattr(yaml, "__with_libyaml__", False):
        return yaml.load(text, Loader=yaml.CSafeLoader)
    return yaml.safe_load(text)


@cache
def _schema() -> dict[str, Any]:
    import json

    text = resources.files("conformance").joinpath("schemas", "requirements.schema.json")
    schema: dict[str, Any] = json.loads(text.read_text("utf-8"))
    return schema


def parse_catalog(document: Any) -> Catalog:
    """Check a loaded catalog document and build the typed catalog.

    Args:
        document: The YAML document as plain data.

    Returns:
        The catalog.

    Raises:
        CatalogError: The document breaks the schema, or an ID repeats.
    """
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(step) for step in first.absolute_path)
        raise CatalogError(f"requirements.yaml: schema violation at /{where}: {first.message}")
    requirements = tuple(
        Requirement(
            id=raw["id"],
            level=raw["level"],
            section=raw["section"],
            statement=raw["statement"],
            alternatives=tuple(raw.get("alternatives", ())),
            reason=raw.get("reason"),
            scope=raw.get("scope", ANY_HOST),
            title=raw["title"],
        )
        for raw in document["requirements"]
    )
    repeated = _repeated(requirement.id for requirement in requirements)
    if repeated:
        raise CatalogError("requirement IDs repeat: " + ", ".join(sorted(repeated)))
    by_id = MappingProxyType({requirement.id: requirement for requirement in requirements})
    return Catalog(version=document["version"], requirements=requirements, by_id=by_id)


@cache
def load_catalog() -> Catalog:
    """Load, check and return the packaged catalog.

    Returns:
        The catalog.

    Raises:
        CatalogError: The catalog breaks its schema, or an ID repeats.
    """
    return parse_catalog(_read_yaml())


def _repeated(ids: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for requirement_id in ids:
        (repeated if requirement_id in seen else seen).add(requirement_id)
    return repeated


def check_ids_unique(ids: Iterable[str] | None = None) -> None:
    """Check that no requirement ID repeats.

    Args:
        ids: The IDs to check; by default those written in the packaged catalog file, read
            before any other check so that a repeat is reported as such.

    Raises:
        CatalogError: An ID repeats; the message names every repeated ID.
    """
    if ids is None:
        document = _read_yaml()
        entries = document.get("requirements", []) if isinstance(document, dict) else []
        ids = (str(entry.get("id")) for entry in entries if isinstance(entry, dict))
    repeated = _repeated(ids)
    if repeated:
        raise CatalogError("requirement IDs repeat: " + ", ".join(sorted(repeated)))


def unknown_ids(cited: Iterable[str]) -> set[str]:
    """Return the cited IDs that the catalog does not hold.

    Args:
        cited: Requirement IDs cited by checks, tests or vectors.

    Returns:
        The unknown ones; empty when every ID exists.
    """
    catalog = load_catalog()
    return {requirement_id for requirement_id in cited if catalog.get(requirement_id) is None}


def vector_citations() -> Mapping[str, tuple[str, ...]]:
    """Return, for each requirement ID, the IDs of the vectors that cite it, in corpus order."""
    from conformance import vectors

    cited: dict[str, list[str]] = defaultdict(list)
    for corpus in (vectors.grammar_corpus(), vectors.load_scrub(), vectors.load_ordering()):
        for vector in corpus:
            for requirement_id in vector.requirements:
                cited[requirement_id].append(vector.id)
    return MappingProxyType({key: tuple(value) for key, value in cited.items()})


def must_without_checks(cited: Iterable[str]) -> set[str]:
    """Return the MUST requirements that no check and no vector cites.

    Every MUST counts, of scope ``any-host``, ``reference-only`` and ``mcp`` alike; vectors' own
    citations are added to ``cited``.

    Args:
        cited: Requirement IDs cited by the suite's checks.

    Returns:
        The MUST IDs left uncited; empty when every MUST has a check or a vector.
    """
    covered = set(cited) | set(vector_citations())
    return {
        requirement.id
        for requirement in load_catalog().requirements
        if requirement.level == MUST
        and requirement.scope in (ANY_HOST, REFERENCE_ONLY, MCP_SCOPE)
        and requirement.id not in covered
    }


# --- rendering ------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Escape text for one Markdown table cell."""
    for old, new in (
        ("\\", "\\\\"),
        ("|", "\\|"),
        ("*", "\\*"),
        ("`", "\\`"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("\n", " "),
    ):
        text = text.replace(old, new)
    return text


def _source(section: str) -> str:
    """Say where a requirement comes from, for a reader of the page."""
    if re.fullmatch(r"R[0-9].*", section):
        return f"decisions {section}"
    return section.replace("design: ", "design, ")


def _compress(vector_ids: Sequence[str]) -> str:
    """Write vector IDs with runs of consecutive numbers as ranges, in sorted order.

    Generated vectors (``gen-...``, named after what they cross, not numbered) are counted.
    """
    parsed: dict[str, list[tuple[int, str]]] = defaultdict(list)
    generated = sum(vector_id.startswith("gen-") for vector_id in vector_ids)
    for vector_id in vector_ids:
        if vector_id.startswith("gen-"):
            continue
        match = _VECTOR_ID_RE.fullmatch(vector_id)
        if match is None:  # pragma: no cover - the vectors' schema forbids it
            raise CatalogError(f"unexpected vector ID {vector_id!r}")
        parsed[match.group(1)].append((int(match.group(2)), match.group(2)))
    parts: list[str] = []
    for prefix in sorted(parsed):
        numbers = sorted(set(parsed[prefix]))
        start = previous = numbers[0]
        for current in [*numbers[1:], None]:
            if current is not None and current[0] == previous[0] + 1:
                previous = current
                continue
            if start == previous:
                parts.append(f"{prefix}-{start[1]}")
            else:
                parts.append(f"{prefix}-{start[1]}…{previous[1]}")
            if current is not None:
                start = previous = current
    if generated:
        parts.append(f"{generated} generated")
    return ", ".join(parts)


def _family(requirement_id: str) -> str:
    match = _FAMILY_RE.match(requirement_id)
    assert match is not None  # the schema's ID pattern starts with capitals
    return match.group()


def render_markdown(
    catalog: Catalog | None = None, citations: Mapping[str, Sequence[str]] | None = None
) -> str:
    """Render the catalog as the Markdown page ``docs/requirements.md``.

    Args:
        catalog: The catalog; the packaged one by default.
        citations: Vector IDs by requirement ID; those of the packaged vectors by default.

    Returns:
        The page, ending with a newline.

    Raises:
        CatalogError: A requirement belongs to no table of :data:`GROUPS`.
    """
    catalog = catalog if catalog is not None else load_catalog()
    citations = citations if citations is not None else vector_citations()
    families = {family for _, group in GROUPS for family in group}
    stray = sorted(r.id for r in catalog.requirements if _family(r.id) not in families)
    if stray:
        raise CatalogError("requirements outside every table: " + ", ".join(stray))
    counts = dict.fromkeys(LEVELS, 0)
    for requirement in catalog.requirements:
        counts[requirement.level] += 1
    lines = [
        "# Requirement catalog",
        "",
        "<!-- Generated by `python -m conformance.catalog render` from",
        "     conformance/requirements.yaml; edit the YAML, then render again. -->",
        "",
        "Every rule of the contract (the design and its rulings), in this project's words, with a",
        "stable ID that is never renumbered or reused. MUST: a host that differs fails the suite.",
        "SHOULD: a difference is reported as non-strict. EITHER: every listed behaviour is",
        "accepted, and the report says which one the host chose. Excluded: not checked, for the",
        "reason given. A reference-only rule is about the reference host's own files and tools.",
        "",
        f"{len(catalog.requirements)} requirements: "
        + ", ".join(f"{counts[level]} {level}" for level in LEVELS)
        + ".",
    ]
    for title, group in GROUPS:
        members = [r for r in catalog.requirements if _family(r.id) in group]
        if not members:
            continue
        lines += ["", f"## {title}", ""]
        if group == ("EXCL",):
            lines += ["| ID | Statement | Where it comes from | Reason |", "|---|---|---|---|"]
            for r in members:
                lines.append(
                    f"| {r.id} | {_cell(r.statement)} | {_cell(_source(r.section))} "
                    f"| {_cell(r.reason or '')} |"
                )
            continue
        lines += [
            "| ID | Level | Statement | Where it comes from | Vectors |",
            "|---|---|---|---|---|",
        ]
        for r in members:
            statement = r.statement
            if r.alternatives:
                statement += " Accepted: " + ", ".join(r.alternatives) + "."
            if r.scope == REFERENCE_ONLY:
                statement += " (Reference host only.)"
            elif r.scope == MCP_SCOPE:
                statement += " (Checked on a run via MCP only.)"
            if r.reason:
                statement += f" Excluded: {r.reason}"
            vectors = _compress(citations.get(r.id, ()))
            # The title, as every report shows it beside the ID, leads the statement.
            title = r.title if r.title.endswith(("?", ".")) else r.title + "."
            lines.append(
                f"| {r.id} | {r.level} | **{_cell(title)}** {_cell(statement)} "
                f"| {_cell(_source(r.section))} | {vectors} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m conformance.catalog``.

    Args:
        argv: The arguments after the program name.

    Returns:
        0 on success; 1 when ``render --check`` finds the page out of date.
    """
    from conformance.arguments import OneLineParser

    parser = OneLineParser(
        prog="python -m conformance.catalog", description="The requirement catalog."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    render = commands.add_parser("render", help="write docs/requirements.md from the catalog")
    render.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="where to write (default: %(default)s)"
    )
    render.add_argument(
        "--check", action="store_true", help="write nothing; fail if the page is out of date"
    )
    options = parser.parse_args(argv)
    page = render_markdown()
    output: Path = options.output
    if options.check:
        current = output.read_text("utf-8") if output.exists() else None
        if current != page:
            print(f"{output} is out of date; run: python -m conformance.catalog render")
            return 1
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, "utf-8", newline="\n")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
