"""EasyR1 0.3.2 parity: EasyR1's own config merge and start-up checks against our easyr1 rules.

EasyR1 is not on PyPI: its source tree at tag v0.3.2 (commit a23fb5b) is read from ``EASYR1_SRC`` (a checkout or an
unpacked GitHub archive holding ``verl/trainer/ray_trainer.py``). What runs is EasyR1's code, loaded file by file
from that tree (never copied here):

* the driver, as ``verl/trainer/main.py:main`` runs it: ``OmegaConf.structured(PPOConfig())`` merged with the case's
  dotted keys, ``OmegaConf.to_object``, ``PPOConfig.deep_post_init`` (the dataclasses of ``verl/trainer/config.py``
  and ``verl/workers/*/config.py``), then ``RayPPOTrainer.__init__`` (``verl/trainer/ray_trainer.py``), whose checks
  are the batch-size ones;
* the GPU workers' start-up, as ``FSDPWorker.__init__`` runs it (``verl/workers/fsdp_workers.py``):
  ``FSDPWorker._init_dist_mesh`` for the actor (and the critic when the estimator is gae) on the driver's config,
  with ``torch.distributed.get_world_size`` answering the case's GPU count;
* the rollout's start-up: ``FSDPWorker._build_rollout`` and the ``vLLMRollout.__init__`` it calls
  (``verl/workers/rollout/vllm_rollout_spmd.py``), up to the vLLM engine (a stub).

Those modules import torch, Ray, vLLM, transformers and EasyR1's GPU code at their top: the harness puts stand-ins in
``sys.modules`` while it loads them (no check reads them). ``verl.trainer.core_algos`` is one of them: its
``AdvantageEstimator`` enum is rebuilt from the file's own members (read with ``ast``), which ``RayPPOTrainer``
compares the estimator against. The package ``__init__`` files are not run (they import the GPU code); each config
module is loaded as a file and its names set on its package.

The DataProto chunk/split asserts of the first step (``verl/protocol.py``) work on tensors: they are allowed here,
with hand-made cases in tests/test_easyr1.py.
"""

from __future__ import annotations

import ast
import enum
import importlib.abc
import importlib.util
import io
import os
import random
import sys
import types
from contextlib import contextmanager, redirect_stdout
from typing import Any, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, divisor_near, multiple_near, near

from rlbatch_solver.frameworks.easyr1.errors import PATTERNS as EASYR1_PATTERNS

VERSION = "0.3.2"
DRIVER = frozenset({
    "easyr1.trainer.rollout_divisible_by_global", "easyr1.trainer.samples_divisible_by_experience_micro",
    "easyr1.trainer.critic_rollout_divisible_by_global", "easyr1.trainer.critic_samples_divisible_by_experience_micro",
    "easyr1.trainer.group_needs_n"})
MESH = frozenset({
    "easyr1.actor.global_covers_gpus", "easyr1.actor.micro_divides_per_device",
    "easyr1.actor.cpu_offload_no_accumulation",
    "easyr1.critic.global_covers_gpus", "easyr1.critic.micro_divides_per_device",
    "easyr1.critic.cpu_offload_no_accumulation"})
ROLLOUT = frozenset({"easyr1.rollout.tp_divides_gpus", "easyr1.rollout.tp_le_gpus",
                     "easyr1.rollout.batched_tokens_cover_sample"})
PATTERNS = [(p.pattern, p.rules) for p in EASYR1_PATTERNS]
ALLOWED = [
    Allowed("easyr1.fsdp.sp_divides_gpus", "worker_init: torch's init_device_mesh (dp, sp) refuses the mesh before "
            "_init_dist_mesh's checks (the mesh oracle skips such cases); hand-made cases in tests/test_easyr1.py"),
    Allowed("easyr1.dispatch.prompts_divisible_by_gpus", "first_step: DataProto.chunk on the generation batch's "
            "tensors (verl/protocol.py); hand-made cases in tests/test_easyr1.py"),
    Allowed("easyr1.dispatch.samples_divisible_by_gpus", "first_step: DataProto.chunk, as above"),
    Allowed("easyr1.actor.update_batches_split_step", "first_step: DataProto.split in dp_actor.update_policy, as "
            "above"),
    Allowed("easyr1.actor.experience_micro_splits_local", "first_step: DataProto.split in dp_actor.compute_log_prob"),
    Allowed("easyr1.critic.update_batches_split_step", "first_step: DataProto.split in dp_critic.update_critic"),
    Allowed("easyr1.critic.experience_micro_splits_local", "first_step: DataProto.split in dp_critic.compute_values"),
    Allowed("easyr1.ulysses.heads_divisible", "first_step: the Ulysses all-to-all over the model's heads"),
]


