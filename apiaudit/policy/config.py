"""`[tool.apiaudit]` in pyproject.toml, or apiaudit.toml: found from the working directory upwards.

Every key is validated on load: an unknown key or a bad value is one line naming the file,
the key and what is allowed (InputError, exit 2). Paths in a config file are relative to
the file's directory. Settings given on the command line win over the file; `Settings.origins`
records where each effective value came from (`apiaudit config` prints it).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from apiaudit.errors import ConfigError
from apiaudit.infra.suggest import hint
from apiaudit.findings import FAIL_ON_CHOICES
from apiaudit.infra.frozen import record

PYPROJECT = "pyproject.toml"
APIAUDIT_TOML = "apiaudit.toml"
# An explicit config file (or "none" for no file at all), for runs outside the project tree.
CONFIG_ENV = "APIAUDIT_CONFIG"

SeverityOverride = Literal["error", "warning", "info", "off"]
SEVERITY_CHOICES: tuple[str, ...] = ("error", "warning", "info", "off")
RULE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

# key -> one line of documentation; docs/config.md has the long form (a test keeps them in step).
KEYS: dict[str, str] = {
    "consumers": "what to audit: installed names, NAME==VERSION, or paths (relative to this file)",
    "provider": "what to audit against: an installed NAME, NAME==VERSION, or a path",
    "rules": "extra directories of rule files (*.toml), relative to this file",
    "cache-dir": "where fetched releases and provider indexes are cached",
    "select": "only these rule ids are reported (default: every rule)",
    "ignore": "these rule ids are never reported",
    "severity": "a table: rule id -> error | warning | info | off",
    "exclude": "glob patterns of consumer files (relative to the consumer's root) not to read",
    "fail-on": "lowest severity that makes the exit code 1: error | warning | info | never",
    "baseline": "a baseline file (written by --write-baseline): only findings not in it are reported",
    "offline": "true: fetch nothing, use only cached releases and installed code",
    "ignores": "an array of tables: rule (required), reason (required), path, callee, param, until (YYYY-MM-DD)",
    "impact": "a table: downstream (what `impact` checks: specs, or tables of spec and with-deps), replace-bundled",
}
IGNORE_KEYS = ("rule", "reason", "path", "callee", "param", "until")
# A downstream list: `[tool.apiaudit.impact]`, a `--downstream FILE`, and the bundled
# `rules/<provider>.downstream.toml` are read by one parser, so they mean the same.
DOWNSTREAM_LIST_KEYS = ("downstream", "replace-bundled")
DOWNSTREAM_ENTRY_KEYS = ("spec", "with-deps")


@record
class ConfigIgnore:
    """One `[[tool.apiaudit.ignores]]` entry: findings of `rule` matching every given field."""

    rule: str
    reason: str
    path: str | None = None  # a glob over the finding's path
    callee: str | None = None
    param: str | None = None
    until: _dt.date | None = None  # after this day the entry no longer applies (and says so)
    where: str = ""  # "pyproject.toml: ignores[0]", for messages

    def expired(self, today: _dt.date) -> bool:
        return self.until is not None and today > self.until


@record
class DownstreamEntry:
    """One downstream `impact` checks: anything `scan` takes as a consumer, with its own `--with-deps`."""

    spec: str  # NAME==VERSION, an installed NAME, or a path (made absolute from its file's folder)
    with_deps: bool | None = None  # None: scan's default (deps only for a release importing none of the provider)
    where: str = ""  # "vllm.downstream.toml: downstream[3]", for messages


@record
class DownstreamList:
    """A list of downstreams and whether it replaces the bundled one (else it extends it)."""

    entries: tuple[DownstreamEntry, ...] = ()
    replace_bundled: bool = False
    where: str = ""


@record
class Settings:
    """The effective settings: defaults, then the config file, then the command line."""

    consumers: tuple[str, ...] = ()
    provider: str | None = None
    rules: tuple[Path, ...] = ()
    cache_dir: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, SeverityOverride], ...] = ()
    exclude: tuple[str, ...] = ()
    fail_on: str = "error"
    baseline: Path | None = None
    offline: bool = False
    ignores: tuple[ConfigIgnore, ...] = ()
    impact: DownstreamList | None = None  # [tool.apiaudit.impact]: the downstreams `impact` checks
    file: Path | None = None  # the config file read, if any
    # config key -> "default" | "<file>" | "command line"
    origins: tuple[tuple[str, str], ...] = field(default=())

    @property
    def project_root(self) -> Path:
        """The folder reports' paths start from: the config file's, else the working directory."""
        return (self.file.parent if self.file is not None else Path.cwd()).resolve()

    def origin(self, key: str) -> str:
        return dict(self.origins).get(key, "default")

    def severity_for(self, rule: str) -> SeverityOverride | None:
        return dict(self.severity).get(rule)

    def rule_ids_named(self) -> list[tuple[str, str]]:
        """(where, rule id) for every rule id the settings name, to check against the known rules."""
        named = [(f"{key}", rule) for key in ("select", "ignore") for rule in (getattr(self, key) or ())]
        named += [("severity", rule) for rule, _ in self.severity]
        named += [(i.where.split(": ", 1)[-1], i.rule) for i in self.ignores]
        return named

    def check_rule_ids(self, known: set[str]) -> None:
        """InputError naming the file and key when a rule id the settings name is not a rule."""
        for where, rule in self.rule_ids_named():
            if rule not in known:
                source = self.origin(where.split("[")[0])
                listing = "`apiaudit rule` lists them"
                raise ConfigError(f"{source}: {where}: unknown rule id '{rule}'{hint(rule, sorted(known), listing=listing)}")

    def with_cli(self, **given: Any) -> Settings:
        """These settings with every command-line value that was given (not None, not empty) on top."""
        changes: dict[str, Any] = {}
        origins = dict(self.origins)
        for name, value in given.items():
            if value is None or value == () or value == []:
                continue
            if isinstance(value, list):
                value = tuple(value)
            if name in ("rules", "cache_dir", "baseline"):
                value = tuple(Path(v) for v in value) if name == "rules" else Path(value)
            changes[name] = value
            origins[_key_of(name)] = "command line"
        return replace(self, **changes, origins=tuple(origins.items()))


    def with_origin(self, key: str, origin: str) -> Settings:
        return replace(self, origins=tuple({**dict(self.origins), key: origin}.items()))


def _key_of(attribute: str) -> str:
    return attribute.replace("_", "-")


def find_config(start: Path | None = None) -> Path | None:
    """$APIAUDIT_CONFIG, else the nearest apiaudit.toml, or pyproject.toml with [tool.apiaudit], upwards."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        if explicit.lower() == "none":
            return None
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={explicit}: no such file")
        return path
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / APIAUDIT_TOML
        if candidate.is_file():
            return candidate
        candidate = directory / PYPROJECT
        if candidate.is_file() and "apiaudit" in _read_toml(candidate).get("tool", {}):
            return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    from apiaudit.infra.tomlcompat import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_settings(start: Path | None = None, *, config: Path | None = None) -> Settings:
    """The settings of the config file found from `start` (default: the working directory) upwards."""
    path = config if config is not None else find_config(start)
    if path is None:
        return Settings()
    data = _read_toml(path)
    nested = isinstance(data.get("tool"), dict) and "apiaudit" in data["tool"]
    if path.name == PYPROJECT or (path.name != APIAUDIT_TOML and nested):
        table = data.get("tool", {}).get("apiaudit")
        if table is None:
            raise ConfigError(f"{path}: has no [tool.apiaudit] table")
        where = f"{path} [tool.apiaudit]"
    else:
        table, where = data, str(path)
    return parse_settings(table, where=where, base=path.parent, file=path)


