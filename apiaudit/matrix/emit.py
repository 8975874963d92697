"""Unambiguous renames and moves found by explain, written as a rules file `apiaudit fix` reads.

The file has the format of rules/vllm.toml (docs/recipes.md) and is validated by loading
it back, together with the rules already in force, before `explain` reports success.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from apiaudit.errors import InputError
from apiaudit.infra.atomic import DiskFullError, atomic_write
from apiaudit.infra.frozen import record
from apiaudit.matrix.explain import (
    MOVED,
    RENAMED_ATTRIBUTE,
    RENAMED_PARAMETER,
    ExplainResult,
)
from apiaudit.recipes import RuleBook, load_rulebook
from apiaudit.recipes.changes import (
    Change,
    MovedSymbol,
    RenamedAttribute,
    RenamedParameter,
)


@record
class EmittedRecipe:
    id: str
    symbol: str
    versions: str
    change: Change
    rationale: str

    def as_dict(self) -> dict[str, Any]:
        """The recipe as its TOML table holds it (also explain's JSON form)."""
        fields: dict[str, Any] = {"id": self.id, "symbol": self.symbol, "versions": self.versions}
        fields["change"] = self.change.kind.value
        fields.update(self.change.toml())
        fields["rationale"] = self.rationale
        return fields

    def toml(self) -> str:
        lines = ["[[recipe]]"]
        for key, value in self.as_dict().items():
            shown = "[" + ", ".join(_toml_string(v) for v in value) + "]" if isinstance(value, list) else _toml_string(value)
            lines.append(f"{key} = {shown}")
        return "\n".join(lines)


def _toml_string(value: str) -> str:
    # A JSON string literal is a valid TOML basic string for every character we write.
    return json.dumps(value, ensure_ascii=False)


def _slug(*parts: str) -> str:
    text = "-".join(parts).lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def fix_candidates(result: ExplainResult, known: RuleBook | None = None) -> list[EmittedRecipe]:
    """Recipes for each dated rename or move, minus those `known` (the rules in force) already has."""
    out: dict[str, EmittedRecipe] = {}
    for explanation in result.explanations:
        change = explanation.change
        if change is None or explanation.introduced_in is None or not change.symbol:
            continue
        since = explanation.introduced_in
        where = f"{result.provider} {since}"
        if change.kind in (RENAMED_PARAMETER, RENAMED_ATTRIBUTE) and change.old_name and change.new_name:
            owner = change.symbol.rsplit(".", 1)[-1]
            what = (
                f"{owner} renamed {change.old_name} to {change.new_name}"
                if change.kind == RENAMED_PARAMETER
                else f"{owner}.{change.old_name} became {change.new_name}"
            )
            renamed = RenamedParameter if change.kind == RENAMED_PARAMETER else RenamedAttribute
            recipe = EmittedRecipe(
                id=_slug("explained", owner, change.old_name, "to", change.new_name),
                symbol=change.symbol, versions=f">={since}",
                change=renamed(old=change.old_name, new=change.new_name),
                rationale=f"{what} in {where} (dated by apiaudit explain, last without it: {explanation.last_without})",
            )  # fmt: skip
        elif change.kind == MOVED and explanation.finding.rule == "import-missing" and change.old_name and change.new_name:
            module, _, name = change.new_name.rpartition(".")
            old_name = change.old_name.rsplit(".", 1)[-1]
            recipe = EmittedRecipe(
                id=_slug("explained", "moved", change.old_name),
                symbol=change.old_name, versions=f">={since}",
                change=MovedSymbol(module=module, new=name if name != old_name else None),
                rationale=f"{change.old_name} moved to {change.new_name} in {where} (dated by apiaudit explain)",
            )  # fmt: skip
        else:
            continue
        if known is not None and _already_known(recipe, known):
            continue
        out.setdefault(recipe.id, recipe)
    return list(out.values())


def _already_known(recipe: EmittedRecipe, book: RuleBook) -> bool:
    for existing in book.recipes:
        if existing.change == recipe.change and (
            isinstance(recipe.change, RenamedAttribute) or existing.matches_symbol(recipe.symbol)
        ):
            return True
    return False


def write_rules(
    result: ExplainResult, directory: Path, *, rules_dirs: Sequence[Path] = ()
) -> tuple[Path | None, list[EmittedRecipe]]:
    """Write `<provider>-explained.toml` into `directory`; (None, []) when nothing is a fix candidate.

    The written file is loaded back with the rules in force (bundled and `rules_dirs`);
    a file that does not load is removed and reported as an InputError.
    """
    directory = Path(directory)
    # The target folder is left out of "known": an earlier explained file there is replaced, not trusted.
    others = [Path(d) for d in dict.fromkeys(rules_dirs) if Path(d).resolve() != directory.resolve()]
    known = load_rulebook(others, result.provider)
    recipes = fix_candidates(result, known)
    if not recipes:
        return None, []
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {directory}: {exc.strerror or exc}") from None
    path = directory / f"{_slug(result.provider)}-explained.toml"
    header = (
        f"# Fix candidates found by `apiaudit explain` for {result.report.consumers[0].name} "
        f"against {result.provider} {result.report.provider.version}.\n"
        "# Each change was dated by bisecting releases; review before relying on it.\n"
        "# Use with: apiaudit fix --rules <this directory> ...\n\n"
        f"[provider]\nname = {_toml_string(result.provider)}\n"
    )
    text = header + "".join(f"\n{r.toml()}\n" for r in recipes)
    try:
        atomic_write(path, text)
    except DiskFullError:
        raise
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        load_rulebook([*others, directory], result.provider)
    except InputError:
        path.unlink(missing_ok=True)
        raise
    return path, recipes
