"""Kinds of provider change, as rule data: one frozen class per kind a recipe can fix.

Each class owns everything its kind means: the TOML keys it takes (and its TOML form, for
`explain --emit-rules`), which finding it explains, the advice it gives, and the edit that
fixes it (a `FixRequest`, which `apiaudit.fixes` turns into a LibCST edit). `explain` names
the changes it dates with the same `ChangeKind` vocabulary.
"""

from __future__ import annotations

import enum
import re
from typing import Any, ClassVar, Union

from apiaudit.evidence import AttributeFacts, RecipeFacts
from apiaudit.findings import Finding, FixKind
from apiaudit.infra.frozen import record

# `{in_scope:NAME}` inside an added parameter's value: "the value for NAME found in the call's
# scope" (the same search as for a missing parameter without a rule; see apiaudit.fixes.scope).
IN_SCOPE_PLACEHOLDER = re.compile(r"\{in_scope:([A-Za-z_][A-Za-z0-9_]*)\}")


class ChangeKind(str, enum.Enum):
    # Kinds a [[recipe]] can name (`change = "..."`): each has a class below.
    REMOVED_PARAMETER = "removed-parameter"
    ADDED_PARAMETER = "added-parameter"
    RENAMED_PARAMETER = "renamed-parameter"
    MOVED_SYMBOL = "moved-symbol"
    RENAMED_ATTRIBUTE = "renamed-attribute"
    # Kinds a [[pattern]] names as its `recipe` (they fix call protocols, not signatures).
    INSERT_CALL_AFTER = "insert-call-after"
    DROP_SUBSCRIPT = "drop-subscript"
    # Kinds only `explain` reports (no recipe fixes them mechanically).
    DEFAULT_REMOVED = "default-removed"
    MADE_POSITIONAL_ONLY = "made-positional-only"
    POSITIONAL_REDUCED = "positional-parameters-reduced"
    REMOVED = "removed"
    RULE_RANGE = "rule-version-range"
    MODEL_CLASSES_ADDED = "model-classes-added"
    OTHER = "changed"


@record
class FixRequest:
    """An edit a change asks for, in the fix stage's terms (docs/fix.md)."""

    kind: FixKind
    keyword: str | None = None  # remove-keyword / add-keyword
    value: str | None = None  # add-keyword: an expression, may hold {in_scope:NAME}
    imports: tuple[str, ...] = ()  # add-keyword: statements the value needs
    old: str | None = None  # rename-keyword / rename-attribute
    new: str | None = None  # rename-keyword / rename-attribute / rewrite-import (new name)
    module: str | None = None  # rewrite-import: the module the name now lives in
    method: str | None = None  # insert-call-after: the method called on the same receiver
    args: str | None = None  # insert-call-after: its arguments, as source ("None", "x, flag=True")


@record
class RemovedParameter:
    param: str
    kind: ClassVar[ChangeKind] = ChangeKind.REMOVED_PARAMETER
    required_keys: ClassVar[frozenset[str]] = frozenset({"param"})
    optional_keys: ClassVar[frozenset[str]] = frozenset()

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return symbol_matches and finding.rule == "unexpected-keyword" and finding.param == self.param

    def advice(self) -> str:
        return f"Remove `{self.param}=` from the call."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.REMOVE_KEYWORD, keyword=self.param)

    def toml(self) -> dict[str, Any]:
        return {"param": self.param}


@record
class AddedParameter:
    param: str
    value: str
    imports: tuple[str, ...] = ()
    kind: ClassVar[ChangeKind] = ChangeKind.ADDED_PARAMETER
    required_keys: ClassVar[frozenset[str]] = frozenset({"param", "value"})
    optional_keys: ClassVar[frozenset[str]] = frozenset({"imports"})

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return symbol_matches and finding.rule == "missing-required" and finding.param == self.param

    def advice(self) -> str:
        shown = IN_SCOPE_PLACEHOLDER.sub(lambda m: f"<the {m.group(1)} value in scope>", self.value)
        return f"Pass `{self.param}={shown}`."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe, value=self.value, imports=self.imports)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.ADD_KEYWORD, keyword=self.param, value=self.value, imports=self.imports)

    def toml(self) -> dict[str, Any]:
        return {"param": self.param, "value": self.value, **({"imports": list(self.imports)} if self.imports else {})}


