"""From findings to a FixPlan: the new text of every file that can be fixed, and why the rest cannot.

Nothing is written here; `journal.apply`, `journal.revert` and `overlay.write_overlay` do that.
"""

from __future__ import annotations

import difflib
import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import libcst as cst

from apiaudit.evidence import AttributeFacts, BindingFacts, ImportFacts, PatternFacts
from apiaudit.findings import ENGINE_RULES, Finding, FixKind, Severity
from apiaudit.fixes.codemods import (
    ALREADY,
    APPLIED,
    AddKeyword,
    AddParameter,
    DropSubscript,
    Edit,
    FileIndex,
    InsertCallAfter,
    PositionalToKeyword,
    RemoveKeyword,
    RenameAttribute,
    RenameKeyword,
    RewriteImport,
    apply_edits,
    callee_name_of,
)
from apiaudit.fixes.scope import scope_candidates
from apiaudit.infra.frozen import record
from apiaudit.recipes.changes import IN_SCOPE_PLACEHOLDER, FixRequest
from apiaudit.recipes.records import Recipe, RuleBook


@record
class FixedFinding:
    finding: Finding
    description: str  # "removed keyword legacy", "added block_size=DEFAULT_BLOCK_SIZE (module constant)"
    recipe: str | None = None


@record
class Unfixable:
    finding: Finding
    reason: str
    candidates: tuple[str, ...] = ()  # for a missing parameter: the values in scope that could fit


@record
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


@record
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
    """The recipe a finding names (recipes explain findings in the checks), else the first that explains it."""
    if finding.recipe is not None:
        return next((r for r in recipes if r.id == finding.recipe.id), None)
    return next((r for r in recipes if r.explains(finding)), None)


def _request(finding: Finding, recipe: Recipe | None) -> FixRequest | None:
    """What edit would fix `finding`: the recipe's, else what the rule and the finding's own facts
    allow (a finding read back from a report keeps what its recipe said, in `finding.recipe`)."""
    if recipe is not None:
        return recipe.change.fix()
    info = ENGINE_RULES.get(finding.rule)
    kind = info.fix if info else FixKind.NONE
    told = finding.recipe
    if kind is FixKind.REMOVE_KEYWORD:
        if told and told.renamed_to:
            return FixRequest(FixKind.RENAME_KEYWORD, old=finding.param, new=told.renamed_to)
        return FixRequest(FixKind.REMOVE_KEYWORD, keyword=finding.param)
    if kind is FixKind.ADD_KEYWORD:
        return FixRequest(FixKind.ADD_KEYWORD, keyword=finding.param, value=told.value if told else None,
                          imports=told.imports if told else ())  # fmt: skip
    if kind is FixKind.RENAME_ATTRIBUTE and told and told.renamed_to:
        old = finding.facts.attribute if isinstance(finding.facts, AttributeFacts) else finding.param
        return FixRequest(FixKind.RENAME_ATTRIBUTE, old=old, new=told.renamed_to)
    if kind is FixKind.REWRITE_IMPORT:
        moved_to = finding.facts.moved_to if isinstance(finding.facts, ImportFacts) else None
        return FixRequest(FixKind.REWRITE_IMPORT, module=(told.moved_to if told else None) or moved_to)
    if kind is FixKind.POSITIONAL_TO_KEYWORD:
        return FixRequest(FixKind.POSITIONAL_TO_KEYWORD)
    if kind is FixKind.ADD_PARAMETER and finding.severity is Severity.ERROR:
        return FixRequest(FixKind.ADD_PARAMETER, keyword=finding.param)
    return None


@record
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


def _imported_name(finding: Finding) -> str | None:
    name = finding.facts.name if isinstance(finding.facts, ImportFacts) else None
    return name or finding.param or (finding.callee.rsplit(".", 1)[-1] if finding.callee else None)


def _pattern(finding: Finding) -> PatternFacts:
    return finding.facts if isinstance(finding.facts, PatternFacts) else PatternFacts("")


