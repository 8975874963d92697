"""Helpers of the policy tests: write a config, run the CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from apiaudit.cli.group import cli


def write_config(root: Path, body: str, name: str = "pyproject.toml") -> Path:
    path = root / name
    table = "[tool.apiaudit]\n" if name == "pyproject.toml" else ""
    path.write_text(table + textwrap.dedent(body))
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "report.schema.json"


def validate_report(doc: dict) -> dict:
    """`doc` checked against the published JSON Schema of the report (docs/report.schema.json)."""
    import json

    import jsonschema

    jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    return doc
