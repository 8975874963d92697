"""Load and validate rules/*.toml into a RuleBook.

Every problem in a rule file is one InputError naming the file and the entry, e.g.
``rules/acme.toml: recipe 'x' [3]: unknown change 'foo'`` ([3] = the third [[recipe]] table).
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from apiaudit.errors import InputError, RulesError
from apiaudit.findings import ENGINE_RULES, Severity
from apiaudit.infra.frozen import record
from apiaudit.infra.tomlcompat import tomllib
from apiaudit.recipes.changes import CHANGE_CLASSES, ChangeKind
from apiaudit.recipes.files import (
    display_path,
    existing_rule_files,
    rule_directories,
    rule_files,
)
from apiaudit.recipes.records import (
    CHANGE_KINDS,
    IN_SCOPE_PLACEHOLDER,
    PATTERN_KINDS,
    SUBSCRIPT_KINDS,
    SYMBOL_PATTERN_KINDS,
    EntryPointRule,
    FactoryRule,
    InjectionRule,
    LaunchCommand,
    LaunchRegistryRule,
    LaunchRule,
    CallDispatchRule,
    SubstitutionRule,
    Pattern,
    PluginRule,
    Recipe,
    RegistryRule,
    RemoteCodeRule,
    RpcRule,
    RuleBook,
    SlotRule,
)

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_TOP_KEYS = {
    "provider", "recipe", "pattern", "rpc", "injection", "registry", "slot", "factory", "remote_code", "plugin", "launch",
    "launch_registry", "entry_point", "call_dispatch", "substitution",
}  # fmt: skip
_PROVIDER_KEYS = {"name", "default_consumers"}
_RECIPE_COMMON = {"id", "symbol", "versions", "change", "rationale"}
_PATTERN_REQUIRED = {"id", "versions", "kind", "message"}
_PATTERN_OPTIONAL = {
    "method", "severity", "advice", "then", "same_receiver", "when_keyword", "subscript", "min_args", "recipe", "symbol", "keyword",
    "receiver_class",
}  # fmt: skip
_SYMBOL_PATTERN_KEYS = {"symbol", "keyword"}
_TEXT_PATTERN_ONLY = {"method", "then", "same_receiver", "when_keyword", "subscript", "min_args", "receiver_class"}
_RPC_KEYS: tuple[set[str], set[str]] = ({"method", "hosts"}, {"name_arg", "name_keyword"})
_INJECTION_KEYS: tuple[set[str], set[str]] = ({"keyword", "hosts"}, set())
_REGISTRY_KEYS: tuple[set[str], set[str]] = ({"name", "module", "maps", "package"}, {"target"})
_SLOT_KEYS: tuple[set[str], set[str]] = ({"class", "attribute"}, {"registry"})
_FACTORY_KEYS: tuple[set[str], set[str]] = ({"function"}, {"registry", "architectures_keyword", "nested_config"})
_PLUGIN_KEYS: tuple[set[str], set[str]] = (
    {"base", "factory", "class_variable"}, {"register", "register_on", "module_arg", "class_arg", "module_key", "class_key"}
)
_ENTRY_POINT_KEYS: tuple[set[str], set[str]] = ({"group"}, {"caller", "variable", "hookspecs", "hook_prefix", "hook_rename", "hook_registrar"})
_REMOTE_CODE_KEYS: tuple[set[str], set[str]] = (
    {"id", "module", "method", "keyword", "auto_map_keys", "files", "message"}, {"severity", "advice"}
)
_LAUNCH_KEYS: tuple[set[str], set[str]] = (
    {"name", "commands", "parsers"},
    {"field_kwargs", "args_classes", "plugin_hooks", "json_flags", "underscores", "dotted_keys", "short_options"},
)
_LAUNCH_COMMAND_KEYS = {"module", "script", "subcommand"}
_LAUNCH_REGISTRY_KEYS: tuple[set[str], set[str]] = (
    {"config", "key", "module", "call", "what"}, {"name_arg", "module_arg", "class_arg", "plugin_key"}
)
_LONG_FLAG = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9_-]*$")
_SHORT_FLAG = re.compile(r"^-[A-Za-z]$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Recipes that edit around the call a pattern found, not its arguments: only that pattern kind finds it.
_PATTERN_FOR_CHANGE = {ChangeKind.INSERT_CALL_AFTER: "call-not-followed-by", ChangeKind.DROP_SUBSCRIPT: "result-subscripted"}
_MODEL_FILES = ("config.json", "tokenizer_config.json", "generation_config.json")


def default_target(dirs: Sequence[Path] = ()) -> tuple[str, tuple[str, ...]] | None:
    """The first rules file naming default consumers: (provider, its default consumers)."""
    for path in existing_rule_files(list(map(Path, dirs))):
        rule_file = load_rule_file(path)
        if rule_file.default_consumers:
            return rule_file.provider, tuple(rule_file.default_consumers)
    return None


class _Entry:
    """Where an entry sits, for error messages: ``file: recipe 'id' [3]``."""

    def __init__(self, file: str, table: str, index: int, raw: Any):
        self.file, self.table, self.index = file, table, index
        self.id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None

    def error(self, problem: str) -> InputError:
        name = f" '{self.id}'" if self.id else ""
        return RulesError(f"{self.file}: {self.table}{name} [{self.index}]: {problem}")


def _check_keys(entry: _Entry, raw: dict, required: set[str], optional: set[str]) -> None:
    unknown = sorted(set(raw) - required - optional)
    if unknown:
        raise entry.error(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown)}")
    missing = sorted(required - set(raw))
    if missing:
        raise entry.error(f"missing key{'s' if len(missing) > 1 else ''} {', '.join(repr(k) for k in missing)}")


def _string(entry: _Entry, raw: dict, key: str, pattern: re.Pattern | None = None, what: str = "") -> str | None:
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str):
        raise entry.error(f"'{key}' must be a string, not {type(value).__name__}")
    if not value.strip():
        raise entry.error(f"'{key}' is empty")
    if pattern is not None and not pattern.match(value):
        raise entry.error(f"'{key}' = {value!r} is not {what}")
    return value


def _required_string(entry: _Entry, raw: dict, key: str, pattern: re.Pattern | None = None, what: str = "") -> str:
    """A key `_check_keys` already required: present, a non-empty string."""
    value = _string(entry, raw, key, pattern, what)
    if value is None:
        raise entry.error(f"missing key {key!r}")
    return value


def _string_list(entry: _Entry, raw: dict, key: str, pattern: re.Pattern | None = None, what: str = "") -> tuple[str, ...]:
    if key not in raw:
        return ()
    value = raw[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise entry.error(f"'{key}' must be a list of strings")
    for item in value:
        if pattern is not None and not pattern.match(item):
            raise entry.error(f"'{key}' item {item!r} is not {what}")
    return tuple(value)


def _specifier(entry: _Entry, raw: dict) -> str:
    versions = raw.get("versions")
    if not isinstance(versions, str):
        raise entry.error(f"'versions' must be a string like \">=0.12.0\", not {type(versions).__name__}")
    try:
        SpecifierSet(versions)
    except InvalidSpecifier:
        raise entry.error(f"'versions' = {versions!r} is not a PEP 440 version specifier") from None
    return versions


def _check_value_expression(entry: _Entry, value: str) -> None:
    filled = IN_SCOPE_PLACEHOLDER.sub(lambda m: f"__in_scope_{m.group(1)}", value)
    if "{in_scope" in filled.replace(" ", ""):
        raise entry.error(f"'value' = {value!r} has a malformed {{in_scope:NAME}} placeholder")
    try:
        ast.parse(filled, mode="eval")
    except SyntaxError:
        raise entry.error(f"'value' = {value!r} is not a Python expression") from None


def _call_arguments(entry: _Entry, raw: dict) -> str:
    """'args': the source of a call's arguments ("None", "x, flag=True"); may be empty."""
    args = raw["args"]
    if not isinstance(args, str):
        raise entry.error(f"'args' must be a string, not {type(args).__name__}")
    try:
        parsed = ast.parse(f"f({args})", mode="eval")
    except SyntaxError:
        parsed = None
    if parsed is None or not isinstance(parsed.body, ast.Call):
        raise entry.error(f"'args' = {args!r} is not a call's argument list")
    return args


