"""The TOML parser: `tomllib` from Python 3.11, its backport `tomli` before.

Modules on a warm scan's path import this inside the function that parses, so that a scan with
no TOML to read does not import the parser.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["tomllib"]
