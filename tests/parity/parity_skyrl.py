"""SkyRL (skyrl-train 0.3.1) parity: ``skyrl_train/utils/utils.py:validate_cfg`` against our skyrl rules.

skyrl-train needs Python 3.12 and a GPU stack (vLLM, flash-attn, Ray): CI installs its wheel alone (``pip install
--no-deps --ignore-requires-python --target DIR skyrl-train==0.3.1``) and puts DIR on PYTHONPATH. The harness
loads only the validation module, ``skyrl_train/utils/utils.py`` as the wheel ships it (never a copy), with its
heavy imports stubbed: ``ray`` (placement groups and ``ray.remote``, which validation never calls), ``torch``
(one annotation), ``loguru`` (warnings), and ``skyrl_train.utils.ppo_utils``, which ``validate_cfg`` imports for
its registries of advantage estimators and policy losses: the stub's registries list the names of the wheel's own
``AdvantageEstimator`` and ``PolicyLossType`` enums, read from ``ppo_utils.py`` with ``ast``. The config is the
wheel's ``ppo_base_config.yaml`` with the defaults list composed as Hydra composes it (the DeepSpeed and Megatron
sub-configs), under the case's dotted overrides (OmegaConf), as ``skyrl_train.entrypoints.main_base`` gets it.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import random
import sys
import types
from contextlib import contextmanager
from typing import Any, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, divisor_near, multiple_near, near

from rlbatch_solver.frameworks.skyrl.errors import PATTERNS as SKYRL_PATTERNS
from rlbatch_solver.frameworks.skyrl.rules import RULES
from rlbatch_solver.rules.base import Stage

DRIVER = frozenset(r.id for r in RULES if r.stage == Stage.DRIVER)
PATTERNS = [(p.pattern, p.rules) for p in SKYRL_PATTERNS] + [
    # validate_batch_sizes' first asserts carry no message
    (r"^AssertionError: ?$", ("skyrl.batch.train_covers_mini", "skyrl.batch.train_covers_critic_mini")),
    # a Ulysses size above the GPUs: SkyRL divides by the data-parallel size 0
    (r"^ZeroDivisionError", ("skyrl.batch.sp_within_policy_gpus", "skyrl.batch.critic_sp_within_gpus")),
]
ALLOWED = [
    Allowed("skyrl.placement.colocate_all_ref_same_gpus", "trainer_init: RayPPOTrainer.build_models asserts it while "
            "it creates the Ray actor groups; hand-made cases in tests/test_skyrl.py"),
    Allowed("skyrl.placement.colocate_all_critic_same_gpus", "as above"),
    Allowed("skyrl.ray.gpu_budget", "needs --gpus (the Ray cluster's size); Ray places the groups"),
    Allowed("skyrl.fsdp.sp_divides_gpus", "worker_init: torch's init_device_mesh (dp, sp) in the Ray workers"),
    Allowed("skyrl.ulysses.heads_divisible", "worker_init: the Ulysses monkey patch reads the model's config"),
    Allowed("skyrl.ulysses.kv_heads_divisible", "as above"),
]


def package_dir() -> str | None:
    spec = importlib.util.find_spec("skyrl_train")
    return spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None


def _enum_values(path: str, *names: str) -> list[str]:
    """The string values of the named enums in a source file (read, not executed)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            out += [st.value.value for st in node.body if isinstance(st, ast.Assign)
                    and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)]
    return out


def _registry(names: list[str]) -> type:
    return type("Registry", (), {"list_available": staticmethod(lambda: list(names))})