def _check_import(entry: _Entry, statement: str) -> None:
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        tree = None
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Import, ast.ImportFrom)):
        raise entry.error(f"'imports' item {statement!r} is not one import statement (\"from x import y\")")


def _recipe(entry: _Entry, raw: dict, source: str) -> Recipe:
    change_name = raw.get("change")
    if "change" in raw and change_name not in CHANGE_CLASSES:
        raise entry.error(f"unknown change {change_name!r} (expected one of: {', '.join(CHANGE_KINDS)})")
    change_class = CHANGE_CLASSES.get(change_name) if isinstance(change_name, str) else None
    required: set[str] = set(change_class.required_keys) if change_class else set()
    optional: set[str] = set(change_class.optional_keys) if change_class else set()
    _check_keys(entry, raw, _RECIPE_COMMON | required, optional)
    if change_class is None:
        raise entry.error("missing key 'change'")
    recipe_id = _required_string(entry, raw, "id", _ID, "a kebab-case id")
    symbol = _required_string(entry, raw, "symbol", _DOTTED, "a dotted path")
    versions = _specifier(entry, raw)
    rationale = _required_string(entry, raw, "rationale")
    fields: dict[str, Any] = {}
    for key in ("param", "old", "new"):
        if key in raw:
            fields[key] = _string(entry, raw, key, _IDENT, "an identifier")
    if "module" in raw:
        fields["module"] = _string(entry, raw, "module", _DOTTED, "a dotted module path")
    if "method" in raw:
        fields["method"] = _string(entry, raw, "method", _IDENT, "a method name")
    if "args" in raw:
        fields["args"] = _call_arguments(entry, raw)
    if "value" in raw:
        fields["value"] = _string(entry, raw, "value")
        _check_value_expression(entry, fields["value"])
    if "imports" in raw:
        fields["imports"] = _string_list(entry, raw, "imports")
        for statement in fields["imports"]:
            _check_import(entry, statement)
    return Recipe(
        id=recipe_id, symbol=symbol, versions=versions, change=change_class(**fields),
        rationale=rationale, source=source,
    )  # fmt: skip