@record
class RenamedParameter:
    old: str
    new: str
    kind: ClassVar[ChangeKind] = ChangeKind.RENAMED_PARAMETER
    required_keys: ClassVar[frozenset[str]] = frozenset({"old", "new"})
    optional_keys: ClassVar[frozenset[str]] = frozenset()

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return symbol_matches and finding.rule == "unexpected-keyword" and finding.param == self.old

    def advice(self) -> str:
        return f"Rename `{self.old}=` to `{self.new}=`."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe, renamed_to=self.new)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.RENAME_KEYWORD, old=self.old, new=self.new)

    def toml(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new}


@record
class MovedSymbol:
    """`symbol` (the recipe's, the OLD import path) now lives in `module` (as `new`, when renamed)."""

    module: str
    new: str | None = None
    kind: ClassVar[ChangeKind] = ChangeKind.MOVED_SYMBOL
    required_keys: ClassVar[frozenset[str]] = frozenset({"module"})
    optional_keys: ClassVar[frozenset[str]] = frozenset({"new"})

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return symbol_matches and finding.rule == "import-missing"

    def advice(self) -> str:
        return f"Import it from `{self.module}`."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe, moved_to=self.module)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.REWRITE_IMPORT, module=self.module, new=self.new)

    def toml(self) -> dict[str, Any]:
        return {"module": self.module, **({"new": self.new} if self.new else {})}


@record
class RenamedAttribute:
    old: str
    new: str
    kind: ClassVar[ChangeKind] = ChangeKind.RENAMED_ATTRIBUTE
    required_keys: ClassVar[frozenset[str]] = frozenset({"old", "new"})
    optional_keys: ClassVar[frozenset[str]] = frozenset()

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        # The attribute is looked up on whatever the object is; the owner need not match.
        return finding.rule == "attribute-missing" and isinstance(finding.facts, AttributeFacts) and finding.facts.attribute == self.old

    def advice(self) -> str:
        return f"Use `{self.new}` instead."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe, renamed_to=self.new)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.RENAME_ATTRIBUTE, old=self.old, new=self.new)

    def toml(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new}


@record
class InsertCallAfter:
    """A protocol step added after a call: ``R.method(args)`` after the statement holding the
    pattern's ``R.<its method>(...)``, on the same receiver. Named by call-not-followed-by patterns."""

    method: str
    args: str = ""
    kind: ClassVar[ChangeKind] = ChangeKind.INSERT_CALL_AFTER
    required_keys: ClassVar[frozenset[str]] = frozenset({"method"})
    optional_keys: ClassVar[frozenset[str]] = frozenset({"args"})

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return False  # only the pattern that names this recipe finds what it fixes

    def advice(self) -> str:
        return f"Call `.{self.method}({self.args})` on the same object after it."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.INSERT_CALL_AFTER, method=self.method, args=self.args)

    def toml(self) -> dict[str, Any]:
        return {"method": self.method, **({"args": self.args} if self.args else {})}


@record
class DropSubscript:
    """A call that returned a list of one value per worker now returns the one value:
    ``R.m(...)[0]`` -> ``R.m(...)``, and ``x = R.m(...)`` ... ``x[0]`` -> ``x``. Named by
    result-subscripted patterns; only the index ``[0]`` is dropped (another index meant another value)."""

    kind: ClassVar[ChangeKind] = ChangeKind.DROP_SUBSCRIPT
    required_keys: ClassVar[frozenset[str]] = frozenset()
    optional_keys: ClassVar[frozenset[str]] = frozenset()

    def explains(self, finding: Finding, symbol_matches: bool) -> bool:
        return False  # only the pattern that names this recipe finds what it fixes

    def advice(self) -> str:
        return "Use the result itself instead of its `[0]`."

    def facts(self, recipe: str) -> RecipeFacts:
        return RecipeFacts(recipe)

    def fix(self) -> FixRequest:
        return FixRequest(FixKind.DROP_SUBSCRIPT)

    def toml(self) -> dict[str, Any]:
        return {}


Change = Union[RemovedParameter, AddedParameter, RenamedParameter, MovedSymbol, RenamedAttribute, InsertCallAfter, DropSubscript]
# `change = "..."` in a rule file -> the class that holds it.
CHANGE_CLASSES: dict[str, type[Change]] = {
    cls.kind.value: cls
    for cls in (RemovedParameter, AddedParameter, RenamedParameter, MovedSymbol, RenamedAttribute, InsertCallAfter, DropSubscript)
}
CHANGE_KINDS = tuple(CHANGE_CLASSES)
