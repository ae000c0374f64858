"""OpenRLHF 0.10.4, 0.9.10, 0.8.11, 0.7.5, 0.6.2, 0.5.9 and 0.4.0 parity: each release's own ``train_ppo_ray`` checks (the ``__main__`` block,
``_validate_args`` and ``train()``'s layout asserts) and DeepSpeed's ``DeepSpeedConfig._batch_assertion`` on the batch
keys that release's strategy writes, against our release packs (``frameworks/openrlhf/versions.py``).

The harness reads ``openrlhf/cli/train_ppo_ray.py`` from the installed ``openrlhf`` (0.6.2; 0.5.9.post1 and 0.4.0.post2
for our 0.5.9 and 0.4.0 packs; never a copy) and runs, as written:

* the ``__main__`` block with ``parser.parse_args()`` given the case's flags and the final ``train(args)`` replaced by
  ``_validate_args(args)`` (``train()`` calls it first);
* ``train()`` with Ray, the vLLM engines, the model actor groups, ``get_strategy`` and torch replaced by mocks (they
  start GPU processes): it runs to its end, past every layout assert;
* for every DeepSpeed model group (actor, ref, critic, reward, EMA), DeepSpeed's own ``_configure_train_batch_size``
  on the batch keys the release's ``get_ds_train_config`` / ``get_ds_eval_config`` write (0.6.2:
  ``train_batch_size * ring_attn_size``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.metadata
import io
import os
import random
import types
from typing import Any, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, multiple_near, near
from parity_openrlhf import ALLOWED as NEWEST_ALLOWED, DRIVER as NEWEST_DRIVER, TRAIN as NEWEST_TRAIN
from parity_openrlhf import OpenRLHFOracle, TrainPPORayOracle, flag_argv, openrlhf_case  # noqa: F401 (flag_argv: the tests)

from rlbatch_solver.frameworks.openrlhf.framework import release_has, release_key

# the installed wheel -> our pack
PACKS = {"0.10.4": "0.10.4", "0.9.10": "0.9.10", "0.8.11": "0.8.11", "0.7.5": "0.7.5",
         "0.6.2": "0.6.2", "0.5.9.post1": "0.5.9", "0.4.0.post2": "0.4.0"}
# 0.9.10 and 0.10.4 validate as 0.11.2 does (its __main__ block and train(): parity_openrlhf.OpenRLHFOracle), in their
# own flag names; 0.9.10 has no over-sampling check (--vllm_generate_batch_size against --rollout_batch_size)
# (0.8.11 has no --partial_rollout either)
LIKE_NEWEST = {"0.10.4": NEWEST_DRIVER, "0.9.10": NEWEST_DRIVER - {"openrlhf.driver.generate_batch_needs_async"},
               "0.8.11": NEWEST_DRIVER - {"openrlhf.driver.generate_batch_needs_async",
                                          "openrlhf.driver.partial_rollout_needs_async"}}
# 0.7.5 has no async training or dynamic filtering either (its flags: release_flags.py)
LIKE_NEWEST["0.7.5"] = LIKE_NEWEST["0.8.11"] - {"openrlhf.driver.dynamic_filtering_needs_n",
                                                "openrlhf.driver.dynamic_filtering_needs_remote_reward",
                                                "openrlhf.driver.async_forbids_vllm_sleep"}

DRIVER = {
    **LIKE_NEWEST,
    "0.6.2": frozenset({
        "openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.packing_needs_vllm",
        "openrlhf.driver.vllm_num_engines_required", "openrlhf.driver.rollout_divisible_by_actor_world", "openrlhf.driver.zero3_needs_vllm",
        "openrlhf.driver.vllm_engines_match_actor_world", "openrlhf.driver.actor_world_divisible_by_critic_world",
    }),
    "0.5.9": frozenset({
        "openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.packing_needs_vllm",
        "openrlhf.driver.vllm_num_engines_required", "openrlhf.driver.rollout_divisible_by_actor_world",
        "openrlhf.driver.zero3_needs_vllm", "openrlhf.driver.vllm_engines_match_actor_world",
        "openrlhf.driver.actor_world_divisible_by_critic_world",
    }),
    "0.4.0": frozenset({
        "openrlhf.driver.vllm_num_engines_required", "openrlhf.driver.actor_world_power_of_two", "openrlhf.driver.critic_world_power_of_two",
        "openrlhf.driver.actor_world_divisible_by_critic_world", "openrlhf.driver.zero3_needs_vllm",
    }),
}
TRAIN = {
    **{pack: NEWEST_TRAIN for pack in LIKE_NEWEST},
    "0.6.2": frozenset({"openrlhf.colocate.actor_ref_same_size", "openrlhf.colocate.vllm_matches_actor",
                        "openrlhf.colocate.critic_reward_same_size"}),
    "0.5.9": frozenset({"openrlhf.colocate.actor_ref_same_size", "openrlhf.colocate.vllm_matches_actor",
                        "openrlhf.colocate.critic_reward_same_size"}),
    "0.4.0": frozenset({"openrlhf.colocate.actor_ref_same_size", "openrlhf.colocate.critic_reward_same_size"}),
}
DS_GROUPS = ("actor", "ref", "critic", "reward", "ema")
DEEPSPEED = frozenset({f"openrlhf.deepspeed.{g}_batch" for g in DS_GROUPS})

PATTERNS = [
    (r"requires n_samples_per_prompt > 1", "openrlhf.driver.group_estimator_needs_n"),  # 0.5.9: "RLOO requires ..."
    # an unset --vllm_num_engines (None) compared with 0 (0.6.2's _validate_args) or 1 (0.4.0's __main__ block)
    (r"'>=?' not supported between instances of 'NoneType' and 'int'",
     ("openrlhf.driver.vllm_num_engines_required", "openrlhf.driver.zero3_needs_vllm")),
    (r"Only support `--packing_samples` with vLLM", "openrlhf.driver.packing_needs_vllm"),
    (r"rollout_bach_size must be divisible by actor_world_size", "openrlhf.driver.rollout_divisible_by_actor_world"),
    (r"ZeRO-3 is only supported when vLLM enabled", "openrlhf.driver.zero3_needs_vllm"),
    (r"actor_world_size must be divisible by vllm_num_engines", "openrlhf.driver.vllm_engines_match_actor_world"),
    (r"actor_world_size must be divisible by critic_world_size",
     "openrlhf.driver.actor_world_divisible_by_critic_world"),
    (r"actor_world_size must be power of 2", "openrlhf.driver.actor_world_power_of_two"),
    (r"critic_world_size must be power of 2", "openrlhf.driver.critic_world_power_of_two"),
    (r"must be the same when colocate actor and ref", "openrlhf.colocate.actor_ref_same_size"),
    (r"must be equal to vllm_num_engines \* vllm_tensor_parallel_size", "openrlhf.colocate.vllm_matches_actor"),
    (r"must be the same when colocate critic and reward", "openrlhf.colocate.critic_reward_same_size"),
    *[(rf"^AssertionError: \[{g}\] ", f"openrlhf.deepspeed.{g}_batch") for g in DS_GROUPS],
]

_BUNDLES = [
    Allowed("openrlhf.colocate.critic_fits_actor_bundles", "no assert: Ray rejects the bundle index when it "
            "places the critic on the actor's placement group (mocked here)"),
    Allowed("openrlhf.colocate.reward_fits_actor_bundles", "as above"),
    Allowed("openrlhf.ray.gpu_budget", "needs --gpus (the Ray cluster's size); Ray waits for the placement group"),
]
# before 0.10.2 one flag (--ref_reward_offload) sets both offloads: no config of these releases can break the rule
# that keeps our two variables equal, so their parser has nothing to compare it with
_ONE_OFFLOAD_FLAG = Allowed("openrlhf.driver.ref_reward_offload_one_flag", "no config of the release breaks it: one "
                            "flag, --ref_reward_offload, sets the reference's and the reward model's offload")
ALLOWED = {
    "0.10.4": NEWEST_ALLOWED,
    "0.9.10": [a for a in NEWEST_ALLOWED if a.rule != "openrlhf.driver.legacy_flag_names"] + [_ONE_OFFLOAD_FLAG],
    "0.8.11": [a for a in NEWEST_ALLOWED if a.rule != "openrlhf.driver.legacy_flag_names"] + [_ONE_OFFLOAD_FLAG],
    "0.7.5": [a for a in NEWEST_ALLOWED if a.rule != "openrlhf.driver.legacy_flag_names"] + [_ONE_OFFLOAD_FLAG],
    "0.5.9": _BUNDLES + [_ONE_OFFLOAD_FLAG],
    "0.6.2": [
        Allowed("openrlhf.colocate.critic_fits_actor_bundles", "no assert: Ray rejects the bundle index when it "
                "places the critic on the actor's placement group (mocked here)"),
        Allowed("openrlhf.colocate.reward_fits_actor_bundles", "as above"),
        Allowed("openrlhf.ray.gpu_budget", "needs --gpus (the Ray cluster's size); Ray waits for the placement group"),
        _ONE_OFFLOAD_FLAG,
    ],
    "0.4.0": [
        Allowed("openrlhf.ray.gpu_budget", "needs --gpus (the Ray cluster's size); Ray waits for the placement group"),
        _ONE_OFFLOAD_FLAG,
    ],
}


def installed() -> tuple[str, str] | None:
    """(the installed openrlhf release, our pack for it), or None when it is not one we compare."""
    try:
        version = importlib.metadata.version("openrlhf")
    except importlib.metadata.PackageNotFoundError:
        return None
    return (version, PACKS[version]) if version in PACKS else None


class ReleaseOracle(TrainPPORayOracle):
    def __init__(self, pack: str):
        super().__init__()
        self.pack = pack
        funcs = [n for n in self.tree.body if isinstance(n, ast.FunctionDef)]
        ray = mock.MagicMock(name="ray")
        self._globals = {
            "__name__": "openrlhf.cli.train_ppo_ray", "os": os, "ray": ray, "torch": mock.MagicMock(name="torch"),
            "List": list, "placement_group": mock.MagicMock(), "create_vllm_engines": mock.MagicMock(),
            "PPORayActorGroup": mock.MagicMock(), "get_strategy": mock.MagicMock(),
            **{name: mock.MagicMock(name=name) for name in (
                "ActorModelRayActor", "CriticModelRayActor", "ReferenceModelRayActor", "RewardModelRayActor")},
        }
        exec(compile(ast.Module(funcs, []), self.path, "exec"), self._globals)

    def on_train(self, args: argparse.Namespace) -> None:
        self._globals["_validate_args"](args)  # train() calls it first

    def train(self, case: Mapping[str, Any]) -> Verdict | None:
        verdict, args = self._run_main(case)
        if not verdict.ok:
            return None
        with contextlib.redirect_stdout(io.StringIO()):
            return Verdict.run(lambda: self._globals["train"](types.SimpleNamespace(**vars(args))))

    def ds_groups(self, args: argparse.Namespace) -> list[tuple[str, int]]:
        groups = [("actor", "actor")]
        if self.pack in ("0.4.0", "0.5.9") or args.init_kl_coef > 0:
            groups.append(("ref", "ref"))
        if self.pack == "0.4.0" or args.critic_pretrain:
            groups.append(("critic", "critic"))
        if not args.remote_rm_url:
            groups.append(("reward", "reward"))
        if args.enable_ema:
            groups.append(("ema", "actor"))
        return [(name, getattr(args, f"{g}_num_nodes") * getattr(args, f"{g}_num_gpus_per_node"))
                for name, g in groups]

    def ds_batch(self, args: argparse.Namespace) -> tuple[int, int]:
        return args.train_batch_size * getattr(args, "ring_attn_size", 1), args.micro_train_batch_size

    def oracles(self) -> list[Oracle]:
        return [
            Oracle("driver: train_ppo_ray.py __main__ and _validate_args", self.driver, DRIVER[self.pack], PATTERNS),
            Oracle("trainer_init: train_ppo_ray.py:train (layout asserts)", self.train, TRAIN[self.pack], PATTERNS),
            Oracle("worker_init: deepspeed DeepSpeedConfig._batch_assertion", self.deepspeed, DEEPSPEED, PATTERNS),
        ]


# ------------------------------------------------------------------ generator
def release_case(rng: random.Random, pack: str) -> dict[str, Any]:
    """A config in the release's own underscore flags, on the boundaries of its checks."""
    new = pack != "0.4.0"
    ring_ok = pack == "0.6.2"
    case: dict[str, Any] = {"pretrain": "m", "reward_pretrain": "rm"}
    gpn = rng.choice([1, 2, 3, 4, 6, 8, 8])
    nodes = rng.choice([1, 1, 1, 2, 4])
    case["actor_num_nodes"], case["actor_num_gpus_per_node"] = nodes, gpn
    for g in ("ref", "critic", "reward"):
        r = rng.random()
        if r < 0.5:
            case[f"{g}_num_nodes"], case[f"{g}_num_gpus_per_node"] = nodes, gpn
        elif r < 0.8:
            case[f"{g}_num_nodes"], case[f"{g}_num_gpus_per_node"] = rng.choice([1, 1, 2]), rng.choice([1, 2, 3, 4, 8])
    if new:
        case["advantage_estimator"] = rng.choice(["gae", "gae", "group_norm", "rloo", "reinforce", "reinforce_baseline"]
                                                 if ring_ok else ["gae", "gae", "rloo", "reinforce"])
    if rng.random() < 0.5:
        case["init_kl_coef"] = rng.choice([0.0, 0.001, 0.01])
    if rng.random() < 0.3:
        case["remote_rm_url"] = "http://127.0.0.1:5000/get_reward"
    ring = rng.choice([1, 2, 4]) if ring_ok and rng.random() < 0.2 else 1
    if ring != 1:
        case["ring_attn_size"] = ring
    w = nodes * gpn
    dp = max(1, w // ring)
    n = rng.choice([1, 1, 2, 4, 8])
    case["n_samples_per_prompt"] = n
    m = rng.choice([1, 1, 2, 4])
    case["micro_train_batch_size"] = m
    r = rng.random()
    case["train_batch_size"] = (multiple_near(rng, m * dp, 8) if r < 0.6 else near(rng, m * w) if r < 0.8
                                else rng.choice([1, 8, 128, rng.randint(1, 300)]))
    case["micro_rollout_batch_size"] = rng.choice([1, 2, 4, 8])
    r = rng.random()
    case["rollout_batch_size"] = (multiple_near(rng, w, 8) if r < 0.5
                                  else rng.choice([1, 8, 32, 128, 1024, rng.randint(1, 200)]))
    case["zero_stage"] = rng.choice([1, 2, 2, 3])
    if rng.random() < 0.8:
        tv = rng.choice([1, 1, 2, 4])
        case["vllm_tensor_parallel_size"] = tv
        case["vllm_num_engines"] = max(1, w // tv) if rng.random() < 0.6 else rng.choice([1, 2, 3, 4, 16])
    switches = [("colocate_actor_ref", 0.2), ("colocate_critic_reward", 0.15), ("enable_ema", 0.1)]
    if new:
        switches += [("colocate_all_models", 0.3), ("vllm_enable_sleep", 0.2), ("packing_samples", 0.2)]
    if new and rng.random() < 0.3:
        case["vllm_gpu_memory_utilization"] = rng.choice([0.5, 0.85, 0.9, 0.95])
    for flag, p in switches:
        if rng.random() < p:
            case[flag] = True
    return case


def release_oracle(pack: str) -> TrainPPORayOracle:
    """The oracle for the installed release of our ``pack``."""
    if pack in LIKE_NEWEST:
        return OpenRLHFOracle(pack, DRIVER[pack])
    return ReleaseOracle(pack)


def release_cases(pack: str, seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """0.7.5 to 0.10.4: 0.11.2's generator in the release's names, less the flags it lacks (0.8.11: no
    --partial_rollout; 0.7.5: no async training, dynamic batch or dynamic filtering either)."""
    rng = random.Random(seed)
    for _ in range(count):
        if pack in LIKE_NEWEST:
            yield {release_key(k, pack): v for k, v in openrlhf_case(rng).items()
                   if release_has(k, pack)}, {}
        else:
            yield release_case(rng, pack), {}
