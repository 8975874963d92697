"""Importing the runner's heavy libraries: a clear message when the extra is missing, and overlays.

Nothing here is imported by `scan`: torch, transformers and speculators live in the
`runner` extra and are imported only when a stage runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

from apiaudit.errors import InputError

RUNNER_MODULES = ("torch", "transformers", "datasets", "safetensors", "speculators")
# apiaudit is installed from a checkout, not an index: the commands that work are run there.
INSTALL_HINT = "install the runner extra, in the apiaudit checkout: bash scripts/install-runner.sh (or pip install '.[runner]')"


def missing_runner_modules(modules: tuple[str, ...] = RUNNER_MODULES) -> list[str]:
    """Those of `modules` (top-level names) that cannot be found, without importing them."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def require_runner_extra(modules: tuple[str, ...] = RUNNER_MODULES) -> None:
    missing = missing_runner_modules(modules)
    if missing:
        raise InputError(f"the runner needs {', '.join(missing)}: {INSTALL_HINT}")


def run_entry_point(main: Callable[[], int], modules: tuple[str, ...]) -> int:
    """Run the `main` of a `python -m apiaudit.runner.X` module as the CLI runs a command: without
    the modules it needs, one line on stderr and exit 2 instead of a ModuleNotFoundError traceback."""
    try:
        require_runner_extra(modules)
    except InputError as exc:
        print(f"apiaudit: error: {exc}", file=sys.stderr)
        return 2
    return main()


def activate_overlay(overlay: Path) -> Path:
    """Make a patched copy of speculators (from `apiaudit fix --into DIR`) the one every stage imports.

    Returns the overlay's speculators package directory. vLLM's worker processes get it
    through PYTHONPATH; torchrun's workers, isolated from PYTHONPATH, through the link the
    train stage makes to the speculators this process imports (train.carried_import_path).
    """
    root = overlay.expanduser().resolve()
    package = root / "speculators"
    if not (package / "__init__.py").is_file():
        raise InputError(f"--overlay {overlay}: no speculators package in it (expected {package}/__init__.py)")
    loaded = sys.modules.get("speculators")
    if loaded is not None and Path(loaded.__file__ or "").resolve().parent != package:
        raise InputError(f"--overlay {overlay}: speculators was already imported from {loaded.__file__}")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return package


def speculators_package_dir() -> Path | None:
    """Where `import speculators` would load from (found without importing it)."""
    spec = importlib.util.find_spec("speculators")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def allow_data_generation_without_vllm() -> None:
    """Let `speculators.data_generation.<submodule>` import on a machine without vLLM.

    The package's `__init__` imports its vLLM hidden-state generator eagerly, so on a
    machine without vLLM even its vLLM-free preprocessing module fails to import. The
    hf backend needs only that preprocessing, so when vLLM is absent the package is
    registered without running its `__init__`; its submodules then import as shipped.
    """
    name = "speculators.data_generation"
    if name in sys.modules or importlib.util.find_spec("vllm") is not None:
        return
    parent = importlib.import_module("speculators")
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise InputError("the installed speculators has no data_generation package (the runner supports 0.3-0.4)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    setattr(parent, "data_generation", module)  # a module attribute mypy cannot know of
