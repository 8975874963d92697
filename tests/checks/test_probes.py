"""Capability probes (issue 37, cause 4): code a probe of the provider guards runs only where
the probe says so on the audited release."""

from __future__ import annotations

import textwrap

from apiaudit.audit import scan


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
    from a table (eagle-harness's `check_for_registration`): what follows runs only where the probe
    passes, which the engine cannot read, so its findings are conditional; a test of the
    consumer's own state (no probe) leaves the code after it certain."""
    provider = """
        class Registry:
            pass
    """
    consumer = """
        import importlib

        HOOKS = ("tinyprov.spec:register", "tinyprov:Registry")


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
