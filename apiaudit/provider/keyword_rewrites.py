"""What a decorator's wrapper does to the keywords its function is called with, read from the
decorator's own definition (`ast` only), and what that makes of one decorated function.

A decorator (or a decorator factory) whose wrapper takes `**kwargs` and moves a key
(`kwargs[new] = kwargs.pop(old)`, `kwargs.setdefault(new, kwargs.pop(old))`) makes the old
keyword valid: binding `old=` fills `new`. Each `Rename` names its keys as string literals of
the wrapper or as parameters of the factory, which the decorator call gives (`@rename(
"tokenizer", new_name="processing_class")`, bound to the factory's own parameters as Python
binds them). Popping the old key alone (when both are passed) belongs to the rename. A key the
wrapper takes out itself (`kwargs.pop("return_dict", None)`, `del kwargs["k"]`) is a keyword
it takes: valid, filling no parameter. A key it sets (`kwargs["use_cache"] = ...`) changes no
keyword a caller may pass. A key that is neither a literal nor a factory parameter (from a
table, a loop), `kwargs.update(...)`, a rebound `kwargs`, and a call of the wrapped function
with another mapping rewrite keywords in a way not read: `opaque`. A wrapper that passes its
keywords on untouched (`functools.wraps` style) changes nothing.
"""

from __future__ import annotations

import ast

from apiaudit.infra.astutil import descendants
from apiaudit.provider.deprecation_marks import DecoratorMark
from apiaudit.provider.records import KeywordAlias, KeywordRewrites, Param, ParamKind, Rename, RewrittenKey

# The dict methods that change a mapping in place.
_MUTATORS = frozenset({"pop", "popitem", "setdefault", "update", "clear", "__setitem__", "__delitem__"})
_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)


def read(definition: ast.FunctionDef | ast.AsyncFunctionDef, decorator: str, factory: tuple[Param, ...]) -> KeywordRewrites | None:
    """What the wrappers `definition` makes (its functions taking `**kwargs`, nested at any depth)
    do to their keywords; None when none rewrites them. `decorator`: its dotted path, `factory`:
    its parameters."""
    named = _parameter_names(definition)
    renames: list[Rename] = []
    consumed: list[RewrittenKey] = []
    opaque: str | None = None
    functions = [n for n in descendants(definition) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for wrapper in functions:
        if wrapper is definition or wrapper.args.kwarg is None:
            continue
        # What the wrapper may call on with the keywords: a function handed to the decorator
        # (`fn`), a parameter of a def around it (approximated by every def's but its own)
        wrapped = {name for function in functions if function is not wrapper for name in _parameter_names(function)}
        found, taken, unread = _wrapper_rewrites(wrapper, wrapper.args.kwarg.arg, named, wrapped)
        renames += found
        consumed += taken
        opaque = opaque or unread
    if not renames and not consumed and opaque is None:
        return None
    return KeywordRewrites(decorator, factory, tuple(renames), tuple(consumed), opaque)


def _parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}


