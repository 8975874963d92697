"""A module imported on first attribute access (`importlib.util.LazyLoader`).

For the engine's own heavy dependencies on paths a warm run rarely takes: the provider index
answers a warm scan from its cache and must not pay for importing Griffe and the code built
on it. Never used for audited code (nothing here imports or runs it).

`load_all()` imports every module still deferred, under one lock: the provider loader calls it
before its first visit, so the imports happen once, in one thread, however many scan at once
(Python 3.11's LazyLoader does not guard two threads reading a first attribute together).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType

_DEFERRED: list[ModuleType] = []
_LOCK = threading.Lock()


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
    _DEFERRED.append(module)
    return module


def load_all() -> None:
    """Import every deferred module now (a no-op once done)."""
    if not _DEFERRED:
        return  # emptied only once every module in it has run
    with _LOCK:
        for module in list(_DEFERRED):
            getattr(module, "__name__")  # any attribute read runs the module
        _DEFERRED.clear()
