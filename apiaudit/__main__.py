"""`python -m apiaudit`: the `apiaudit` command, safe to run inside the tree it audits.

`python -m` puts the working directory first on sys.path, so a `click/` or `enum.py` in an
audited checkout would be imported (and run) in place of the real one. Drop that entry
before anything outside the standard modules Python itself loaded at startup is imported.
"""

import os
import sys


def _drop_working_directory() -> None:
    if not sys.path or getattr(sys.flags, "safe_path", False):
        return
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    first = sys.path[0]
    if first == "" or (cwd is not None and os.path.abspath(first) == cwd):
        del sys.path[0]


_drop_working_directory()

from apiaudit.cli.main import run  # noqa: E402 - only after the working directory is off sys.path

run()