def _wrapper_rewrites(
    wrapper: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str, named: set[str], wrapped: set[str]
) -> tuple[list[Rename], list[RewrittenKey], str | None]:
    """(the renames the wrapper's body makes, the keys it takes out itself, the text of the first
    rewrite it does not read); `named`: the decorator's parameter names (a key that is one of them
    is given by the decorator call); `wrapped`: names the function it wraps may go by."""
    renames: list[Rename] = []
    popped: list[tuple[RewrittenKey | None, ast.AST]] = []  # keys removed outside a rename
    unread: ast.AST | None = None
    in_rename: set[int] = set()  # the `kwargs.pop(old)` calls a rename is made of

    def key(node: ast.expr) -> RewrittenKey | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return RewrittenKey(node.value, "literal")
        if isinstance(node, ast.Name) and node.id in named:
            return RewrittenKey(node.id, "parameter")
        return None

    def is_kwargs(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == kwargs

    def pop_of(node: ast.AST) -> ast.Call | None:
        """`kwargs.pop(k)` / `kwargs.pop(k, default)`."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop" and is_kwargs(node.func.value):
            return node if node.args and not node.keywords else None
        return None

    def rename(new: ast.expr, moved: ast.AST) -> bool:
        pop = pop_of(moved)
        new_key, old_key = key(new), key(pop.args[0]) if pop is not None else None
        if pop is None or new_key is None or old_key is None:
            return False
        renames.append(Rename(old_key, new_key))
        in_rename.add(id(pop))
        return True

    nodes = sorted(_own_nodes(wrapper), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) and is_kwargs(node.targets[0].value):
            # A rename, or a key the wrapper sets itself (`kwargs["use_cache"] = ...`): that one
            # changes no keyword a caller may pass.
            if not rename(node.targets[0].slice, node.value) and key(node.targets[0].slice) is None:
                unread = unread or node
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_kwargs(t) or (isinstance(t, ast.Subscript) and is_kwargs(t.value)) for t in targets):
                unread = unread or node  # `kwargs = {...}`, `kwargs[k] += ...`
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and is_kwargs(target.value):
                    popped.append((key(target.slice), node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_kwargs(node.func.value) and node.func.attr in _MUTATORS:
            if id(node) in in_rename:
                continue
            if node.func.attr == "setdefault" and len(node.args) == 2 and (rename(node.args[0], node.args[1]) or key(node.args[0])):
                continue
            if pop_of(node) is not None:
                popped.append((key(node.args[0]), node))
            else:
                unread = unread or node
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in wrapped
            and any(k.arg is None and not is_kwargs(k.value) for k in node.keywords)
        ):  # fmt: skip
            unread = unread or node  # it calls the function on with another mapping than it received
    olds = {r.old for r in renames}
    consumed: list[RewrittenKey] = []
    for popped_key, node in popped:
        if popped_key is None:
            unread = unread or node  # a key dropped that cannot be named
        elif popped_key not in olds and popped_key not in consumed:
            consumed.append(popped_key)  # `kwargs.pop("return_dict", None)`: the wrapper takes it
    return renames, consumed, _text(unread) if unread is not None else None


def _own_nodes(wrapper: ast.AST):
    """The wrapper's nodes, not those of the functions, classes and lambdas it defines."""
    stack = list(ast.iter_child_nodes(wrapper))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _text(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 80 else text[:77] + "..."


def argument_values(mark: DecoratorMark, factory: tuple[Param, ...]) -> dict[str, str | None]:
    """The factory's parameters a decorator call gives a value Python would bind, as far as it can
    be read: a string literal (a str), or None where the parameter is left to a `None` default.
    A parameter given anything else, and every one when the call unpacks `*x`/`**x`, is absent."""
    if mark.unpacks or not mark.is_call:
        return {}
    values: dict[str, str | None] = {}
    positional = [p for p in factory if p.kind in _POSITIONAL]
    for param, given in zip(positional, mark.positional):
        if given is not None:
            values[param.name] = given
    given_names = {p.name for p in positional[: len(mark.positional)]}
    for name, given in mark.keywords:
        given_names.add(name)
        if given is not None:
            values[name] = given
    for param in factory:
        if param.name not in given_names and param.has_default and param.default == "None":
            values[param.name] = None
        elif param.name not in given_names and param.has_default and param.default is not None:
            literal = _literal_string(param.default)
            if literal is not None:
                values[param.name] = literal
    return values


def _literal_string(text: str) -> str | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def apply(mark: DecoratorMark, rewrites: KeywordRewrites, params: tuple[Param, ...]) -> tuple[tuple[KeywordAlias, ...], bool]:
    """(the keywords the decorator renames to one of `params`, whether it may rewrite others in a
    way not read) for one function it decorates, as `mark` records the decorator there."""
    values = argument_values(mark, rewrites.factory)
    aliases: list[KeywordAlias] = []
    unread = rewrites.opaque is not None
    names = {p.name for p in params if p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)}
    for rename in rewrites.renames:
        old, new = _value(rename.old, values), _value(rename.new, values)
        if old is _UNREAD or new is _UNREAD:
            unread = True
        elif isinstance(old, str) and isinstance(new, str) and new in names:
            aliases.append(KeywordAlias(old, new, rewrites.decorator))
        # A key left to a None default names no rename: `old=` reaches the function as written.
    for key in rewrites.consumed:
        taken = _value(key, values)
        if taken is _UNREAD:
            unread = True
        elif isinstance(taken, str) and taken not in names:
            aliases.append(KeywordAlias(taken, None, rewrites.decorator))
    return tuple(aliases), unread


_UNREAD = object()


def _value(key: RewrittenKey, values: dict[str, str | None]) -> object:
    if key.source == "literal":
        return key.name
    return values.get(key.name, _UNREAD)
