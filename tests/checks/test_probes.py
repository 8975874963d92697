"""Capability probes (issue 37, cause 4): code a probe of the provider guards runs only where
the probe says so on the audited release."""

from __future__ import annotations

import textwrap
from pathlib import Path

from apiaudit.audit import scan
from apiaudit.policy.config import Settings


def _scan(tmp_path, provider: str, consumer: str) -> set[tuple[int, str, str, bool]]:
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(textwrap.dedent(provider))
    cons = tmp_path / "cons" / "cons"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text("")
    (cons / "compat.py").write_text(textwrap.dedent(consumer))
    report = scan([str(cons)], str(prov), use_index_cache=False)
    return {(f.line, f.rule, f.severity.value, f.conditional) for f in report.findings}


def test_a_getattr_with_a_none_default_kept_in_a_name_is_a_probe(tmp_path):
    """`held = getattr(spec, "new", None)`, then `if held is not None:` / `if held:`: the fallback
    after it runs only where the release lacks the attribute (memkv-vllm's `_vllm_compat.py`)."""
    provider = """
        class Spec:
            def __init__(self):
                self.blocks_per_chunk = 4
    """
    consumer = """
        from tinyprov import Spec


        def blocks(spec: Spec) -> int:
            held = getattr(spec, "blocks_per_chunk", None)
            if held is not None:
                return held
            return spec.block_size_factor  # dead: the release has blocks_per_chunk


        def tokens(spec: Spec) -> int:
            held = getattr(spec, "tokens_per_block", None)
            if held:
                return held
            return spec.gpu_block_size  # runs: the release has no tokens_per_block
    """
    assert _scan(tmp_path, provider, consumer) == {(16, "attribute-missing", "error", False)}


def test_code_behind_a_consumer_function_that_probes_the_provider_is_conditional(tmp_path):
    """`if not check_support(): return` where check_support imports the provider's hooks by name
    from a table it computes (no name the engine can read): what follows runs only where the
    probe passes, which the engine cannot decide, so its findings are conditional; a test of the
    consumer's own state (no probe) leaves the code after it certain."""
    provider = """
        class Registry:
            pass
    """
    consumer = """
        import importlib

        HOOKS = tuple(f"tinyprov.{name}" for name in ("spec:register", ":Registry"))


        def check_support() -> bool:
            for hook in HOOKS:
                module, _, name = hook.partition(":")
                try:
                    if not hasattr(importlib.import_module(module), name):
                        return False
                except ImportError:
                    return False
            return True


        def ready() -> bool:
            return bool(HOOKS)


        def register():
            if not check_support():
                return False
            from tinyprov.spec import register
            return register


        def register_anyway():
            if not ready():
                return False
            from tinyprov.spec import register
            return register
    """
    assert _scan(tmp_path, provider, consumer) == {(25, "import-missing", "error", True), (32, "import-missing", "error", False)}


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _fixture_scan(version: int) -> set[tuple[str, int, str, str, bool, str]]:
    report = scan(
        [str(FIXTURES / "consumers" / "specplug" / "specplug")], str(FIXTURES / "providers" / f"speclib_v{version}" / "speclib"),
        use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return {(f.path, f.line, f.rule, f.severity.value, f.conditional, f.param or "") for f in report.findings if f.rule != "cannot-judge"}


def test_a_probe_the_release_fails_is_one_finding_and_what_it_guards_never_runs():
    """specplug against speclib 2.0 (fixtures/consumers/specplug, eagle-harness 0.1.3's shape): the
    entry point returns when `check_for_registration("speclib")` fails, and that check resolves
    the host's checker named as a string (`"specplug.adapter:missing_hooks"`), which imports
    every hook of a table; 2.0 has no `speclib.registry`. One `probe-fails` at each probe's call
    (a bool probe, a list of what is missing), naming the first missing name, and no finding
    on the lines they guard; a probe whose names are computed stays undecided (conditional).
    In another module: `Engine` is built only after `require_support()` (which raises), so its
    body never runs and the probe's call is the one finding; `describe`, also called without a
    probe in front, is judged as usual; `Tuner`, built only after a probe of computed names, is
    conditional on it."""
    assert _fixture_scan(2) == {
        ("specplug/plugin.py", 9, "probe-fails", "warning", False, "speclib.registry:register_method"),
        ("specplug/plugin.py", 18, "probe-fails", "warning", False, "speclib.registry:register_method"),
        ("specplug/plugin.py", 30, "import-missing", "error", True, ""),
        ("specplug/launch.py", 8, "probe-fails", "warning", False, "speclib.registry:register_method"),
        ("specplug/engine.py", 12, "unexpected-keyword", "error", False, "method_config"),
        ("specplug/engine.py", 17, "unexpected-keyword", "error", True, "retries"),
    }


def test_code_behind_a_probe_the_release_passes_is_judged_as_certain():
    """The same plugin against speclib 1.0, which has every name of the table (a dataclass field
    without a class-level default counts; the alternatives a table entry is computed from are not
    names of the table): the probes pass, so the breaks behind them are errors, not conditional,
    in `Engine`, built only after the passing `require_support()`, too."""
    assert _fixture_scan(1) == {
        ("specplug/plugin.py", 13, "unexpected-keyword", "error", False, "depth"),
        ("specplug/plugin.py", 22, "missing-required", "error", False, "spec"),
        ("specplug/engine.py", 8, "unexpected-keyword", "error", False, "depth"),
        ("specplug/engine.py", 17, "unexpected-keyword", "error", True, "retries"),
        ("specplug/engine.py", 17, "missing-required", "error", True, "method_config"),
    }
