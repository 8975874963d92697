"""`apiaudit config`: the effective settings and where each came from (default, a file, the command line)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from apiaudit.cli.options import (
    audit_options,
    fail_on_option,
    guarded,
    project_settings,
)


def _shown(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        if value and isinstance(value[0], tuple):  # severity pairs
            return ", ".join(f"{k} = {v}" for k, v in value) or "-"
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def effective_rows(settings) -> list[tuple[str, str, str]]:
    """(key, value, origin) for every config key: the value in force, a default's included."""
    from apiaudit.policy.config import KEYS

    rows = []
    for key in KEYS:
        attribute = key.replace("-", "_")
        value = getattr(settings, attribute)
        if key == "ignores":
            value = [f"{i.rule} ({i.reason}{', until ' + str(i.until) if i.until else ''})" for i in value]
        shown = _shown(value)
        if shown == "-":
            shown = _default_in_force(key, settings)
        rows.append((key, shown, settings.origin(key)))
    return rows


def _default_in_force(key: str, settings) -> str:
    """What a command uses when neither the config nor the command line sets `key`."""
    if key == "cache-dir":
        from apiaudit.sources.cache import default_cache_dir

        return str(default_cache_dir())
    if key in ("consumers", "provider"):
        from apiaudit.recipes.loader import default_target

        target = default_target(list(settings.rules))
        if target is None:
            return "none (no rules file names a default)"
        provider, consumers = target
        return provider if key == "provider" else ", ".join(consumers)
    return {
        "rules": "the bundled rules only",
        "select": "every rule",
        "baseline": "none",
    }.get(key, "none")


@click.command("config")
@audit_options
@fail_on_option
@click.option("--baseline", type=click.Path(path_type=Path), metavar="FILE", help="As scan's --baseline.")
@click.option("--offline", is_flag=True, default=None, help="As scan's --offline.")
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@guarded
def config_command(consumers, provider, rules_dirs, cache_dir, model, fail_on, baseline, offline, as_json):
    """Print the effective settings and where each came from (default, the config file, the command line).

    The config is [tool.apiaudit] in pyproject.toml or an apiaudit.toml, found from the working
    directory upwards ($APIAUDIT_CONFIG names one explicitly; `none` reads none).
    """
    settings = project_settings(
        consumers=consumers, provider=provider, rules=rules_dirs, cache_dir=cache_dir, fail_on=fail_on,
        baseline=baseline, offline=offline,
    )  # fmt: skip
    rows = effective_rows(settings)
    if as_json:
        doc = {"file": str(settings.file) if settings.file else None,
               "settings": {k: {"value": v, "from": o} for k, v, o in rows}}  # fmt: skip
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"config file: {settings.file or '(none found; defaults apply)'}")
    width = max(len(k) for k, _, _ in rows)
    value_width = max(len(v) for _, v, _ in rows)
    for key, value, origin in rows:
        click.echo(f"  {key.ljust(width)}  {value.ljust(value_width)}  [{origin}]")
