"""Binding checks: consumer uses x provider index -> findings."""

from __future__ import annotations

from typing import Callable

from apiaudit.checks.chains import check_use
from apiaudit.checks.context import CheckContext, HostRules
from apiaudit.checks.imports import check_import
from apiaudit.checks.rpc import check_rpc
from apiaudit.consumer.model import ConsumerFile
from apiaudit.findings import Finding, Severity
from apiaudit.provider.index import ProviderIndex


def run_checks(
    consumer: str,
    index: ProviderIndex,
    files: tuple[ConsumerFile, ...],
    hosts: HostRules,
    on_file: Callable[[str], None] | None = None,
) -> tuple[list[Finding], int]:
    ctx = CheckContext(consumer, index, files, hosts)
    findings: list[Finding] = []
    for file in files:
        if file.error is not None:
            findings.append(
                ctx.finding(file, file.error_site, "parse-error", f"cannot parse {file.path}: {file.error}", severity=Severity.ERROR)
            )
            continue
        for imp in file.imports:
            findings.extend(check_import(ctx, file, imp))
        for use in file.uses:
            findings.extend(check_use(ctx, file, use))
        for call in file.rpc_calls:
            findings.extend(check_rpc(ctx, file, call))
        if on_file:
            on_file(file.path)
    return _dedupe(findings), ctx.calls_checked


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    out = []
    for f in findings:
        key = (f.path, f.line, f.column, f.rule, f.param, f.callee)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


__all__ = ["run_checks", "HostRules"]
