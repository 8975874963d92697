"""Training one EAGLE-3 draft, in this process or as one torchrun rank.

Run by torchrun as ``python -m apiaudit.runner.train_worker PARAMS.json``; the train
stage writes PARAMS.json. Everything that trains is speculators': its draft model, data
set, packing sampler, collate function, trainer and checkpointer.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable

# A line the worker prints after each optimizer step; the train stage counts them for progress.
STEP_MARK = "apiaudit-step "


CPU_ATTENTION = "apiaudit_dense_block_mask_attention"


def verifier_config(model_path: str):
    """The target's config as transformers reads it (its text config for multimodal targets)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    return getattr(config, "text_config", config)


def draft_layer_config(model_path: str, num_layers: int, *, device: str = "cuda"):
    """The draft's decoder-layer config: the target's shape with `num_layers` layers (speculators' recipe)."""
    from transformers import LlamaConfig

    verifier = verifier_config(model_path)
    layer_config = LlamaConfig(
        vocab_size=verifier.vocab_size,
        hidden_size=verifier.hidden_size,
        intermediate_size=verifier.intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=verifier.num_attention_heads,
        num_key_value_heads=verifier.num_key_value_heads,
        hidden_act=verifier.hidden_act,
        max_position_embeddings=verifier.max_position_embeddings,
        initializer_range=verifier.initializer_range,
        rms_norm_eps=verifier.rms_norm_eps,
        head_dim=getattr(verifier, "head_dim", None),
    )
    use_draft_attention(layer_config, device=device)
    return layer_config


def use_draft_attention(layer_config, *, device: str) -> None:
    """Set the attention the draft's decoder layers use (the config does not save it)."""
    # speculators registers this attention for the draft's packed, block-masked sequences.
    layer_config._attn_implementation = "simple_flex_attention"
    if device == "cpu":
        # FlexAttention has no backward pass on the CPU: attend with the same mask, made dense.
        _register_cpu_attention()
        layer_config._attn_implementation = CPU_ATTENTION


def _register_cpu_attention() -> None:
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(CPU_ATTENTION, dense_block_mask_attention)


def dense_block_mask_attention(module, query, key, value, attention_mask, scaling=None, **_kwargs):
    """speculators' draft attention for the CPU: the BlockMask's mask function evaluated at every
    (query, key) position by PyTorch's `create_mask`, then PyTorch's SDPA with that mask."""
    import torch
    from torch.nn.attention.flex_attention import create_mask

    dense = create_mask(attention_mask.mask_mod, 1, 1, query.shape[2], key.shape[2], device=query.device)
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=dense, scale=scaling, enable_gqa=query.shape[1] != key.shape[1]
    )
    return output.transpose(1, 2).contiguous(), None


def build_draft(params: dict[str, Any], *, t2d, d2t):
    """A fresh EAGLE-3 draft from speculators' own config classes and model.

    The same construction as speculators 0.4's `Eagle3DraftModel.from_training_args`,
    spelled out because 0.3 has no such factory: one code path for both releases.
    """
    from speculators import SpeculatorsConfig, VerifierConfig
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig

    layer_config = draft_layer_config(params["model_path"], params["num_layers"], device=params["device"])
    config = Eagle3SpeculatorConfig(
        transformer_layer_config=layer_config,
        draft_vocab_size=params["draft_vocab_size"],
        norm_before_residual=params["norm_before_residual"],
        speculators_config=SpeculatorsConfig(
            algorithm="eagle3",
            proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=params["ttt_steps"])],
            default_proposal_method="greedy",
            # The target's own config: it names the verifier's architectures (speculators 0.3.0
            # rejects the draft layer config's architectures=None; 0.4.0 records []).
            verifier=VerifierConfig.from_config(verifier_config(params["model_path"]), name_or_path=params["model_path"]),
        ),
    )
    return Eagle3DraftModel(config=config, t2d=t2d, d2t=d2t)


def split_samples(params: dict[str, Any]) -> tuple[list[str], list[str]]:
    from speculators.train.data import split_files

    train_files, val_files = split_files(params["samples_dir"], ratio=1.0 - params["val_ratio"], seed=params["seed"])
    if not train_files:
        train_files, val_files = val_files, []
    return [str(f) for f in train_files], [str(f) for f in val_files]


