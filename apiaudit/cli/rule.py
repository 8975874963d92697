"""`apiaudit rule ID`: a rule's documentation (what, why, an example, the fix), from docs/rules.md.

Engine rules are documented in docs/rules.md (bundled into the wheel); a recipe rule of
rules/*.toml is described from its own entry (message, advice, versions, file).
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from apiaudit.cli.options import guarded
from apiaudit.errors import InputError
from apiaudit.infra.suggest import hint


def rules_doc() -> Path | None:
    """docs/rules.md of a source checkout, or the copy bundled into an installed wheel."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_bundled_docs" / "rules.md", package.parent / "docs" / "rules.md"):
        if candidate.is_file():
            return candidate
    return None


def doc_sections(text: str) -> dict[str, str]:
    """`## heading` -> the section's text up to the next `## ` heading."""
    sections: dict[str, str] = {}
    for match in re.finditer(r"^## (?P<id>\S+)\n(?P<body>.*?)(?=^## |\Z)", text, re.M | re.S):
        sections[match["id"]] = match["body"].strip("\n")
    return sections


def engine_rule_text(rule_id: str) -> str | None:
    path = rules_doc()
    if path is None:
        return None
    body = doc_sections(path.read_text(encoding="utf-8")).get(rule_id)
    return None if body is None else f"{rule_id}\n{'=' * len(rule_id)}\n\n{body}\n"


def _rule_files(rules_dirs: list[Path]) -> list:
    """Every rule file of the bundled rules and `rules_dirs`, parsed and validated."""
    from apiaudit.recipes.files import existing_rule_files
    from apiaudit.recipes.loader import load_rule_file

    return [load_rule_file(path) for path in existing_rule_files(rules_dirs)]


def recipe_rule_text(rule_id: str, rules_dirs: list[Path]) -> str | None:
    for rule_file in _rule_files(rules_dirs):
        pattern = next((p for p in rule_file.patterns if p.id == rule_id), None)
        if pattern is None:
            continue
        lines = [
            rule_id, "=" * len(rule_id), "",
            f"A recipe rule of {rule_file.path.name} (provider {rule_file.provider}, releases {pattern.versions}); "
            f"severity {pattern.severity.value}.", "",
            f"**Means:** {pattern.message}.", "",
            _found_by(pattern),
        ]  # fmt: skip
        if pattern.advice:
            lines += ["", f"**Fix:** {pattern.advice}"]
        if pattern.recipe:
            lines += ["", f"`apiaudit fix` applies recipe `{pattern.recipe}`."]
        return "\n".join(lines) + "\n"
    return None


def _found_by(pattern) -> str:
    if pattern.on_symbol:
        return f"**Found by:** a {pattern.kind} pattern: calls of `{pattern.symbol}` (resolved through imports) not passing `{pattern.keyword}=`."
    return (
        f"**Found by:** a {pattern.kind} pattern on `.{pattern.method}(...)`"
        + (f" followed by no `.{pattern.then}(...)`" if pattern.then else "")
        + (f" passing `{pattern.when_keyword}=`" if pattern.when_keyword else "") + "."
    )  # fmt: skip


def known_ids(rules_dirs: list[Path]) -> list[str]:
    return list(rule_summaries(rules_dirs))


def rule_summaries(rules_dirs: list[Path]) -> dict[str, str]:
    """Every rule id -> one line saying what it finds: the engine's rules, then each rule file's."""
    from apiaudit.findings import ENGINE_RULES

    summaries = {rule.id: rule.summary for rule in ENGINE_RULES.values()}
    for rule_file in _rule_files(rules_dirs):
        for entry in (*rule_file.patterns, *rule_file.remote_code):
            # A rule file's message is a sentence with its reason after "; ": the first part says what.
            summaries.setdefault(entry.id, entry.message.split("; ", 1)[0])
    return summaries


@click.command("rule")
@click.argument("rule_id", metavar="[ID]", required=False)
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="An extra directory of rule files (*.toml) to look in. Repeatable.")
@guarded
def rule_command(rule_id, rules_dirs):
    """Print a rule's documentation: what it means, why, an example, and the fix. No ID: every rule id, each with a
    one-line summary."""
    if not rule_id:
        summaries = rule_summaries(list(rules_dirs))
        width = max(map(len, summaries))
        for known, summary in summaries.items():
            click.echo(f"{known.ljust(width)}  {summary}")
        return
    text = engine_rule_text(rule_id) or recipe_rule_text(rule_id, list(rules_dirs))
    if text is None:
        raise InputError(f"unknown rule id '{rule_id}'{hint(rule_id, known_ids(list(rules_dirs)), listing='`apiaudit rule` lists them')}")
    click.echo(text, nl=False)
