"""`@record`: a frozen dataclass, cheaper to define.

`@dataclass(frozen=True)` writes six methods as source text and compiles each (`__init__`,
`__setattr__`, `__delattr__`, `__eq__`, `__hash__`, `__repr__`): about half a millisecond a
class, and a cold scan imports some two hundred of them (about a twentieth of its time).
`@record` lets the dataclass machinery make the first three (so instances are built as fast,
and `dataclasses.fields`, `replace`, `asdict` and the cache codec see a frozen dataclass) and
gives the other three as shared functions over the fields' values, which answer as
dataclass's own do: equal when of the same class with equal compared fields, the hash of those
values, `Name(field=value, ...)`. A method the class body defines itself is kept.

    @record
    class Site:
        path: str
        line: int = 0

    @record(slots=True)
    class Step: ...
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
from typing import TYPE_CHECKING, Any, Callable, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform  # what type checkers read (no run-time dependency)
else:

    def dataclass_transform(**_options):
        return lambda decorator: decorator

_T = TypeVar("_T")


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, slots: bool = False) -> Any:
    """`@dataclass(frozen=True[, slots=True])`, its equality, hash and repr made without compiling."""

    def make(body: type) -> type:
        own = {name for name in ("__eq__", "__hash__", "__repr__") if name in body.__dict__}
        made: type = dataclasses.dataclass(body, frozen=True, slots=slots, eq=False, repr=False)
        fields = dataclasses.fields(made)
        compared = values_getter([f.name for f in fields if f.compare])
        hashed = values_getter([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
        shown = [f.name for f in fields if f.repr]

        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)
            return NotImplemented

        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        @reprlib.recursive_repr()
        def __repr__(self: Any) -> str:
            return f"{self.__class__.__qualname__}(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")"

        for name, method in (("__eq__", __eq__), ("__hash__", __hash__), ("__repr__", __repr__)):
            if name not in own:
                method.__qualname__ = f"{made.__qualname__}.{name}"
                setattr(made, name, method)
        return made

    return make if cls is None else make(cls)


def values_getter(names: list[str]) -> Callable[[Any], tuple]:
    """The named fields' values of an instance, as a tuple (one C call for several)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        single = operator.attrgetter(names[0])
        return lambda value: (single(value),)
    return lambda value: ()