class SkyRLOracle:
    def __init__(self):
        from omegaconf import OmegaConf

        self._omegaconf = OmegaConf
        root = package_dir()
        assert root, "skyrl_train is not importable"
        self._root = root
        utils_dir = os.path.join(root, "utils")
        ppo = os.path.join(utils_dir, "ppo_utils.py")
        ppo_stub = types.ModuleType("skyrl_train.utils.ppo_utils")
        ppo_stub.AdvantageEstimatorRegistry = _registry(_enum_values(ppo, "AdvantageEstimator"))
        ppo_stub.PolicyLossRegistry = _registry(_enum_values(ppo, "PolicyLossType"))
        ppo_stub.repopulate_all_registries = lambda: None
        pkg = types.ModuleType("skyrl_train")
        pkg.__path__ = [root]
        sub = types.ModuleType("skyrl_train.utils")
        sub.__path__ = [utils_dir]
        ray = types.ModuleType("ray")
        ray.remote = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
        ray_util = types.ModuleType("ray.util")
        ray_pg = types.ModuleType("ray.util.placement_group")
        for name in ("placement_group", "PlacementGroupSchedulingStrategy", "PlacementGroup", "placement_group_table"):
            setattr(ray_pg, name, mock.MagicMock(name=name))
        torch = types.ModuleType("torch")
        torch.dtype = type("dtype", (), {})
        loguru = types.ModuleType("loguru")
        loguru.logger = mock.MagicMock(name="logger")
        self._stubs = {"skyrl_train": pkg, "skyrl_train.utils": sub, "skyrl_train.utils.ppo_utils": ppo_stub,
                       "ray": ray, "ray.util": ray_util, "ray.util.placement_group": ray_pg, "torch": torch,
                       "loguru": loguru}
        with self._stubbed():
            spec = importlib.util.spec_from_file_location("skyrl_train.utils.utils", os.path.join(utils_dir, "utils.py"))
            module = importlib.util.module_from_spec(spec)
            sys.modules["skyrl_train.utils.utils"] = module
            spec.loader.exec_module(module)
        self._validate = module.validate_cfg
        self._base = self._base_config()

    @contextmanager
    def _stubbed(self) -> Iterator[None]:
        with mock.patch.dict(sys.modules, self._stubs):
            yield

    def _base_config(self):
        """ppo_base_config.yaml with its defaults list composed (Hydra's ``group@package: option``)."""
        cfg_dir = os.path.join(self._root, "config")
        OmegaConf = self._omegaconf
        base = OmegaConf.load(os.path.join(cfg_dir, "ppo_base_config.yaml"))
        defaults = base.pop("defaults")
        for entry in defaults:
            if entry == "_self_":
                continue
            (group_package, option), = dict(entry).items()
            group, _, package = str(group_package).partition("@")
            path = os.path.join(cfg_dir, group, f"{option}.yaml")
            node = OmegaConf.load(path)
            OmegaConf.update(base, package or group, node, merge=True)
        return base

    def config(self, case: Mapping[str, Any]):
        OmegaConf = self._omegaconf
        dotlist = [f"{k}={_hydra(v)}" for k, v in case.items()]
        return OmegaConf.merge(self._base, OmegaConf.from_dotlist(dotlist))

    def driver(self, case: Mapping[str, Any]) -> Verdict:
        cfg = self.config(case)
        with self._stubbed():
            return Verdict.run(lambda: self._validate(cfg))

    def oracles(self) -> list[Oracle]:
        return [Oracle("driver: skyrl_train/utils/utils.py:validate_cfg", self.driver, DRIVER, PATTERNS)]


def _hydra(v: Any) -> str:
    if v is None:
        return "null"
    if v is True or v is False:
        return str(v).lower()
    return str(v)