def parse_settings(table: Mapping[str, Any], *, where: str, base: Path, file: Path | None = None) -> Settings:
    """Validate one config table; InputError `WHERE: KEY: problem (allowed: ...)` on the first fault."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'{hint(unknown[0], KEYS)}")
    values: dict[str, Any] = {}
    origin = str(file) if file else where

    def strings(key: str) -> tuple[str, ...]:
        value = table[key]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where}: {key}: must be a string or a list of non-empty strings")
        return tuple(v.strip() for v in value)

    def rule_ids(key: str) -> tuple[str, ...]:
        ids = strings(key)
        for rule in ids:
            if not RULE_ID_RE.match(rule):
                raise ConfigError(f"{where}: {key}: '{rule}' is not a rule id (lower-case words joined by '-')")
        return ids

    def one_string(key: str) -> str:
        value = table[key]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {key}: must be a non-empty string")
        return value.strip()

    def relative(value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else base / path

    if "consumers" in table:
        values["consumers"] = tuple(_spec_relative_to(spec, base) for spec in strings("consumers"))
    if "provider" in table:
        values["provider"] = _spec_relative_to(one_string("provider"), base)
    if "rules" in table:
        values["rules"] = tuple(relative(d) for d in strings("rules"))
    if "cache-dir" in table:
        values["cache_dir"] = relative(one_string("cache-dir"))
    if "baseline" in table:
        values["baseline"] = relative(one_string("baseline"))
    if "select" in table:
        values["select"] = rule_ids("select")
    if "ignore" in table:
        values["ignore"] = rule_ids("ignore")
    if "exclude" in table:
        values["exclude"] = strings("exclude")
    if "fail-on" in table:
        value = table["fail-on"]
        if value not in FAIL_ON_CHOICES:
            raise ConfigError(f"{where}: fail-on: {value!r} is not one of {', '.join(FAIL_ON_CHOICES)}")
        values["fail_on"] = value
    if "offline" in table:
        if not isinstance(table["offline"], bool):
            raise ConfigError(f"{where}: offline: must be true or false")
        values["offline"] = table["offline"]
    if "severity" in table:
        severity = table["severity"]
        if not isinstance(severity, Mapping):
            raise ConfigError(f"{where}: severity: must be a table of rule id = {' | '.join(SEVERITY_CHOICES)}")
        pairs = []
        for rule, level in severity.items():
            if not RULE_ID_RE.match(rule):
                raise ConfigError(f"{where}: severity: '{rule}' is not a rule id")
            if level not in SEVERITY_CHOICES:
                raise ConfigError(f"{where}: severity.{rule}: {level!r} is not one of {', '.join(SEVERITY_CHOICES)}")
            pairs.append((rule, level))
        values["severity"] = tuple(pairs)
    if "ignores" in table:
        values["ignores"] = _parse_ignores(table["ignores"], where)
    if "impact" in table:
        values["impact"] = parse_downstream_list(table["impact"], where=f"{where}: impact", base=base)
    origins = tuple((_key_of(name), origin) for name in values)
    return Settings(**values, file=file, origins=origins)


def _parse_ignores(raw: Any, where: str) -> tuple[ConfigIgnore, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: ignores: must be an array of tables ([[tool.apiaudit.ignores]])")
    entries = []
    for i, item in enumerate(raw):
        at = f"ignores[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: {at}: must be a table with rule and reason")
        unknown = sorted(set(item) - set(IGNORE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: {at}: unknown key '{unknown[0]}'{hint(unknown[0], IGNORE_KEYS)}")
        for required in ("rule", "reason"):
            if not isinstance(item.get(required), str) or not item[required].strip():
                raise ConfigError(f"{where}: {at}: '{required}' is required (a non-empty string)")
        if not RULE_ID_RE.match(item["rule"]):
            raise ConfigError(f"{where}: {at}.rule: '{item['rule']}' is not a rule id")
        for optional in ("path", "callee", "param"):
            if optional in item and (not isinstance(item[optional], str) or not item[optional].strip()):
                raise ConfigError(f"{where}: {at}.{optional}: must be a non-empty string")
        until = item.get("until")
        if until is not None:
            until = _parse_date(until, f"{where}: {at}.until")
        entries.append(
            ConfigIgnore(
                rule=item["rule"], reason=item["reason"].strip(), path=item.get("path"), callee=item.get("callee"),
                param=item.get("param"), until=until, where=f"{where}: {at}",
            )  # fmt: skip
        )
    return tuple(entries)


def parse_downstream_list(table: Any, *, where: str, base: Path) -> DownstreamList:
    """Validate a downstream list (`downstream = [...]`, `replace-bundled = bool`); InputError on the first fault.

    An entry is a spec string or a table `{spec = "...", with-deps = true}`; a path spec is
    relative to `base` (the file's folder)."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(DOWNSTREAM_LIST_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'{hint(unknown[0], DOWNSTREAM_LIST_KEYS)}")
    replace_bundled = table.get("replace-bundled", False)
    if not isinstance(replace_bundled, bool):
        raise ConfigError(f"{where}: replace-bundled: must be true or false")
    raw = table.get("downstream", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: downstream: must be an array of specs or tables ([[downstream]])")
    entries = []
    for i, item in enumerate(raw):
        at = f"{where}: downstream[{i}]"
        if isinstance(item, str):
            item = {"spec": item}
        if not isinstance(item, Mapping):
            raise ConfigError(f"{at}: must be a spec string or a table with spec (and with-deps)")
        unknown = sorted(set(item) - set(DOWNSTREAM_ENTRY_KEYS))
        if unknown:
            raise ConfigError(f"{at}: unknown key '{unknown[0]}'{hint(unknown[0], DOWNSTREAM_ENTRY_KEYS)}")
        spec = item.get("spec")
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"{at}: 'spec' is required (a non-empty string: NAME==VERSION, NAME or a path)")
        with_deps = item.get("with-deps")
        if with_deps is not None and not isinstance(with_deps, bool):
            raise ConfigError(f"{at}.with-deps: must be true or false")
        entries.append(DownstreamEntry(_spec_relative_to(spec.strip(), base), with_deps, at))
    return DownstreamList(tuple(entries), replace_bundled, where)


def _parse_date(value: Any, where: str) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ConfigError(f"{where}: {value!r} is not a date (write YYYY-MM-DD)")


def _spec_relative_to(spec: str, base: Path) -> str:
    """A path spec in a config file is relative to the file; a NAME or NAME==VERSION stays as is."""
    if "==" in spec or spec.startswith(("~", "/")):
        return spec
    looks_like_path = "/" in spec or spec.endswith(".py") or spec in (".", "..") or (base / spec).exists()
    return str((base / spec).resolve()) if looks_like_path else spec
