"""A stand-in placeholder host for the framework checks: ``python fake_framework.py [MODE]``.

This module owns a tiny framework written here on purpose, so that the adapter base and the
checks of ``conformance.frameworks`` run in the ordinary tests without any agent framework
installed. It spells references ``${NAME}``, substitutes them in string values only, refuses a
call with an unknown name before its tool runs, and masks every delivered value in forms a to d
in the result. Each MODE breaks one step, as a framework might: ``mask-a-only`` masks the value
itself and no other form, ``partial`` runs the tool with an unknown name left as text,
``names`` substitutes a string that merely equals a secret's name, ``keys`` substitutes keys,
``log`` logs the substituted arguments at DEBUG, ``defaults`` also takes ``${NAME:-default}``
(announced as a variant) with a scan for the default that looks for the close from every
opening, as a backtracking pattern does, ``unannounced`` announces neither its log nor its
receipts (``observe.log``, ``observe.receipts``), though the adapter base sends both.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

from conformance.frameworks.base import Framework, HandlerFailed, Outcome, every_form, main

_NAME = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MODE = sys.argv[1] if len(sys.argv) > 1 else "sound"
if MODE == "defaults":
    _NAME = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


class Fake(Framework):
    """The stand-in framework; one instance per ``configure``."""

    name = f"fake framework ({MODE})"
    version = "1"
    spelling = "${{{name}}}"
    loggers = ("fake",)
    variants = ("${{{name}:-default}}",) if MODE == "defaults" else ()
    capabilities = () if MODE == "unannounced" else Framework.capabilities

    def build(self) -> None:
        """Nothing to build: the secrets and tools are the adapter's."""

    def _substitute(self, node: Any, missing: list[str]) -> Any:
        if isinstance(node, str):
            if MODE == "names" and node in self.secrets:
                return self.secrets[node]

            def one(match: re.Match[str]) -> str:
                if match.group(1) in self.secrets:
                    return self.secrets[match.group(1)]
                missing.append(match.group(1))
                return match.group(0)

            return _NAME.sub(one, node)
        if isinstance(node, dict):
            return {
                (self._substitute(k, missing) if MODE == "keys" else k): self._substitute(
                    v, missing
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [self._substitute(item, missing) for item in node]
        return node

    def _mask(self, text: str) -> str:
        for name, value in sorted(self.secrets.items(), key=lambda item: -len(item[1])):
            forms = every_form(value)[:1] if MODE == "mask-a-only" else every_form(value)
            for form in sorted(set(forms), key=len, reverse=True):
                text = text.replace(form, f"<{name}>")
        return text

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Substitute, run the handler, mask what comes back."""
        missing: list[str] = []
        substituted = self._substitute(arguments, missing)
        if missing and MODE != "partial":
            return Outcome(f"unknown secrets: {', '.join(missing)}", True, True)
        if MODE == "log":
            logging.getLogger("fake").debug("arguments: %s", substituted)
        try:
            text, failed = self.handlers.run(self.tools[tool], substituted), False
        except HandlerFailed as error:
            text, failed = str(error), True
        return Outcome(self._mask(text), failed)


if __name__ == "__main__":
    raise SystemExit(main(Fake))
