"""ms-swift 4.6.0 parity: the HF path's ``GRPOConfig`` and ``RLHFArguments`` checks, the Megatron path's
``RLHFMegatronArgumentsMixin._init_grpo`` (``resolve_generation_batch_size``, ``validate_batch_dp_alignment``)
and ``MegatronArguments._init_distributed``'s global-batch check, against our swift rules.

All of it is ms-swift's own code, imported from the installed package. What the harness supplies:

* ``GRPOConfig`` asks ``world_size`` of the process; a subclass answers the case's ``NPROC_PER_NODE*NNODES``.
  ``bf16=False`` because there is no GPU (it changes no batch arithmetic), and ``gradient_accumulation_steps``
  is passed as ``RLHFArguments._set_default`` leaves it for GRPO (1 when not given).
* ``RLHFArguments._check_teacher`` / ``_init_rollout`` run on an object holding the dataclass defaults and the
  case's flags; ``_init_external_vllm`` (it connects to the rollout server) is replaced by a no-op.
* The Megatron argument module imports megatron-core, mcore-bridge and Transformer Engine at its top: they
  are stubbed in ``sys.modules`` (test harness only). ``torch.distributed`` reports the case's world size
  while ``_init_grpo`` runs, as it does under torchrun; ``initialize_megatron`` (megatron-core's process
  groups) is replaced by setting ``world_size``, so ``_init_distributed`` runs only its own batch check,
  and only when ``W % (TP*PP*CP) == 0`` (otherwise megatron-core fails first, on GPUs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.abc
import importlib.machinery
import inspect
import logging
import random
import sys
import tempfile
from typing import Any, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, divisor_near, divisors, multiple_near, near

# ------------------------------------------------------------------ compared rules and patterns
GENERATION = frozenset({"swift.args.gen_divisible_by_base", "swift.args.gen_equals_base_times_spg",
                        "swift.args.gen_divisible_by_num_generations"})
HF_CONFIG = GENERATION | {"swift.args.eval_batch_divisible_by_num_generations_eval"}
HF_ARGS = frozenset({"swift.args.num_generations_at_least_two", "swift.args.vllm_mode_required",
                     "swift.args.vllm_mode_needs_use_vllm", "swift.args.async_generate_needs_server",
                     "swift.rollout.server_needs_host"})
MG_GRPO = GENERATION | {
    "swift_megatron.args.num_iterations_unsupported", "swift_megatron.args.async_generate_unsupported",
    "swift_megatron.args.sync_ref_model_unsupported", "swift_megatron.args.real_loss_micro_divisible_by_num_generations",
    "swift_megatron.args.rollout_prompts_divisible_by_dp", "swift_megatron.args.rollout_prompts_per_dp_at_least_one",
    "swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro",
    "swift_megatron.args.generation_per_device_at_least_one", "swift_megatron.args.use_vllm_required",
}
MG_DIST = frozenset({"swift_megatron.args.global_batch_divisible_by_micro_dp"})

PATTERNS = [
    (r"global eval batch size .* num_generations_eval", "swift.args.eval_batch_divisible_by_num_generations_eval"),
    (r"must be divisible by (the global batch size|global_batch_size)", "swift.args.gen_divisible_by_base"),
    (r"must equal (per_device_train_batch_size \* world_size|global_batch_size \(\d+\)) \*",
     "swift.args.gen_equals_base_times_spg"),
    (r"steps_per_generation must be > 0", ("swift.args.gen_divisible_by_base",)),
    (r"must be (evenly )?divisible by num_generations", "swift.args.gen_divisible_by_num_generations"),
    (r"num_generations must be greater than 1", "swift.args.num_generations_at_least_two"),
    (r"vllm_mode is required when use_vllm is true", "swift.args.vllm_mode_required"),
    (r"vllm_mode is not supported when use_vllm is false", "swift.args.vllm_mode_needs_use_vllm"),
    (r"async generate require vllm_mode == server", "swift.args.async_generate_needs_server"),
    (r"^AssertionError:?$", "swift.rollout.server_needs_host"),  # _init_rollout's bare assert on the host
    (r"num_iterations > 1 is not supported", "swift_megatron.args.num_iterations_unsupported"),
    (r"async_generate is not supported", "swift_megatron.args.async_generate_unsupported"),
    (r"sync_ref_model is not supported", "swift_megatron.args.sync_ref_model_unsupported"),
    (r"REAL loss requires", "swift_megatron.args.real_loss_micro_divisible_by_num_generations"),
    (r"num_rollout_prompt .* must be divisible by dp_size", "swift_megatron.args.rollout_prompts_divisible_by_dp"),
    (r"per_device_num_rollout_prompt .* must be >= 1", "swift_megatron.args.rollout_prompts_per_dp_at_least_one"),
    (r"Per-device rollout prompt count", "swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro"),
    (r"per_device_generation_batch_size .* must be >= 1", "swift_megatron.args.generation_per_device_at_least_one"),
    (r"use_vllm must be True for Megatron GRPO", "swift_megatron.args.use_vllm_required"),
    # TP*PP*CP > world: _init_grpo's dp_size is 0 before megatron-core sees the layout
    (r"^ZeroDivisionError: integer (modulo|division) by zero", "swift_megatron.mcore.world_divisible_by_model_parallel"),
    (r"global batch size \(\d+\) is not divisible by micro batch size|global_batch_size must be >=",
     "swift_megatron.args.global_batch_divisible_by_micro_dp"),
]

ALLOWED = {
    "swift": [
        Allowed("swift.gpus.budget", "needs --gpus, the GPUs of the whole job (not a swift flag): the rollout "
                "server's own device check (deploy_args.py:_check_device_count) runs in another process"),
        # RLHFArguments._check_grpo's refusals beside Liger's GRPO loss: the parity cases do not set
        # --use_liger_kernel; each rule's release gate is pinned by hand-made cases in tests/test_swift.py
        Allowed("swift.liger.no_sequence_parallel", "--use_liger_kernel: not in the parity cases (hand-made cases "
                "per release in tests/test_swift.py)"),
        Allowed("swift.liger.no_padding_free", "--use_liger_kernel, as above"),
        Allowed("swift.liger.grpo_advantage_only", "--use_liger_kernel, as above"),
    ],
    "swift-megatron": [
        Allowed("swift_megatron.mcore.world_divisible_by_model_parallel", "megatron-core's initialize_model_parallel "
                "needs torch.distributed on GPUs: hand-made cases in tests/test_swift_megatron.py"),
        Allowed("swift_megatron.mcore.world_divisible_by_expert_parallel", "megatron-core, as above"),
        Allowed("swift_megatron.mcore.vpp_needs_pp", "megatron-core, as above"),
        Allowed("swift_megatron.args.first_last_layers_need_pp", "MegatronArguments.__post_init__ needs a model "
                "(model_info/model_meta from the hub) before it gets there: hand-made cases"),
        Allowed("swift.gpus.budget", "needs --gpus, the GPUs of the whole job (not a swift flag)"),
    ],
}


# ------------------------------------------------------------------ HF oracle
class SwiftHFOracle:
    def __init__(self):
        logging.getLogger("swift").setLevel(logging.ERROR)
        from swift.arguments.rlhf_args import RLHFArguments
        from swift.rlhf_trainers.arguments import GRPOConfig

        class _Config(GRPOConfig):
            world = 1

            @property
            def world_size(self):  # the case's NPROC_PER_NODE*NNODES, not this process's
                return type(self).world

        self._config_cls = _Config
        self._out = tempfile.TemporaryDirectory(prefix="parity-swift-")
        defaults = {f.name: (f.default if f.default is not dataclasses.MISSING else
                             f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
                    for f in dataclasses.fields(RLHFArguments)}
        self._defaults = defaults
        self._args_cls = type("_Args", (), {
            "_check_teacher": RLHFArguments._check_teacher,
            "_init_rollout": RLHFArguments._init_rollout,
            "_external_vllm_warning": RLHFArguments._external_vllm_warning,
            "_init_external_vllm": lambda self: None,  # would connect to the rollout server
        })

    @staticmethod
    def world(case: Mapping[str, Any]) -> int:
        return case.get("NPROC_PER_NODE", 1) * case.get("NNODES", 1)

    def config(self, case: Mapping[str, Any]) -> Verdict:
        keys = ("per_device_train_batch_size", "per_device_eval_batch_size", "num_generations", "generation_batch_size",
                "steps_per_generation", "num_generations_eval")
        kw = {k: case[k] for k in keys if k in case}
        kw["gradient_accumulation_steps"] = case.get("gradient_accumulation_steps", 1)  # RLHFArguments._set_default
        # SftArguments.__post_init__: eval_strategy 'no' without a validation set
        has_val = case.get("split_dataset_ratio", 0) > 0 or "val_dataset" in case
        kw["eval_strategy"] = case.get("eval_strategy", "steps") if has_val else "no"
        self._config_cls.world = self.world(case)
        return Verdict.run(lambda: self._config_cls(output_dir=self._out.name, report_to=[], bf16=False, **kw))

    def args(self, case: Mapping[str, Any]) -> Verdict:
        obj = self._args_cls()
        obj.__dict__.update(self._defaults)
        obj.rlhf_type = "grpo"
        for k in ("num_generations", "use_vllm", "vllm_mode", "async_generate", "vllm_server_host",
                  "teacher_model"):
            if k in case:
                setattr(obj, k, case[k])
        return Verdict.run(lambda: (obj._check_teacher(), obj._init_rollout()))

    def oracles(self) -> list[Oracle]:
        return [
            Oracle("driver: GRPOConfig.__post_init__ (_init_generation_batch_params)", self.config, HF_CONFIG, PATTERNS),
            Oracle("driver: RLHFArguments._check_teacher, _init_rollout", self.args, HF_ARGS, PATTERNS),
        ]


# ------------------------------------------------------------------ Megatron oracle
class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stub modules for GPU-only packages the Megatron argument module imports at its top (harness only)."""

    PREFIXES = ("megatron.core", "megatron.training", "mcore_bridge", "transformer_engine", "apex", "flash_attn")

    def find_spec(self, name, path=None, target=None):
        if name == "megatron" or any(name == p or name.startswith(p + ".") for p in self.PREFIXES):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__, module.__name__ = [], spec, spec.name
        module.__version__ = "0.16.1"
        return module

    def exec_module(self, module):
        pass


