"""Every example in README.md and docs/*.md runs as written.

An example is a fenced block in python, bash, sh, shell or console, or an indented block of
README.md. What is done with it is its kind, said by an HTML comment on the line before it
(`<!-- example: KIND -->`, invisible in the rendered page), else the default for its language:

- `run` (the default for Python that uses apiaudit): run in a fresh folder with a fresh cache,
  offline; `run with NAME=PATH ...` first copies each repository PATH there as NAME. It must
  end without a traceback and with exit 0 or 1 (findings, or a message it exits with).
- `network`: the same, against the shared test cache of real releases (a network test).
- `parse` (the default for shell): `bash -n` on the text, and every `apiaudit ...` command in it
  parsed by the command line itself (commands, options and their values), nothing run. For
  transcripts of a project the reader has and the test has not (`--consumer src/mypkg`), job
  lines of a provider, and what runs on a GPU machine.
- `compile` (the default for other Python: consumer code shown to explain a rule): valid Python.
- `invalid`: consumer code that must not compile (what `parse-error` reports).

Set-up lines (`pip install ...`, `bash scripts/install-runner.sh`) are what the environment
running the tests has done: a run skips them, and parses the rest.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from apiaudit.cli.group import cli

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*example:\s*(?P<kind>[a-z]+)(?P<rest>[^>]*?)\s*-->")
SETUP = re.compile(r"^\s*(pip install|python -m pip install|bash scripts/install-runner\.sh|scripts/install-runner\.sh)\b")
KINDS = {"run", "network", "parse", "compile", "invalid"}


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    lang: str  # python or shell
    text: str
    kind: str
    copies: tuple[tuple[str, str], ...] = ()  # (name in the run's folder, repository path)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _marker(lines: list[str], fence_line: int) -> tuple[str | None, str]:
    """The kind (and the rest) of the marker on the non-blank line before line `fence_line` (0-based)."""
    i = fence_line - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    found = MARKER.search(lines[i]) if i >= 0 else None
    return (found["kind"], found["rest"].strip()) if found else (None, "")


def _example(page: Path, lines: list[str], fence_line: int, lang: str, text: str) -> Example:
    kind, rest = _marker(lines, fence_line)
    language = "python" if lang == "python" else "shell"
    if kind is None:
        kind = "parse" if language == "shell" else ("run" if re.search(r"^\s*(import|from) apiaudit\b", text, re.M) else "compile")
    assert kind in KINDS, f"{page.name}:{fence_line + 1}: unknown example kind {kind!r}"
    copies = tuple(tuple(pair.split("=", 1)) for pair in rest.removeprefix("with").split()) if rest else ()
    return Example(page.relative_to(REPO).as_posix(), fence_line + 1, language, text, kind, copies)  # type: ignore[arg-type]


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        source = page.read_text(encoding="utf-8")
        lines = source.splitlines()
        for match in FENCE.finditer(source):
            lang = match["lang"]
            if lang != "python" and lang not in SHELL:
                continue
            indent = len(match["indent"])
            text = "\n".join(line[indent:] for line in match["body"].splitlines()) + "\n"
            found.append(_example(page, lines, source[: match.start()].count("\n"), lang, text))
        if page.name == "README.md":  # its commands are indented blocks
            for i, line in enumerate(lines):
                if line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
                    block = []
                    for more in lines[i:]:
                        if not more.startswith("    "):
                            break
                        block.append(more[4:])
                    found.append(_example(page, lines, i, "bash", "\n".join(block) + "\n"))
    return found


EXAMPLES = examples()


def _commands(text: str, console: bool) -> list[list[str]]:
    """Each `apiaudit ...` (or `python -m apiaudit ...`) command of a shell text, as its arguments."""
    text = text.replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
        start = 0
        for i, token in enumerate(tokens + [";"]):
            if i < len(tokens) and not re.fullmatch(r"[;&|<>()]+", token):
                continue
            words = tokens[start:i]
            start = i + 1
            if words[:1] == ["apiaudit"]:
                commands.append(words[1:])
            elif words[:3] in (["python", "-m", "apiaudit"], ["python3", "-m", "apiaudit"]):
                commands.append(words[3:])
    return commands


def _parse(args: list[str]) -> None:
    """Parse an apiaudit command line as the CLI would, running nothing."""
    if args in ([], ["--version"], ["--help"]):
        return
    parent = click.Context(cli, info_name="apiaudit")
    command = cli.get_command(parent, args[0])
    assert command is not None, f"no command {args[0]!r}"
    command.make_context(args[0], list(args[1:]), parent=parent)


def _run(example: Example, tmp_path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "run"
    folder.mkdir()
    for name, source in example.copies:
        origin = REPO / source
        (shutil.copytree if origin.is_dir() else shutil.copy)(origin, folder / name)
    env = {**os.environ, "PYTHONPATH": str(REPO), "APIAUDIT_CACHE_DIR": str(cache), "APIAUDIT_CONFIG": "none", "NO_COLOR": "1"}
    if example.lang == "python":
        script = folder / "example.py"
        script.write_text(example.text, encoding="utf-8")
        argv = [sys.executable, str(script)]
    else:
        script = "\n".join(line for line in example.text.splitlines() if not SETUP.match(line))
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        argv = ["bash", "-c", script]
    return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


# An option of the command line, outside a command quoted to be typed: no Python caller reads one.
CLI_OPTION = re.compile(r"(?<![\w`-])--(consumer|provider|script-provider|stack-provider|rules|cache-dir)\b")


def _check_run(example: Example, done: subprocess.CompletedProcess[str]) -> None:
    said = done.stdout + done.stderr
    assert "Traceback (most recent call last)" not in said, said[-3000:]
    assert done.returncode in (0, 1), f"exit {done.returncode}: {said[-3000:]}"
    if example.lang == "python":
        assert not CLI_OPTION.search(said), said[-3000:]


def _params(kind: str) -> list:
    marks = {"network": [pytest.mark.network]}
    return [pytest.param(e, id=e.id, marks=marks.get(e.kind, [])) for e in EXAMPLES if e.kind == kind]


@pytest.mark.parametrize("example", _params("run"))
def test_an_offline_example_runs_as_written(example: Example, tmp_path: Path) -> None:
    _check_run(example, _run(example, tmp_path, tmp_path / "cache"))


@pytest.mark.parametrize("example", _params("network"))
def test_a_network_example_runs_as_written(example: Example, tmp_path: Path, release_cache: Path) -> None:
    _check_run(example, _run(example, tmp_path, release_cache))


@pytest.mark.parametrize("example", _params("parse") + _params("network") + _params("run"))
def test_every_shell_example_parses_and_its_apiaudit_commands_exist(example: Example) -> None:
    if example.lang == "python":
        pytest.skip("a Python example")
    text = example.text
    console = any(line.startswith("$ ") for line in text.splitlines())
    if console:
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    for args in _commands(example.text, console):
        _parse(args)


@pytest.mark.parametrize("example", _params("compile") + _params("run") + _params("network"))
def test_every_python_example_is_valid_python(example: Example) -> None:
    if example.lang != "python":
        pytest.skip("a shell example")
    compile(example.text, example.id, "exec")


@pytest.mark.parametrize("example", _params("invalid"))
def test_an_invalid_example_is_invalid(example: Example) -> None:
    with pytest.raises(SyntaxError):
        compile(example.text, example.id, "exec")


def test_the_examples_are_found_and_the_main_ones_run() -> None:
    by_kind = {kind: [e.id for e in EXAMPLES if e.kind == kind] for kind in KINDS}
    assert len(EXAMPLES) > 40
    assert any(i.startswith("docs/preflight.md") for i in by_kind["run"])  # the Python gate
    assert any(i.startswith("README.md") for i in by_kind["network"])  # the main job


def test_a_stale_option_in_an_example_is_caught() -> None:
    with pytest.raises(click.UsageError):
        _parse(["scan", "--no-such-option"])
    with pytest.raises(click.BadParameter):
        _parse(["scan", "--fail-on", "sometimes"])
    assert _commands("$ apiaudit scan --consumer a | head\nout\n$ python -m apiaudit rule x && ls\n", console=True) == [
        ["scan", "--consumer", "a"], ["rule", "x"],
    ]
