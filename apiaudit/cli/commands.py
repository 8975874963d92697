"""The commands `apiaudit` has: where each is defined and its one-line help (no import of them)."""

from __future__ import annotations

# name -> (module, attribute, one-line help shown by `apiaudit --help` without importing it)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "scan": ("apiaudit.cli.scan", "scan_command", "Report every mismatch between the consumer(s) and the provider."),
    "fix": ("apiaudit.cli.fix", "fix_command", "Show the fixes as a diff, or apply them, or write them into an overlay."),
    "preflight": ("apiaudit.cli.preflight", "preflight_command", "Audit before a run: one line when clean, exit 1 on blocking findings."),
    "run": ("apiaudit.cli.run", "run_command", "Run the EAGLE-3 pipeline of CONFIG.toml behind the preflight gate."),
    "matrix": ("apiaudit.cli.matrix", "matrix_command", "Scan the consumer against every provider release in a range."),
    "explain": ("apiaudit.cli.matrix", "explain_command", "Date each finding: the first provider release with it, and what changed."),
    "impact": ("apiaudit.cli.impact", "impact_command", "Which known downstreams a provider change (OLD -> NEW) breaks, and through which change."),
    "atlas": ("apiaudit.cli.atlas", "atlas_command", "Every known downstream against every provider release of a range: JSON or one HTML page."),
    "config": ("apiaudit.cli.config", "config_command", "Print the effective settings and where each came from."),
    "rule": ("apiaudit.cli.rule", "rule_command", "Print a rule's documentation: what, why, an example, the fix."),
}

# The commands that audit: one short-lived process building large acyclic structures.
AUDIT_COMMANDS = frozenset({"scan", "fix", "preflight", "matrix", "explain", "impact", "atlas"})