class SwiftMegatronOracle:
    def __init__(self):
        logging.getLogger("swift").setLevel(logging.ERROR)
        if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _StubFinder())
        import torch.distributed
        from swift.megatron.arguments import megatron_args
        from swift.megatron.arguments.rlhf_args import MegatronRLHFArguments

        self._dist = torch.distributed
        self._module = megatron_args
        mixin, full = megatron_args.RLHFMegatronArgumentsMixin, megatron_args.MegatronArguments
        defaults = {}
        for f in dataclasses.fields(MegatronRLHFArguments):  # `megatron rlhf`'s argument class
                defaults[f.name] = (f.default if f.default is not dataclasses.MISSING else
                                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        defaults["truncation_strategy"] = "left"  # MegatronRLHFArguments._init_truncation_strategy for GRPO
        self._defaults = defaults
        self._cls = type("_Args", (), {name: inspect.getattr_static(full, name) for name in (
            "_init_grpo", "_init_generation_batch_params", "resolve_generation_batch_size",
            "validate_batch_dp_alignment", "_init_distributed")})
        assert mixin.resolve_generation_batch_size is full.resolve_generation_batch_size

    def _obj(self, case: Mapping[str, Any]) -> Any:
        obj = self._cls()
        obj.__dict__.update(self._defaults)
        obj.rlhf_type = "grpo"
        obj.reward_funcs = []
        for k, v in case.items():
            if not k.isupper():
                setattr(obj, k, v)
        return obj

    @contextlib.contextmanager
    def _world(self, world: int) -> Iterator[None]:
        with mock.patch.object(self._dist, "is_initialized", lambda: True), \
                mock.patch.object(self._dist, "get_world_size", lambda *a, **k: world):
            yield

    def grpo(self, case: Mapping[str, Any]) -> Verdict | None:
        obj = self._obj(case)
        world = SwiftHFOracle.world(case)
        mp = obj.tensor_model_parallel_size * obj.pipeline_model_parallel_size * obj.context_parallel_size
        if world % mp and world >= mp:
            return None  # _init_grpo passes with a floored dp; megatron-core rejects the layout later, on GPUs
        with self._world(world):
            return Verdict.run(obj._init_grpo)

    def distributed(self, case: Mapping[str, Any]) -> Verdict | None:
        world = SwiftHFOracle.world(case)
        obj = self._obj(case)
        mp = obj.tensor_model_parallel_size * obj.pipeline_model_parallel_size * obj.context_parallel_size
        if world % mp:
            return None  # megatron-core's initialize_model_parallel fails first (GPU code)

        def init(args):
            args.world_size = world

        with mock.patch.object(self._module, "initialize_megatron", init):
            return Verdict.run(obj._init_distributed)

    def oracles(self) -> list[Oracle]:
        return [
            Oracle("driver: RLHFMegatronArgumentsMixin._init_grpo", self.grpo,
                   MG_GRPO | {"swift_megatron.mcore.world_divisible_by_model_parallel"}, PATTERNS),
            Oracle("driver: MegatronArguments._init_distributed (batch check)", self.distributed, MG_DIST, PATTERNS),
        ]


# ------------------------------------------------------------------ generators
def _world(rng: random.Random) -> tuple[int, int]:
    nproc = rng.choice([1, 2, 3, 4, 6, 7, 8, 8, 16])
    nnodes = rng.choice([1, 1, 1, 2, 4])
    return nproc, nnodes


def _generation(rng: random.Random, case: dict, base: int, g: int) -> None:
    """generation_batch_size / steps_per_generation: neither, one, or both, around the base and G edges."""
    mode = rng.choice(["neither", "gen", "spg", "both"])
    spg = rng.choice([1, 1, 2, 3, 4, 8])
    if mode in ("gen", "both"):
        r = rng.random()
        gen = (near(rng, base * spg) if r < 0.5 else multiple_near(rng, g, 16) if r < 0.8 else rng.randint(1, 256))
        case["generation_batch_size"] = gen
    if mode in ("spg", "both"):
        case["steps_per_generation"] = spg


def hf_batch_case(rng: random.Random) -> tuple[dict[str, Any], int, int, int]:
    """The HF path's world, num_generations and per-device batch: (case, world size, G, per-device batch)."""
    nproc, nnodes = _world(rng)
    w = nproc * nnodes
    case: dict[str, Any] = {"NPROC_PER_NODE": nproc}
    if nnodes > 1:
        case["NNODES"] = nnodes
    g = rng.choice([1, 2, 3, 4, 5, 8, 8, 16])
    if g != 8 or rng.random() < 0.5:
        case["num_generations"] = g
    b = rng.choice([1, 1, 2, 3, 4, 8, divisor_near(rng, max(1, 16 // w))])
    if b != 1 or rng.random() < 0.3:
        case["per_device_train_batch_size"] = b
    return case, w, g, b


def swift_case(rng: random.Random) -> dict[str, Any]:
    case, w, g, b = hf_batch_case(rng)
    if rng.random() < 0.3:
        case["gradient_accumulation_steps"] = rng.choice([1, 2, 4])
    _generation(rng, case, b * w, g)
    if rng.random() < 0.3:  # a validation set: the eval batch rule runs
        case["split_dataset_ratio"] = 0.05
        if rng.random() < 0.2:
            case["eval_strategy"] = "no"
        case["per_device_eval_batch_size"] = rng.choice([1, 2, 3, 4, g, near(rng, g)])
        if rng.random() < 0.4:
            case["num_generations_eval"] = rng.choice([1, 2, 4, w, near(rng, w)])
    if rng.random() < 0.1:
        case["teacher_model"] = "Qwen/Qwen2.5-7B-Instruct"
    _rollout(rng, case, w)
    return case


def _rollout(rng: random.Random, case: dict, w: int) -> None:
    if rng.random() < 0.6:
        case["use_vllm"] = rng.random() < 0.85
    if rng.random() < 0.75:
        case["vllm_mode"] = rng.choice(["colocate", "colocate", "server"])
    if case.get("vllm_mode") == "server" and rng.random() < 0.7:
        case["vllm_server_host"] = ["127.0.0.1"]
    if rng.random() < 0.15:
        case["async_generate"] = True
    if rng.random() < 0.3:
        case["vllm_tensor_parallel_size"] = divisor_near(rng, w)


def swift_megatron_case(rng: random.Random) -> dict[str, Any]:
    nproc, nnodes = _world(rng)
    w = nproc * nnodes
    case: dict[str, Any] = {"NPROC_PER_NODE": nproc}
    if nnodes > 1:
        case["NNODES"] = nnodes
    tp = rng.choice(divisors(w)) if rng.random() < 0.5 else 1
    pp = rng.choice(divisors(w // tp)) if rng.random() < 0.3 else 1
    cp = rng.choice(divisors(w // (tp * pp))) if rng.random() < 0.2 else 1
    if rng.random() < 0.1:
        tp = near(rng, tp)
    for key, v in (("tensor_model_parallel_size", tp), ("pipeline_model_parallel_size", pp),
                   ("context_parallel_size", cp)):
        if v != 1:
            case[key] = v
    dp = max(1, w // (tp * pp * cp))
    g = rng.choice([1, 2, 3, 4, 4, 8, 8, 16])
    if g != 8 or rng.random() < 0.5:
        case["num_generations"] = g
    mbs = rng.choice([1, 1, 1, 2, 4, 8])
    if mbs != 1 or rng.random() < 0.3:
        case["micro_batch_size"] = mbs
    r = rng.random()
    gbs = (near(rng, mbs * dp * g * rng.choice([1, 2, 4])) if r < 0.6 else multiple_near(rng, mbs * dp, 8)
           if r < 0.85 else rng.choice([16, rng.randint(1, 512)]))
    if gbs != 16 or rng.random() < 0.5:
        case["global_batch_size"] = gbs
    _generation(rng, case, gbs, g)
    if rng.random() < 0.08:
        case["num_iterations"] = rng.choice([1, 2])
    if rng.random() < 0.05:
        case["sync_ref_model"] = True
    if rng.random() < 0.08:
        case["loss_type"] = "real"
    _rollout(rng, case, w)
    if "use_vllm" not in case and rng.random() < 0.1:
        case["use_vllm"] = False
    return case


def swift_cases(seed: int, count: int, megatron: bool) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield (swift_megatron_case(rng) if megatron else swift_case(rng)), {}
