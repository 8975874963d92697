"""What the readers of a release's own code ask of the provider index, as Protocols below it.

The index asks `callsites.py` (the provider's calls of a method) and `liveness.py` (the guard
an import sits behind), and both, like the work shared among processes (`shared.py`), ask the
index back. Each names here what it asks; `ProviderIndex` answers it, handed in as the
`index` argument, so none of them imports the index (docs/architecture.md: "the later one is
handed in") and the index's imports of them make no circle.
"""

from __future__ import annotations

from typing import Any, Protocol

from apiaudit.provider.loader import ModuleLoader
from apiaudit.provider.records import Resolution, Symbol


class ReleaseFiles(Protocol):
    """The release's files, read as text (no module visited)."""

    loader: ModuleLoader


class LearnedAnswers(Protocol):
    """What an index learned since a moment, handed to another process's index of the release."""

    def answered(self) -> frozenset[tuple]: ...

    def answers_since(self, answered: frozenset[tuple]) -> tuple[dict[tuple, Any], dict[str, str]]: ...

    def adopt(self, answers: dict[tuple, Any], touched: dict[str, str]) -> None: ...


class ReceiverClasses(ReleaseFiles, LearnedAnswers, Protocol):
    """What reading the provider's calls asks: the class a receiver holds, where the text alone
    does not tell it."""

    def resolve(self, dotted: str) -> Resolution: ...

    def attribute_type(self, class_path: str, name: str) -> Symbol | None: ...

    def module_attribute_type(self, path: str) -> Symbol | None: ...

    def class_named(self, path: str) -> Symbol | None: ...

    def defines_class(self, path: str) -> bool: ...

    def reexported_class(self, path: str) -> str | None: ...

    def return_class(self, path: str) -> Symbol | None: ...

    def parameter_never_none(self, function_path: str, param: str) -> bool: ...
