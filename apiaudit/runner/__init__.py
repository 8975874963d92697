"""The bundled EAGLE-3 pipeline: preflight, then prepare -> extract -> vocab -> train.

Importing this package needs none of the runner extra (torch, transformers,
speculators); each stage imports what it uses when it runs. docs/runner.md has the
config format and the supported speculators releases.
"""

from __future__ import annotations

from apiaudit.runner.config import STAGES, RunConfig, load_config

__all__ = ["STAGES", "RunConfig", "load_config", "run"]


def run(config_path, **options):
    """Load CONFIG.toml and run the pipeline (see `apiaudit.runner.pipeline.run_pipeline`)."""
    from apiaudit.runner.pipeline import run_pipeline

    return run_pipeline(load_config(config_path), **options)
