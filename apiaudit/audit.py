"""The core Auditor: provider index -> consumer call sites -> binding checks -> findings.

`scan()` is the one entry point the CLI, the preflight gate, the runner and the
matrix share.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from apiaudit import sources
from apiaudit.checks import HostRules, run_checks
from apiaudit.checks.recipes import apply_recipes
from apiaudit.consumer import collect
from apiaudit.consumer.model import ConsumerOptions
from apiaudit.errors import InputError
from apiaudit.findings import Finding, Report
from apiaudit.progress import NullProgress, Progress
from apiaudit.provider.cache import open_index, save_index
from apiaudit.recipes import RuleBook, load_rulebook
from apiaudit.recipes.loader import default_target


def scan(
    consumers: Sequence[str] | None = None,
    provider: str | None = None,
    *,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    progress: Progress | None = None,
    use_index_cache: bool = True,
    provider_version: str | None = None,
    python_version: tuple[int, ...] | None = None,
) -> Report:
    """Audit each consumer against the provider. Raises InputError for bad input.

    `provider_version` states the provider's version when its source cannot tell (a bare
    checkout); `python_version` is the Python the audited code is assumed to run on
    (`sys.version_info` guards), by default the running interpreter's.
    """
    started = time.perf_counter()
    progress = progress or NullProgress()
    cache_dir = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    if provider is None or not consumers:
        defaults = _defaults(rules_dirs)
        provider = provider or defaults[0]
        consumers = list(consumers or defaults[1])
        if not consumers:
            raise InputError(f"no consumer given and the rules for {provider} name no default: pass --consumer")

    provider_tree = sources.resolve(provider, cache_dir=cache_dir, progress=progress)
    if provider_version is not None:
        provider_tree = replace(provider_tree, version=_checked_version(provider_version))
    if not provider_tree.packages:
        raise InputError(f"{provider} holds no Python package to audit against")
    book = rulebook_for(rules_dirs, provider_tree)
    index = open_index(provider_tree, cache_dir if use_index_cache else None)
    options = ConsumerOptions(
        provider_packages=provider_tree.packages,
        rpc_methods=tuple((r.method, r.name_arg, r.name_keyword) for r in book.rpcs),
        injection_keywords=tuple(i.keyword for i in book.injections),
        provider_version=provider_tree.version,
        provider_distribution=provider_tree.name,
        python_version=tuple((tuple(python_version or sys.version_info[:3])) + (0, 0))[:3],  # type: ignore[arg-type]
    )
    assumed_python = ".".join(map(str, options.python_version))
    hosts = HostRules(
        rpc_hosts={r.method: r.hosts for r in book.rpcs},
        injection_hosts={i.keyword: i.hosts for i in book.injections},
    )

    findings: list[Finding] = []
    origins = []
    files_scanned = calls_checked = 0
    for spec in consumers:
        tree = sources.resolve(spec, cache_dir=cache_dir, progress=progress)
        origins.append(tree.origin())
        paths = tree.python_files()
        progress.start(f"reading {tree.name}", len(paths))
        files = collect(tree, options, on_file=progress.advance, files=paths, cache_dir=cache_dir if use_index_cache else None)
        progress.start(f"checking {tree.name} against {provider_tree.name}", len(files))
        found, calls = run_checks(tree.name, index, files, hosts, on_file=progress.advance)
        findings.extend(apply_recipes(book, found, files, tree, provider_tree))
        files_scanned += len(files)
        calls_checked += calls
    if use_index_cache:
        save_index(index, provider_tree, cache_dir)
    progress.close()
    return Report(
        consumers=tuple(origins),
        provider=provider_tree.origin(),
        findings=tuple(sorted(findings, key=lambda f: f.sort_key)),
        files_scanned=files_scanned,
        calls_checked=calls_checked,
        duration_s=round(time.perf_counter() - started, 3),
        rules_version=book.fingerprint or None,
        # What guards were judged against: say it, since both change which lines run.
        extras=(
            ("provider_version", provider_tree.version or "unknown (version guards undecided)"),
            ("python_version", assumed_python + ("" if python_version else " (this interpreter; --python-version to change)")),
        ),
    )


def _checked_version(text: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        raise InputError(f"--provider-version {text!r} is not a version (e.g. 0.9.2)") from None
    return text


def _defaults(rules_dirs: Sequence[Path]) -> tuple[str, list[str]]:
    """With no arguments: the provider and consumers the rule files name (data, not code)."""
    target = default_target(list(map(Path, rules_dirs)))
    if target is None:
        raise InputError("no --provider given and no rules file names a default: pass --provider and --consumer")
    return target[0], list(target[1])


def rulebook_for(rules_dirs: Sequence[Path], provider_tree) -> RuleBook:
    """The rules for this provider (by distribution or package name), filtered to its version."""
    names = [provider_tree.name, *provider_tree.packages]
    book = None
    for name in dict.fromkeys(names):
        candidate = load_rulebook(list(map(Path, rules_dirs)), name)
        if candidate.files:
            book = candidate
            break
    book = book or load_rulebook(list(map(Path, rules_dirs)), provider_tree.name)
    return book.applicable(provider_tree.version)
