"""Which downstreams `impact` checks: data, never code.

The bundled list for the provider (`rules/<provider>.downstream.toml`, and the same file in any
`--rules` directory), then the project's `[tool.apiaudit.impact]`, then each `--downstream FILE`;
a list with `replace-bundled = true` drops the bundled ones. One parser reads them all
(`policy.config.parse_downstream_list`), so an entry means the same wherever it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from apiaudit.errors import ConfigError, InputError, NotFoundError
from apiaudit.policy.config import DownstreamEntry, DownstreamList, Settings, parse_downstream_list
from apiaudit.recipes.files import display_path, downstream_list_files


def read_list(path: Path) -> DownstreamList:
    """A downstream list file: `downstream = [...]` (or `[[downstream]]` tables) and `replace-bundled`."""
    from apiaudit.infra.tomlcompat import tomllib

    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except FileNotFoundError:
        raise NotFoundError(f"{display_path(path)}: no such downstream list") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{display_path(path)}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {display_path(path)}: {exc.strerror or exc}") from None
    return parse_downstream_list(table, where=display_path(path), base=path.resolve().parent)


def downstreams(
    provider_names: Sequence[str], *, files: Sequence[Path] = (), settings: Settings | None = None, rules_dirs: Sequence[Path] = ()
) -> tuple[DownstreamEntry, ...]:
    """Every downstream to check, in list order, each spec once (a later entry's `with-deps` wins).

    `provider_names`: the provider's distribution name, then its packages (the first with a
    bundled list names it). InputError when no list names any downstream."""
    bundled: list[DownstreamList] = []
    for name in dict.fromkeys(provider_names):
        found = downstream_list_files(name, list(map(Path, rules_dirs)))
        if found:
            bundled = [read_list(path) for path in found]
            break
    project = [settings.impact] if settings is not None and settings.impact is not None else []
    given = [read_list(Path(f)) for f in files]
    ours = project + given
    lists = ([] if any(d.replace_bundled for d in ours) else bundled) + ours
    chosen: dict[str, DownstreamEntry] = {}
    for listed in lists:
        for entry in listed.entries:
            chosen.pop(entry.spec, None)
            chosen[entry.spec] = entry
    if not chosen:
        provider = provider_names[0] if provider_names else "the provider"
        raise InputError(
            f"no downstream to check for {provider}: no bundled list (rules/{provider}.downstream.toml) and none given "
            "(--downstream FILE, or [tool.apiaudit.impact] downstream = [...])"
        )
    return tuple(chosen.values())


def spec_label(spec: str) -> str:
    """A downstream named before it is read (it could not be): `name version`, or a path's last folder."""
    return spec.replace("==", " ") if "==" in spec else Path(spec).name or spec