def _severity(entry: _Entry, raw: dict, default: Severity) -> Severity:
    """A rule's `severity` key (or `default`, where the kind of rule has one: a [[pattern]] has
    none, since it says what happens when the line runs, not how the rule was found); any other
    word is one error naming the rule file."""
    text = raw.get("severity", default.value)
    try:
        return Severity(text)
    except ValueError:
        raise entry.error(f"unknown severity {text!r} (expected error, warning or info)") from None


def _pattern(entry: _Entry, raw: dict, source: str) -> Pattern:
    _check_keys(entry, raw, _PATTERN_REQUIRED, _PATTERN_OPTIONAL)
    kind = raw["kind"]
    if kind not in PATTERN_KINDS:
        raise entry.error(f"unknown kind {kind!r} (expected one of: {', '.join(PATTERN_KINDS)})")
    if "severity" not in raw:
        raise entry.error(
            "missing key 'severity': what happens when the matched line runs (error: it fails whenever it runs; "
            "warning: it may fail, or does the wrong thing quietly; info)"
        )
    severity = _severity(entry, raw, Severity.WARNING)
    if kind in SYMBOL_PATTERN_KINDS:
        return _symbol_pattern(entry, raw, source, kind, severity)
    stray = sorted(_SYMBOL_PATTERN_KEYS & set(raw))
    if stray:
        raise entry.error(f"{', '.join(repr(k) for k in stray)} only appl{'y' if len(stray) > 1 else 'ies'} to kind 'call-without-keyword'")
    if "method" not in raw:
        raise entry.error("missing key 'method'")
    then = _string(entry, raw, "then", _IDENT, "a method name")
    if kind == "call-not-followed-by" and then is None:
        raise entry.error("kind 'call-not-followed-by' needs 'then' (the method that must follow)")
    if kind != "call-not-followed-by" and then is not None:
        raise entry.error(f"'then' only applies to kind 'call-not-followed-by', not {kind!r}")
    same_receiver = raw.get("same_receiver", True)
    if not isinstance(same_receiver, bool):
        raise entry.error("'same_receiver' must be true or false")
    subscript = raw.get("subscript", "any")
    if subscript not in SUBSCRIPT_KINDS:
        raise entry.error(f"unknown subscript {subscript!r} (expected one of: {', '.join(SUBSCRIPT_KINDS)})")
    if "subscript" in raw and kind != "result-subscripted":
        raise entry.error(f"'subscript' only applies to kind 'result-subscripted', not {kind!r}")
    min_args = raw.get("min_args")
    if min_args is not None and (not isinstance(min_args, int) or isinstance(min_args, bool) or min_args < 0):
        raise entry.error("'min_args' must be a non-negative integer")
    pattern_id = _required_string(entry, raw, "id", _ID, "a kebab-case id")
    if pattern_id in ENGINE_RULES:
        raise entry.error(f"id {pattern_id!r} is an engine rule id; a pattern needs its own")
    return Pattern(
        id=pattern_id, severity=severity, versions=_specifier(entry, raw), kind=kind,
        method=_required_string(entry, raw, "method", _IDENT, "a method name"),
        message=_required_string(entry, raw, "message"), advice=_string(entry, raw, "advice"), then=then, same_receiver=same_receiver,
        when_keyword=_string(entry, raw, "when_keyword", _IDENT, "an identifier"), subscript=subscript,
        min_args=min_args, recipe=_string(entry, raw, "recipe", _ID, "a kebab-case id"), source=source,
        receiver_class=_string(entry, raw, "receiver_class", _DOTTED, "a dotted provider class path"),
    )  # fmt: skip


