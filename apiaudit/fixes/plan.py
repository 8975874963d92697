"""From findings to a FixPlan: the new text of every file that can be fixed, and why the rest cannot.

Nothing is written here; `journal.apply`, `journal.revert` and `overlay.write_overlay` do that.
"""

from __future__ import annotations

import difflib
import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from apiaudit.findings import Finding, Severity
from apiaudit.fixes.codemods import (
    ALREADY,
    APPLIED,
    AddKeyword,
    Edit,
    FileIndex,
    PositionalToKeyword,
    RemoveKeyword,
    RenameAttribute,
    RenameKeyword,
    RewriteImport,
    apply_edits,
    callee_name_of,
)
from apiaudit.fixes.scope import scope_candidates
from apiaudit.recipes.model import IN_SCOPE_PLACEHOLDER, Recipe, RuleBook


@dataclass(frozen=True)
class FixedFinding:
    finding: Finding
    description: str  # "removed keyword legacy", "added block_size=DEFAULT_BLOCK_SIZE (module constant)"
    recipe: str | None = None


@dataclass(frozen=True)
class Unfixable:
    finding: Finding
    reason: str
    candidates: tuple[str, ...] = ()  # for a missing parameter: the values in scope that could fit


@dataclass(frozen=True)
class FileFix:
    """One file's fix. `path` is the Finding's path (relative to the import root), `file` the file read."""

    path: str
    file: Path
    original: bytes
    patched: bytes
    sha256: str  # of `original`: apply refuses a file whose bytes differ now
    fixes: tuple[FixedFinding, ...]

    @property
    def changed(self) -> bool:
        return self.original != self.patched


@dataclass(frozen=True)
class FixPlan:
    files: tuple[FileFix, ...]
    unfixable: tuple[Unfixable, ...]
    already_fixed: tuple[Finding, ...] = ()

    @property
    def changed_files(self) -> tuple[FileFix, ...]:
        return tuple(f for f in self.files if f.changed)

    @property
    def fixed(self) -> tuple[FixedFinding, ...]:
        return tuple(x for f in self.files for x in f.fixes)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _recipe_for(finding: Finding, recipes: Sequence[Recipe]) -> Recipe | None:
    wanted = finding.detail("recipe")
    if wanted:
        return next((r for r in recipes if r.id == wanted), None)
    attribute = finding.detail("attribute") or finding.param
    for recipe in recipes:
        if finding.rule == recipe.id:
            return recipe
        if finding.rule == "unexpected-keyword" and recipe.change in ("removed-parameter", "renamed-parameter"):
            name = recipe.param if recipe.change == "removed-parameter" else recipe.old
            if name == finding.param and recipe.matches_symbol(finding.callee):
                return recipe
        elif finding.rule == "missing-required" and recipe.change == "added-parameter":
            if recipe.param == finding.param and recipe.matches_symbol(finding.callee):
                return recipe
        elif finding.rule == "attribute-missing" and recipe.change == "renamed-attribute":
            if recipe.old == attribute and (finding.callee is None or recipe.matches_symbol(finding.callee)):
                return recipe
        elif finding.rule == "import-missing" and recipe.change == "moved-symbol":
            if recipe.symbol in _imported_paths(finding):
                return recipe
    return None


def _imported_name(finding: Finding) -> str | None:
    return finding.detail("name") or finding.param or (finding.callee.rsplit(".", 1)[-1] if finding.callee else None)


def _imported_paths(finding: Finding) -> set[str]:
    """Dotted paths a missing import could stand for: module.name, or the callee as reported."""
    paths = set()
    name, module = _imported_name(finding), finding.detail("module")
    if name and module:
        paths.add(f"{module}.{name}")
    if finding.callee:
        paths.add(finding.callee)
    return paths


@dataclass(frozen=True)
class _Intent:
    finding: Finding
    edit: Edit
    description: str
    recipe: str | None
    imports: tuple[str, ...] = ()


