"""``python -m reference_impl``: the ``secref`` command."""

from __future__ import annotations

import sys

from reference_impl.cli import main

if __name__ == "__main__":
    sys.exit(main())
