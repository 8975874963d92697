"""Declarative provider knowledge: rules/*.toml loaded, validated and filtered by provider version.

Every name is imported on first use: a warm scan asks only `apiaudit.recipes.files` (the rule
files' bytes), and must not pay for the TOML parser and the rule classes.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from apiaudit.recipes.files import bundled_rules_dir
    from apiaudit.recipes.loader import load_rule_file, load_rulebook
    from apiaudit.recipes.records import (
        CHANGE_KINDS,
        PATTERN_KINDS,
        InjectionRule,
        Pattern,
        Recipe,
        RpcRule,
        RuleBook,
    )

_HOMES = {
    "bundled_rules_dir": "files",
    "load_rule_file": "loader",
    "load_rulebook": "loader",
    **dict.fromkeys(("CHANGE_KINDS", "PATTERN_KINDS", "InjectionRule", "Pattern", "Recipe", "RpcRule", "RuleBook"), "records"),
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = sorted(_HOMES)
