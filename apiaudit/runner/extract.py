"""Stage 2, extract: the target's hidden states at the chosen layers, one sample file each.

Sample files are speculators' v1 training format, what `Eagle3SampleFileDataset` reads:
``{"input_ids": [L], "loss_mask": [L], "hidden_states": [aux_1, aux_2, aux_3, last]}``
with each layer ``[L, hidden]`` taken before the final norm (the residual stream after
that layer), plus ``sample_lengths.json``. Both backends write the same files:

* ``vllm``: speculators' `VllmHiddenStatesGenerator`, tensor-parallel over the GPUs.
* ``hf``: transformers on one device (CPU or a GPU), for small models and machines
  without vLLM.

The server line (``vllm-server``) writes speculators 0.7+'s layout instead: see
apiaudit/runner/server_extract.py.

Each sample is written to a temporary name and renamed, so an interrupted stage resumes
without redoing the samples already on disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from apiaudit.infra.words import counted
from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageContext, StageResult, resolve_device
from apiaudit.runner.manifest import fingerprint_files

if TYPE_CHECKING:
    import torch

SAMPLES_DIR = "samples"
LENGTHS_FILE = "sample_lengths.json"
# Weight and shape files of a model folder; large ones are fingerprinted by sampling.
MODEL_FILE_SUFFIXES = (".safetensors", ".bin", "config.json", ".safetensors.index.json")


def sample_path(samples_dir: Path, index: int) -> Path:
    return samples_dir / f"data_{index}.pt"


def extract_config(config: RunConfig) -> dict:
    if config.server_line:
        from apiaudit.runner.server_extract import server_extract_config

        return server_extract_config(config)
    section = config.section("extract")
    section["captured_layers"] = list(config.captured_layers)
    # The device count does not change what is written; the layers and dtype do.
    return {"extract": section, "model": str(config.model.path)}


def model_inputs(config: RunConfig) -> dict[str, str]:
    files = [p for p in config.model.path.iterdir() if p.is_file() and p.name.endswith(MODEL_FILE_SUFFIXES)]
    return fingerprint_files(files, config.run_dir)


def run_extract(ctx: StageContext) -> StageResult:
    from apiaudit.runner.prepare import load_prepared

    if ctx.config.server_line:
        from apiaudit.runner.server_extract import run_server_extract

        return run_server_extract(ctx)
    config = ctx.config
    samples_dir = ctx.stage_dir / SAMPLES_DIR
    samples_dir.mkdir(parents=True, exist_ok=True)
    prepared = load_prepared(ctx.upstream("prepare"))
    total = len(prepared)
    todo = [i for i in range(total) if not sample_path(samples_dir, i).is_file()]
    reused = total - len(todo)
    ctx.log.info("%d samples: %d on disk from an earlier run, %d to extract", total, reused, len(todo))
    ctx.reporter.stage_started("extract", total, "samples")
    ctx.reporter.advance(reused)

    if todo:
        generate = _open_backend(ctx)
        missing = set(todo)
        for batch in _batches_by_length(prepared, range(total), config.extract.batch_size):
            if missing.isdisjoint(batch):
                continue
            samples = [prepared.sample(i) for i in batch]
            layer_states = generate([s["input_ids"] for s in samples])
            for index, sample, states in zip(batch, samples, layer_states, strict=True):
                if index not in missing:
                    continue
                sample["hidden_states"] = [s.contiguous() for s in states]
                _save_atomically(sample, sample_path(samples_dir, index))
                ctx.reporter.advance(1)

    lengths = {str(i): prepared.length(i) for i in range(total)}
    lengths_file = ctx.stage_dir / SAMPLES_DIR / LENGTHS_FILE
    lengths_file.write_text(json.dumps(lengths, sort_keys=True) + "\n", encoding="utf-8")
    outputs = [sample_path(samples_dir, i) for i in range(total)] + [lengths_file]
    return StageResult(
        outputs=outputs,
        counts={"samples": total, "extracted": len(todo), "reused": reused, "layers": list(config.captured_layers)},
        summary=f"{counted(len(todo), 'sample')} extracted, {reused} reused (layers {list(config.captured_layers)}, "
        f"backend {config.extract.backend})",
    )


def _open_backend(ctx: StageContext):
    """A function: list of token-id tensors -> per sample, the captured layers' states [L, hidden]."""
    config = ctx.config
    if config.extract.backend == "vllm":
        return _vllm_backend(config)
    return HfHiddenStates(
        config.model.path,
        config.captured_layers,
        device=resolve_device(config.extract.device),
        dtype=config.extract.dtype,
        log=ctx.log,
    )