def _intent(finding: Finding, recipe: Recipe | None, index: FileIndex) -> _Intent | Unfixable:
    if finding.conditional:
        # Behind a guard this release does not decide: the line may be there for other releases.
        return Unfixable(finding, f"conditional: runs only if {finding.guard}; not fixed, since that code may serve other releases")
    if isinstance(finding.facts, BindingFacts) and finding.facts.via_splat:
        return Unfixable(finding, f"`{finding.param}` comes from a **dict splat, not the call: edit the dict where it is built")
    request = _request(finding, recipe)
    if request is None:
        advice = f": {finding.advice}" if finding.advice else ""
        return Unfixable(finding, f"no automatic fix for '{finding.rule}'{advice}")
    rid = recipe.id if recipe else None
    because = f" ({recipe.id}: {recipe.rationale})" if recipe else ""
    callee_name = callee_name_of(finding.callee)
    at = (finding.line, finding.column)
    kind = request.kind
    if kind is FixKind.RENAME_KEYWORD:
        if not request.old or not request.new:
            return Unfixable(finding, "the finding names no keyword to rename")
        edit: Edit = RenameKeyword(*at, old=request.old, new=request.new, callee_name=callee_name)
        return _Intent(finding, edit, f"renamed keyword {request.old} to {request.new}{because}", rid)
    if kind is FixKind.REMOVE_KEYWORD:
        if not request.keyword:
            return Unfixable(finding, "the finding names no keyword to remove")
        edit = RemoveKeyword(*at, keyword=request.keyword, callee_name=callee_name)
        return _Intent(finding, edit, f"removed keyword {request.keyword}{because}", rid)
    if kind is FixKind.ADD_KEYWORD:
        param = request.keyword
        if not param:
            return Unfixable(finding, "the finding names no parameter to add")
        value, how, candidates = _resolve_value(finding, index, param, request.value)
        if value is None:
            return Unfixable(finding, how, candidates)
        how = f" ({how})" if how else ""
        edit = AddKeyword(*at, keyword=param, value=value, callee_name=callee_name)
        return _Intent(finding, edit, f"added {param}={value}{how}{because}", rid, request.imports)
    if kind is FixKind.RENAME_ATTRIBUTE:
        if not request.old or not request.new:
            return Unfixable(finding, "no known new name for the attribute")
        edit = RenameAttribute(*at, old=request.old, new=request.new)
        return _Intent(finding, edit, f"renamed attribute {request.old} to {request.new}{because}", rid)
    if kind is FixKind.REWRITE_IMPORT:
        name = _imported_name(finding)
        if not request.module:
            return Unfixable(finding, f"no known new location for {name or 'the imported name'}")
        if not name:
            return Unfixable(finding, "the finding names no imported name")
        edit = RewriteImport(*at, name=name, new_module=request.module, new_name=request.new)
        return _Intent(finding, edit, f"import {name} from {request.module}{because}", rid)
    if kind is FixKind.POSITIONAL_TO_KEYWORD:
        binding = finding.facts if isinstance(finding.facts, BindingFacts) else None
        if binding is None or not binding.positional_names or binding.max_positional is None:
            return Unfixable(finding, "the parameter names of the surplus positional arguments are unknown")
        edit = PositionalToKeyword(*at, names=binding.positional_names, max_positional=binding.max_positional, callee_name=callee_name)
        return _Intent(finding, edit, f"passed the surplus positional arguments by keyword{because}", rid)
    if kind is FixKind.INSERT_CALL_AFTER:
        if not request.method:
            return Unfixable(finding, "the recipe names no method to call")
        method = _pattern(finding).method  # a pattern finding names the called method, not a callee
        edit = InsertCallAfter(*at, method=request.method, args=request.args or "", callee_name=method or callee_name)
        return _Intent(finding, edit, f"called .{request.method}({request.args or ''}) after .{method}(...){because}", rid)
    if kind is FixKind.ADD_PARAMETER:
        if not request.keyword:
            return Unfixable(finding, "the provider's parameter to accept is not known (see the finding's message)")
        edit = AddParameter(*at, name=request.keyword)
        return _Intent(finding, edit, f"accepted {request.keyword}=None (the provider passes it){because}", rid)
    if kind is FixKind.DROP_SUBSCRIPT:
        method, bound = _pattern(finding).method, _pattern(finding).bound
        edit = DropSubscript(*at, bound=bound, callee_name=method or callee_name)
        shown = f"{bound}[0] -> {bound}" if bound else f".{method}(...)[0] -> .{method}(...)"
        return _Intent(finding, edit, f"used the single result: {shown}{because}", rid)
    return Unfixable(finding, f"no automatic fix for '{finding.rule}'")


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
    parsed: dict[tuple[Path, str], FileIndex] | None = None,
) -> FixPlan:
    """Plan a fix for every finding that has one; say why for each that has not.

    `files` is the consumer's import root (a Finding's path is relative to it) or a map
    from Finding.path to the file. `recipes` should already be filtered to the provider
    version (RuleBook.applicable). `scanned_sha256` (Finding.path -> sha256 of the scanned
    bytes), when the scan recorded it, makes a file edited since the scan unfixable.
    INFO findings (cannot-judge and the like) are skipped: they name nothing to fix.
    `parsed`: files already parsed, by path and sha256 (a caller planning one finding at a time
    parses each file once; a parsed tree is never changed by an edit).
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
            unfixable.extend(Unfixable(f, "the file is not found") for f in path_findings)
            continue
        original = file.read_bytes()
        digest = sha256_bytes(original)
        if scanned_sha256 is not None and path in scanned_sha256 and scanned_sha256[path] != digest:
            unfixable.extend(Unfixable(f, "the file changed since it was scanned; scan again") for f in path_findings)
            continue
        try:
            known = parsed.get((file, digest)) if parsed is not None else None
            index = known if known is not None else FileIndex(original)
            if parsed is not None:
                parsed[(file, digest)] = index
        except cst.ParserSyntaxError as exc:
            unfixable.extend(Unfixable(f, f"the file does not parse ({exc.message})") for f in path_findings)
            continue
        except RecursionError:
            # Valid code, but nested deeper than LibCST's recursive tree walk goes (a sum of
            # thousands of terms): the findings stand, the edits are left to a person.
            unfixable.extend(Unfixable(f, "the file is nested too deeply for the rewriter; fix by hand") for f in path_findings)
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
        try:
            edited = apply_edits(index, [i.edit for i in intents], imports)
        except RecursionError:
            unfixable.extend(Unfixable(i.finding, f"{path} is nested too deeply for the rewriter; fix by hand") for i in intents)
            continue
        patched = edited.code
        try:
            compile(patched, str(file), "exec")
        except SyntaxError as exc:  # a safety net: never hand back code that does not compile
            unfixable.extend(Unfixable(i.finding, f"the edit would not compile ({exc.msg})") for i in intents)
            continue
        fixed: list[FixedFinding] = []
        for intent, outcome in zip(intents, edited.outcomes):
            if outcome.status == APPLIED:
                fixed.append(FixedFinding(intent.finding, intent.description, intent.recipe))
            elif outcome.status == ALREADY:
                already.append(intent.finding)
            else:
                unfixable.append(Unfixable(intent.finding, outcome.note or outcome.status))
        file_fixes.append(FileFix(path, file, original, patched if fixed else original, digest, tuple(fixed)))
    return FixPlan(tuple(file_fixes), tuple(unfixable), tuple(already))


def unified_diff(plan: FixPlan, display_root: str = "") -> str:
    """One unified diff (a/PATH, b/PATH) over every file the plan changes. `display_root` (the
    consumer's, `src/`) goes before each path, so that `git apply` at the project root takes it."""
    chunks: list[str] = []
    for file_fix in plan.changed_files:
        before = file_fix.original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        after = file_fix.patched.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, fromfile=f"a/{display_root}{file_fix.path}",
                                       tofile=f"b/{display_root}{file_fix.path}"):  # fmt: skip
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def describe_unfixable(plan: FixPlan, display_root: str = "") -> list[str]:
    """One line per finding the plan cannot fix (candidates indented below it), its path from the
    project root (`display_root` before it, as in the diff)."""
    lines: list[str] = []
    for item in plan.unfixable:
        f = item.finding
        what = f" {f.param}" if f.param else ""
        lines.append(f"{display_root}{f.path}:{f.line}:{f.column + 1}: {f.rule}{what}: not fixed: {item.reason}")
        lines.extend(f"    candidate: {c}" for c in item.candidates)
    return lines
