"""The adapter side of the masker protocol, for adapters written in Python.

This module owns the loop an adapter runs: say hello (the masker's name, exact version, shape
and the paths it offers), then read one request per line from standard input, hand its secrets
and text, child command or pieces to the adapter's function, and write one answer per line. An
adapter built on it is the few lines that call the masker the way its own documentation says.
It must never write anything but protocol lines to standard output, and never put a value in an
error: a failing masker is reported by the exception's type alone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

#: A path's function: the secrets, name to value in the order given, and the payload.
TextFunction = Callable[[Mapping[str, str], str], str]
CommandFunction = Callable[[Mapping[str, str], Sequence[str]], str]
PiecesFunction = Callable[[Mapping[str, str], Sequence[str]], str]


def version_of(distribution: str) -> str:
    """Return the installed version of ``distribution``, exactly as its metadata gives it."""
    return metadata.version(distribution)


def serve(
    name: str,
    version: str,
    shape: str,
    *,
    text: TextFunction | None = None,
    command: CommandFunction | None = None,
    pieces: PiecesFunction | None = None,
) -> int:
    """Answer masker-protocol requests on standard input until it closes.

    Args:
        name: The masker's name.
        version: Its exact version.
        shape: ``library``, ``filter`` or ``wrapper``: how the tool is meant to be used.
        text: Masks a whole text, if the masker can.
        command: Runs a child command under the masker and returns what it let through.
        pieces: Feeds pieces to the masker one by one and returns what it let through.

    Returns:
        0 when standard input closes.
    """
    paths: dict[str, Callable[[Mapping[str, str], Any], str]] = {}
    if text is not None:
        paths["text"] = text
    if command is not None:
        paths["command"] = command
    if pieces is not None:
        paths["stream-pieces"] = pieces
    out = sys.stdout
    hello = {
        "protocol": "secref-masker/1",
        "masker": {"name": name, "version": version, "shape": shape},
        "capabilities": list(paths),
    }
    out.write(json.dumps(hello) + "\n")
    out.flush()
    payload_key = {"text": "text", "command": "argv", "stream-pieces": "pieces"}
    for line in sys.stdin:
        request = json.loads(line)
        secrets = {item["name"]: item["value"] for item in request["secrets"]}
        answer: dict[str, Any] = {"id": request["id"]}
        try:
            function = paths[request["op"]]
            answer["output"] = function(secrets, request[payload_key[request["op"]]])
        except Exception as error:
            answer["error"] = f"the masker raised {type(error).__name__}"
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
        out.flush()
    return 0