def count_steps(params: dict[str, Any]) -> int:
    """Optimizer steps the run will take (packed batches per epoch x epochs), for the progress bar."""
    from speculators.train.data import Eagle3SampleFileDataset
    from speculators.train.distributed_batch_sampler import (
        MultipackDistributedBatchSamplerV2,
    )

    train_files, _ = split_samples(params)
    dataset = Eagle3SampleFileDataset(max_len=params["total_seq_len"], file_list=train_files)
    sampler = MultipackDistributedBatchSamplerV2(
        batch_max_length=params["total_seq_len"], lengths=dataset.approx_lengths,
        num_replicas=params["world_size"], rank=0,
    )
    return max(1, len(sampler)) * params["epochs"]


def setup_distributed(params: dict[str, Any]) -> tuple[int, int, int, bool]:
    """(local rank, world size, rank, distributed?) for this process, its process group started.

    On GPUs speculators' own `maybe_setup_distributed` does it (NCCL, the device's default).
    It picks the backend from `torch.accelerator`, which has no CPU, so a CPU world's gloo
    group is started here, the way it would be: from torchrun's environment.
    """
    import torch.distributed as dist
    from speculators.train.utils import maybe_setup_distributed

    launched = "LOCAL_RANK" in os.environ
    if launched and params["backend"] == "gloo":
        dist.init_process_group("gloo")
        setup = int(os.environ["LOCAL_RANK"]), dist.get_world_size(), dist.get_rank(), True
    else:
        setup = maybe_setup_distributed()
    _local_rank, world_size, _rank, distributed = setup
    if world_size != params["world_size"] or (distributed and dist.get_backend() != params["backend"]):
        raise RuntimeError(
            f"torchrun started world size {world_size} ({dist.get_backend() if distributed else 'none'}); "
            f"the train stage asked for {params['world_size']} ({params['backend']})"
        )
    return setup


def train_draft(params: dict[str, Any], on_step: Callable[[dict], None] | None = None) -> Path:
    """Train the draft as `params` say; returns the checkpoint folder of the last epoch."""
    import numpy as np
    import torch
    from speculators.train.data import Eagle3SampleFileDataset, create_collate_fn
    from speculators.train.distributed_batch_sampler import (
        MultipackDistributedBatchSamplerV2,
    )
    from speculators.train.noise_transforms import AddUniformNoise
    from speculators.train.trainer import Trainer, TrainerConfig
    from speculators.train.utils import maybe_destroy_distributed
    from torch.utils.data import DataLoader

    torch.manual_seed(params["seed"])
    local_rank, world_size, rank, is_distributed = setup_distributed(params)
    on_gpu = params["device"] == "cuda"
    device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")

    d2t = torch.from_numpy(np.load(params["d2t_path"])).to(device)
    t2d = torch.from_numpy(np.load(params["t2d_path"])).to(device)
    draft = build_draft(params, t2d=t2d, d2t=d2t)
    train_kwargs = {
        "use_off_policy_tokens": False,
        "ttt_steps": params["ttt_steps"],
        "ttt_step_loss_decay": params["ttt_step_loss_decay"],
    }
    val_kwargs = dict(train_kwargs)

    hidden_dtype = getattr(torch, params["hidden_states_dtype"])
    max_len = params["total_seq_len"]
    train_files, val_files = split_samples(params)

    def loader(files: list[str], noise: bool) -> DataLoader:
        transform = (
            AddUniformNoise(std=params["noise_std"], tensors=("hidden_states", "verifier_last_hidden_states"))
            if noise and params["noise_std"] > 0
            else None
        )
        dataset = Eagle3SampleFileDataset(
            max_len=max_len, file_list=files, transform=transform, hidden_states_dtype=hidden_dtype
        )
        sampler = MultipackDistributedBatchSamplerV2(
            batch_max_length=max_len, lengths=dataset.approx_lengths, num_replicas=world_size, rank=rank
        )
        return DataLoader(
            dataset,
            batch_sampler=sampler,
            num_workers=params["num_workers"],
            pin_memory=on_gpu,
            collate_fn=create_collate_fn(max_len),
        )

    trainer_config = TrainerConfig(
        lr=params["lr"],
        num_epochs=params["epochs"],
        save_path=params["save_path"],
        resume_from_checkpoint=params["resume"],
        is_distributed=is_distributed,
        # speculators' trainer moves the model and batches with `.to(local_rank)`: a GPU
        # index on CUDA, the CPU device otherwise.
        local_rank=local_rank if on_gpu else device,
        train_call_kwargs=train_kwargs,
        val_call_kwargs=val_kwargs,
        scheduler_type=params["scheduler"],
    )
    step_handler = _StepHandler(on_step, announce=is_distributed and rank == 0)
    metrics = logging.getLogger("speculators.metrics")
    metrics.setLevel(logging.INFO)
    metrics.addHandler(step_handler)
    try:
        trainer_class = distributed_trainer() if is_distributed else Trainer
        trainer = trainer_class(draft, trainer_config, loader(train_files, noise=True),
                          loader(val_files, noise=False) if val_files else None)
        trainer.run_training()
    finally:
        metrics.removeHandler(step_handler)
        maybe_destroy_distributed()
    return Path(params["save_path"]) / str(params["epochs"] - 1)


