"""`remote-code-required`: an Auto class's from_pretrained on a model whose config maps that
class to custom code, without trust_remote_code=True (rule data: [[remote_code]]).

The check is a function of (call site facts, ModelFacts, rule): `auto_call_sites` reads the
facts from a consumer file with `ast` (a later consumer stage may supply them instead), and
`check_call` decides one site.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass
from typing import Iterable, Sequence

from apiaudit.consumer.model import ConsumerFile
from apiaudit.findings import Finding
from apiaudit.model import ConfigFile, ModelFacts
from apiaudit.astutil import dotted_text
from apiaudit.recipes.model import RemoteCodeRule


class TrustArgument(str, enum.Enum):
    """What the call passes for the trust keyword."""

    TRUE = "true"
    FALSE = "false"
    ABSENT = "absent"
    UNKNOWN = "unknown"  # a non-literal value, or a **splat that may carry it


@dataclass(frozen=True)
class AutoCallSite:
    """``Auto.method(model, ...)`` in a consumer file. `model_literal` is the model argument when
    it is a string literal (a hub id or path), None when it is computed (a variable)."""

    path: str
    line: int
    column: int
    end_line: int | None
    end_column: int | None
    auto_class: str
    trust: TrustArgument
    model_literal: str | None
    has_model_argument: bool
    source: str | None = None


def auto_call_sites(source: str, path: str, rule: RemoteCodeRule) -> list[AutoCallSite]:
    """Every ``X.<rule.method>(...)`` where X names a class imported from `rule.module`."""
    if rule.method not in source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    names, modules = _imported(tree, rule.module)
    sites: list[AutoCallSite] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == rule.method):
            continue
        auto_class = _auto_class(node.func.value, names, modules)
        if auto_class is None or rule.auto_map_key(auto_class) is None:
            continue
        model_arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "pretrained_model_name_or_path"), None
        )
        literal = model_arg.value if isinstance(model_arg, ast.Constant) and isinstance(model_arg.value, str) else None
        sites.append(AutoCallSite(
            path=path, line=node.lineno, column=node.col_offset, end_line=node.end_lineno,
            end_column=node.end_col_offset, auto_class=auto_class, trust=_trust(node, rule.keyword),
            model_literal=literal, has_model_argument=model_arg is not None and not isinstance(model_arg, ast.Starred),
            source=lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else None,
        ))  # fmt: skip
    return sorted(sites, key=lambda s: (s.line, s.column))


def _imported(tree: ast.Module, module: str) -> tuple[dict[str, str], set[str]]:
    """Local name -> class name for ``from module[.sub] import Cls [as X]``; local names bound to the module."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == module or node.module.startswith(module + "."):
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    modules.add(alias.asname or alias.name)
                elif alias.name.startswith(module + ".") and alias.asname is None:
                    modules.add(module)  # `import transformers.x` binds `transformers`
    return names, modules


def _auto_class(receiver: ast.AST, names: dict[str, str], modules: set[str]) -> str | None:
    text = dotted_text(receiver)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    if not rest:
        return names.get(head)
    if head in modules:
        return rest.rsplit(".", 1)[-1]
    return None


def _trust(call: ast.Call, keyword: str) -> TrustArgument:
    for kw in call.keywords:
        if kw.arg == keyword:
            if isinstance(kw.value, ast.Constant) and kw.value.value is True:
                return TrustArgument.TRUE
            if isinstance(kw.value, ast.Constant) and kw.value.value in (False, None):
                return TrustArgument.FALSE
            return TrustArgument.UNKNOWN
    if any(kw.arg is None for kw in call.keywords):
        return TrustArgument.UNKNOWN
    return TrustArgument.ABSENT


def _is_the_model(site: AutoCallSite, model: ModelFacts) -> bool:
    """A computed argument may be the model's path; a literal is the model only when it names it."""
    if not site.has_model_argument:
        return False
    if site.model_literal is None:
        return True
    if model.path is None:
        return False
    literal = site.model_literal.rstrip("/")
    return literal == model.path.rstrip("/") or literal.rsplit("/", 1)[-1] == model.label


def check_call(site: AutoCallSite, model: ModelFacts, rule: RemoteCodeRule, consumer: str) -> Finding | None:
    """The finding for one call site, or None when it loads fine (or is not about this model)."""
    if site.trust not in (TrustArgument.ABSENT, TrustArgument.FALSE) or not _is_the_model(site, model):
        return None
    key = rule.auto_map_key(site.auto_class)
    files = tuple(ConfigFile(f) for f in rule.files)
    entry = model.auto_map_for(key, files) if key else None
    if entry is None:
        return None
    passed = "passes trust_remote_code=False" if site.trust is TrustArgument.FALSE else f"does not pass {rule.keyword}=True"
    message = (
        f"{site.auto_class}.{rule.method}(...) {passed}, but {model.label}'s {entry.file.value} maps {key} to custom code "
        f"({entry.targets[0]}): loading it raises an error asking for {rule.keyword}=True"
    )
    return Finding(
        rule=rule.id, severity=rule.severity, consumer=consumer, path=site.path, line=site.line, column=site.column,
        callee=f"{rule.module}.{site.auto_class}.{rule.method}", param=rule.keyword, message=message,
        source=site.source, advice=rule.advice, end_line=site.end_line, end_column=site.end_column,
        details=(("auto_class", site.auto_class), ("auto_map_file", entry.file.value), ("auto_map_key", key or ""),
                 ("keyword", rule.keyword)),
    )  # fmt: skip


def remote_code_findings(consumer: str, files: Iterable[ConsumerFile], model: ModelFacts | None,
                         rules: Sequence[RemoteCodeRule]) -> list[Finding]:
    """Every remote-code finding in the consumer's files; nothing without a model."""
    if model is None or not rules or not model.auto_map:
        return []
    out: list[Finding] = []
    for file in files:
        if file.error is not None or not file.lines:
            continue
        source = "\n".join(file.lines) + "\n"
        for rule in rules:
            for site in auto_call_sites(source, file.path, rule):
                finding = check_call(site, model, rule, consumer)
                if finding is not None:
                    out.append(finding)
    return out
