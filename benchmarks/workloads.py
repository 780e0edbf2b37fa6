"""The texts and values the benchmarks measure, built once and shared with the loose-bound tests.

This module owns the design's workloads: about 1.5 KB of file-write arguments for the marker
scan, and a 150,000-character result with three values in four forms each for the scrubber. It
builds every text deterministically from a fixed seed, so two runs measure the same bytes. It
must never hold a real credential: every value here is made up.
"""

from __future__ import annotations

import json
import random
from typing import Final

from reference_impl import Field, InMemoryVault, Reference, SecretRecord, SecretValue, forms

#: The design's argument size for the marker-scan figure (design, "Cost, measured").
ARGUMENT_CHARS: Final = 1_500

#: The design's result size for the scrubbing figure: the host's cap (decisions R6.1).
RESULT_CHARS: Final = 150_000

#: The design's scaling steps for scan and scrub: 1.5 KB, 150 KB and 1.5 MB.
SCALE_CHARS: Final = (1_500, 15_000, 150_000, 1_500_000)

#: Secrets in the resolution benchmark's vault: 50 pages of 200 (decisions R7.1).
VAULT_SECRETS: Final = 10_000

_SEED: Final = 20240607

# Source lines of the file the agent writes: code and prose, with quotes, a tab and a brace or
# two, as an agent's file write carries.
_SOURCE_LINES: Final = (
    '"""Nightly report: collect the build results and mail a summary."""',
    "",
    "import json",
    "from pathlib import Path",
    "",
    'REPORT_DIR = Path("/var/lib/ci/reports")',
    "MAX_ROWS = 250",
    "",
    "",
    "def load_runs(day: str) -> list[dict[str, object]]:",
    '    """Return the runs recorded on ``day``, oldest first."""',
    "    runs = []",
    '    for path in sorted(REPORT_DIR.glob(f"{day}-*.json")):',
    "        runs.append(json.loads(path.read_text()))",
    "    return runs",
    "",
    "",
    "def summarise(runs: list[dict[str, object]]) -> str:",
    '    passed = sum(1 for run in runs if run["status"] == "passed")',
    '    failed = [run["name"] for run in runs if run["status"] != "passed"]',
    '    lines = [f"{passed} of {len(runs)} runs passed."]',
    "    if failed:",
    '        lines.append("Failed:\\t" + ", ".join(failed[:MAX_ROWS]))',
    '    return "\\n".join(lines)',
    "",
    "",
    'if __name__ == "__main__":',
    "    import sys",
    "",
    "    print(summarise(load_runs(sys.argv[1])))",
)


def _file_write(content: str, ensure_ascii: bool = True) -> str:
    """Return file-write arguments: a path, the content, a nested object and an array."""
    arguments = {
        "path": "/home/dev/projects/ci-tools/src/nightly_report.py",
        "content": content,
        "options": {"mode": "overwrite", "encoding": "utf-8", "createParents": True},
        "tags": ["ci", "report", "generated"],
    }
    return json.dumps(arguments, ensure_ascii=ensure_ascii)


