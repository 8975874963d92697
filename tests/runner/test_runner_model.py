"""The runner passes its configured model to its preflight: model-facing rules block the run."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner
from runner_helpers import write_config

from apiaudit.cli.run import run_command
from apiaudit.runner.config import STAGES


def test_a_tokenizer_that_needs_remote_code_stops_the_run(tiny_model, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    tokenizer_config = model / "tokenizer_config.json"
    data = json.loads(tokenizer_config.read_text()) if tokenizer_config.is_file() else {}
    data["auto_map"] = {"AutoTokenizer": ["tokenization_custom.CustomTokenizer", None]}
    tokenizer_config.write_text(json.dumps(data))
    job = tmp_path / "jobs" / "load_tokenizer.py"
    job.parent.mkdir()
    job.write_text("import sys\nfrom transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained(sys.argv[1])\n")
    config = write_config(tmp_path, model, preflight=f'consumers = ["{job}"]')
    refused = CliRunner().invoke(run_command, [str(config)], catch_exceptions=False)
    assert refused.exit_code == 1, refused.output
    assert "load_tokenizer.py:3" in refused.output and "remote-code-required" in refused.output
    assert not any((tmp_path / "run" / stage).exists() for stage in STAGES)
