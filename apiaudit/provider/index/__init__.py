"""The provider index: dotted names -> symbols, members, call signatures, result types.

Every public query is memoised on plain values and answers with frozen values from
`records.py`, so a warm run can answer from the cache without visiting a single module.

`ProviderIndex` is the one face; each concern is a layer of it, in its own module, each layer
on the ones it asks (imports go one way, earliest first):

- `memo.py`: the answers kept, and those another process's index learned (`adopt`);
- `resolve.py`: dotted names -> symbols, through re-exports, lazy maps and star imports;
- `mro.py`: MROs and class members;
- `inference.py`: the class an annotation, attribute or return names; what an attribute holds;
- `signatures.py`: how a call binds (functions, constructors, class shapes); `**kwargs` forwarding;
- `membership.py`: protocol membership and `TypeIs`/`TypeGuard` narrowing;
- `moves.py`: where a name moved; subclasses that define a member.

What the release's own code does (its calls of a method, the guards on its imports) is read by
`callsites.py` and `liveness.py`, asked here and kept in the memo; they ask the index back
through `queries.py`'s Protocols, never by importing it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Callable

from apiaudit.provider.index.membership import ProtocolMembership
from apiaudit.provider.index.memo import LIVE_OBJECT_ANSWERS
from apiaudit.provider.index.moves import Moves
from apiaudit.provider.index.mro import KNOWN_EXTERNAL_MEMBERS, TRANSPARENT_BASES, MroEntry
from apiaudit.provider.index.signatures import Signatures
from apiaudit.provider.records import ProviderAssignment, ProviderCall, ProviderReference, ProviderStore, SelfUse

__all__ = ["KNOWN_EXTERNAL_MEMBERS", "LIVE_OBJECT_ANSWERS", "TRANSPARENT_BASES", "MroEntry", "ProviderIndex"]


class ProviderIndex(Signatures, ProtocolMembership, Moves):
    """What a provider release defines, answered on demand (the layers above), and what its own
    code does with a consumer's methods (below: the readers are imported on the first such
    question, as Griffe is, so an index answered from its cache never loads them)."""

    def calls_of(self, methods: Iterable[str], *, workers: int = 1) -> dict[str, tuple[ProviderCall, ...]]:
        """method name -> the provider's own calls of it on receivers of known classes
        (`provider/callsites.py`), looked up for the names not answered yet in one pass (shared
        among `workers` processes)."""
        from apiaudit.provider.callsites import find_calls

        return self._per_name("provider-calls", methods, lambda index, names: find_calls(index, names, workers=workers))

    def references_of(self, methods: Iterable[str]) -> dict[str, tuple[ProviderReference, ...]]:
        """method name -> every place the release names it, its object typed or not
        (`provider/callsites.py`): how an instance may come to run the method."""
        from apiaudit.provider.callsites import find_references

        return self._per_name("provider-references", methods, find_references)

    def self_uses(self, names: Iterable[str]) -> dict[str, tuple[SelfUse, ...]]:
        """name -> every `self.name` in a method of a release class, called or a value, and
        where it goes (`provider/callsites.py`): how a method handed on as a value is reached."""
        from apiaudit.provider.callsites import find_self_uses

        return self._per_name("provider-self-uses", names, find_self_uses)

    def attribute_stores(self, names: Iterable[str]) -> dict[str, tuple[ProviderStore, ...]]:
        """attribute name -> where the release's functions set it on objects other than their own
        `self` (`provider/callsites.py`): members the provider gives a class from other code."""
        from apiaudit.provider.callsites import find_attribute_stores

        return self._per_name("provider-stores", names, find_attribute_stores)

    def attribute_values(self, name: str, near: str | None = None) -> tuple[ProviderAssignment, ...]:
        """Where the release binds the attribute `name`, on any object or in a class body, and
        what it stores there, up to the first store of anything but a literal or a built object
        (`provider/callsites.py`); `near`: the module read first (the one defining it)."""
        from apiaudit.provider.callsites import find_attribute_values

        return self._cached(("attribute-values", name), lambda: find_attribute_values(self, name, near))

    def _per_name(self, kind: str, names: Iterable[str], find: Callable[[ProviderIndex, list[str]], dict]) -> dict:
        """name -> `find`'s answer for it, memoised by (kind, name); the names not answered yet
        are found in one pass over the release."""
        wanted = sorted(set(names))
        missing = [n for n in wanted if (kind, n) not in self.memo]
        if missing:
            for name, answer in find(self, missing).items():
                self.memo[(kind, name)] = answer
        return {n: self.memo[(kind, n)] for n in wanted}

    def instance_calls(self, classes: Iterable[str]) -> tuple[ProviderCall, ...]:
        """The provider's calls of objects held in attributes typed as one of `classes`
        (`self.model(...)`; `provider/callsites.py`)."""
        from apiaudit.provider.callsites import find_instance_calls

        key = tuple(sorted(set(classes)))
        return self._cached(("instance-calls", key), lambda: find_instance_calls(self, key))

    def import_guard(self, module: str) -> str | None:
        """The guard every import of the provider module `module` sits behind, if one does
        (`provider/liveness.py`)."""
        from apiaudit.provider.liveness import import_guard

        return self._cached(("import-guard", module), lambda: import_guard(self, module))

    def construction_calls(self, factory: str, class_variable: str) -> tuple[ProviderCall, ...]:
        """How the provider function `factory` calls the class held in its local `class_variable`."""
        from apiaudit.provider.callsites import construction_calls

        return self._cached(("constructs", factory, class_variable), lambda: construction_calls(self, factory, class_variable))
