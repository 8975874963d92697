"""`apiaudit fix`: scan, then show (default), apply, overlay or revert the fixes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apiaudit import sources
from apiaudit.audit import rulebook_for, scan
from apiaudit.cli_options import audit_options, guarded
from apiaudit.errors import InputError
from apiaudit.fixes import apply, default_journal_dir, describe_unfixable, plan_fixes, revert, unified_diff, write_overlay
from apiaudit.fixes.plan import sha256_bytes
from apiaudit.progress import for_terminal


@click.command("fix")
@audit_options
@click.option("--apply", "do_apply", is_flag=True, help="Edit the consumer's files in place (journaled; undo with --revert).")
@click.option("--into", "into", type=click.Path(path_type=Path), help="Write a patched copy of the consumer package(s) into DIR instead.")
@click.option("--revert", "do_revert", is_flag=True, help="Restore every file of the last --apply byte for byte.")
@click.option("--no-progress", is_flag=True)
@guarded
def fix_command(consumers, provider, rules_dirs, cache_dir, model, do_apply, into, do_revert, no_progress):
    """Show the fixes as a unified diff (changes nothing), or apply them, or write them into an overlay."""
    if sum(bool(x) for x in (do_apply, into, do_revert)) > 1:
        raise InputError("choose one of --apply, --into DIR, --revert")
    cache = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    if do_revert:
        return _revert(consumers, provider, rules_dirs, cache)

    # What the scan reads, hashed first: a file edited after this point is refused, not patched.
    scanned = {}
    for spec in consumers:
        tree = sources.resolve(spec, cache_dir=cache)
        scanned[tree.name] = {p.relative_to(tree.root).as_posix(): sha256_bytes(p.read_bytes()) for p in tree.python_files()}
    progress = for_terminal(False if no_progress else None)
    try:
        report = scan(list(consumers) or None, provider, cache_dir=cache, rules_dirs=list(rules_dirs), progress=progress,
                      model=model)
    finally:
        progress.close()
    provider_tree = sources.resolve(provider or _spec(report.provider), cache_dir=cache)
    book = rulebook_for(list(rules_dirs), provider_tree)
    exit_code = 0
    for origin in report.consumers:
        findings = [f for f in report.findings if f.consumer == origin.name]
        root = Path(origin.root)
        plan = plan_fixes(findings, root, book, scanned_sha256=scanned.get(origin.name))
        diff = unified_diff(plan)
        if into:
            tree = sources.resolve(_spec(origin), cache_dir=cache)
            if not tree.packages:
                raise InputError(f"{origin.name}: --into copies packages; {origin.root} holds loose scripts (use --apply on a copy)")
            overlay = write_overlay(plan, root, tree.packages, Path(into))
            click.echo(diff, nl=False)
            click.echo(f"apiaudit: wrote a patched copy of {', '.join(tree.packages)} to {overlay.directory} "
                       f"({len(plan.fixed)} fixes in {len(plan.changed_files)} files); put it first on the path:", err=True)
            click.echo(f"  {overlay.pythonpath_line}", err=True)
        elif do_apply:
            entry = apply(plan, default_journal_dir(root, cache))
            changed = len(entry.files) if entry else 0
            click.echo(diff, nl=False)
            click.echo(f"apiaudit: applied {len(plan.fixed)} fixes to {changed} files under {root}"
                       + ("; undo with `apiaudit fix --revert`" if changed else " (nothing to change)"), err=True)
        else:
            click.echo(diff, nl=False)
            click.echo(f"apiaudit: {len(plan.fixed)} fixes in {len(plan.changed_files)} files (nothing changed; "
                       "--apply to edit in place, --into DIR for a patched copy)", err=True)
        for line in describe_unfixable(plan):
            click.echo(line, err=True)
        if plan.unfixable:
            exit_code = 1
    sys.exit(exit_code)


def _spec(origin) -> str:
    """Re-resolve an audited origin: a path for local trees, NAME==VERSION for releases, NAME if installed."""
    if origin.kind == "release":
        return f"{origin.name}=={origin.version}"
    if origin.kind == "installed":
        return origin.name
    return origin.root if Path(origin.root).name == origin.name or not Path(origin.root, origin.name).exists() else str(Path(origin.root) / origin.name)


def _revert(consumers, provider, rules_dirs, cache: Path) -> None:
    if not consumers:
        raise InputError("--revert needs the --consumer whose last apply to undo")
    for spec in consumers:
        tree = sources.resolve(spec, cache_dir=cache)
        restored = revert(default_journal_dir(tree.root, cache))
        click.echo(f"apiaudit: restored {len(restored)} files under {tree.root}", err=True)
    sys.exit(0)
