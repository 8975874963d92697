"""`apiaudit fix`: scan, then show (default), apply, overlay or revert the fixes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apiaudit import sources
from apiaudit.audit import consumer_labels, rulebook_for, scan
from apiaudit.cli.options import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    NO_PROGRESS_HELP,
    audit_options,
    guarded,
    jobs_option,
    quiet_option,
)
from apiaudit.errors import InputError
from apiaudit.fixes import (
    ConsumerIdentity,
    apply,
    default_journal_dir,
    describe_unfixable,
    plan_fixes,
    revert,
    unified_diff,
    write_overlay,
)
from apiaudit.fixes.plan import sha256_bytes
from apiaudit.infra.progress import for_terminal
from apiaudit.infra.words import counted
from apiaudit.sources import CodeTree
from apiaudit.sources.local import looks_like_path


@click.command("fix")
@audit_options
@jobs_option
@click.option("--apply", "do_apply", is_flag=True, help="Edit the consumer's files in place (journaled; undo with --revert). Refused for NAME==VERSION.")
@click.option("--into", "into", type=click.Path(path_type=Path), metavar="DIR", help="Write a patched copy of the consumer package(s) into DIR instead.")
@click.option("--revert", "do_revert", is_flag=True, help="Undo the newest --apply to the consumer not yet undone, byte for byte.")
@click.option("--force", is_flag=True, help="With --revert: also restore files edited since the apply (their edits are lost).")
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@guarded
def fix_command(consumers, provider, rules_dirs, cache_dir, model, do_apply, into, do_revert, force, no_progress, quiet):
    """Show the fixes as a unified diff (changes nothing), or apply them, or write them into an overlay.

    \b
    Exit codes:
      0  done: every finding has a fix (shown, applied or written), or every file was restored
      1  done, but some findings have no fix (each listed), or --revert left files edited
         since the apply (each listed; `--revert --force` restores them)
      2  bad input, a refusal or a failed write (one line says why); a refusal writes nothing
      3  internal error (a bug; APIAUDIT_DEBUG=1 shows the traceback)
    """
    if sum(bool(x) for x in (do_apply, into, do_revert)) > 1:
        raise InputError("choose one of --apply, --into DIR, --revert")
    if force and not do_revert:
        raise InputError("--force goes with --revert")
    cache = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    if do_revert:
        return _revert(consumers, cache, cache_dir, force=force, quiet=quiet)

    # Every input checked before anything is fetched; --apply refuses a release before fetching it.
    # (What is given here: the scan checks the config's or rules' defaults the same way.)
    for spec in [*consumers, *([provider] if provider else [])]:
        sources.check(spec)
    if do_apply:
        for spec in consumers:
            if "==" in spec and not looks_like_path(spec):
                _refuse_release("release", *spec.split("==", 1))
    # What the scan reads, hashed first: a file edited after this point is refused, not patched.
    trees: dict[str, CodeTree] = {}
    scanned = {}
    resolved = [sources.resolve(spec, cache_dir=cache) for spec in consumers]
    for tree, label in zip(resolved, consumer_labels(resolved)):
        if do_apply:
            _refuse_release(tree.kind, tree.name, tree.version)
        trees[label] = tree
        scanned[label] = {p.relative_to(tree.root).as_posix(): sha256_bytes(p.read_bytes()) for p in tree.python_files()}
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    note = _notes(quiet)
    try:
        report = scan(list(consumers) or None, provider, cache_dir=cache, rules_dirs=list(rules_dirs), progress=progress,
                      model=model)
    finally:
        progress.close()
    provider_tree = sources.resolve(provider or origin_spec(report.provider), cache_dir=cache)
    book = rulebook_for(list(rules_dirs), provider_tree)
    if do_apply:  # the rules' default consumers too, and all of them before anything is written
        for origin in report.consumers:
            _refuse_release(origin.kind, origin.name, origin.version)
    exit_code = EXIT_CLEAN
    for origin in report.consumers:
        findings = [f for f in report.findings if f.consumer == origin.key]
        root = Path(origin.root)
        plan = plan_fixes(findings, root, book, scanned_sha256=scanned.get(origin.key))
        diff = unified_diff(plan, origin.display_root)
        if into:
            tree = trees.get(origin.key) or sources.resolve(origin_spec(origin), cache_dir=cache)
            if not tree.packages:
                raise InputError(f"{origin.name}: --into copies packages; {origin.root} holds loose scripts (use --apply on a copy)")
            # A release or an installed distribution says its version for certain: the overlay keeps it.
            release = (origin.name, origin.version) if origin.kind in ("release", "installed") and origin.version else None
            overlay = write_overlay(plan, root, tree.packages, Path(into), release=release)
            click.echo(diff, nl=False)
            for skipped in overlay.skipped:
                click.echo(f"apiaudit: {skipped.describe()}", err=True)
            note(f"apiaudit: wrote a patched copy of {', '.join(tree.packages)} to {overlay.directory} "
                 f"({counted(len(plan.fixed), 'fix', 'fixes')} in {counted(len(plan.changed_files), 'file')}); put it first on the path:")
            note(f"  {overlay.pythonpath_line}")
        elif do_apply:
            consumer = ConsumerIdentity.of(trees.get(origin.name) or sources.resolve(origin_spec(origin), cache_dir=cache))
            entry = apply(plan, consumer, default_journal_dir(consumer, cache))
            changed = len(entry.files) if entry else 0
            click.echo(diff, nl=False)
            undo = _revert_command(origin_spec(origin), cache_dir)
            note(f"apiaudit: applied {counted(len(plan.fixed), 'fix', 'fixes')} to {counted(changed, 'file')} under {root}"
                 + (f"; undo with `{undo}`" if changed else " (nothing to change)"))
        else:
            click.echo(diff, nl=False)
            note(f"apiaudit: {counted(len(plan.fixed), 'fix', 'fixes')} in {counted(len(plan.changed_files), 'file')} (nothing changed; "
                 "--apply to edit in place, --into DIR for a patched copy)")
        for line in describe_unfixable(plan, origin.display_root):
            click.echo(line, err=True)
        if plan.unfixable:
            exit_code = EXIT_FINDINGS
    sys.exit(exit_code)


def origin_spec(origin) -> str:
    """Re-resolve an audited origin: a path for local trees, NAME==VERSION for releases, NAME if installed."""
    if origin.kind == "release":
        return f"{origin.name}=={origin.version}"
    if origin.kind == "installed":
        return origin.name
    return origin.root if Path(origin.root).name == origin.name or not Path(origin.root, origin.name).exists() else str(Path(origin.root) / origin.name)


def _revert_command(spec: str, cache_dir, *, force: bool = False) -> str:
    """The command that undoes this apply as printed, from any directory: the consumer by an
    absolute path, and the cache directory (where the journal is) when it is not the default."""
    import shlex

    consumer = str(Path(spec).resolve()) if looks_like_path(spec) else spec
    words = ["apiaudit", "fix", "--revert", *(["--force"] if force else []), "--consumer", consumer]
    if cache_dir:
        words += ["--cache-dir", str(Path(cache_dir).resolve())]
    return shlex.join(words)


def _refuse_release(kind: str, name: str, version: str | None) -> None:
    if kind == "release":
        raise InputError(
            f"{name}=={version} is a released wheel in apiaudit's shared cache, which every later scan reads; "
            "--apply never edits it: use `apiaudit fix --into DIR` for a patched copy"
        )


def _notes(quiet: bool):
    """How a note (what was done, not what is wrong) is said on stderr: not at all with --quiet."""

    def note(line: str) -> None:
        if not quiet:
            click.echo(line, err=True)

    return note


def _revert(consumers, cache: Path, cache_dir, *, force: bool, quiet: bool) -> None:
    if not consumers:
        raise InputError("--revert needs the --consumer whose last apply to undo")
    exit_code = EXIT_CLEAN
    for spec in consumers:
        consumer = ConsumerIdentity.of(sources.resolve(spec, cache_dir=cache))
        result = revert(consumer, default_journal_dir(consumer, cache), force=force)
        _notes(quiet)(f"apiaudit: restored {counted(len(result.restored), 'file')} of {consumer.describe()}")
        force_command = _revert_command(spec, cache_dir, force=True)
        for left in result.not_restored:
            click.echo(f"apiaudit: {left.describe(force_command)}", err=True)
        if result.not_restored:
            exit_code = EXIT_FINDINGS
    sys.exit(exit_code)
