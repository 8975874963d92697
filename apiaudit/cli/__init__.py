"""The command line: one thin module per command over the stages (click is imported only here)."""
