"""Bind a call's arguments to a signature the way CPython does, without running it."""

from __future__ import annotations


from apiaudit.consumer.records import CallShape
from apiaudit.findings import Severity
from apiaudit.infra.frozen import record
from apiaudit.provider.records import Extra, ParamKind, Signature

POSITIONAL_KINDS = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)


@record
class Problem:
    rule: str
    param: str | None
    message: str
    severity: Severity = Severity.ERROR
    arg_line: int | None = None


@record
class Binding:
    problems: tuple[Problem, ...]
    uncertain: str | None = None  # why the absence of problems is not a guarantee (call-site splats)


def bind(sig: Signature, shape: CallShape, callee: str) -> Binding:
    params = sig.params
    positional_params = [p for p in params if p.kind in POSITIONAL_KINDS]
    has_varargs = any(p.kind is ParamKind.VAR_POSITIONAL for p in params)
    has_varkw = any(p.kind is ParamKind.VAR_KEYWORD for p in params)
    problems: list[Problem] = []
    filled: set[str] = set()

    if not shape.has_star:
        given = shape.positional
        if given > len(positional_params) and not has_varargs:
            names = ", ".join(p.name for p in positional_params) or "no positional arguments"
            problems.append(
                Problem(
                    "too-many-positional",
                    None,
                    f"{callee}() takes {len(positional_params)} positional argument(s) ({names}) but {given} were given",
                )
            )
        filled |= {p.name for p in positional_params[:given]}

    rewritten: list[str] = []  # keywords a decorator's wrapper may take in a way not read
    renamed: set[str] = set()  # parameters a keyword a decorator renames fills
    keyword_names = {arg.name for arg in shape.keywords}
    for arg in shape.keywords:
        if arg.name is None:  # a keyword argument always has a name (`**` is "starstar")
            continue
        param = sig.param(arg.name)
        if param is None or param.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
            if has_varkw or sig.extra is Extra.ALLOW:
                continue
            alias = sig.alias(arg.name)
            target = alias.param if alias is not None else None
            if alias is not None and target is None:
                continue  # the decorator's wrapper takes it out itself
            if target is not None:
                # A decorator renames it before the call: it fills that parameter (passed both
                # ways, the decorator keeps one or raises, as its own flags say: not judged).
                if target in filled and not shape.has_star and target not in keyword_names:
                    problems.append(Problem(
                        "duplicate-argument", arg.name,
                        f"{callee}() got multiple values for argument '{target}' ('{arg.name}' is renamed to it)",
                        arg_line=arg.site.line,
                    ))  # fmt: skip
                filled.add(target)
                renamed.add(target)
                continue
            if sig.rewritten_by is not None:
                rewritten.append(arg.name)
                continue
            if sig.extra is Extra.IGNORE:
                problems.append(
                    Problem(
                        "unexpected-keyword",
                        arg.name,
                        f"{callee}() has no parameter '{arg.name}'; the value is silently ignored (extra='ignore')",
                        severity=Severity.WARNING,
                        arg_line=arg.site.line,
                    )
                )
                continue
            problems.append(
                Problem("unexpected-keyword", arg.name, f"{callee}() got an unexpected keyword argument '{arg.name}'", arg_line=arg.site.line)
            )
        elif param.kind is ParamKind.POSITIONAL_ONLY:
            if has_varkw:
                continue  # it lands in **kwargs instead
            filled.add(param.name)  # CPython reports only the keyword misuse, not a missing argument
            problems.append(
                Problem(
                    "positional-only-by-keyword",
                    arg.name,
                    f"{callee}() got positional-only argument '{arg.name}' passed as keyword",
                    arg_line=arg.site.line,
                )
            )
        else:
            if arg.name in filled and not shape.has_star and arg.name not in renamed:
                problems.append(
                    Problem("duplicate-argument", arg.name, f"{callee}() got multiple values for argument '{arg.name}'", arg_line=arg.site.line)
                )
            filled.add(arg.name)

    uncertain = None
    if rewritten:
        # What the wrapper makes of them (and which parameters they then fill) is not read.
        names = ", ".join(f"'{name}'" for name in rewritten)
        uncertain = f"the decorator {sig.rewritten_by} may rewrite keywords: whether {callee}() takes {names} cannot be read"
    elif shape.has_star or shape.has_starstar:
        absorbs = (not shape.has_star or has_varargs) and (not shape.has_starstar or has_varkw)
        unfilled = [p for p in params if p.required and p.name not in filled]
        # Certain only when the callee swallows whatever the splats hold and nothing can be filled twice.
        if not (absorbs and not unfilled and not (shape.has_starstar and filled)):
            uncertain = "the call unpacks *args/**kwargs, so which parameters it fills cannot be known statically"
    else:
        for p in params:
            if p.required and p.name not in filled:
                kind = "keyword-only argument" if p.kind is ParamKind.KEYWORD_ONLY else "argument"
                problems.append(Problem("missing-required", p.name, f"{callee}() missing required {kind}: '{p.name}'"))
    return Binding(tuple(problems), uncertain)


def bind_any(signatures: tuple[Signature, ...], fallback: Signature | None, shape: CallShape, callee: str) -> Binding:
    """Overloads: fine if the call fits any; otherwise judge by the runtime implementation."""
    results = [bind(s, shape, callee) for s in signatures]
    clean = [r for r in results if not _errors(r)]
    if clean:
        return clean[0]
    if fallback is not None:
        runtime = bind(fallback, shape, callee)
        if not _errors(runtime):
            return runtime
        return runtime
    return min(results, key=lambda r: len(r.problems)) if results else Binding(())


def _errors(binding: Binding) -> bool:
    return any(p.severity is Severity.ERROR for p in binding.problems)