def _vllm_backend(config: RunConfig):
    from speculators.data_generation.vllm_hidden_states_generator import (
        VllmHiddenStatesGenerator,
    )

    generator = VllmHiddenStatesGenerator(
        model_path=str(config.model.path),
        layer_ids=list(config.captured_layers),
        max_model_len=config.data.seq_length + 1,
        gpu_memory_utilization=config.extract.gpu_memory_utilization,
        tensor_parallel_size=config.extract.gpus,
    )

    def generate(token_ids: Sequence["torch.Tensor"]) -> list[list["torch.Tensor"]]:
        requests = [ids.tolist() for ids in token_ids]
        return in_request_order(requests, generator.generate(requests))

    return generate


def in_request_order(requests: list[list[int]], results: list[dict]) -> list[list]:
    """Each request's hidden states, in request order.

    speculators' generator returns results sorted by request id as text ("req_0_10"
    before "req_0_2"), not in request order; each result carries its tokens, so match by them.
    """
    by_tokens: dict[tuple[int, ...], list] = {}
    for result in results:
        by_tokens.setdefault(tuple(result["input_ids"].tolist()), []).append(result["hidden_states"])
    return [by_tokens[tuple(ids)].pop() for ids in requests]


class HfHiddenStates:
    """Hidden states from a transformers model on one device.

    Forward hooks on the decoder layers capture each chosen layer's output, the residual
    stream before the final norm, as speculators' vLLM worker does. (transformers'
    `output_hidden_states` replaces the last layer's entry with the normed output, which
    is not what the draft is trained on.)
    """

    def __init__(self, model_path: Path, layers: Sequence[int], *, device: str, dtype: str, log) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.torch = torch
        self.device = torch.device(device)
        self.layers = list(layers)
        log.info("loading %s on %s in %s", model_path, self.device, dtype)
        model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=getattr(torch, dtype))
        # transformers decorates `to` with functools.wraps, and typeshed's `_Wrapped` has no
        # `__get__`: the method is checked unbound (`self` as the device). The call is right.
        model.to(self.device).eval()  # type: ignore[arg-type]
        # The decoder without the LM head: its logits over the whole vocabulary are not needed.
        self.decoder = model.get_decoder()
        self.captured: dict[int, "torch.Tensor"] = {}
        decoder_layers = self.decoder.layers
        for layer in self.layers:
            decoder_layers[layer].register_forward_hook(self._capture(layer))

    def _capture(self, layer: int):
        def hook(_module, _inputs, output):
            self.captured[layer] = output[0] if isinstance(output, tuple) else output

        return hook

    def __call__(self, token_ids: Sequence["torch.Tensor"]) -> list[list["torch.Tensor"]]:
        torch = self.torch
        lengths = [int(ids.shape[0]) for ids in token_ids]
        width = max(lengths)
        # Right padding: under a causal mask the real tokens never see the padding.
        batch = torch.zeros((len(token_ids), width), dtype=torch.long)
        mask = torch.zeros((len(token_ids), width), dtype=torch.long)
        for row, ids in enumerate(token_ids):
            batch[row, : lengths[row]] = ids
            mask[row, : lengths[row]] = 1
        self.captured.clear()
        with torch.inference_mode():
            self.decoder(input_ids=batch.to(self.device), attention_mask=mask.to(self.device), use_cache=False)
        per_layer = [self.captured[layer] for layer in self.layers]
        return [[states[row, : lengths[row]].to("cpu") for states in per_layer] for row in range(len(token_ids))]


def _batches_by_length(prepared, indices: Iterable[int], batch_size: int) -> list[list[int]]:
    """Samples of similar length together, so little of each batch is padding.

    Batches are cut from all samples, not only the missing ones: a sample redone after
    its file was lost is computed in the same batch as before, so its states come out
    the same and the stages downstream stay current.
    """
    ordered = sorted(indices, key=lambda i: (prepared.length(i), i))
    return [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]


def _save_atomically(sample: dict, path: Path) -> None:
    import io

    import torch

    # Serialised in memory: torch.save names the archive after the file it writes, and
    # a temporary name would make a redone sample differ from the original byte for byte.
    buffer = io.BytesIO()
    torch.save(sample, buffer)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)
