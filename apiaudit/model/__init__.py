"""The model a job loads: its config facts (`ModelFacts`), read without touching weights."""

from __future__ import annotations

from apiaudit.model.config import AutoMapEntry, ConfigFile, ModelFacts, ModelSource
from apiaudit.model.loader import load_model

__all__ = ["AutoMapEntry", "ConfigFile", "ModelFacts", "ModelSource", "load_model"]
