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
    """(key, value, origin) for every config key: the value in force as the table shows it, a default's included."""
    from apiaudit.policy.config import KEYS

    rows = []
    for key in KEYS:
        value = getattr(settings, key.replace("-", "_"))
        if key == "impact":
            value = [e.spec for e in value.entries] if value else ()
        if key == "ignores":
            value = [f"{i.rule} ({i.reason}{', until ' + str(i.until) if i.until else ''})" for i in value]
        shown = _shown(value)
        if shown == "-":
            shown = _default_in_force(key, settings)
        rows.append((key, shown, settings.origin(key)))
    return rows


def effective_values(settings) -> dict[str, dict]:
    """key -> {"value": ..., "from": origin}: the value in force as JSON values (lists, tables,
    true/false, null where nothing is set: `select` null is every rule, `baseline` null none)."""
    from apiaudit.policy.config import KEYS

    values: dict[str, dict] = {}
    for key in KEYS:
        value = getattr(settings, key.replace("-", "_"))
        if key in ("consumers", "provider", "cache-dir") and not value:
            value = _default_value(key, settings)
        if key == "ignores":
            value = [
                {"rule": i.rule, "reason": i.reason, "path": i.path, "callee": i.callee, "param": i.param,
                 "until": i.until.isoformat() if i.until else None}
                for i in value
            ]  # fmt: skip
        elif key == "severity":
            value = dict(value)
        elif key == "impact":
            value = value and {
                "downstream": [{"spec": e.spec, "with-deps": e.with_deps} for e in value.entries],
                "replace-bundled": value.replace_bundled,
            }
        elif isinstance(value, tuple):
            value = [str(v) for v in value]
        elif isinstance(value, Path):
            value = str(value)
        values[key] = {"value": value, "from": settings.origin(key)}
    return values


def _default_value(key: str, settings):
    """The value a command uses for consumers, provider or cache-dir when neither the config nor
    the command line sets it (None/[] where no rules file names a default)."""
    if key == "cache-dir":
        from apiaudit.sources.cache import default_cache_dir

        return str(default_cache_dir())
    from apiaudit.recipes.loader import default_target

    target = default_target(list(settings.rules))
    if key == "provider":
        return target[0] if target else None
    return list(target[1]) if target else []


def _default_in_force(key: str, settings) -> str:
    """What a command uses when neither the config nor the command line sets `key`, as the table shows it."""
    if key in ("consumers", "provider", "cache-dir"):
        value = _default_value(key, settings)
        return _shown(value) if value else "none (no rules file names a default)"
    return {
        "rules": "the bundled rules only",
        "select": "every rule",
        "baseline": "none",
        "impact": "the bundled downstream list",
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
    if as_json:
        doc = {"file": str(settings.file) if settings.file else None, "settings": effective_values(settings)}
        click.echo(json.dumps(doc, indent=2))
        return
    rows = effective_rows(settings)
    click.echo(f"config file: {settings.file or '(none found; defaults apply)'}")
    width = max(len(k) for k, _, _ in rows)
    value_width = max(len(v) for _, v, _ in rows)
    for key, value, origin in rows:
        click.echo(f"  {key.ljust(width)}  {value.ljust(value_width)}  [{origin}]")
