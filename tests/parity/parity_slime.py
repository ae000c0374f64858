"""slime 0.3.1 parity: slime's own argument checks and data-parallel schedule, and megatron-core's micro-batch
calculator, against our slime rules.

slime is not on PyPI: its source tree at tag v0.3.1 is read from ``SLIME_SRC`` (a checkout or an unpacked archive
holding ``slime/utils/arguments.py``). What runs is slime's code, imported from that tree:

* ``slime.utils.arguments``: slime's own parser (``get_slime_extra_args_provider``: its arguments, and the Megatron
  defaults it resets) reads the case's flags, then ``slime_validate_args`` runs on them;
* ``slime.backends.sglang_utils.arguments.validate_args`` on the parsed namespace with the case's ``--sglang-*``
  values;
* ``slime.utils.dp_schedule.build_dp_schedule`` on one rollout of the case (sample lengths drawn up to the case's
  longest sample), as ``RolloutManager._split_train_data_by_dp`` calls it.

The argument module imports SGLang's ``ServerArgs``, sglang-router's ``RouterArgs``, slime's logger set-up (wandb,
tensorboard) and HTTP helpers (httpx) at its top: those are stubbed in ``sys.modules`` while it is imported (test
harness only; no check reads them). ``--ref-load`` points at an empty temporary directory (slime checks it exists).

Megatron-LM's ``megatron.training`` (its ``validate_args``) is not in any wheel; megatron-core's is: its
``num_microbatches_calculator.py`` at 0.16.0 is byte-identical to the one at the Megatron-LM commit slime 0.3.1 pins
(1dcf0da), and is loaded from the directory ``MEGATRON_CORE_DIR`` (``pip install --no-deps --target``) as a file,
without megatron-core's package (which imports torch). The one line of Megatron's ``validate_args`` the calculator
needs, an unset global batch = micro_batch_size * dp, is done here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Iterator, Mapping

from parity_core import Allowed, Oracle, Verdict, divisor_near, flag_argv, multiple_near, near

SLIME_ARGS = frozenset({
    "slime.args.dynamic_batch_needs_max_tokens", "slime.args.balance_by_flops_needs_dynamic_batch",
    "slime.args.kl_coef_or_kl_loss_coef", "slime.args.reinforce_needs_normalized_advantages",
    "slime.args.global_batch_matches_steps_per_rollout", "slime.args.over_sampling_covers_rollout_batch",
    "slime.args.prompt_shorter_than_context"})
SGLANG_ARGS = frozenset({"slime.sglang.engine_gpus_divisible_by_pp", "slime.sglang.dp_needs_dp_attention"})
CALCULATOR = frozenset({"slime.megatron.global_batch_divisible_by_micro_dp"})
SCHEDULE = frozenset({"slime.schedule.rollout_covers_global_batch"})

PATTERNS = [
    (r"max_tokens_per_gpu must be set", "slime.args.dynamic_batch_needs_max_tokens"),
    (r"--balance-by-flops requires", "slime.args.balance_by_flops_needs_dynamic_batch"),
    (r"Only one of kl_coef and kl_loss_coef", "slime.args.kl_coef_or_kl_loss_coef"),
    (r"require advantage normalization", "slime.args.reinforce_needs_normalized_advantages"),
    (r"global_batch_size \d+ is not equal to", "slime.args.global_batch_matches_steps_per_rollout"),
    (r"over_sampling_batch_size .* should be greater", "slime.args.over_sampling_covers_rollout_batch"),
    (r"rollout_max_prompt_len .* must be smaller", "slime.args.prompt_shorter_than_context"),
    (r"must be divisible by sglang_pipeline_parallel_size", "slime.sglang.engine_gpus_divisible_by_pp"),
    (r"^AssertionError:?$", "slime.sglang.dp_needs_dp_attention"),  # the bare assert on sglang_enable_dp_attention
    (r"global batch size \(\d+\) is not divisible by micro batch size", "slime.megatron.global_batch_divisible_by_micro_dp"),
    (r"num_rollouts \(\d+\) < global_batch_size", "slime.schedule.rollout_covers_global_batch"),
]

ALLOWED = [
    Allowed("slime.megatron.world_divisible_by_model_parallel", "Megatron-LM's validate_args (megatron.training is in "
            "no wheel): hand-made cases in tests/test_slime.py"),
    Allowed("slime.megatron.global_batch_positive", "Megatron-LM's validate_args, as above"),
    Allowed("slime.megatron.layers_divisible_by_pp", "Megatron-LM's validate_args, as above"),
    Allowed("slime.megatron.uneven_pipeline_needs_pp", "slime's Megatron wrapper imports megatron.training"),
    Allowed("slime.megatron.world_divisible_by_expert_parallel", "megatron-core's process groups need torch.distributed"),
    Allowed("slime.placement.separate_needs_rollout_gpus", "Ray's placement group (needs a Ray cluster)"),
    Allowed("slime.placement.gpu_budget", "Ray's placement group (needs a Ray cluster)"),
    Allowed("slime.rollout.engine_fits_rollout_gpus", "SGLang engines on Ray (needs GPUs)"),
    Allowed("slime.rollout.response_len_required", "sglang_rollout.generate's assertion at the first sample (needs "
            "SGLang engines on Ray)"),
]

ESTIMATORS = ("grpo", "gspo", "ppo", "reinforce_plus_plus", "reinforce_plus_plus_baseline")


def slime_cases(seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Configs on the rules' edges: global batches near multiples of micro x dp, steps that do and do not divide the
    rollout, token budgets on and off, KL terms, SGLang sizes that do and do not divide the engine."""
    rng = random.Random(seed)
    for _ in range(count):
        gpn = rng.choice((1, 2, 4, 6, 8))
        nodes = rng.choice((1, 1, 2))
        world = gpn * nodes
        tp = divisor_near(rng, world) if rng.random() < 0.5 else 1
        cp = rng.choice((1, 1, 2))
        mp = tp * cp
        dp = max(1, world // mp)
        rb = rng.choice((1, 2, 4, 8, 16, 32, 48))
        n = rng.choice((1, 2, 4, 8, 16))
        mbs = rng.choice((1, 1, 2, 4))
        case: dict[str, Any] = {
            "actor-num-nodes": nodes, "actor-num-gpus-per-node": gpn, "colocate": True,
            "rollout-batch-size": rb, "n-samples-per-prompt": n, "micro-batch-size": mbs,
            "tensor-model-parallel-size": tp, "context-parallel-size": cp,
            "advantage-estimator": rng.choice(ESTIMATORS),
        }
        roll = rng.random()
        if roll < 0.4:
            case["global-batch-size"] = multiple_near(rng, mbs * dp, 6)
        elif roll < 0.7:
            steps = near(rng, rng.choice((1, 2, 4)))
            case["num-steps-per-rollout"] = steps
            if rng.random() < 0.3:
                case["global-batch-size"] = near(rng, rb * n // steps) if rb * n // steps else 1
        if rng.random() < 0.5:
            case["use-dynamic-batch-size"] = True
            if rng.random() < 0.85:
                case["max-tokens-per-gpu"] = rng.choice((1024, 4096, 9216))
        if rng.random() < 0.1:
            case["balance-by-flops"] = True
        if rng.random() < 0.3:
            case["use-kl-loss"] = True
        for key in ("kl-coef", "kl-loss-coef"):
            if rng.random() < 0.25:
                case[key] = rng.choice((0.0, 0.01))
        if rng.random() < 0.5:
            case["normalize-advantages"] = True
        if rng.random() < 0.15:
            case["over-sampling-batch-size"] = near(rng, rb)
        if rng.random() < 0.2:
            context = rng.choice((2048, 4096))
            case["rollout-max-context-len"] = context
            case["rollout-max-prompt-len"] = near(rng, context - 1)
        engine = rng.choice((1, 2, 4, 8))
        case["rollout-num-gpus-per-engine"] = engine
        if rng.random() < 0.25:
            case["sglang-pp-size"] = divisor_near(rng, engine)
        if rng.random() < 0.2:
            case["sglang-dp-size"] = rng.choice((1, 2))
            case["sglang-enable-dp-attention"] = rng.random() < 0.5
        yield case, {"lengths_seed": rng.randrange(1 << 30)}


@contextlib.contextmanager
def _stubbed(names: Mapping[str, Mapping[str, Any]]):
    """``sys.modules`` entries for the modules slime's argument module imports at its top and no check reads."""
    saved = {name: sys.modules.get(name) for name in names}
    for name, attrs in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _load_file(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SlimeOracle:
    """slime's own code (``SLIME_SRC``) and megatron-core's calculator (``MEGATRON_CORE_DIR``), either may be absent."""

    def __init__(self, slime_src: str | None, megatron_core_dir: str | None):
        self.slime = self.sglang_args = self.schedule = self.calculator = None
        self._ref = tempfile.mkdtemp(prefix="slime-ref-")
        if slime_src:
            sys.path.insert(0, str(Path(slime_src).resolve()))
            stubs = {
                "sglang": {}, "sglang.srt": {}, "sglang.srt.server_args": {"ServerArgs": object},
                "sglang_router": {}, "sglang_router.launch_router": {"RouterArgs": object},
                "slime.utils.logging_utils": {"configure_logger": lambda *a, **k: None},
                "slime.utils.http_utils": {"_wrap_ipv6": lambda host: host},
            }
            with _stubbed(stubs):
                import slime.utils.arguments as slime_arguments
                import slime.backends.sglang_utils.arguments as sglang_arguments
            import slime.utils.dp_schedule as dp_schedule

            self.slime, self.sglang_args, self.schedule = slime_arguments, sglang_arguments, dp_schedule
        if megatron_core_dir:
            path = Path(megatron_core_dir) / "megatron" / "core" / "num_microbatches_calculator.py"
            self.calculator = _load_file("megatron_core_num_microbatches_calculator", path)

    # -- slime's parser and validator ----------------------------------------------------------
    def _parsed(self, case: Mapping[str, Any]) -> argparse.Namespace:
        parser = argparse.ArgumentParser(allow_abbrev=False)
        self.slime.get_slime_extra_args_provider()(parser)
        # _pre_parse_mode's flags, merged into the namespace by parse_args
        for flag, kw in (("--train-backend", {"default": "megatron"}), ("--load-debug-rollout-data", {"default": None}),
                         ("--debug-rollout-only", {"action": "store_true"}),
                         ("--debug-train-only", {"action": "store_true"})):
            parser.add_argument(flag, **kw)
        args, _ = parser.parse_known_args(flag_argv(case) + ["--ref-load", self._ref, "--num-rollout", "1"])
        return args

    def _validated(self, case: Mapping[str, Any]) -> tuple[Verdict, argparse.Namespace | None]:
        args = self._parsed(case)
        verdict = Verdict.run(lambda: self.slime.slime_validate_args(args))
        return verdict, (args if verdict.ok else None)

    def run_slime_args(self, case: Mapping[str, Any]) -> Verdict | None:
        return self._validated(case)[0]

    def run_sglang_args(self, case: Mapping[str, Any]) -> Verdict | None:
        args = self._parsed(case)
        args.sglang_pp_size = int(case.get("sglang-pp-size", 1))
        args.sglang_dp_size = int(case.get("sglang-dp-size", 1))
        args.sglang_ep_size = 1
        args.sglang_enable_dp_attention = bool(case.get("sglang-enable-dp-attention", False))
        args.rollout_external = False
        args.prefill_num_servers = args.sglang_config = None
        return Verdict.run(lambda: self.sglang_args.validate_args(args))

    # -- megatron-core's calculator and slime's schedule ---------------------------------------------
    def _layout(self, case: Mapping[str, Any]) -> tuple[int, int, int] | None:
        world = int(case["actor-num-nodes"]) * int(case["actor-num-gpus-per-node"])
        mp = int(case["tensor-model-parallel-size"]) * int(case["context-parallel-size"])
        if world % mp:
            return None  # Megatron's validate_args stops first
        return world, world // mp, int(case["context-parallel-size"])

    def _global_batch(self, case: Mapping[str, Any], dp: int) -> int | None:
        """The global batch the calculator gets: slime's (from slime_validate_args when slime's code is here), or
        Megatron's micro_batch_size * dp when unset."""
        if self.slime is not None:
            verdict, args = self._validated(case)
            if not verdict.ok:
                return None
            gbs = args.global_batch_size
        else:
            gbs = case.get("global-batch-size")
            steps = case.get("num-steps-per-rollout")
            if steps is not None:
                derived = int(case["rollout-batch-size"]) * int(case["n-samples-per-prompt"]) // int(steps)
                if gbs is not None and gbs != derived:
                    return None  # slime_validate_args stops first
                gbs = derived
        return int(case["micro-batch-size"]) * dp if gbs is None else int(gbs)

    def run_calculator(self, case: Mapping[str, Any]) -> Verdict | None:
        layout = self._layout(case)
        if layout is None:
            return None
        _, dp, _ = layout
        gbs = self._global_batch(case, dp)
        if gbs is None or gbs < 1:
            return None  # Megatron's validate_args asserts global_batch_size > 0 first
        calc = self.calculator
        return Verdict.run(lambda: calc.ConstantNumMicroBatchesCalculator(gbs, int(case["micro-batch-size"]), dp,
                                                                          False, 1))

    def run_schedule(self, case: Mapping[str, Any]) -> Verdict | None:
        layout = self._layout(case)
        if layout is None or self.slime is None:
            return None
        _, dp, cp = layout
        gbs = self._global_batch(case, dp)
        if gbs is None or gbs < 1 or gbs % (int(case["micro-batch-size"]) * dp):
            return None  # an earlier stage stops it (megatron-core's calculator at worker init)
        samples = int(case["rollout-batch-size"]) * int(case["n-samples-per-prompt"])
        rng = random.Random(case["lengths_seed"])
        budget = int(case.get("max-tokens-per-gpu") or 4096)
        lengths = [rng.randint(1, budget * cp) for _ in range(samples)]
        args = types.SimpleNamespace(
            use_dynamic_batch_size=bool(case.get("use-dynamic-batch-size")) and "max-tokens-per-gpu" in case,
            max_tokens_per_gpu=case.get("max-tokens-per-gpu"), micro_batch_size=int(case["micro-batch-size"]),
            balance_by_flops=False, balance_data=False)
        config = {"dp_size": dp, "cp_size": cp, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
        return Verdict.run(lambda: self.schedule.build_dp_schedule(args, config, lengths, global_batch_size=gbs,
                                                                   rollout_indices=list(range(samples))))

    def oracles(self) -> list[Oracle]:
        out = []
        if self.slime is not None:
            out += [Oracle("driver: slime_validate_args", self.run_slime_args, SLIME_ARGS, PATTERNS),
                    Oracle("driver: sglang validate_args", self.run_sglang_args, SGLANG_ARGS, PATTERNS),
                    Oracle("first_step: build_dp_schedule", self.run_schedule, SCHEDULE, PATTERNS)]
        if self.calculator is not None:
            out.append(Oracle("worker_init: ConstantNumMicroBatchesCalculator", self.run_calculator, CALCULATOR,
                              PATTERNS))
        return out


def oracle_from_environment() -> SlimeOracle:
    return SlimeOracle(os.environ.get("SLIME_SRC") or None, os.environ.get("MEGATRON_CORE_DIR") or None)
