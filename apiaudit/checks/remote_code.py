"""`remote-code-required`: an Auto class's from_pretrained on a model whose config maps that
class to custom code, without trust_remote_code=True (rule data: [[remote_code]]).

The check is a function of (call site facts, ModelFacts, rule): the consumer stage reads the
facts while it parses each file (`ConsumerFile.auto_calls`, `apiaudit.consumer.auto_calls`),
and `check_call` decides one site.
"""

from __future__ import annotations

from typing import Sequence

from apiaudit.consumer import parse_quietly
from apiaudit.consumer.auto_calls import auto_call_sites as _sites_in
from apiaudit.consumer.records import AutoCallSite, ConsumerFile, TrustArgument
from apiaudit.evidence import RemoteCodeFacts
from apiaudit.findings import Finding
from apiaudit.model import ConfigFile, ModelFacts
from apiaudit.recipes.records import RemoteCodeRule


def auto_call_sites(source: str, path: str, rule: RemoteCodeRule) -> list[AutoCallSite]:
    """Every ``X.<rule.method>(...)`` in one source text where X names a class imported from
    `rule.module` (a scan reads them from `ConsumerFile.auto_calls`, found while it parsed)."""
    if rule.method not in source:
        return []
    try:
        tree = parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return _sites_in(tree, source.splitlines(), path, rule)


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
        facts=RemoteCodeFacts(site.auto_class, entry.file.value, key or "", rule.keyword),
    )  # fmt: skip


def remote_code_findings(consumer: str, file: ConsumerFile, model: ModelFacts | None,
                         rules: Sequence[RemoteCodeRule]) -> list[Finding]:
    """The remote-code findings of one consumer file's Auto-class calls; nothing without a model."""
    if model is None or not rules or not model.auto_map or file.error is not None:
        return []
    by_id = {r.id: r for r in reversed(rules)}
    out: list[Finding] = []
    for site in file.auto_calls:
        rule = by_id.get(site.rule)
        finding = check_call(site, model, rule, consumer) if rule is not None else None
        if finding is not None:
            out.append(finding)
    return out


__all__ = ["AutoCallSite", "TrustArgument", "auto_call_sites", "check_call", "remote_code_findings"]