def _fit(
    lines: tuple[str, ...], chars: int, ensure_ascii: bool = True, separator: str = "\n"
) -> str:
    """Return file-write arguments whose text is about ``chars`` long, from repeated lines."""
    # Measure one encoded cycle of the lines, repeat it, then add lines one at a time.
    cycle = separator.join(lines) + separator
    empty = len(_file_write("", ensure_ascii))
    per_cycle = len(_file_write(cycle, ensure_ascii)) - empty
    repeats = max(0, (chars - empty) // per_cycle - 1)
    content = cycle * repeats
    index = 0
    while len(_file_write(content, ensure_ascii)) < chars:
        content += lines[index % len(lines)] + separator
        index += 1
    return _file_write(content.removesuffix(separator), ensure_ascii)


def file_write_arguments(chars: int = ARGUMENT_CHARS) -> str:
    """Return reference-free file-write arguments of about ``chars`` characters.

    The content has many lines, so the JSON text holds ``\\n`` escapes, as the design's does.
    """
    return _fit(_SOURCE_LINES, chars)


def file_write_arguments_plain(chars: int = ARGUMENT_CHARS) -> str:
    """Return file-write arguments of about ``chars`` characters whose text has no backslash."""
    lines = tuple(
        line.replace("\\t", " ").replace("\\n", " ").replace('"', "'") for line in _SOURCE_LINES
    )
    # Lines joined by spaces, so that no newline needs an escape.
    return _fit(lines, chars, separator=" ")


def file_write_arguments_non_ascii(chars: int = ARGUMENT_CHARS) -> str:
    """Return file-write arguments of about ``chars`` characters in several scripts."""
    lines = (
        "# Rapport nocturne : résumé des builds, envoyé à l'équipe.",
        "# Ночной отчёт: сводка сборок за день.",
        "# 夜間レポート、ビルド結果をまとめて送信する。",
        "# Σύνοψη των αποτελεσμάτων — αποστολή με email.",
        *_SOURCE_LINES,
    )
    return _fit(lines, chars, ensure_ascii=False)


REFERENCE_ID: Final = "6f1d2c3e-8a4b-4c5d-9e7f-0123456789ab"


def file_write_arguments_with_reference(chars: int = ARGUMENT_CHARS) -> str:
    """Return file-write arguments of about ``chars`` characters with a reference near the end."""
    arguments = json.loads(file_write_arguments(chars - 60))
    arguments["tags"].append("{{secret:" + REFERENCE_ID + ".notes}}")
    return json.dumps(arguments)


def near_miss_arguments(chars: int = ARGUMENT_CHARS) -> str:
    """Return arguments of about ``chars`` characters full of ``{{`` that never become a marker.

    Templating text (``{{ name }}``, ``{{secrets}}``, ``{{secret}}``) and escaped braces that
    stop one character short: every one must be looked at, and none is a marker.
    """
    pieces = (
        "Hello {{ user.name }}, ",
        "your {{secrets}} are safe; ",
        "{{secret}} is not a marker, ",
        "nor is {{secre:t}} or {{ secret: x }}, ",
        "\\u007b\\u007bsecre: stays text; ",
        "{\\u007bSECRE ends here. ",
    )
    cycle = "".join(pieces)
    per_cycle = len(json.dumps(cycle)) - 2
    body = cycle * max(0, chars // per_cycle - 1)
    index = 0
    while len(json.dumps({"template": body})) < chars:
        body += pieces[index % len(pieces)]
        index += 1
    return json.dumps({"template": body})


def scaled(text: str, chars: int) -> str:
    """Return file-write arguments of about ``chars`` characters whose content repeats ``text``."""
    content = json.loads(text)["content"]
    repeats = max(1, round(chars / len(text)))
    return _file_write("\n".join([content] * repeats))


#: The scrubbing workload's three values: each holds a quote, a backslash, a space and a
#: non-ASCII character, so that its four forms (decisions R5.2) all differ.
SCRUB_VALUES: Final = (
    'correct "horse" battery\\staple é',
    "Zürich\\vault key 'prod' \"A7\" 9f2c",
    'p@ss wörd\\n"quoted" ~ 1234 €uro',
)

#: The references the values are resolved for, in order of first use.
SCRUB_REFERENCES: Final = tuple(
    Reference(f"{index:08x}-0000-4000-8000-000000000000", Field.PASSWORD) for index in range(1, 4)
)

# Lines of an ordinary tool result: a build log with JSON fragments, paths and numbers.
_RESULT_LINES: Final = (
    '{"level": "info", "ts": "2024-06-07T10:15:02Z", "msg": "fetched 12 objects", "ms": 41}',
    "INFO  [worker-3] GET /api/v2/projects/ci-tools/builds?page=4 -> 200 (1832 bytes)",
    '    at com.example.build.Runner.run(Runner.java:217) "step": "compile", "ok": true',
    "2024-06-07 10:15:03,114 DEBUG cache hit for key deps/sha256:9b1e5c0d7a2f (48.2 MiB)",
    "Downloaded https://repo.example.org/maven2/org/slf4j/slf4j-api/2.0.9/slf4j-api.jar",
    '{"user": "dev", "path": "C:\\\\Users\\\\dev\\\\build", "args": ["--fast", "-j", "4"]}',
)


def result_text(chars: int = RESULT_CHARS, occurrences: int = 0, seed: int = _SEED) -> str:
    """Return an ordinary tool result of ``chars`` characters holding ``occurrences`` forms.

    The occurrences are the twelve forms of :data:`SCRUB_VALUES` in turn, spread evenly.
    """
    rng = random.Random(seed)
    needles = [form for value in SCRUB_VALUES for form in forms(value)]
    inserted = [" " + needles[occurrence % len(needles)] for occurrence in range(occurrences)]
    filler = chars - sum(map(len, inserted))
    pieces: list[str] = []
    size = -1
    while size < filler:
        line = _RESULT_LINES[rng.randrange(len(_RESULT_LINES))]
        pieces.append(line)
        size += len(line) + 1
    # Cut the filler to its exact size before anything is inserted, so no occurrence is cut.
    pieces[-1] = pieces[-1][: len(pieces[-1]) - (size - filler)]
    for occurrence, text in enumerate(inserted):
        at = (occurrence * len(pieces)) // occurrences
        pieces[at] += text
    return "\n".join(pieces)


def scrub_pairs() -> tuple[tuple[Reference, SecretValue], ...]:
    """Return the (reference, value) pairs the scrubbing benchmarks build a scrubber from."""
    return tuple(zip(SCRUB_REFERENCES, map(SecretValue, SCRUB_VALUES), strict=True))


def scrub_near_misses(chars: int) -> str:
    """Return ``chars`` characters of the longest form with its last character changed, repeated.

    Every position starts a match of all but one character of the longest form, the worst case
    for a search that compares from the left.
    """
    longest = max((form for value in SCRUB_VALUES for form in forms(value)), key=len)
    miss = longest[:-1] + ("x" if longest[-1] != "x" else "y")
    return (miss * (chars // len(miss) + 1))[:chars]


#: A self-similar value: every suffix of it is a prefix of a shift of it.
SELF_SIMILAR_VALUE: Final = "abababababababab"


def self_similar_text(chars: int) -> str:
    """Return ``chars`` characters of ``abab…``, where the self-similar value matches everywhere."""
    return ("ab" * (chars // 2 + 1))[:chars]


def self_similar_pairs() -> tuple[tuple[Reference, SecretValue], ...]:
    """Return one reference to :data:`SELF_SIMILAR_VALUE` and one to a value overlapping it."""
    return (
        (SCRUB_REFERENCES[0], SecretValue(SELF_SIMILAR_VALUE)),
        (SCRUB_REFERENCES[1], SecretValue("babababababababa")),
    )


def vault(secrets: int = VAULT_SECRETS) -> InMemoryVault:
    """Return an in-memory vault of ``secrets`` made-up records."""
    return InMemoryVault(
        SecretRecord(
            id=f"{index:08x}-1111-4222-8333-444444444444",
            website=f"https://service-{index}.example",
            username=SecretValue(f"user{index}"),
            password=SecretValue(f"not-a-real-password-{index:05d}"),
            notes=SecretValue(""),
        )
        for index in range(secrets)
    )


def last_page_references(secrets: int = VAULT_SECRETS) -> tuple[Reference, ...]:
    """Return three references on the vault's last page, so that every page is read."""
    return tuple(
        Reference(f"{index:08x}-1111-4222-8333-444444444444", Field.PASSWORD)
        for index in (secrets - 3, secrets - 2, secrets - 1)
    )
