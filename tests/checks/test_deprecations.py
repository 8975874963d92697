"""deprecated-use: each way a provider deprecates, on the fixture provider that does them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONSUMER = FIXTURES / "consumers" / "deprecating"
PROVIDER = FIXTURES / "providers" / "deprecating" / "depprov"


def _expected() -> set[tuple[int, str | None]]:
    """(line, keyword or None) from the fixture's `# deprecated:` comments."""
    expected = set()
    for number, line in enumerate((CONSUMER / "serve.py").read_text().splitlines(), 1):
        if "# deprecated:" in line:
            what = line.split("# deprecated:", 1)[1].strip()
            if what.startswith("the "):
                expected.add((number, None))
            else:
                expected.update((number, kw.strip()) for kw in what.split(","))
    return expected


def test_each_deprecation_form_and_nothing_else(tmp_path):
    report = scan([str(CONSUMER)], str(PROVIDER), cache_dir=tmp_path, settings=Settings())
    found = {(f.line, f.param) for f in report.findings if f.rule == "deprecated-use"}
    assert found == _expected()
    assert all(f.severity.value == "warning" for f in report.findings if f.rule == "deprecated-use")
    assert [f.rule for f in report.findings if f.rule != "deprecated-use"] == []
    by_param = {f.param: f for f in report.findings}
    assert "Use `enable_log_requests` instead." in by_param["disable_log_requests"].message
    assert by_param["disable_log_requests"].callee == "depprov.engine.AsyncEngine.from_config"
    assert "replaced by depprov.net.connect()" in by_param[None].message or any(
        "replaced by depprov.net.connect()" in f.message for f in report.findings
    )


def test_a_deprecated_use_can_be_turned_off(tmp_path):
    report = scan([str(CONSUMER)], str(PROVIDER), cache_dir=tmp_path, settings=Settings(ignore=("deprecated-use",)))
    assert report.findings == () and len(report.suppressed) == len(_expected())


JOB = '''from vllm.v1.engine.async_llm import AsyncLLM


def build(vllm_config):
    return AsyncLLM.from_vllm_config(vllm_config, disable_log_requests=True)
'''


@pytest.mark.network
def test_real_vllm_deprecate_kwargs_and_the_release_that_removes_it(tmp_path, released, release_cache, monkeypatch):
    from apiaudit.matrix.forecast import forecast
    from apiaudit.matrix.sweep import run_matrix

    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    versions = ["0.11.0", "0.11.1", "0.11.2", "0.12.0"]
    for version in versions:
        released(f"vllm=={version}")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "serve.py").write_text(JOB)
    report = scan([str(jobs)], "vllm==0.11.0", cache_dir=release_cache, settings=Settings())
    [finding] = [f for f in report.findings if f.rule == "deprecated-use"]
    assert (finding.line, finding.param) == (5, "disable_log_requests")
    assert finding.callee == "vllm.v1.engine.async_llm.AsyncLLM.from_vllm_config"
    assert "enable_log_requests" in finding.message

    result = run_matrix([str(jobs)], "vllm>=0.11.0,<=0.12.0", cache_dir=release_cache, available=versions, scan_jobs=1)
    [fc] = forecast(result.rows)
    assert (fc.deprecated_in, fc.removed_in) == ("0.11.0", "0.12.0")
