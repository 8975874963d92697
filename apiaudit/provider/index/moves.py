"""Where names are defined in a release: a missing name that moved (one map of every top-level
name, built in one line scan and cached), the subclasses that give an annotated object a
member its class lacks, and a module `__getattr__`'s deprecation of a name it still serves.
"""

from __future__ import annotations

from pathlib import Path

from apiaudit.provider import names
from apiaudit.provider.index.lazy import facts
from apiaudit.provider.index.mro import Hierarchy
from apiaudit.provider.records import Found, Missing, Unknown


class Moves(Hierarchy):
    """Moved names and the subclasses that define one."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        super().__init__(root, packages)
        self._definitions: dict[str, tuple[str, ...]] | None = None

    def moved_to(self, missing: Missing) -> tuple[str, ...]:
        """Where else in this release the missing name is defined at top level (a name that moved)."""
        if missing.moved_name is None:
            return ()
        return tuple(m for m in self.find_definitions(missing.moved_name) if m != missing.path)

    def find_definitions(self, name: str) -> tuple[str, ...]:
        """Modules of this release that define `name` at top level, from one map built in one pass."""
        return self._cached(("defs", name), lambda: tuple(self.definitions().get(name, ())[:5]))

    def find_modules(self, leaf: str) -> tuple[str, ...]:
        """Modules of this release whose last dotted part is `leaf` (a module that moved)."""
        return self._cached(("module-defs", leaf), lambda: tuple(self.definitions().get(f"<module>{leaf}", ())[:5]))

    def definitions(self) -> dict[str, tuple[str, ...]]:
        if self._definitions is None:
            table = self.memo.get(("definitions",))
            if table is None:
                table = names.definitions_table(self.loader.source_files())
                self.memo[("definitions",)] = table
            self._definitions = dict(table)
        return self._definitions

    def subclasses_defining(self, class_path: str, name: str) -> tuple[str, ...]:
        """Provider classes derived from `class_path` whose instances have `name` where the class
        itself has not (at most a few, the nearest first): what an object annotated with
        `class_path` may really be. Candidates come from one line scan of every module's `class`
        statements (cached with the index); each is confirmed by its MRO."""
        return self._cached(("subclasses-defining", class_path, name), lambda: self._subclasses_defining(class_path, name))

    def _subclasses_defining(self, class_path: str, name: str, limit: int = 3, budget: int = 200) -> tuple[str, ...]:
        table = self.memo.get(("class-bases",))
        if table is None:
            table = names.class_bases_table(self.loader.source_files())
            self.memo[("class-bases",)] = table
        by_base = dict(table)
        found: list[str] = []
        queue, seen = [class_path.rpartition(".")[2]], {class_path}
        while queue and len(seen) <= budget and len(found) < limit:
            for candidate in by_base.get(queue.pop(0), ()):
                if candidate in seen:
                    continue
                seen.add(candidate)
                queue.append(candidate.rpartition(".")[2])
                if class_path not in self.mro_paths(candidate):
                    continue  # a class of the same name elsewhere
                member = self.class_member(candidate, name, instance=True)
                if isinstance(member, (Found, Unknown)):
                    found.append(candidate)
                    if len(found) >= limit:
                        break
        return tuple(found)

    def getattr_deprecation(self, dotted: str) -> str | None:
        """The deprecation message a module `__getattr__` gives when it serves `dotted` (a shim
        kept for a name that moved), or None."""
        return self._cached(("getattr-deprecation", dotted), lambda: self._getattr_deprecation(dotted))

    def _getattr_deprecation(self, dotted: str) -> str | None:
        module_path, _, name = dotted.rpartition(".")
        if not module_path or not self.loader.owns(module_path):
            return None
        module = self.loader.load(module_path)
        if module is None or name in module.members:
            return None
        message = facts(module).get("getattr_deprecated", {}).get(name)
        return message if isinstance(message, str) else None