def _resolve_value(
    finding: Finding, index: FileIndex, param: str, value: str | None
) -> tuple[str | None, str, tuple[str, ...]]:
    """(value expression or None, how it was chosen, candidates when none could be chosen)."""
    callee_name = callee_name_of(finding.callee)
    call = index.resolve_call(finding.line, finding.column, callee_name)
    if call is None:
        return None, f"no call starts at {finding.line}:{finding.column}", ()
    if value is not None and not IN_SCOPE_PLACEHOLDER.search(value):
        return value, "", ()
    names = IN_SCOPE_PLACEHOLDER.findall(value) if value is not None else [param]
    chosen: dict[str, str] = {}
    whys = []
    for name in names:
        candidates = scope_candidates(index, call, name)
        if len(candidates) != 1:
            listed = tuple(c.describe() for c in candidates)
            problem = "no value for it in scope" if not candidates else f"{len(candidates)} values in scope could fit"
            return None, f"{problem}; pass {param}= by hand", listed
        chosen[name] = candidates[0].expression
        whys.append(candidates[0].describe())
    if value is None:
        return chosen[param], f"from scope: {whys[0]}", ()
    filled = IN_SCOPE_PLACEHOLDER.sub(lambda m: chosen[m.group(1)], value)
    return filled, f"from scope: {', '.join(whys)}", ()


def _intent(finding: Finding, recipe: Recipe | None, index: FileIndex) -> _Intent | Unfixable:
    rid = recipe.id if recipe else None
    because = f" ({recipe.id}: {recipe.rationale})" if recipe else ""
    callee_name = callee_name_of(finding.callee)
    at = (finding.line, finding.column)
    change = recipe.change if recipe else None
    rule = finding.rule
    if finding.conditional:
        # Behind a guard this release does not decide: the line may be there for other releases.
        return Unfixable(finding, f"conditional: runs only if {finding.guard}; not fixed, since that code may serve other releases")
    if finding.detail("via_splat"):
        return Unfixable(finding, f"`{finding.param}` comes from a **dict splat, not the call: edit the dict where it is built")

    if change == "renamed-parameter" or (change is None and rule == "unexpected-keyword" and finding.detail("renamed_to")):
        old = recipe.old if recipe else finding.param
        new = recipe.new if recipe else finding.detail("renamed_to")
        edit = RenameKeyword(*at, old=old, new=new, callee_name=callee_name)
        return _Intent(finding, edit, f"renamed keyword {old} to {new}{because}", rid)
    if change == "removed-parameter" or (change is None and rule == "unexpected-keyword"):
        keyword = (recipe.param if recipe else None) or finding.param
        if not keyword:
            return Unfixable(finding, "the finding names no keyword to remove")
        return _Intent(finding, RemoveKeyword(*at, keyword=keyword, callee_name=callee_name), f"removed keyword {keyword}{because}", rid)
    if change == "added-parameter" or (change is None and rule == "missing-required"):
        param = (recipe.param if recipe else None) or finding.param
        if not param:
            return Unfixable(finding, "the finding names no parameter to add")
        rule_value = finding.detail("value") or (recipe.value if recipe else None)
        value, how, candidates = _resolve_value(finding, index, param, rule_value)
        if value is None:
            return Unfixable(finding, how, candidates)
        how = f" ({how})" if how else ""
        edit = AddKeyword(*at, keyword=param, value=value, callee_name=callee_name)
        imports = recipe.imports if recipe else ()
        return _Intent(finding, edit, f"added {param}={value}{how}{because}", rid, imports)
    if change == "renamed-attribute" or (change is None and rule == "attribute-missing" and finding.detail("renamed_to")):
        old = recipe.old if recipe else (finding.detail("attribute") or finding.param)
        new = recipe.new if recipe else finding.detail("renamed_to")
        return _Intent(finding, RenameAttribute(*at, old=old, new=new), f"renamed attribute {old} to {new}{because}", rid)
    if change == "moved-symbol" or (change is None and rule == "import-missing"):
        name = _imported_name(finding)
        new_module = recipe.module if recipe else finding.detail("moved_to")
        if not new_module:
            return Unfixable(finding, f"no known new location for {name or 'the imported name'}")
        if not name:
            return Unfixable(finding, "the finding names no imported name")
        new_name = (recipe.new if recipe else None) or finding.detail("new_name")
        edit = RewriteImport(*at, name=name, new_module=new_module, new_name=new_name)
        target = f"{new_module}.{new_name or name}"
        return _Intent(finding, edit, f"import {name} from {target.rsplit('.', 1)[0]}{because}", rid)
    if rule == "too-many-positional":
        names = finding.detail("positional_names")
        max_positional = finding.detail("max_positional")
        if names is None or max_positional is None or not max_positional.isdigit():
            return Unfixable(finding, "the parameter names of the surplus positional arguments are unknown")
        edit = PositionalToKeyword(*at, names=tuple(names.split(",")), max_positional=int(max_positional), callee_name=callee_name)
        return _Intent(finding, edit, "passed the surplus positional arguments by keyword", rid)
    advice = f": {finding.advice}" if finding.advice else ""
    return Unfixable(finding, f"no automatic fix for '{rule}'{advice}")