def _symbol_pattern(entry: _Entry, raw: dict, source: str, kind, severity: Severity) -> Pattern:
    """A pattern on calls of a resolved provider symbol: `symbol` and `keyword`, no receiver-text keys."""
    stray = sorted(_TEXT_PATTERN_ONLY & set(raw))
    if stray:
        raise entry.error(f"{', '.join(repr(k) for k in stray)} do{'' if len(stray) > 1 else 'es'} not apply to kind {kind!r} (it names 'symbol' and 'keyword')")
    missing = sorted(_SYMBOL_PATTERN_KEYS - set(raw))
    if missing:
        raise entry.error(f"kind {kind!r} needs {' and '.join(repr(k) for k in missing)}")
    pattern_id = _required_string(entry, raw, "id", _ID, "a kebab-case id")
    if pattern_id in ENGINE_RULES:
        raise entry.error(f"id {pattern_id!r} is an engine rule id; a pattern needs its own")
    return Pattern(
        id=pattern_id, severity=severity, versions=_specifier(entry, raw), kind=kind, method=None,
        message=_required_string(entry, raw, "message"), advice=_string(entry, raw, "advice"),
        recipe=_string(entry, raw, "recipe", _ID, "a kebab-case id"),
        symbol=_required_string(entry, raw, "symbol", _DOTTED, "a dotted path"),
        keyword=_required_string(entry, raw, "keyword", _IDENT, "an identifier"), source=source,
    )  # fmt: skip


def _hosts(entry: _Entry, raw: dict) -> tuple[str, ...]:
    hosts = _string_list(entry, raw, "hosts", _DOTTED, "a dotted class path")
    if not hosts:
        raise entry.error("'hosts' is empty")
    return hosts


def _rpc(entry: _Entry, raw: dict, source: str) -> RpcRule:
    _check_keys(entry, raw, *_RPC_KEYS)
    name_arg = raw.get("name_arg")
    if name_arg is not None and (not isinstance(name_arg, int) or isinstance(name_arg, bool) or name_arg < 0):
        raise entry.error("'name_arg' must be a non-negative integer (the position of the method-name argument)")
    name_keyword = _string(entry, raw, "name_keyword", _IDENT, "an identifier")
    if name_arg is None and name_keyword is None:
        raise entry.error("needs 'name_arg' or 'name_keyword' (where the RPC's method name is passed)")
    return RpcRule(
        method=_required_string(entry, raw, "method", _IDENT, "a method name"), hosts=_hosts(entry, raw),
        name_arg=name_arg, name_keyword=name_keyword, source=source,
    )  # fmt: skip


def _injection(entry: _Entry, raw: dict, source: str) -> InjectionRule:
    _check_keys(entry, raw, *_INJECTION_KEYS)
    keyword = _required_string(entry, raw, "keyword", _IDENT, "an identifier")
    return InjectionRule(keyword=keyword, hosts=_hosts(entry, raw), source=source)


def _registry(entry: _Entry, raw: dict, source: str) -> RegistryRule:
    _check_keys(entry, raw, *_REGISTRY_KEYS)
    maps = _string_list(entry, raw, "maps", _IDENT, "a module-level name")
    if not maps:
        raise entry.error("'maps' is empty (name the dict literal(s) holding architecture -> (module, class))")
    target = raw.get("target", True)
    if not isinstance(target, bool):
        raise entry.error("'target' must be true or false (false: models a job never loads as its target)")
    return RegistryRule(
        name=_required_string(entry, raw, "name", _ID, "a kebab-case name"),
        module=_required_string(entry, raw, "module", _DOTTED, "a dotted module path"),
        maps=maps, package=_required_string(entry, raw, "package", _DOTTED, "a dotted package path"), source=source,
        target=target,
    )  # fmt: skip


def _slot(entry: _Entry, raw: dict, source: str) -> SlotRule:
    _check_keys(entry, raw, *_SLOT_KEYS)
    return SlotRule(
        owner=_required_string(entry, raw, "class", _DOTTED, "a dotted class path"),
        attribute=_required_string(entry, raw, "attribute", _IDENT, "an attribute name"),
        registry=_string(entry, raw, "registry", _ID, "a kebab-case name") or "", source=source,
    )  # fmt: skip


