"""What a consumer hands the provider to run by name: the classes it names for a provider
factory to build (a registration call, a dict or launch-line JSON setting a [[plugin]] rule's
keys), and the flags its own CLI adds to a parser built with the provider's parser function.

Read on the file's parse with nothing resolved; the checks decide what the names mean
(`apiaudit.checks.contracts`), reachability takes the modules named (`consumer/reach.py`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator, Sequence

from apiaudit.consumer.records import LaunchLine, PluginName, Site
from apiaudit.infra.astutil import module_names


def added_flags(tree: ast.Module, module: str, parsers: Sequence[str], source: str | None = None) -> tuple[str, ...]:
    """The long options the module adds with `.add_argument("--x", ...)` when it also calls one of
    the provider's parser functions (`parsers`, dotted): its own command is the provider's parser
    plus these (a CLI plugin's `serve` subcommand built on the provider's `make_arg_parser`).
    `source`, the module's text: a module whose text never names a parser function is not walked."""
    if not parsers or (source is not None and not any(p.rpartition(".")[2] in source for p in parsers)):
        return ()
    names = module_names(tree, module)
    wanted = set(parsers)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not any(_called(n.func, names) in wanted for n in calls):
        return ()
    found: dict[str, None] = {}
    for call in calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
            for arg in call.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--"):
                    found[arg.value] = None
    return tuple(found)


def _called(func: ast.expr, names: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in names:
        return None
    return ".".join([names[func.id], *reversed(parts)])


def plugin_names(
    tree: ast.Module,
    calls: Sequence[tuple[str, int, int]],
    keys: Sequence[tuple[str, str]],
    source: str | None = None,
    *,
    factories: Sequence[tuple[str, str]] = (),
    file_module: str = "",
) -> tuple[PluginName, ...]:
    """Classes the module names for a provider factory: `register("Name", "pkg.mod", "Cls")`
    (a call whose last name is a rule's, its module and class arguments string literals) and
    `{"module_key": "pkg.mod", "class_key": "Cls"}` (a dict display with both keys literal).
    `factories`: (call name, the class owning the rule's factory, dotted): a call on another
    class of the provider is another registry's (`ECConnectorFactory.register_connector` is not
    `KVConnectorFactory`'s). `file_module`, the file's dotted name, resolves its imports.
    `source`, the module's text: the walk is skipped where no call name or key pair is in it."""
    if source is not None:
        calls = [c for c in calls if c[0] in source]
        keys = [k for k in keys if k[0] in source and k[1] in source]
    if not calls and not keys:
        return ()
    by_name = {name: (m, c) for name, m, c in calls}
    owners: dict[str, list[str]] = {}
    for call, owner in factories:
        owners.setdefault(call, []).append(owner)
    names = module_names(tree, file_module) if owners and by_name else {}
    found: list[PluginName] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and by_name:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in by_name and _registers_with(node.func, names, owners.get(name, ())):
                m, c = by_name[name]
                module, cls = _literal(node.args, m), _literal(node.args, c)
                if module and cls:
                    found.append(PluginName(module, cls, name, _site(node)))
        elif isinstance(node, ast.Dict) and keys:
            values = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            for module_key, class_key in keys:
                module, cls = _literal([values[module_key]] if module_key in values else [], 0), _literal(
                    [values[class_key]] if class_key in values else [], 0
                )
                if module and cls:
                    found.append(PluginName(module, cls, module_key, _site(node)))
    return tuple(sorted(found, key=lambda p: (p.site.line, p.site.column)))


def _registers_with(func: ast.expr, names: dict[str, str], owners: Sequence[str]) -> bool:
    """Whether a registration call may reach a rule's factory class (`owners`, dotted): not when
    its receiver is imported from the provider and is another class (the same method name on
    another registry). A receiver of the consumer's own (a subclass, a wrapper) or one not known
    statically still may."""
    if not owners or not isinstance(func, ast.Attribute):
        return True
    receiver = _called(func.value, names)
    if receiver is None:
        return True
    for owner in owners:
        if receiver.split(".")[0] != owner.split(".")[0] or receiver.rpartition(".")[2] == owner.rpartition(".")[2]:
            return True
    return False


def launch_plugin_names(lines: Iterable[LaunchLine], keys: Sequence[tuple[str, str]]) -> Iterator[PluginName]:
    """Classes a launch line names through a JSON argument setting a rule's keys
    (`--kv-transfer-config '{"kv_connector": "Cls", "kv_connector_module_path": "pkg.mod"}'`)."""
    for line in lines:
        for arg in line.args:
            if not keys or not arg.known or "{" not in arg.text:
                continue
            try:
                value = json.loads(arg.text, strict=False)
            except ValueError:
                continue
            for obj in _dicts(value):
                for module_key, class_key in keys:
                    module, cls = obj.get(module_key), obj.get(class_key)
                    if isinstance(module, str) and module and isinstance(cls, str) and cls:
                        yield PluginName(module, cls, module_key, arg.site)


def _dicts(value: object) -> Iterator[dict]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _dicts(item)


def _literal(args: Sequence[ast.expr], at: int) -> str | None:
    if at < len(args) and isinstance(args[at], ast.Constant) and isinstance(args[at].value, str):  # type: ignore[attr-defined]
        return args[at].value  # type: ignore[attr-defined]
    return None


def _site(node: ast.AST) -> Site:
    return Site(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
