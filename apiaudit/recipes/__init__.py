"""Declarative provider knowledge: rules/*.toml loaded, validated and filtered by provider version."""

from __future__ import annotations

from apiaudit.recipes.loader import bundled_rules_dir, load_rule_file, load_rulebook
from apiaudit.recipes.model import (
    CHANGE_KINDS,
    PATTERN_KINDS,
    InjectionRule,
    Pattern,
    Recipe,
    RpcRule,
    RuleBook,
)


def __getattr__(name: str):
    # `match_patterns` reads source with the consumer stage: imported when first asked for, so
    # loading the rules (every scan, a warm one too) does not import the engine.
    if name == "match_patterns":
        from apiaudit.recipes.patterns import match_patterns

        return match_patterns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHANGE_KINDS",
    "PATTERN_KINDS",
    "InjectionRule",
    "Pattern",
    "Recipe",
    "RpcRule",
    "RuleBook",
    "bundled_rules_dir",
    "load_rule_file",
    "load_rulebook",
    "match_patterns",
]