def _factory(entry: _Entry, raw: dict, source: str) -> FactoryRule:
    _check_keys(entry, raw, *_FACTORY_KEYS)
    nested = raw.get("nested_config", "text_config")
    if nested is not False and (not isinstance(nested, str) or not _IDENT.match(nested)):
        raise entry.error("'nested_config' must be a config key such as \"text_config\", or false")
    return FactoryRule(
        function=_required_string(entry, raw, "function", _DOTTED, "a dotted function path"),
        registry=_string(entry, raw, "registry", _ID, "a kebab-case name") or "",
        architectures_keyword=_string(entry, raw, "architectures_keyword", _IDENT, "an identifier") or "architectures",
        nested_config=nested or None, source=source,
    )  # fmt: skip


def _plugin(entry: _Entry, raw: dict, source: str) -> PluginRule:
    _check_keys(entry, raw, *_PLUGIN_KEYS)
    return PluginRule(
        base=_required_string(entry, raw, "base", _DOTTED, "a dotted class path"),
        factory=_required_string(entry, raw, "factory", _DOTTED, "a dotted function path"),
        class_variable=_required_string(entry, raw, "class_variable", _IDENT, "a local variable name"),
        register=_string(entry, raw, "register", _IDENT, "a function or method name"),
        register_on=_string(entry, raw, "register_on", _DOTTED, "a dotted class path"),
        module_arg=_position(entry, raw, "module_arg", None), class_arg=_position(entry, raw, "class_arg", None),
        module_key=_string(entry, raw, "module_key", _IDENT, "a config key"),
        class_key=_string(entry, raw, "class_key", _IDENT, "a config key"), source=source,
    )  # fmt: skip


def _entry_point(entry: _Entry, raw: dict, source: str) -> EntryPointRule:
    _check_keys(entry, raw, *_ENTRY_POINT_KEYS)
    group = _required_string(entry, raw, "group", _DOTTED, "an entry-point group")
    if "hookspecs" in raw:
        # a hook implementation module: the provider calls its functions, no `caller` to read
        if "caller" in raw or "variable" in raw:
            raise entry.error("'hookspecs' (a hook implementation module) takes no 'caller'/'variable'")
        return EntryPointRule(
            group=group, hookspecs=_required_string(entry, raw, "hookspecs", _DOTTED, "a dotted module path"),
            hook_prefix=_string(entry, raw, "hook_prefix", _IDENT, "a name prefix") or "",
            hook_rename=_string(entry, raw, "hook_rename", _IDENT, "a decorator keyword"),
            hook_registrar=_string(entry, raw, "hook_registrar", _IDENT, "a method name"), source=source,
        )  # fmt: skip
    if "hook_prefix" in raw or "hook_rename" in raw or "hook_registrar" in raw:
        raise entry.error("'hook_prefix', 'hook_rename' and 'hook_registrar' need 'hookspecs'")
    return EntryPointRule(
        group=group,
        caller=_required_string(entry, raw, "caller", _DOTTED, "a dotted function path"),
        variable=_required_string(entry, raw, "variable", _IDENT, "a local variable name"), source=source,
    )  # fmt: skip


def _base_and_method(entry: _Entry, raw: dict) -> tuple[str, str]:
    """A rule of a provider base class and a method name ([[call_dispatch]], [[substitution]])."""
    _check_keys(entry, raw, {"base", "method"}, set())
    return (
        _required_string(entry, raw, "base", _DOTTED, "a dotted class path"),
        _required_string(entry, raw, "method", _IDENT, "a method name"),
    )


def _call_dispatch(entry: _Entry, raw: dict, source: str) -> CallDispatchRule:
    base, method = _base_and_method(entry, raw)
    return CallDispatchRule(base=base, method=method, source=source)


def _substitution(entry: _Entry, raw: dict, source: str) -> SubstitutionRule:
    base, method = _base_and_method(entry, raw)
    return SubstitutionRule(base=base, method=method, source=source)