def skyrl_cases(seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """SkyRL configs on the rules' edges: floored per-GPU sizes, colocate_all GPU counts, the lcm of the dp sizes,
    the strategy and backend checks. Only the keys validate_cfg reads are set; the logger is the console (the wandb
    logger asks for an API key) and flash_attn off under Megatron (validate_megatron_cfg imports it)."""
    rng = random.Random(seed)
    for _ in range(count):
        per_node = rng.choice((1, 2, 3, 4, 6, 8, 8))
        nodes = rng.choice((1, 1, 1, 2))
        world = per_node * nodes
        n = rng.choice((1, 2, 4, 5, 8, 16))
        sp = rng.choice([d for d in (1, 1, 1, 2, 4) if world % d == 0]) if rng.random() < 0.85 else rng.choice((3, 4, 16))
        dp = max(1, world // sp)
        mini = rng.choice((multiple_near(rng, max(1, dp // n) or 1, 6), rng.choice((1, 2, 8, 32, 256))))
        tbs = rng.choice((mini * rng.randint(1, 6), mini * rng.randint(1, 6), near(rng, mini * rng.randint(1, 4)),
                          rng.choice((1, 4, 64, 1024)) if rng.random() < 0.5 else mini))
        per_gpu = max(1, mini * n // dp)
        micro = rng.choice((divisor_near(rng, per_gpu), 1, rng.choice((2, 4, 64))))
        tp = rng.choice((1, 1, 2, 4, 8))
        engines = rng.choice((max(1, world // tp), max(1, world // tp), near(rng, max(1, world // tp)), 1))
        colocate_all = rng.random() < 0.6
        strategy = rng.choice(("fsdp2", "fsdp2", "fsdp2", "fsdp", "deepspeed", "megatron"))
        kl_loss = rng.random() < 0.7
        estimator = rng.choice(("grpo", "grpo", "rloo", "gae", "reinforce++"))
        case: dict[str, Any] = {
            "trainer.logger": "console",
            "trainer.strategy": strategy,
            "trainer.placement.colocate_all": colocate_all,
            "trainer.placement.colocate_policy_ref": rng.random() < 0.7,
            "trainer.placement.policy_num_nodes": nodes,
            "trainer.placement.policy_num_gpus_per_node": per_node,
            "trainer.placement.ref_num_nodes": rng.choice((nodes, nodes, 1, 2)),
            "trainer.placement.ref_num_gpus_per_node": rng.choice((per_node, per_node, 1, 2, 3, 4, 6, 8)),
            "trainer.placement.critic_num_nodes": rng.choice((nodes, 1)),
            "trainer.placement.critic_num_gpus_per_node": rng.choice((per_node, 1, 2, 4)),
            "trainer.train_batch_size": tbs,
            "trainer.policy_mini_batch_size": mini,
            "trainer.critic_mini_batch_size": rng.choice((mini, max(1, mini // 2), mini * 2, 3)),
            "trainer.micro_train_batch_size_per_gpu": micro,
            "trainer.micro_forward_batch_size_per_gpu": rng.choice((1, 2, 8, 64)),
            "generator.n_samples_per_prompt": n,
            "trainer.policy.sequence_parallel_size": sp,
            "trainer.ref.sequence_parallel_size": rng.choice((sp, 1, 2)),
            "trainer.critic.sequence_parallel_size": rng.choice((1, 1, 2, 8)),
            "generator.num_inference_engines": engines,
            "generator.inference_engine_tensor_parallel_size": tp,
            "generator.inference_engine_pipeline_parallel_size": 2 if rng.random() < 0.1 else 1,
            "generator.inference_engine_data_parallel_size": 2 if rng.random() < 0.1 else 1,
            "generator.backend": "sglang" if rng.random() < 0.1 else "vllm",
            "generator.async_engine": rng.random() < 0.9,
            "generator.batched": rng.random() < 0.7,
            "trainer.algorithm.use_kl_loss": kl_loss,
            "trainer.algorithm.use_kl_in_reward": (not kl_loss and rng.random() < 0.3) or rng.random() < 0.03,
            "trainer.algorithm.advantage_estimator": estimator,
            "trainer.policy.fsdp_config.cpu_offload": rng.random() < 0.1,
            "trainer.critic.fsdp_config.cpu_offload": rng.random() < 0.05,
            "trainer.policy.optimizer_config.offload_after_step": rng.random() < 0.9,
            "trainer.critic.optimizer_config.offload_after_step": rng.random() < 0.95,
            "trainer.policy.model.lora.rank": 8 if rng.random() < 0.15 else 0,
            "trainer.use_sample_packing": rng.random() < 0.8,
            "trainer.max_prompt_length": 512,
            "generator.max_turns": 3 if rng.random() < 0.2 else 1,
        }
        if rng.random() < 0.1:  # MoE engines: expert parallel = dp x tp, or not
            ep = rng.choice((2, 4, case["generator.inference_engine_data_parallel_size"] * tp))
            case["generator.inference_engine_expert_parallel_size"] = ep
        if case["generator.backend"] == "sglang" and rng.random() < 0.6:
            case["generator.inference_engine_tensor_parallel_size"] = 1
        if rng.random() < 0.15:
            case["generator.max_input_length"] = rng.choice((256, 512, 512, 1024))
        if (estimator == "gae" and rng.random() < 0.85) or rng.random() < 0.1:
            case["trainer.critic.model.path"] = "Qwen/Qwen2.5-0.5B-Instruct"
        if strategy == "deepspeed":
            case["deepspeed_config.train.zero_optimization.stage"] = 2 if rng.random() < 0.2 else 3
        if strategy == "megatron":
            case["trainer.flash_attn"] = False
            for role in ("policy", "ref"):
                base = f"trainer.{role}.megatron_config"
                case[f"{base}.tensor_model_parallel_size"] = rng.choice((1, 2, 4, 3))
                case[f"{base}.pipeline_model_parallel_size"] = rng.choice((1, 1, 2))
                case[f"{base}.context_parallel_size"] = rng.choice((1, 1, 2))
            if rng.random() < 0.7:
                case["trainer.policy.sequence_parallel_size"] = case["trainer.ref.sequence_parallel_size"] = 1
        yield case, {}
