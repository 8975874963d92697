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
from apiaudit.recipes.patterns import match_patterns

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