def _file_for(path: str, files: Path | Mapping[str, Path]) -> Path | None:
    if isinstance(files, Mapping):
        return files.get(path)
    return Path(files) / path


def plan_fixes(
    findings: Sequence[Finding],
    files: Path | Mapping[str, Path],
    recipes: RuleBook | Sequence[Recipe] = (),
    *,
    scanned_sha256: Mapping[str, str] | None = None,
) -> FixPlan:
    """Plan a fix for every finding that has one; say why for each that has not.

    `files` is the consumer's import root (a Finding's path is relative to it) or a map
    from Finding.path to the file. `recipes` should already be filtered to the provider
    version (RuleBook.applicable). `scanned_sha256` (Finding.path -> sha256 of the scanned
    bytes), when the scan recorded it, makes a file edited since the scan unfixable.
    INFO findings (cannot-judge and the like) are skipped: they name nothing to fix.
    """
    recipe_list = tuple(recipes.recipes if isinstance(recipes, RuleBook) else recipes)
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.severity is not Severity.INFO:
            by_path[finding.path].append(finding)

    file_fixes: list[FileFix] = []
    unfixable: list[Unfixable] = []
    already: list[Finding] = []
    for path in sorted(by_path):
        path_findings = sorted(by_path[path], key=lambda f: f.sort_key)
        file = _file_for(path, files)
        if file is None or not file.is_file():
            unfixable.extend(Unfixable(f, f"{path}: file not found") for f in path_findings)
            continue
        original = file.read_bytes()
        digest = sha256_bytes(original)
        if scanned_sha256 is not None and path in scanned_sha256 and scanned_sha256[path] != digest:
            unfixable.extend(Unfixable(f, f"{path} changed since it was scanned; scan again") for f in path_findings)
            continue
        try:
            index = FileIndex(original)
        except cst.ParserSyntaxError as exc:
            unfixable.extend(Unfixable(f, f"{path} does not parse ({exc.message})") for f in path_findings)
            continue
        intents: list[_Intent] = []
        for finding in path_findings:
            result = _intent(finding, _recipe_for(finding, recipe_list), index)
            if isinstance(result, Unfixable):
                unfixable.append(result)
            else:
                intents.append(result)
        if not intents:
            continue
        imports = tuple(dict.fromkeys(i for intent in intents for i in intent.imports))
        result = apply_edits(index, [i.edit for i in intents], imports)
        patched = result.code
        try:
            compile(patched, str(file), "exec")
        except SyntaxError as exc:  # a safety net: never hand back code that does not compile
            unfixable.extend(Unfixable(i.finding, f"the edit would not compile ({exc.msg})") for i in intents)
            continue
        fixed: list[FixedFinding] = []
        for intent, outcome in zip(intents, result.outcomes):
            if outcome.status == APPLIED:
                fixed.append(FixedFinding(intent.finding, intent.description, intent.recipe))
            elif outcome.status == ALREADY:
                already.append(intent.finding)
            else:
                unfixable.append(Unfixable(intent.finding, outcome.note or outcome.status))
        file_fixes.append(FileFix(path, file, original, patched if fixed else original, digest, tuple(fixed)))
    return FixPlan(tuple(file_fixes), tuple(unfixable), tuple(already))


def unified_diff(plan: FixPlan) -> str:
    """One unified diff (a/PATH, b/PATH) over every file the plan changes."""
    chunks: list[str] = []
    for file_fix in plan.changed_files:
        before = file_fix.original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        after = file_fix.patched.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, fromfile=f"a/{file_fix.path}", tofile=f"b/{file_fix.path}"):
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def describe_unfixable(plan: FixPlan) -> list[str]:
    """One line per finding the plan cannot fix (candidates indented below it)."""
    lines: list[str] = []
    for item in plan.unfixable:
        f = item.finding
        what = f" {f.param}" if f.param else ""
        lines.append(f"{f.path}:{f.line}:{f.column + 1}: {f.rule}{what}: not fixed: {item.reason}")
        lines.extend(f"    candidate: {c}" for c in item.candidates)
    return lines