# what EasyR1's modules import that no check reads: any module under these names is a stand-in while they load
HEAVY = ("numpy", "psutil", "ray", "torch", "torchdata", "transformers", "accelerate", "codetiming", "tensordict",
         "vllm", "peft", "qwen_vl_utils", "PIL", "verl")


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a stand-in for any module under HEAVY not already in sys.modules (EasyR1's own GPU code included)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stand_in(spec.name)

    def exec_module(self, module):
        pass


class _Stand_in(types.ModuleType):
    """A module (and package) whose every attribute is a mock: what EasyR1's start-up code imports but its checks
    never read."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = mock.MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def source_dir() -> str | None:
    src = os.environ.get("EASYR1_SRC")
    return src if src and os.path.isfile(os.path.join(src, "verl", "trainer", "ray_trainer.py")) else None


def source_version(src: str) -> str | None:
    with open(os.path.join(src, "verl", "__init__.py")) as f:
        for node in ast.parse(f.read()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
                return node.value.value
    return None


def _enum_members(path: str, name: str) -> dict[str, str]:
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {st.targets[0].id: st.value.value for st in node.body
                    if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant)}
    raise AssertionError(f"{name} not in {path}")


class EasyR1Oracle:
    def __init__(self, src: str):
        from omegaconf import OmegaConf

        self._omegaconf = OmegaConf
        self._src = src
        self._modules: dict[str, types.ModuleType] = {}
        verl = os.path.join(src, "verl")
        # packages whose __init__ is not run (it imports the GPU code)
        for pkg, path in (("verl", ""), ("verl.trainer", "trainer"), ("verl.workers", "workers"),
                          ("verl.workers.actor", "workers/actor"), ("verl.workers.critic", "workers/critic"),
                          ("verl.workers.reward", "workers/reward"), ("verl.workers.rollout", "workers/rollout")):
            module = types.ModuleType(pkg)
            module.__path__ = [os.path.join(verl, path)]
            self._modules[pkg] = module
        world = types.SimpleNamespace(size=1)
        self._world = world
        torch = _Stand_in("torch")
        dist = _Stand_in("torch.distributed")
        dist.get_world_size = lambda *a, **k: world.size
        dist.is_initialized = lambda: True
        torch.distributed = dist
        self._modules["torch"], self._modules["torch.distributed"] = torch, dist
        # base classes must be classes (FSDPWorker(Worker), vLLMRollout(BaseRollout))
        base = _Stand_in("verl.single_controller.base")
        base.Worker = type("Worker", (), {})
        self._modules["verl.single_controller.base"] = base
        core = _Stand_in("verl.trainer.core_algos")
        members = _enum_members(os.path.join(verl, "trainer", "core_algos.py"), "AdvantageEstimator")
        core.AdvantageEstimator = enum.Enum("AdvantageEstimator", members, type=str)
        self._modules["verl.trainer.core_algos"] = core
        reward = self._modules["verl.workers.reward"]
        reward.FunctionRewardManager = mock.MagicMock(name="FunctionRewardManager")
        with self._stubbed():
            for pkg in ("actor", "critic", "reward", "rollout"):  # what each package's __init__ takes from .config
                cfg = self._load(f"verl.workers.{pkg}.config", f"workers/{pkg}/config.py")
                for name in dir(cfg):
                    if name.endswith("Config"):
                        setattr(self._modules[f"verl.workers.{pkg}"], name, getattr(cfg, name))
            self._load("verl.workers.config", "workers/config.py")
            self._ppo_config = self._load("verl.trainer.config", "trainer/config.py").PPOConfig
            self._load("verl.workers.rollout.base", "workers/rollout/base.py")
            self._modules["verl.workers.rollout"].vLLMRollout = self._load("verl.workers.rollout.vllm_rollout_spmd",
                                             "workers/rollout/vllm_rollout_spmd.py").vLLMRollout
            self._worker = self._load("verl.workers.fsdp_workers", "workers/fsdp_workers.py").FSDPWorker
            self._trainer = self._load("verl.trainer.ray_trainer", "trainer/ray_trainer.py").RayPPOTrainer
        self._default = OmegaConf.structured(self._ppo_config())

    def _load(self, name: str, path: str) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location(name, os.path.join(self._src, "verl", path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = self._modules[name] = module
        spec.loader.exec_module(module)
        return module

    @contextmanager
    def _stubbed(self) -> Iterator[None]:
        finder = _StandInFinder()
        sys.meta_path.insert(0, finder)
        try:
            with mock.patch.dict(sys.modules, self._modules), redirect_stdout(io.StringIO()):  # EasyR1's prints
                # the real packages under those names (verl 0.9.1, torch, Ray where installed) are hidden meanwhile;
                # patch.dict puts them back
                for name in [k for k in sys.modules if k.split(".")[0] in HEAVY and k not in self._modules]:
                    del sys.modules[name]
                yield
        finally:
            sys.meta_path.remove(finder)

    def config(self, case: Mapping[str, Any]):
        """verl/trainer/main.py:main: the dataclass defaults, the command line's keys, to_object, deep_post_init."""
        OmegaConf = self._omegaconf
        merged = OmegaConf.merge(self._default, OmegaConf.from_dotlist(overrides(case)))
        config = OmegaConf.to_object(merged)
        config.deep_post_init()
        return config

    def driver(self, case: Mapping[str, Any]) -> Verdict:
        def run():
            config = self.config(case)
            self._trainer(config=config, tokenizer=None, processor=None, train_dataloader=[None] * 4,
                          val_dataloader=[None], role_worker_mapping={}, resource_pool_manager=None)
        with self._stubbed():
            return Verdict.run(run)

    def _gpus(self, case: Mapping[str, Any]) -> int:
        return int(case.get("trainer.nnodes", 1)) * int(case.get("trainer.n_gpus_per_node", 8))

    def mesh(self, case: Mapping[str, Any]) -> Verdict | None:
        """FSDPWorker.__init__: _init_dist_mesh for the actor (role actor_rollout_ref), then the critic's worker."""
        world = self._gpus(case)
        with self._stubbed():
            config = self.config(case)
            if any(world % getattr(config.worker, role).ulysses_size for role in ("actor", "critic")):
                return None  # torch's init_device_mesh refuses the (dp, sp) mesh first
            self._world.size = world
            worker = mock.MagicMock(name="FSDPWorker")
            worker.config = config.worker

            def run():
                self._worker._init_dist_mesh(worker, config.worker.actor, "actor")
                if config.algorithm.adv_estimator == "gae":
                    self._worker._init_dist_mesh(worker, config.worker.critic, "critic")
            return Verdict.run(run)

    def rollout(self, case: Mapping[str, Any]) -> Verdict:
        """FSDPWorker.init_model -> _build_rollout -> vLLMRollout.__init__ (the engine itself a stub)."""
        world = self._gpus(case)
        with self._stubbed():
            config = self.config(case)
            self._world.size = world
            worker = mock.MagicMock(name="FSDPWorker")
            worker.config, worker.world_size = config.worker, world
            return Verdict.run(lambda: self._worker._build_rollout(worker))

    def oracles(self) -> list[Oracle]:
        return [
            Oracle("driver: verl/trainer/main.py config merge + RayPPOTrainer.__init__", self.driver, DRIVER, PATTERNS),
            Oracle("worker_init: FSDPWorker._init_dist_mesh", self.mesh, MESH, PATTERNS),
            Oracle("worker_init: FSDPWorker._build_rollout + vLLMRollout.__init__", self.rollout, ROLLOUT, PATTERNS),
        ]


def overrides(case: Mapping[str, Any]) -> list[str]:
    """The case as EasyR1's command line: ``key=value`` (OmegaConf.from_cli)."""
    return [f"{k}={'null' if v is None else str(v).lower() if isinstance(v, bool) else v}" for k, v in case.items()]


# the other keys of our rules (rules.py ROWS), with values EasyR1's dataclasses accept
OTHER_KEYS = [
    ("worker.actor.padding_free", (True, False)), ("worker.actor.fsdp.fsdp_size", (-1, 2, 8)),
    ("worker.actor.offload.offload_params", (True, False)), ("worker.actor.offload.offload_optimizer", (True, False)),
    ("worker.actor.model.enable_gradient_checkpointing", (True, False)),
    ("worker.actor.use_torch_compile", (True, False)),
    ("worker.ref.offload.offload_params", (True, False)), ("worker.ref.fsdp.enable_cpu_offload", (True, False)),
    ("worker.rollout.gpu_memory_utilization", (0.5, 0.8)), ("worker.rollout.enforce_eager", (True, False)),
    ("worker.rollout.max_model_len", (None, 8192)), ("worker.critic.offload.offload_params", (True, False)),
    ("worker.critic.offload.offload_optimizer", (True, False)),
    ("worker.critic.model.enable_gradient_checkpointing", (True, False)), ("algorithm.use_kl_loss", (True, False)),
]
ESTIMATORS = ("grpo", "grpo", "gae", "rloo", "reinforce_plus_plus", "remax")


def easyr1_cases(seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """EasyR1 configs on the rules' edges: global batches near divisors of the rollout batch, per-device update
    batches that floor to 0 or do not split into micro batches, FSDP CPU offload with and without accumulation,
    tensor parallel sizes that do not divide the GPUs, token budgets around prompt + response."""
    rng = random.Random(seed)
    for _ in range(count):
        per_node = rng.choice((1, 2, 4, 6, 8, 8))
        nodes = rng.choice((1, 1, 1, 2))
        world = per_node * nodes
        n = rng.choice((1, 2, 4, 5, 8, 16))
        sp = (rng.choice([d for d in (1, 1, 1, 2, 4, 8) if world % d == 0]) if rng.random() < 0.9
              else rng.choice((3, 16)))
        dp = max(1, world // sp)
        rollout = rng.choice((multiple_near(rng, world, 16), rng.choice((8, 64, 128, 512)), near(rng, 32)))
        gbs = rng.choice((divisor_near(rng, rollout), divisor_near(rng, rollout), max(1, dp // n),
                          rng.choice((1, 3, 64))))
        per_dev = max(1, gbs * n // dp)
        micro = rng.choice((divisor_near(rng, per_dev), per_dev, 1, rng.choice((2, 4, 64))))
        exp_micro = rng.choice((divisor_near(rng, rollout * n), 1, 2, 16, rng.choice((3, 7, 32))))
        estimator = rng.choice(ESTIMATORS)
        prompt, response = rng.choice((512, 1024, 2048)), rng.choice((512, 1024, 2048, 4096))
        tp = rng.choice((1, 2, 2, 4, 8)) if rng.random() < 0.85 else rng.choice((3, 16))
        case: dict[str, Any] = {
            "trainer.nnodes": nodes, "trainer.n_gpus_per_node": per_node,
            "data.rollout_batch_size": rollout, "data.max_prompt_length": prompt, "data.max_response_length": response,
            "worker.rollout.n": n, "worker.actor.global_batch_size": gbs,
            "worker.actor.micro_batch_size_per_device_for_update": micro,
            "worker.actor.micro_batch_size_per_device_for_experience": exp_micro,
            "worker.actor.ulysses_size": sp, "worker.actor.fsdp.enable_cpu_offload": rng.random() < 0.2,
            "worker.actor.dynamic_batching": rng.random() < 0.7,
            "worker.rollout.tensor_parallel_size": tp,
            "worker.rollout.max_num_batched_tokens": rng.choice((8192, prompt + response, prompt + response - 1, 4096,
                                                                 16384)),
            "algorithm.adv_estimator": estimator,
            "algorithm.disable_kl": rng.random() < 0.3,
        }
        for key, values in OTHER_KEYS:  # keys we read that no check reads: the merge proves EasyR1 has them
            if rng.random() < 0.15:
                case[key] = rng.choice(values)
        if rng.random() < 0.2:
            case["data.mini_rollout_batch_size"] = rng.choice((rollout, max(1, rollout // 2), world))
        if estimator == "gae" or rng.random() < 0.1:
            critic_sp = rng.choice((1, 1, sp, 2))
            critic_dp = max(1, world // critic_sp)
            cgbs = rng.choice((divisor_near(rng, rollout), gbs, max(1, critic_dp // n)))
            case.update({
                "worker.critic.global_batch_size": cgbs,
                "worker.critic.micro_batch_size_per_device_for_update": rng.choice(
                    (divisor_near(rng, max(1, cgbs * n // critic_dp)), 1, 4)),
                "worker.critic.micro_batch_size_per_device_for_experience": rng.choice(
                    (divisor_near(rng, rollout * n), 1, 16, 5)),
                "worker.critic.ulysses_size": critic_sp,
                "worker.critic.fsdp.enable_cpu_offload": rng.random() < 0.2,
                "worker.critic.dynamic_batching": rng.random() < 0.7,
            })
        yield case, {}