def _remote_code(entry: _Entry, raw: dict, source: str) -> RemoteCodeRule:
    _check_keys(entry, raw, *_REMOTE_CODE_KEYS)
    rule_id = _required_string(entry, raw, "id", _ID, "a kebab-case id")
    if rule_id in ENGINE_RULES:
        raise entry.error(f"id {rule_id!r} is an engine rule id; a remote_code rule needs its own")
    severity = _severity(entry, raw, Severity.ERROR)
    keys = raw["auto_map_keys"]
    if not isinstance(keys, dict) or not keys:
        raise entry.error("'auto_map_keys' must be a table: Auto class = \"its auto_map key\"")
    for auto_class, key in keys.items():
        if not _IDENT.match(auto_class) or not isinstance(key, str) or not _IDENT.match(key):
            raise entry.error(f"'auto_map_keys' entry {auto_class!r} must map a class name to an auto_map key name")
    files = _string_list(entry, raw, "files")
    unknown = [f for f in files if f not in _MODEL_FILES]
    if not files or unknown:
        raise entry.error(f"'files' must list model files among {', '.join(_MODEL_FILES)}")
    return RemoteCodeRule(
        id=rule_id, severity=severity, module=_required_string(entry, raw, "module", _DOTTED, "a dotted module path"),
        method=_required_string(entry, raw, "method", _IDENT, "a method name"),
        keyword=_required_string(entry, raw, "keyword", _IDENT, "an identifier"),
        auto_map_keys=tuple((str(k), str(v)) for k, v in keys.items()), files=files,
        message=_required_string(entry, raw, "message"), advice=_string(entry, raw, "advice"), source=source,
    )  # fmt: skip


def _position(entry: _Entry, raw: dict, key: str, default: int | None) -> int | None:
    value = raw.get(key, default)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise entry.error(f"'{key}' must be a non-negative integer (an argument's position)")
    return value


