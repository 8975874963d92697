"""What a provider call passes that is never None, and what a provider store puts in an
attribute, read from its text and the function around it.

Asked of a [[plugin]] factory's construction calls (`connector_cls(config, role, cache_config)`):
a plugin's `__init__` testing `param is None` runs that side only where a caller passes nothing,
or None, there. An argument is never None when it is

- a literal other than None, a display (`[...]`, `{...}`, an f-string), a comprehension, a lambda;
- an object built of a class (`Cls(...)`, `mod.Cls(...)`: a module-level name of the calling
  function's module that the index resolves to a provider class, not rebound in the function);
- a parameter of the calling function that its body never rebinds, which the provider declares
  with one class and no None and without a None default (`cache_config: "CacheConfig"`,
  `ProviderIndex.parameter_never_none`): the provider's own declaration of what its callers pass.

Anything else (another name, an attribute, a call of a function, a subscript) may be None.

What a store puts in an attribute (`stored_value`, for `callsites.find_attribute_values`) is read
the same way: a literal, an object built of a provider class (as above), or anything else.
"""

from __future__ import annotations

import ast

from apiaudit.infra.astutil import dotted_text, never_rebound
from apiaudit.provider.queries import ReceiverClasses
from apiaudit.provider.records import Found, StoredKind, SymbolKind

_ALWAYS_OBJECTS = (
    ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
)  # fmt: skip


def not_none(
    index: ReceiverClasses, function: ast.FunctionDef | ast.AsyncFunctionDef, function_path: str, module: str, call: ast.Call
) -> tuple[int | str, ...]:
    """The positions (int) and keywords (str) at which `call`, made in `function` (the provider
    function `function_path` of `module`), passes a value that is never None. Positions after a
    `*args` are not known and are left out."""
    reader = _Reader(index, function, function_path, module)
    found: list[int | str] = []
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if reader.never_none(arg):
            found.append(position)
    found.extend(k.arg for k in call.keywords if k.arg is not None and reader.never_none(k.value))
    return tuple(found)


def stored_value(index: ReceiverClasses, function: ast.FunctionDef | ast.AsyncFunctionDef | None, module: str, value: ast.expr) -> tuple[StoredKind, str]:
    """What storing `value` (in `function` of `module`; None: at module level or in a class body)
    puts in an attribute: ("literal", its repr) for a constant, ("built", the class) for an object
    built of a provider class (`Cls(...)`, read as `not_none` reads it), ("other", "") else."""
    if isinstance(value, ast.Constant):
        return "literal", repr(value.value)
    if isinstance(value, ast.Call):
        built = _Reader(index, function, "", module).built_class(value.func)
        if built is not None:
            return "built", built
    return "other", ""


class _Reader:
    def __init__(self, index: ReceiverClasses, function: ast.FunctionDef | ast.AsyncFunctionDef | None, function_path: str, module: str):
        self.index, self.function, self.function_path, self.module = index, function, function_path, module
        args = function.args if function is not None else None
        self.params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args is not None else set()
        self._kept: dict[str, bool] = {}

    def never_none(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value is not None
        if isinstance(node, _ALWAYS_OBJECTS):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.params and self._kept_name(node.id) and self.index.parameter_never_none(self.function_path, node.id)
        if isinstance(node, ast.Call):
            return self.built_class(node.func) is not None
        return False

    def built_class(self, func: ast.expr) -> str | None:
        """`Cls(...)` / `mod.Cls(...)`: the head a module-level name (not a parameter or a local of
        the function), the whole a provider class (its path)."""
        dotted = dotted_text(func)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        if head in self.params or not self._kept_name(head):
            return None
        found = self.index.resolve(f"{self.module}.{dotted}")
        return found.symbol.path if isinstance(found, Found) and found.symbol.kind is SymbolKind.CLASS else None

    def _kept_name(self, name: str) -> bool:
        """Whether nothing in the function binds `name` (so it holds what the caller passed, or the
        module's name; outside a function, the module's name)."""
        if self.function is None:
            return True
        if name not in self._kept:
            self._kept[name] = bool(never_rebound(self.function.body, {name}))
        return self._kept[name]
