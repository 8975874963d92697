"""Provider command lines found in job files (shell, YAML, TOML) and Python argv lists/strings,
with the arguments after the command and where each is written."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from apiaudit.consumer import collect
from apiaudit.consumer.launch import job_file, python_lines
from apiaudit.consumer.records import UNKNOWN, ConsumerOptions
from apiaudit.recipes.records import LaunchCommand
from apiaudit.sources.local import resolve_path

COMMANDS = (
    ("server", LaunchCommand("prov.cli", script="prov", subcommand="serve")),
    ("server", LaunchCommand("prov.api_server")),
)


def lines_of(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return job_file(tmp_path, path, COMMANDS).launch_lines


def argv(line) -> list[str]:
    return [a.text for a in line.args]


def test_shell_lines_with_prefixes_and_interpreters(tmp_path):
    found = lines_of(tmp_path, "job.sh", """\
        #!/bin/bash
        CUDA_VISIBLE_DEVICES=0 nohup /opt/venv/bin/prov serve "$MODEL" --port 8001 \\
            --cfg '{"a": 1}' > log 2>&1 &
        python3 -u -m prov.api_server m --x && echo ok
        python -m prov.cli serve m2 --y   # a comment --not-an-arg
        prov status --z
        echo "prov serve is not run here"
    """)
    assert [(line.command, line.site.line, line.site.column, argv(line)) for line in found] == [
        ("/opt/venv/bin/prov serve", 2, 29, [UNKNOWN, "--port", "8001", "--cfg", '{"a": 1}']),
        ("python3 -u -m prov.api_server", 4, 0, ["m", "--x"]),
        ("python -m prov.cli serve", 5, 0, ["m2", "--y"]),
    ]
    assert [(a.site.line, a.site.column) for a in found[0].args] == [(2, 54), (2, 63), (2, 70), (3, 4), (3, 10)]


def test_yaml_lists_strings_and_blocks(tmp_path):
    found = lines_of(tmp_path, "job.yaml", """\
        server:
          command: ["prov", "serve", "m", "--cfg", '{"a": 1}']
        steps:
          - run: |
              prov serve m \\
                --cfg '{"b": 2}'
          - run: >
              python -m prov.api_server m
              --flag
          - args:
              - prov
              - serve
              - --block
    """)
    assert [(line.site.line, argv(line)) for line in found] == [
        (2, ["m", "--cfg", '{"a": 1}']),
        (5, ["m", "--cfg", '{"b": 2}']),
        (8, ["m", "--flag"]),
        (11, ["--block"]),
    ]
    assert [(a.text, a.site.line, a.site.column) for a in found[1].args] == [("m", 5, 17), ("--cfg", 6, 8), ('{"b": 2}', 6, 15)]


def test_toml_strings_and_arrays(tmp_path):
    found = lines_of(tmp_path, "job.toml", """\
        [server]
        command = "prov serve m --cfg '{\\"a\\": 1}'"
        args = ["prov", "serve", "m2", "--x"]
    """)
    assert [(line.site.line, argv(line)) for line in found] == [(2, ["m", "--cfg", '{"a": 1}']), (3, ["m2", "--x"])]


def test_a_config_that_does_not_parse_is_read_as_shell(tmp_path):
    found = lines_of(tmp_path, "chart.yaml", """\
        {{- if .Values.server }}
        command: prov serve {{ .Values.model }} --port 8000
        {{- end }}
    """)
    assert [argv(line) for line in found] == [["{{", ".Values.model", "}}", "--port", "8000"]]


def test_python_argv_lists_and_shell_strings():
    source = textwrap.dedent("""\
        import json, os, subprocess, sys

        BASE = {"a": 1}

        def start(model, extra):
            cfg = {"method": "x", "n": 2, "deep": {"k": model}}
            cmd = [sys.executable, "-m", "prov.cli", "serve", model, "--cfg", json.dumps(cfg), "--base", json.dumps(BASE), *extra]
            os.execvp(cmd[0], cmd)
            subprocess.run(f"prov serve {model} --port 8000", shell=True)
            subprocess.run(["bash", "-c", "prov serve m --inline"])
            os.system("echo prov serve")
            parser = FlexibleParser(usage="prov serve MODEL --omni [options]", description="prov serve m --desc")

        def doc():
            '''Run `prov serve m --from-docstring`.'''
            HELP = ["prov", "status"]
    """)
    found = python_lines(ast.parse(source), source, COMMANDS)
    assert [(line.command, line.site.line, argv(line)) for line in found] == [
        ("python -m prov.cli serve", 7, [UNKNOWN, "--cfg", '{"method": "x", "n": 2, "deep": {"k": "\\u0000"}}',
                                         "--base", '{"a": 1}', UNKNOWN]),
        ("prov serve", 9, [UNKNOWN, "--port", "8000"]),
        ("prov serve", 10, ["m", "--inline"]),
    ]  # fmt: skip
    # json.dumps(name): the argument is sited where the dict's keys are written
    cfg = found[0].args[2].site
    assert (cfg.line, cfg.column, cfg.end_line) == (6, 10, 6)


def test_files_without_a_command_word_are_not_read_for_lines(tmp_path):
    (tmp_path / "train.py").write_text("import subprocess\nsubprocess.run(['python', 'train.py'])\n")
    (tmp_path / "notes.yaml").write_text("not: [valid\n")  # would not even parse
    tree = resolve_path(str(tmp_path))
    assert [p.name for p in tree.files()] == ["train.py", "notes.yaml"]
    files = collect(tree, ConsumerOptions(provider_packages=("prov",), launch_commands=COMMANDS))
    assert [(f.path, f.launch_lines, f.error) for f in files] == [("train.py", (), None), ("notes.yaml", (), None)]


def test_collect_reads_job_files_in_their_place(tmp_path):
    (tmp_path / "a.py").write_text("import prov\nprov.go()\n")
    (tmp_path / "b.sh").write_text("prov serve m --x\n")
    (tmp_path / "c.py").write_text("CMD = 'prov serve m --y'\n")
    tree = resolve_path(str(tmp_path))
    files = collect(tree, ConsumerOptions(provider_packages=("prov",), launch_commands=COMMANDS))
    assert [(f.path, [argv(line) for line in f.launch_lines]) for f in files] == [
        ("a.py", []), ("c.py", [["m", "--y"]]), ("b.sh", [["m", "--x"]]),
    ]  # fmt: skip
    assert files[0].uses  # the Python file read as ever
    # no [[launch]] rule, no lines looked for
    plain = collect(tree, ConsumerOptions(provider_packages=("prov",)))
    assert all(not f.launch_lines for f in plain)


def test_prose_that_quotes_a_command_is_not_a_command():
    source = textwrap.dedent('''\
        HELP = """Launch a server to serve models with prov.

        Examples:
          prov serve m --made-up-flag
        """
        parser.add_parser("serve", epilog="Example:\\n  prov serve m --another")
        subprocess.run("prov serve m --runs", shell=True)
    ''')
    found = python_lines(ast.parse(source), source, COMMANDS)
    assert [argv(line) for line in found] == [["m", "--runs"]]