def distributed_trainer():
    """speculators' Trainer for a world of several processes, starting from the draft as built.

    speculators 0.4's `setup_model` shards the draft's layers onto the meta device, then
    materialises them uninitialised and calls `reset_parameters` where a module has one:
    the layers' RMSNorm weights have none and train from whatever memory held (NaN losses on
    the CPU), and with no `torch.accelerator` (a CPU world) it materialises on "cuda". This
    subclass loads the draft's own initial layer weights into the sharded layers instead, the
    way speculators' distributed checkpointer loads a checkpoint when it resumes (full state
    dict, broadcast from rank 0). Resuming, training and saving stay speculators' own.
    """
    import torch.distributed as dist
    from speculators.model import SpeculatorModel
    from speculators.train.trainer import Trainer
    from speculators.train.utils import apply_fully_sharded
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
    )

    class DistributedTrainer(Trainer):
        def setup_model(self):
            if self.resume_from_checkpoint and self.checkpointer.previous_epoch != -1:
                return super().setup_model()
            SpeculatorModel.verify_training_compatible(self.model)
            # Only the decoder layers go to the meta device; every rank built the same draft (one seed).
            initial = {k: v.detach().clone() for k, v in self.model.state_dict().items() if k.startswith("layers.")}
            apply_fully_sharded(self.model)
            set_model_state_dict(
                self.model, initial,
                options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True, strict=False),
            )
            dist.barrier()
            return None

    return DistributedTrainer


class _StepHandler(logging.Handler):
    """Turns the trainer's per-step metric records into progress (and a log line of the loss)."""

    def __init__(self, on_step: Callable[[dict], None] | None, *, announce: bool) -> None:
        super().__init__(level=logging.INFO)
        self.on_step = on_step
        self.announce = announce
        self.log = logging.getLogger("apiaudit.runner.train")

    def emit(self, record: logging.LogRecord) -> None:
        message = record.msg
        if not isinstance(message, dict) or "train" not in message:
            if isinstance(message, dict) and "val" in message:
                self.log.info("validation epoch %s: %s", message.get("epoch"), _rounded(message["val"]))
            return
        step = getattr(record, "step", None)
        self.log.info("step %s epoch %s: %s", step, message.get("epoch"), _rounded(message["train"]))
        if self.announce:
            print(f"{STEP_MARK}{step}", flush=True)
        if self.on_step is not None:
            self.on_step(message)


def _rounded(values: Any) -> Any:
    if isinstance(values, dict):
        return {k: round(v, 4) if isinstance(v, float) and math.isfinite(v) else v for k, v in values.items()}
    return values


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m apiaudit.runner.train_worker PARAMS.json", file=sys.stderr)
        return 2
    params = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    train_draft(params)
    return 0


if __name__ == "__main__":
    from apiaudit.runner.imports import RUNNER_MODULES, run_entry_point

    raise SystemExit(run_entry_point(main, RUNNER_MODULES))
