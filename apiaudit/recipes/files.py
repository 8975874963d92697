"""Where rule files live and what their bytes are, read without parsing them.

A warm scan asks only this of the rules: the whole-scan key covers every rule file's bytes,
so an unchanged set of rules is known without parsing TOML or building the rule classes
(`apiaudit.recipes.loader` does that on a cache miss).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from apiaudit.errors import NotFoundError, RulesError


def bundled_rules_dir() -> Path:
    """The rules shipped with apiaudit: apiaudit/_bundled_rules in a wheel, else <repo>/rules."""
    package_dir = Path(__file__).resolve().parent.parent
    bundled = package_dir / "_bundled_rules"
    if bundled.is_dir():
        return bundled
    return package_dir.parent / "rules"


def display_path(path: Path) -> str:
    """A rule file's path as messages show it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# A rules directory also holds each provider's list of known downstreams (`apiaudit impact`):
# data of another kind, never read as rules (nor part of the rules' digest).
DOWNSTREAM_SUFFIX = ".downstream.toml"


def rule_files(directory: Path) -> list[Path]:
    """The `*.toml` rule files of a rules directory, sorted (downstream lists left out); a directory
    that is not there is an InputError."""
    if not directory.is_dir():
        raise NotFoundError(f"{display_path(directory)}: rules directory does not exist")
    return sorted(p for p in directory.glob("*.toml") if not p.name.endswith(DOWNSTREAM_SUFFIX))


def downstream_list_files(provider: str, dirs: Sequence[Path] = ()) -> list[Path]:
    """The downstream lists for `provider` (`<provider>.downstream.toml`) in the bundled rules and then
    `dirs`, those that exist, in load order."""
    return [
        directory / f"{provider}{DOWNSTREAM_SUFFIX}"
        for directory, _ in rule_directories(dirs)
        if (directory / f"{provider}{DOWNSTREAM_SUFFIX}").is_file()
    ]


def rule_directories(dirs: Sequence[Path], *, include_bundled: bool = True) -> list[tuple[Path, bool]]:
    """(directory, required) in load order: the bundled rules (skipped when absent), then `dirs`."""
    return ([(bundled_rules_dir(), False)] if include_bundled else []) + [(Path(d), True) for d in dirs]


def existing_rule_files(dirs: Sequence[Path]) -> list[Path]:
    """Every rule file of the bundled rules and `dirs`, in load order; a directory that is not there is skipped."""
    return [path for directory, _ in rule_directories(dirs) if directory.is_dir() for path in rule_files(directory)]


def rules_digest(dirs: Sequence[Path], *, include_bundled: bool = True) -> str:
    """sha256 over every rule file that loading `dirs` reads: its directory's place, its name, its bytes.

    A superset of what one provider's rules depend on (another provider's file counts too), so
    equal digests mean equal rules for any provider. An unreadable file or a missing `--rules`
    directory is an InputError, worded as loading the rules words it.
    """
    digest = hashlib.sha256()
    for place, (directory, required) in enumerate(rule_directories(dirs, include_bundled=include_bundled)):
        if not required and not directory.is_dir():
            continue
        for path in rule_files(directory):
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise RulesError(f"{display_path(path)}: cannot read rule file ({exc.strerror or exc})") from None
            digest.update(f"{place}\0{path.name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()