def _flag(entry: _Entry, raw: dict, key: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise entry.error(f"'{key}' must be true or false")
    return value


def _launch_command(entry: _Entry, raw: object, index: int) -> LaunchCommand:
    if not isinstance(raw, dict):
        raise entry.error(f"'commands' item {index} must be a table {{ module = \"...\", script = \"...\", subcommand = \"...\" }}")
    unknown = sorted(set(raw) - _LAUNCH_COMMAND_KEYS)
    if unknown:
        raise entry.error(f"'commands' item {index}: unknown key {', '.join(repr(k) for k in unknown)}")
    if "module" not in raw:
        raise entry.error(f"'commands' item {index} needs 'module' (what `python -m` runs; a script's entry module)")
    module = _required_string(entry, raw, "module", _DOTTED, "a dotted module path")
    return LaunchCommand(
        module=module, script=_string(entry, raw, "script", _WORD, "a program name"),
        subcommand=_string(entry, raw, "subcommand", _WORD, "a subcommand word"),
    )  # fmt: skip


def _launch(entry: _Entry, raw: dict, source: str) -> LaunchRule:
    _check_keys(entry, raw, *_LAUNCH_KEYS)
    commands = raw["commands"]
    if not isinstance(commands, list) or not commands:
        raise entry.error("'commands' must be a non-empty list of tables")
    parsers = _string_list(entry, raw, "parsers", _DOTTED, "a dotted function path")
    if not parsers:
        raise entry.error("'parsers' is empty (name the function(s) that build the server's argument parser)")
    json_flags = raw.get("json_flags", {})
    if not isinstance(json_flags, dict) or not all(
        isinstance(k, str) and _LONG_FLAG.match(k) and isinstance(v, str) and _DOTTED.match(v) for k, v in json_flags.items()
    ):
        raise entry.error("'json_flags' must be a table: \"--flag\" = \"dotted.ConfigClass\"")
    short = raw.get("short_options", {})
    if not isinstance(short, dict) or not all(
        isinstance(k, str) and _SHORT_FLAG.match(k) and isinstance(v, str) and _LONG_FLAG.match(v) for k, v in short.items()
    ):
        raise entry.error("'short_options' must be a table: \"-O\" = \"--long-flag\"")
    return LaunchRule(
        name=_required_string(entry, raw, "name", _ID, "a kebab-case name"),
        commands=tuple(_launch_command(entry, c, i) for i, c in enumerate(commands, start=1)),
        parsers=parsers, field_kwargs=_string(entry, raw, "field_kwargs", _DOTTED, "a dotted function path"),
        args_classes=_string_list(entry, raw, "args_classes", _DOTTED, "a dotted class path"),
        plugin_hooks=_string_list(entry, raw, "plugin_hooks", _IDENT, "a function name"),
        json_flags=tuple(sorted(json_flags.items())), underscores=_flag(entry, raw, "underscores"),
        dotted_keys=_flag(entry, raw, "dotted_keys"), short_options=tuple(sorted(short.items())), source=source,
    )  # fmt: skip


def _launch_registry(entry: _Entry, raw: dict, source: str) -> LaunchRegistryRule:
    _check_keys(entry, raw, *_LAUNCH_REGISTRY_KEYS)
    return LaunchRegistryRule(
        config=_required_string(entry, raw, "config", _DOTTED, "a dotted class path"),
        key=_required_string(entry, raw, "key", _IDENT, "a config key"),
        module=_required_string(entry, raw, "module", _DOTTED, "a dotted module path"),
        call=_required_string(entry, raw, "call", _IDENT, "a function or method name"),
        what=_required_string(entry, raw, "what"), name_arg=_position(entry, raw, "name_arg", 0) or 0,
        module_arg=_position(entry, raw, "module_arg", None), class_arg=_position(entry, raw, "class_arg", None),
        plugin_key=_string(entry, raw, "plugin_key", _IDENT, "a config key"), source=source,
    )  # fmt: skip


def _check_model_links(shown: str, registries: tuple, slots: tuple, factories: tuple) -> tuple[tuple, tuple]:
    """Slots and factories name a registry of the same file; one registry may go unnamed."""
    names = [r.name for r in registries]
    for index, name in enumerate(names, start=1):
        if names.index(name) != index - 1:
            raise RulesError(f"{shown}: registry '{name}' [{index}]: duplicate registry name")
    linked = []
    for table, items in (("slot", slots), ("factory", factories)):
        out = []
        for index, item in enumerate(items, start=1):
            name = item.registry or (names[0] if len(names) == 1 else "")
            if name not in names:
                wanted = f"registry {item.registry!r} is not defined" if item.registry else "needs 'registry' (the file defines none or several)"
                raise RulesError(f"{shown}: {table} [{index}]: {wanted}")
            out.append(replace(item, registry=name))
        linked.append(tuple(out))
    return linked[0], linked[1]


@record
class RuleFile:
    """One parsed and validated rule file."""

    path: Path
    provider: str
    default_consumers: tuple[str, ...]
    recipes: tuple[Recipe, ...]
    patterns: tuple[Pattern, ...]
    rpcs: tuple[RpcRule, ...]
    injections: tuple[InjectionRule, ...]
    digest: str
    registries: tuple[RegistryRule, ...] = ()
    slots: tuple[SlotRule, ...] = ()
    factories: tuple[FactoryRule, ...] = ()
    remote_code: tuple[RemoteCodeRule, ...] = ()
    plugins: tuple[PluginRule, ...] = ()
    launches: tuple[LaunchRule, ...] = ()
    launch_registries: tuple[LaunchRegistryRule, ...] = ()
    entry_points: tuple[EntryPointRule, ...] = ()
    call_dispatches: tuple[CallDispatchRule, ...] = ()
    substitutions: tuple[SubstitutionRule, ...] = ()


def load_rule_file(path: Path) -> RuleFile:
    """Parse and validate one rule file; any problem is an InputError naming the file and entry."""
    shown = display_path(path)
    try:
        data_bytes = path.read_bytes()
    except OSError as exc:
        raise RulesError(f"{shown}: cannot read rule file ({exc.strerror or exc})") from None
    try:
        data = tomllib.loads(data_bytes.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RulesError(f"{shown}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise RulesError(f"{shown}: unknown top-level key {', '.join(repr(k) for k in unknown)}")
    provider_raw = data.get("provider")
    if not isinstance(provider_raw, dict):
        raise RulesError(f"{shown}: needs a [provider] table with name = \"...\"")
    provider_entry = _Entry(shown, "provider", 1, {})
    _check_keys(provider_entry, provider_raw, {"name"}, _PROVIDER_KEYS - {"name"})
    provider = _required_string(provider_entry, provider_raw, "name")
    consumers = _string_list(provider_entry, provider_raw, "default_consumers")

    def entries(table: str, build) -> tuple:
        raw_list = data.get(table, [])
        if not isinstance(raw_list, list):
            raise RulesError(f"{shown}: '{table}' must be an array of tables ([[{table}]])")
        built = []
        for index, raw in enumerate(raw_list, start=1):
            entry = _Entry(shown, table, index, raw)
            if not isinstance(raw, dict):
                raise entry.error("must be a table")
            built.append(build(entry, raw, shown))
        return tuple(built)

    registries = entries("registry", _registry)
    launches = entries("launch", _launch)
    names = [launch.name for launch in launches]
    for index, name in enumerate(names, start=1):
        if names.index(name) != index - 1:
            raise RulesError(f"{shown}: launch '{name}' [{index}]: duplicate launch name")
    slots, factories = _check_model_links(shown, registries, entries("slot", _slot), entries("factory", _factory))
    return RuleFile(
        path=path, provider=provider, default_consumers=consumers,
        recipes=entries("recipe", _recipe), patterns=entries("pattern", _pattern),
        rpcs=entries("rpc", _rpc), injections=entries("injection", _injection),
        digest=hashlib.sha256(data_bytes).hexdigest(),
        registries=registries, slots=slots, factories=factories, remote_code=entries("remote_code", _remote_code),
        plugins=entries("plugin", _plugin),
        launches=launches, launch_registries=entries("launch_registry", _launch_registry),
        entry_points=entries("entry_point", _entry_point),
        call_dispatches=entries("call_dispatch", _call_dispatch),
        substitutions=entries("substitution", _substitution),
    )  # fmt: skip


def load_rulebook(dirs: list[Path], provider: str, *, include_bundled: bool = True) -> RuleBook:
    """Every rule for `provider` from the bundled rules and then `dirs` (``--rules DIR``).

    Every file in those directories is validated, whatever its provider, so a broken
    user file is reported even when it is not used. An id used twice (in one file or
    across files, bundled ones included) is an error.
    """
    seen_ids: dict[str, str] = {}
    files: list[RuleFile] = []
    for directory, required in rule_directories(dirs, include_bundled=include_bundled):
        if not required and not directory.is_dir():
            continue  # an installation without bundled rules still works with --rules
        for path in rule_files(directory):
            rule_file = load_rule_file(path)
            numbered = [("recipe", i, r.id) for i, r in enumerate(rule_file.recipes, start=1)]
            numbered += [("pattern", i, p.id) for i, p in enumerate(rule_file.patterns, start=1)]
            numbered += [("remote_code", i, r.id) for i, r in enumerate(rule_file.remote_code, start=1)]
            for table, index, item_id in numbered:
                if item_id in seen_ids:
                    raise RulesError(
                        f"{display_path(path)}: {table} '{item_id}' [{index}]: duplicate id (also in {seen_ids[item_id]})"
                    )
                seen_ids[item_id] = display_path(path)
            files.append(rule_file)
    mine = [f for f in files if f.provider == provider]
    recipe_kinds = {r.id: r.kind for f in mine for r in f.recipes}
    for rule_file in mine:
        for index, pattern in enumerate(rule_file.patterns, start=1):
            if pattern.recipe is not None and pattern.recipe not in recipe_kinds:
                raise RulesError(
                    f"{display_path(rule_file.path)}: pattern '{pattern.id}' [{index}]: recipe '{pattern.recipe}' is not defined"
                )
            kind = recipe_kinds.get(pattern.recipe) if pattern.recipe is not None else None
            wanted = _PATTERN_FOR_CHANGE.get(kind) if kind is not None else None
            if wanted is not None and pattern.kind != wanted:
                raise RulesError(
                    f"{display_path(rule_file.path)}: pattern '{pattern.id}' [{index}]: recipe '{pattern.recipe}' "
                    f"({kind.value if kind else ''}) fixes only kind '{wanted}' patterns, not {pattern.kind!r}"
                )
    consumers: list[str] = []
    for rule_file in mine:
        consumers.extend(c for c in rule_file.default_consumers if c not in consumers)
    fingerprint = hashlib.sha256("".join(f.digest for f in mine).encode()).hexdigest()[:12] if mine else ""
    return RuleBook(
        provider=provider,
        default_consumers=tuple(consumers),
        recipes=tuple(r for f in mine for r in f.recipes),
        patterns=tuple(p for f in mine for p in f.patterns),
        rpcs=tuple(r for f in mine for r in f.rpcs),
        injections=tuple(i for f in mine for i in f.injections),
        registries=tuple(r for f in mine for r in f.registries),
        slots=tuple(s for f in mine for s in f.slots),
        factories=tuple(x for f in mine for x in f.factories),
        plugins=tuple(x for f in mine for x in f.plugins),
        entry_points=tuple(x for f in mine for x in f.entry_points),
        launches=tuple(x for f in mine for x in f.launches),
        launch_registries=tuple(x for f in mine for x in f.launch_registries),
        call_dispatches=tuple(x for f in mine for x in f.call_dispatches),
        substitutions=tuple(x for f in mine for x in f.substitutions),
        files=tuple(f.path for f in mine),
        fingerprint=fingerprint,
    )


def load_remote_code_rules(dirs: Sequence[Path] = (), *, include_bundled: bool = True) -> tuple[RemoteCodeRule, ...]:
    """Every [[remote_code]] rule of every loaded file, whatever provider it names: they are
    about the model, and apply whichever provider a scan is against."""
    rules: list[RemoteCodeRule] = []
    for directory, required in rule_directories(dirs, include_bundled=include_bundled):
        if not required and not directory.is_dir():
            continue
        for path in rule_files(directory):
            rules.extend(load_rule_file(path).remote_code)
    return tuple(rules)
