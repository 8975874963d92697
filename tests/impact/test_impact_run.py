"""`run_impact`: one upgrade delta per downstream, tied to the provider changes behind it."""

from __future__ import annotations

import pytest

from apiaudit.errors import InputError
from apiaudit.impact.run import run_impact

from tests.impact.conftest import NEW, OLD, write_list


def test_each_downstream_gets_its_outcome(impact_result):
    outcomes = {d.label: d.outcome for d in impact_result.downstreams}
    assert outcomes == {"impact_drafter": "breaks", "impact_sampler": "breaks", "impact_clean": "clean"}
    assert impact_result.exit_code() == 1


def test_the_by_change_view_names_each_change_once_with_every_site_it_breaks(impact_result):
    sentences = {c.change.summary: [b.site.rsplit("/", 1)[-1] for b in c.breaks] for c in impact_result.by_change}
    assert sentences == {
        "`Request` lost `eos_token_id`": ["generator.py:6", "sampler.py:5"],
        "`impactlib.utils.cdiv` moved to `impactlib.math_utils.cdiv`": ["generator.py:2"],
        "`Proposer`: gained abstract member `prepare_inputs`": ["proposer.py:4"],
    }
    # blocking changes first; the abstract member is a warning (nothing known builds the class)
    assert [c.blocking for c in impact_result.by_change] == [True, True, False]


def test_only_findings_new_to_NEW_count(tmp_path):
    # OLD against itself: every finding is unchanged, nothing breaks, exit 0
    result = run_impact(str(OLD), str(OLD), downstream_files=[write_list(tmp_path)], cache_dir=tmp_path / "cache")
    assert {d.outcome for d in result.downstreams} == {"clean"} and result.exit_code() == 0


def test_a_downstream_that_cannot_be_read_is_said_not_fatal(tmp_path):
    listed = write_list(tmp_path, names=("impact_sampler",), extra=f', "{tmp_path / "not-there"}"')
    result = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache")
    gone = result.downstreams[-1]
    assert gone.outcome == "unreadable" and "not-there" in (gone.error or "")
    assert result.downstreams[0].outcome == "breaks" and result.exit_code() == 1


def test_a_downstream_that_does_not_use_the_provider_is_said_so_not_unreadable(tmp_path):
    """A downstream importing nothing of the provider (speculators 0.0.1 against vLLM) has nothing
    to check: outcome "unused", clean for the exit code, said in the summary; a warm rerun says the
    same (no scan of it is cached as clean, nothing tied is kept for it)."""
    from apiaudit.impact.executors import open_executor

    listed = write_list(tmp_path, names=("impact_clean", "impact_unused"))
    cache = tmp_path / "cache"
    with open_executor(workers=1) as here:
        runs = [run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=cache, executor=here) for _ in range(2)]
    for result in runs:
        assert {d.label: d.outcome for d in result.downstreams} == {"impact_clean": "clean", "impact_unused": "unused"}
        unused = result.downstreams[1]
        assert unused.error is None and unused.breaks == () and unused.origin is None
        assert result.exit_code() == 0 and result.by_change == ()
        # the provider as downstreams import it (the checkout's folder is impactlib_v2)
        assert result.summary == (
            "impactlib_v1 1.0 -> impactlib_v2 2.0: 2 downstreams, 1 clean, 1 does not use impactlib; "
            "0 provider changes behind 0 findings"
        )
    assert not (cache / "impact-ties").exists()


def test_a_bad_provider_side_is_bad_input_before_any_downstream(tmp_path):
    with pytest.raises(InputError, match="no-such-checkout"):
        run_impact(str(OLD), str(tmp_path / "no-such-checkout"), downstream_files=[write_list(tmp_path)], cache_dir=tmp_path)


def test_a_warm_rerun_reads_every_scan_from_scans_cache(tmp_path, monkeypatch):
    from apiaudit.cache import scans
    from apiaudit.impact.executors import open_executor

    listed = write_list(tmp_path)
    stored: list = []
    keep = scans.store
    monkeypatch.setattr(scans, "store", lambda *args, **kwargs: (stored.append(args), keep(*args, **kwargs)))
    with open_executor(workers=1) as here:  # the scans in this process, where `store` is watched
        first = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache", executor=here)
        assert len(stored) == 6
        stored.clear()
        again = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache", executor=here)
    assert stored == []  # six scans (three downstreams, two sides), none run again
    assert again.by_change == first.by_change


def test_a_warm_rerun_ties_no_break_again(tmp_path, monkeypatch):
    """The changes behind a downstream's breaks are kept by what tying read: a warm rerun loads no
    downstream against OLD and NEW again, and says the same; an edited downstream file is tied anew."""
    import shutil

    from apiaudit.impact import run as impact_run
    from apiaudit.impact.executors import open_executor

    from tests.impact.conftest import CONSUMERS, DOWNSTREAMS

    for name in DOWNSTREAMS:
        shutil.copytree(CONSUMERS / name, tmp_path / "own" / name)
    specs = ", ".join(f'"{tmp_path / "own" / n / n}"' for n in DOWNSTREAMS)
    listed = tmp_path / "own.toml"
    listed.write_text(f"replace-bundled = true\ndownstream = [{specs}]\n", encoding="utf-8")
    tied: list = []
    tie = impact_run.tie_findings
    monkeypatch.setattr(impact_run, "tie_findings", lambda *args: (tied.append(args[3]), tie(*args))[1])
    with open_executor(workers=1) as here:
        first = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache", executor=here)
        assert len(tied) == 2  # the two downstreams that break
        tied.clear()
        again = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache", executor=here)
        assert tied == [] and again.by_change == first.by_change
        generator = tmp_path / "own" / "impact_drafter" / "impact_drafter" / "generator.py"
        generator.write_text(generator.read_text() + "\n# edited\n")
        third = run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / "cache", executor=here)
    assert len(tied) == 1 and third.by_change == first.by_change


def test_offline_a_provider_release_not_cached_is_bad_input_before_any_work(tmp_path):
    from apiaudit.policy.config import Settings

    with pytest.raises(InputError, match="impactlib==9.9 is not in the cache"):
        run_impact("impactlib==9.9", str(NEW), downstream_files=[write_list(tmp_path)], cache_dir=tmp_path, settings=Settings(offline=True))
