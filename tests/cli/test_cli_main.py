"""The command line as a user meets it: exit codes, one-line errors, formats, `python -m apiaudit`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli


@pytest.fixture
def project(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    cons = tmp_path / "jobs"
    cons.mkdir()
    (cons / "good.py").write_text("from tinyprov import make\nmake(1, b=2)\n")
    (cons / "bad.py").write_text(textwrap.dedent("""\
        from tinyprov import make, gone
        make(1, c=2)
    """))
    (cons / "broken.py").write_text("def oops(:\n")
    return prov, cons, tmp_path / "cache"


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_json_report_exit_1_and_the_scan_goes_on_past_a_broken_file(project):
    prov, cons, cache = project
    code, out = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    got = sorted((f["rule"], f["path"], f["line"], f["param"]) for f in doc["findings"])
    assert got == [
        ("import-missing", "bad.py", 1, None),
        ("missing-required", "bad.py", 2, "b"),
        ("parse-error", "broken.py", 1, None),
        ("unexpected-keyword", "bad.py", 2, "c"),
    ]
    assert doc["schema_version"] and doc["provider"]["name"] == "tinyprov"
    # The location names the file (from the project root, where the report shows paths from
    # there); the message names none, so the two cannot disagree (it named the import-root path).
    broken = next(f for f in doc["findings"] if f["rule"] == "parse-error")
    assert broken["message"].startswith("cannot parse the file: ")


def test_fail_on_and_clean_exit(project, tmp_path):
    prov, cons, cache = project
    good = tmp_path / "only-good.py"
    good.write_text((cons / "good.py").read_text())
    code, _ = run("scan", "--consumer", str(good), "--provider", str(prov), "--cache-dir", str(cache), "--format", "json")
    assert code == 0


def test_output_file_and_sarif(project, tmp_path):
    prov, cons, cache = project
    out = tmp_path / "report.sarif"
    code, _ = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "sarif", "-o", str(out))
    assert code == 1
    assert json.loads(out.read_text())["version"] == "2.1.0"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--consumer", "/no/such/dir", "--provider", "PROV"], "no such file or directory"),
        (["--consumer", "CONS", "--provider", "surely-not-installed-dist-xyz"], "not installed"),
        (["--consumer", "CONS", "--provider", "PROV", "--rules", "/no/such/rules"], "rules directory does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(project, args, needle):
    prov, cons, cache = project
    args = [a.replace("PROV", str(prov)).replace("CONS", str(cons)) for a in args]
    code, out = run("scan", *args, "--cache-dir", str(cache))
    assert code == 2
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out


def test_bad_rule_file_names_file_and_entry(project, tmp_path):
    prov, cons, cache = project
    rules = tmp_path / "myrules"
    rules.mkdir()
    (rules / "tinyprov.toml").write_text('[provider]\nname = "tinyprov"\n[[recipe]]\nid = "x"\nchange = "teleported"\n')
    code, out = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--rules", str(rules))
    assert code == 2 and "tinyprov.toml" in out and "'x'" in out


def test_python_dash_m_works_the_same(project):
    prov, cons, cache = project
    proc = subprocess.run(
        [sys.executable, "-m", "apiaudit", "scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "github"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "::error file=bad.py,line=2" in proc.stdout
    assert proc.stderr.strip() == ""


def test_scan_writes_nothing_but_its_cache_and_output(project):
    prov, cons, cache = project
    before = {p: p.read_bytes() for p in list(cons.rglob("*")) + list(prov.rglob("*")) if p.is_file()}
    run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "json")
    after = {p: p.read_bytes() for p in list(cons.rglob("*")) + list(prov.rglob("*")) if p.is_file()}
    assert before == after


def test_every_command_loads_on_demand():
    from apiaudit.cli.commands import COMMANDS
    from apiaudit.cli.group import LazyGroup

    assert isinstance(cli, LazyGroup)
    assert set(COMMANDS) == {"scan", "fix", "preflight", "run", "matrix", "explain", "impact", "atlas", "config", "rule"}
    ctx = cli.make_context("apiaudit", [], resilient_parsing=True)
    for name in COMMANDS:
        assert cli.get_command(ctx, name).name == name


def test_starting_the_cli_imports_no_engine():
    # `apiaudit --version` and the group itself pay for click only; a command imports its stage.
    code = "import sys, apiaudit.cli.main; heavy = {'griffe', 'libcst', 'rich', 'apiaudit.audit'} & set(sys.modules); print(sorted(heavy))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_output_suffix_picks_the_format_and_fail_on_never(project, tmp_path):
    prov, cons, cache = project
    sarif = tmp_path / "out" / "r.sarif"
    code, _ = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "-o", str(sarif))
    assert code == 1
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    code, _ = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "json", "--fail-on", "never")
    assert code == 0
    code, out = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--explain", "-o", str(sarif))
    assert code == 2 and "--explain writes a table or JSON" in out


def test_conditional_errors_fail_only_with_strict_and_a_stated_version_decides(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    # A version the source does not spell as a literal (the read itself must find `__version__`).
    (prov / "__init__.py").write_text('__version__ = ".".join(["2", "0"])\n\ndef make(a):\n    return a\n')
    cons = tmp_path / "jobs"
    cons.mkdir()
    (cons / "job.py").write_text(textwrap.dedent("""\
        import tinyprov
        from packaging.version import Version
        if Version(tinyprov.__version__) >= Version("2.0"):
            tinyprov.make(1, fast=True)
    """))
    cache = str(tmp_path / "cache")
    base = ("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", cache, "--format", "json")
    code, out = run(*base)  # no version beside the provider: the guard is undecided
    found = json.loads(out)["findings"]
    assert code == 0 and [(f["rule"], f["conditional"]) for f in found] == [("unexpected-keyword", True)]
    assert found[0]["guard"] == "Version(tinyprov.__version__) >= Version('2.0')"
    assert run(*base, "--strict")[0] == 1
    assert run(*base, "--provider-version", "1.0")[0] == 0 and json.loads(run(*base, "--provider-version", "1.0")[1])["findings"] == []
    code, out = run(*base, "--provider-version", "2.1")
    assert code == 1 and json.loads(out)["provider"]["version"] == "2.1"
    code, out = run(*base, "--provider-version", "not-a-version")
    assert code == 2 and "not a version" in out


def test_bare_version_prints_what_click_prints_without_importing_click():
    from click.testing import CliRunner

    clicks = CliRunner().invoke(cli, ["--version"]).output
    code = "import sys; sys.argv = ['apiaudit', '--version']; import apiaudit.cli.main as c; c.main(); print('click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == clicks + "False\n"
    assert subprocess.run([sys.executable, "-m", "apiaudit", "--version"], capture_output=True, text=True, check=True).stdout == clicks


def test_a_warm_scan_imports_neither_griffe_nor_libcst_nor_the_engine(project, tmp_path):
    prov, cons, cache = project
    args = ["scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "json"]
    run(*args)  # cold: fills the index and consumer caches
    # A lazily registered module that never ran imported none of its submodules.
    code = textwrap.dedent("""\
        import sys
        from apiaudit.cli.main import main
        sys.argv[0] = "apiaudit"
        try:
            main()
        except SystemExit:
            pass
        ran = sorted({m.split(".")[0] for m in sys.modules if m.startswith(("griffe.", "_griffe", "libcst"))})
        # Answered from the whole-scan results: not even the engine (consumer stage, checks) loads,
        # nor the rules loader (the rule files are known by their bytes).
        ran += sorted(m for m in ("apiaudit.engine", "apiaudit.consumer.visitor", "apiaudit.checks", "apiaudit.recipes.loader") if m in sys.modules)
        print(ran, file=sys.stderr)
    """)
    here = tmp_path / "elsewhere"
    here.mkdir()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=here)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_documented_completion_lines_give_a_script_and_it_completes(shell):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "scan.md").read_text()
    assert f"_APIAUDIT_COMPLETE={shell}_source apiaudit" in doc
    env = {**__import__("os").environ, "_APIAUDIT_COMPLETE": f"{shell}_source"}
    script = subprocess.run([sys.executable, "-m", "apiaudit"], capture_output=True, text=True, env=env)
    assert script.returncode == 0 and "_apiaudit_completion" in script.stdout
    env.update(_APIAUDIT_COMPLETE="bash_complete", COMP_WORDS="apiaudit scan --fail-on ", COMP_CWORD="3")
    words = subprocess.run([sys.executable, "-m", "apiaudit"], capture_output=True, text=True, env=env).stdout.split()
    assert {"plain,error", "plain,never"} <= set(words)


def test_a_pipe_gets_the_table_json_only_when_asked(project, tmp_path):
    # Issue 36, item 3: `apiaudit scan ... | less` and `> out.txt` read as on a terminal (ruff, mypy).
    prov, cons, cache = project
    base = [sys.executable, "-m", "apiaudit", "scan", "--consumer", str(cons), "--provider", str(prov),
            "--cache-dir", str(cache), "--no-progress"]  # fmt: skip
    piped = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert piped.returncode == 1, piped.stderr
    assert piped.stdout.startswith("apiaudit: jobs") and "4 errors, 0 warnings" in piped.stdout and "unexpected-keyword" in piped.stdout
    asked = subprocess.run([*base, "--format", "json"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert json.loads(asked.stdout)["findings"]


def test_a_mistyped_output_suffix_is_refused_before_the_scan(project, tmp_path):
    # Issue 36, item 5: `-o r.sarf` wrote JSON under that name.
    prov, cons, cache = project
    out = tmp_path / "r.sarf"
    result = CliRunner().invoke(cli, ["scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache),
                                      "--no-progress", "-o", str(out)])  # fmt: skip
    assert result.exit_code == 2 and not out.exists()
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"apiaudit: error: -o {out}: .sarf is no report format's suffix (known: .json (json), .sarif (sarif),")
    assert "pass --format" in line
    # --format names the format whatever the suffix.
    code, _ = run("scan", "--consumer", str(cons), "--provider", str(prov), "--cache-dir", str(cache), "--format", "sarif",
                  "-o", str(out))  # fmt: skip
    assert code == 1 and json.loads(out.read_text())["version"] == "2.1.0"


def test_scan_help_lists_every_exit_code_docs_scan_md_names():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "scan.md").read_text(encoding="utf-8")
    table = docs[docs.index("| exit | meaning |"):].split("\n\n", 1)[0]
    documented = {int(code) for row in table.splitlines()[2:] for code in re.findall(r"\d+", row.split("|")[1])}
    assert documented == {0, 1, 2, 3, 130, 141, 143}
    code, out = run("scan", "--help")
    listed = {int(m) for m in re.findall(r"^\s+(\d+)\s{2,}\S", out.split("Options:")[0], re.MULTILINE)}
    assert code == 0 and listed == documented


# --- bad input is refused before anything is fetched, in every command -----------------------

MISSING = "surely-not-installed-apiaudit-consumer"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["scan", "--consumer", MISSING, "--provider", "vllm==0.17.0", "--against", "vllm==0.16.0"], "not installed"),
        (["scan", "--consumer", "./no/such/dir", "--provider", "vllm==0.17.0"], "no/such/dir"),
        (["matrix", "--consumer", MISSING, "--provider", "vllm>=0.16,<=0.17"], "not installed"),
        (["explain", "--consumer", MISSING, "--provider", "vllm==0.17.0"], "not installed"),
        (["explain", "--consumer", "speculators==0.4.0", "--provider", "vllm==0.17.0", "--since", "yesterday"], "--since"),
        (["explain", "--consumer", "speculators==0.4.0", "--provider", "vllm==0.17.0", "--since", "0.18.0"], "not older"),
        (["fix", "--consumer", MISSING, "--provider", "vllm==0.17.0"], "not installed"),
        (["fix", "--consumer", "speculators==0.4.0", "--provider", "vllm==0.17.0", "--apply"], "--into"),
        (["preflight", "--consumer", MISSING, "--provider", "vllm==0.17.0"], "not installed"),
    ],
)
def test_every_command_checks_its_inputs_before_fetching_anything(tmp_path, monkeypatch, args, needle):
    from apiaudit import sources

    def no_network(*args, **kwargs):
        raise AssertionError("fetched before the inputs were checked")

    monkeypatch.setattr(sources, "fetch_release", no_network)
    monkeypatch.setattr(sources, "_release_versions", no_network)
    cache = tmp_path / "cache"
    code, out = run(*args, "--cache-dir", str(cache), "--no-progress")
    assert code == 2, out
    assert needle in out and "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert not (cache / "releases").exists()


def test_the_readme_against_example_without_a_consumer_installed_fails_before_fetching(tmp_path, monkeypatch):
    # A fresh environment: the rules' default consumer (speculators) is not installed.
    from apiaudit import audit, sources

    monkeypatch.setattr(audit, "_defaults", lambda rules_dirs: ("vllm", [MISSING]))
    monkeypatch.setattr(sources, "fetch_release", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fetched")))
    code, out = run("scan", "--provider", "vllm==0.17.0", "--against", "vllm==0.16.0", "--cache-dir", str(tmp_path), "--no-progress")
    assert code == 2 and f"{MISSING} is not installed" in out and "--consumer" in out
