"""A module imported on first attribute access (`importlib.util.LazyLoader`).

For the engine's own heavy dependencies on paths a warm run rarely takes: the provider index
answers a warm scan from its cache and must not pay for importing Griffe and the code built
on it. Never used for audited code (nothing here imports or runs it).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """`name`, already imported, or registered to execute when one of its attributes is first read."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
