"""What a check knew when it wrote a finding, typed: one frozen class per rule family.

Checks build these; the fix planner, recipes and `matrix explain` read their fields. The
JSON report's `details` object (string -> string) is made from them, and read back into
them, only in `apiaudit.report.json_format`.
"""

from __future__ import annotations

from typing import Literal, Union

from apiaudit.infra.frozen import record


@record
class ImportFacts:
    """import-missing: the import as written, and where its name (or module) lives now."""

    module: str
    name: str | None = None  # None for `import module`
    # Where the engine found it in this release: modules (for `import module`) or dotted
    # definitions (for `from module import name`), best first.
    candidates: tuple[str, ...] = ()
    moved_to: str | None = None  # the module to import from instead (the first candidate's)
    guarded: str | None = None  # the exception or condition that guards the import


@record
class FailedImportFacts:
    """import-failed-use: the import (at `import_line`) whose failure leaves a name unbound."""

    import_line: int
    module: str
    name: str | None = None


@record
class AttributeFacts:
    """attribute-missing: the attribute and the provider module or class it was looked up on."""

    attribute: str
    owner: str
    moved_to: str | None = None  # a module attribute now defined elsewhere: its new dotted path
    # No provider code gives the owner the attribute, but this base outside the provider may:
    # missing is likely, not proven (the finding is a warning unless a recipe says it is gone).
    external_base: str | None = None


@record
class ModelAttributeFacts(AttributeFacts):
    """attribute-missing / model-attribute-missing on a model object: the classes (and the
    registry's architectures) it can be that lack the attribute."""

    classes: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()


@record
class BindingFacts:
    """A call's arguments against the callee's signature (unexpected-keyword, missing-required,
    too-many-positional, positional-only-by-keyword, duplicate-argument)."""

    arg_line: int | None = None  # the line of the offending argument (a multi-line call)
    via_splat: bool = False  # the keyword comes from a `**dict`, not the call's text
    annotation: str | None = None  # the parameter's annotation in the provider
    # too-many-positional: the callee's positional parameters then its keyword-only ones,
    # in order; how many it accepts positionally; how many the call passes.
    positional_names: tuple[str, ...] = ()
    max_positional: int | None = None
    positional_given: int | None = None
    # A keyword passed on through `**kwargs`: the callable that rejects it, and after how many hops.
    rejected_by: str | None = None
    forward_hops: int | None = None


@record
class RpcFacts:
    """rpc-missing: the method a string RPC names."""

    rpc: str


@record
class PatternFacts:
    """A [[pattern]] finding: the pattern, the method it matched or the keyword it wants."""

    pattern: str
    method: str | None = None  # matched on source: the called method ("" when the pattern names none)
    keyword: str | None = None  # call-without-keyword: the keyword the call omits
    bound: str | None = None  # result-subscripted: the name the result was assigned to


@record
class GuardFacts:
    """guard-fails: the guard's text, what it must be for the code to go on, the classes judged."""

    guard: str
    expect: bool
    classes: tuple[str, ...] = ()


@record
class RemoteCodeFacts:
    """A remote-code rule's finding: the Auto class, the model file and key mapping it to custom code."""

    auto_class: str
    auto_map_file: str
    auto_map_key: str
    keyword: str


@record
class DeprecationFacts:
    """deprecated-use: the whole callable is deprecated, or one keyword of it."""

    deprecated: Literal["callable", "keyword"]


@record
class LaunchFacts:
    """launch-*: a provider command line's launch rule and flag; for a config finding the key
    path inside the flag's JSON, the value and the config class; for an entry finding the
    module; `known`: the nearest names the release has (or the values it allows)."""

    launch: str
    flag: str
    key: str | None = None
    value: str | None = None
    config: str | None = None
    module: str | None = None
    known: tuple[str, ...] = ()


@record
class SuppressionFacts:
    """unused-suppression: the rule ids the comment names."""

    rules: tuple[str, ...]


Facts = Union[
    ImportFacts,
    FailedImportFacts,
    AttributeFacts,
    ModelAttributeFacts,
    BindingFacts,
    RpcFacts,
    PatternFacts,
    GuardFacts,
    RemoteCodeFacts,
    DeprecationFacts,
    LaunchFacts,
    SuppressionFacts,
]


def attribute_of(facts: Facts | None) -> str | None:
    """The attribute an attribute finding names (None for every other family)."""
    return facts.attribute if isinstance(facts, AttributeFacts) else None


@record
class RecipeFacts:
    """The recipe that explains (and fixes) a finding, and what its change says.

    Pattern findings name their recipe by id only; a recipe that explains an engine finding
    adds what its change knows: the new name, the value to pass, the new module.
    """

    id: str
    renamed_to: str | None = None  # renamed-parameter / renamed-attribute
    value: str | None = None  # added-parameter: an expression, may hold {in_scope:NAME}
    imports: tuple[str, ...] = ()  # added-parameter: statements the value needs
    moved_to: str | None = None  # moved-symbol: the module the name lives in now


__all__ = [
    "AttributeFacts",
    "BindingFacts",
    "DeprecationFacts",
    "Facts",
    "FailedImportFacts",
    "GuardFacts",
    "ImportFacts",
    "LaunchFacts",
    "ModelAttributeFacts",
    "PatternFacts",
    "RecipeFacts",
    "RemoteCodeFacts",
    "RpcFacts",
    "SuppressionFacts",
    "attribute_of",
]
