"""OpenRLHF 0.11.2 parity: ``train_ppo_ray``'s argument checks and ``train()``'s layout asserts, and DeepSpeed's
``DeepSpeedConfig._batch_assertion``, against our openrlhf rules.

``openrlhf/cli/train_ppo_ray.py`` validates in its ``__main__`` block, not in a function, and imports Ray,
vLLM and DeepSpeed at its top. The harness reads that file from the installed ``openrlhf`` package (never a
copy), and runs:

* the ``__main__`` block as written, with ``parser.parse_args()`` given the case's flags and the final
  ``train(args)`` handed to the next oracle;
* ``train()`` as written, with Ray, vLLM engine creation, the model actor groups and ``get_strategy`` replaced
  by mocks (they start GPU processes), up to the import of the PPO trainer, after the last layout assert;
* for every DeepSpeed model group (actor, ref, critic, reward, EMA), DeepSpeed's own
  ``_configure_train_batch_size`` (``_set_batch_related_parameters`` then ``_batch_assertion``) on the batch
  keys OpenRLHF's ``get_ds_train_config`` / ``get_ds_eval_config`` write, with the group's world size.
"""

from __future__ import annotations

import abc
import argparse
import ast
import contextlib
import functools
import importlib.util
import io
import os
import random
import sys
import types
from datetime import datetime
from typing import Any, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, flag_argv, multiple_near, near

from rlbatch_solver.frameworks.openrlhf.framework import release_key

DRIVER = frozenset({
    "openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.dynamic_filtering_needs_n",
    "openrlhf.driver.dynamic_filtering_needs_remote_reward", "openrlhf.driver.packing_needs_vllm",
    "openrlhf.driver.generate_batch_needs_async", "openrlhf.driver.async_forbids_vllm_sleep",
    "openrlhf.driver.partial_rollout_needs_async", "openrlhf.driver.sample_batches_cover_actor",
})
TRAIN = frozenset({"openrlhf.colocate.actor_ref_same_size", "openrlhf.colocate.vllm_matches_actor",
                   "openrlhf.colocate.critic_reward_same_size"})
DS_GROUPS = ("actor", "ref", "critic", "reward", "ema")
DEEPSPEED = frozenset({f"openrlhf.deepspeed.{g}_batch" for g in DS_GROUPS})

PATTERNS = [
    (r"requires n_samples_per_prompt > 1", "openrlhf.driver.group_estimator_needs_n"),
    (r"n_samples_per_prompt must be greater than 1 when using dynamic filtering", "openrlhf.driver.dynamic_filtering_needs_n"),
    (r"remote_rm_url or agent_func_path must be specified when using dynamic filtering",
     "openrlhf.driver.dynamic_filtering_needs_remote_reward"),
    (r"Only support `--packing_samples` with vLLM|'>' not supported between instances of 'NoneType' and 'int'",
     "openrlhf.driver.packing_needs_vllm"),
    (r"vllm_generate_batch_size > --rollout.batch_size requires", "openrlhf.driver.generate_batch_needs_async"),
    (r"Async RLHF is not supported with --vllm.enable_sleep|Async RLHF is not supported with --vllm_enable_sleep",
     "openrlhf.driver.async_forbids_vllm_sleep"),
    (r"partial_rollout_enable requires|--partial_rollout requires", "openrlhf.driver.partial_rollout_needs_async"),
    (r"number of sample batches must be greater than or equal", "openrlhf.driver.sample_batches_cover_actor"),
    (r"must be the same when colocate actor and ref", "openrlhf.colocate.actor_ref_same_size"),
    (r"must be equal to vllm_num_engines \* vllm_tensor_parallel_size", "openrlhf.colocate.vllm_matches_actor"),
    (r"must be the same when colocate critic and reward", "openrlhf.colocate.critic_reward_same_size"),
    *[(rf"^AssertionError: \[{g}\] ", f"openrlhf.deepspeed.{g}_batch") for g in DS_GROUPS],
]

ALLOWED = [
    Allowed("openrlhf.driver.legacy_flag_names", "ours on purpose (warning): argparse rejects pre-0.10.2 names; "
            "the generator writes 0.11.2's dotted names"),
    Allowed("openrlhf.colocate.critic_fits_actor_bundles", "no assert: Ray rejects the bundle index when it "
            "places the actor group (mocked here); hand-made cases in tests/test_openrlhf.py"),
    Allowed("openrlhf.colocate.reward_fits_actor_bundles", "as above"),
    Allowed("openrlhf.ray.gpu_budget", "needs --gpus (the Ray cluster's size); Ray waits for the placement group"),
    Allowed("openrlhf.deepspeed.tp_needs_bf16", "DeepspeedStrategy.__init__ (get_strategy, mocked with the GPU "
            "side of train()); hand-made cases in tests/test_openrlhf.py"),
]


class _Reached(Exception):
    """train() got past its last layout assert (it imports the PPO trainer next)."""


def _source() -> str:
    spec = importlib.util.find_spec("openrlhf")  # the package's location; nothing of it is executed
    path = os.path.join(spec.submodule_search_locations[0], "cli", "train_ppo_ray.py")
    with open(path) as f:
        return f.read(), path


class _ParseArgv(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "parse_args" and not node.args:
            node.args = [ast.Name("__argv__", ast.Load())]
        elif isinstance(f, ast.Name) and f.id == "train":
            node.func = ast.Name("__train__", ast.Load())
        return node


class TrainPPORayOracle(abc.ABC):
    """What the oracles of every OpenRLHF release share: the installed ``train_ppo_ray.py``'s ``__main__`` block run
    as written on a case's flags, its final ``train(args)`` handed to ``on_train``, one case's outcome kept for the
    next oracle; and DeepSpeed's own batch assertion for each model group the release builds, on the batch keys its
    strategy writes (``ds_groups``, ``ds_batch``)."""

    argv = staticmethod(flag_argv)

    def __init__(self):
        text, path = _source()
        self.tree = ast.parse(text, path)
        self.path = path
        main = next(n for n in self.tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
        self._main = compile(ast.fix_missing_locations(ast.Module([_ParseArgv().visit(main)], [])), path, "exec")
        from deepspeed.runtime.config import DeepSpeedConfig

        self._ds = type("_DSConfig", (), {name: getattr(DeepSpeedConfig, name) for name in (
            "_configure_train_batch_size", "_set_batch_related_parameters", "_batch_assertion")})
        self._cache: dict[str, tuple[Verdict, Any]] = {}

    def on_train(self, args: argparse.Namespace) -> None:
        """What the block's ``train(args)`` call does here (the parsed arguments are kept either way)."""

    @abc.abstractmethod
    def ds_groups(self, args: argparse.Namespace) -> list[tuple[str, int]]:
        """(name, world size) of each model group whose DeepSpeed config asserts its batch."""

    @abc.abstractmethod
    def ds_batch(self, args: argparse.Namespace) -> tuple[int, int]:
        """(train_batch_size, train_micro_batch_size_per_gpu) as the release's strategy writes them."""

    def _run_main(self, case: Mapping[str, Any]) -> tuple[Verdict, Any]:
        key = repr(sorted(case.items()))
        if key not in self._cache:
            seen = {}

            def train(args):
                seen["args"] = args
                self.on_train(args)

            ns = {"__name__": "__main__", "argparse": argparse, "os": os, "datetime": datetime,  # its top imports
                  "__argv__": self.argv(case), "__train__": train}
            with contextlib.redirect_stdout(io.StringIO()):
                verdict = Verdict.run(lambda: exec(self._main, ns))
            self._cache = {key: (verdict, seen.get("args"))}  # one case at a time
        return self._cache[key]

    def driver(self, case: Mapping[str, Any]) -> Verdict:
        return self._run_main(case)[0]

    def deepspeed(self, case: Mapping[str, Any]) -> Verdict | None:
        """DeepSpeed's ``_configure_train_batch_size`` for every model group the release builds."""
        verdict, args = self._run_main(case)
        if not verdict.ok:
            return None  # the driver stopped first
        groups, (batch, micro) = self.ds_groups(args), self.ds_batch(args)

        def run():
            for name, world in groups:
                cfg = self._ds()
                cfg.train_batch_size = batch
                cfg.train_micro_batch_size_per_gpu = micro
                cfg.gradient_accumulation_steps = None
                cfg.world_size = world
                try:
                    cfg._configure_train_batch_size()
                except AssertionError as exc:
                    raise AssertionError(f"[{name}] {exc}") from None

        return Verdict.run(run)


class OpenRLHFOracle(TrainPPORayOracle):
    """0.11.2's train_ppo_ray, and the releases whose train() it shares (0.7.5 to 0.10.4: the same layout asserts;
    0.7.5 names its actor groups PPORayActorGroup and imports PPOTrainer at the top, mocked here, so its train()
    runs to its end); ``version``'s flag names (underscore before 0.10.2) and its compared driver rules."""

    def __init__(self, version: str = "0.11.2", driver: frozenset[str] = None):
        super().__init__()
        self.version, self.driver_rules = version, DRIVER if driver is None else driver
        train = next(n for n in self.tree.body if isinstance(n, ast.FunctionDef) and n.name == "train")
        ray = mock.MagicMock(name="ray")
        ray.is_initialized.return_value = True
        self._train_globals = {
            "__name__": "openrlhf.cli.train_ppo_ray", "os": os, "ray": ray, "placement_group": mock.MagicMock(),
            "create_vllm_engines": mock.MagicMock(), "RayActorGroup": mock.MagicMock(),
            "get_strategy": mock.MagicMock(), **{name: mock.MagicMock(name=name) for name in (
                "PolicyModelActor", "CriticModelActor", "ReferenceModelActor", "RewardModelActor",
                # 0.7.5's names (its module-level imports)
                "PPORayActorGroup", "PPOTrainer", "ActorModelRayActor", "CriticModelRayActor",
                "ReferenceModelRayActor", "RewardModelRayActor")},
        }
        exec(compile(ast.Module([train], []), self.path, "exec"), self._train_globals)
        stop = types.ModuleType("openrlhf_trainer_stop")
        stop.__getattr__ = lambda name: (_ for _ in ()).throw(_Reached())
        self._stop = stop

    def train(self, case: Mapping[str, Any]) -> Verdict | None:
        verdict, args = self._run_main(case)
        if not verdict.ok:
            return None  # the driver stopped first

        def run():
            # 0.8.11's train() imports its vLLM actor class (vLLM itself) before building the engines, which are
            # mocked: a stand-in module answers the import
            engines = mock.MagicMock(name="vllm_engine")
            with mock.patch.dict(sys.modules, {"openrlhf.trainer.ppo_trainer": self._stop,
                                               "openrlhf.trainer.ppo_trainer_async": self._stop,
                                               "openrlhf.trainer.ray.vllm_engine": engines,
                                               "openrlhf.trainer.ray.vllm_engine_async": engines}):
                try:
                    self._train_globals["train"](args)
                except _Reached:
                    pass

        return Verdict.run(run)

    def arg(self, args: argparse.Namespace, key: str) -> Any:
        """The parsed value of the flag named ``key`` in 0.11.2, as the release holds it (``args.train.batch_size``;
        ``args.train_batch_size`` before 0.10.2)."""
        if self.version != "0.11.2" and release_key(key, self.version) != key:
            # a flag the release does not have (0.7.5: no dynamic batch) is off
            return getattr(args, release_key(key, self.version), None)
        for part in key.split("."):
            args = getattr(args, part)
        return args

    def ds_groups(self, args: argparse.Namespace) -> list[tuple[str, int]]:
        # the actor and critic configs assert their batch unless dynamic batch is on; get_ds_eval_config (reference,
        # reward, EMA) always
        a = functools.partial(self.arg, args)
        dynamic = a("train.dynamic_batch_enable")
        groups = [("actor", "actor", not dynamic)]
        if a("algo.kl.init_coef") > 0:
            groups.append(("ref", "ref", True))
        if a("critic.model_name_or_path"):
            groups.append(("critic", "critic", not dynamic))
        if not a("reward.remote_url"):
            groups.append(("reward", "reward", True))
        if a("train.enable_ema"):
            groups.append(("ema", "actor", True))
        return [(name, a(f"{g}.num_nodes") * a(f"{g}.num_gpus_per_node")) for name, g, checked in groups if checked]

    def ds_batch(self, args: argparse.Namespace) -> tuple[int, int]:
        a = functools.partial(self.arg, args)
        return (a("train.batch_size") * a("ds.ring_attn_size") * a("ds.tensor_parallel_size"),
                a("train.micro_batch_size"))

    def oracles(self) -> list[Oracle]:
        return [
            Oracle("driver: train_ppo_ray.py __main__", self.driver, self.driver_rules, PATTERNS),
            Oracle("trainer_init: train_ppo_ray.py:train (layout asserts)", self.train, TRAIN, PATTERNS),
            Oracle("worker_init: deepspeed DeepSpeedConfig._batch_assertion", self.deepspeed, DEEPSPEED, PATTERNS),
        ]


# ------------------------------------------------------------------ generator
ESTIMATORS = ["gae", "group_norm", "group_norm", "rloo", "reinforce", "reinforce_baseline", "dr_grpo"]


def openrlhf_case(rng: random.Random) -> dict[str, Any]:
    case: dict[str, Any] = {"actor.model_name_or_path": "m", "reward.model_name_or_path": "rm"}
    gpn = rng.choice([1, 2, 3, 4, 6, 8, 8])
    nodes = rng.choice([1, 1, 1, 2, 4])
    case["actor.num_nodes"], case["actor.num_gpus_per_node"] = nodes, gpn
    for g in ("ref", "critic", "reward"):
        r = rng.random()
        if r < 0.5:
            case[f"{g}.num_nodes"], case[f"{g}.num_gpus_per_node"] = nodes, gpn  # same layout as the actor
        elif r < 0.8:
            case[f"{g}.num_nodes"], case[f"{g}.num_gpus_per_node"] = rng.choice([1, 1, 2]), rng.choice([1, 2, 3, 4, 8])
    est = rng.choice(ESTIMATORS)
    case["algo.advantage.estimator"] = est
    if rng.random() < 0.5:
        case["algo.kl.init_coef"] = rng.choice([0.0, 0.001, 0.01])
    if rng.random() < 0.35:
        case["reward.remote_url"] = "http://127.0.0.1:5000/get_reward"
    ring = rng.choice([1, 1, 1, 2, 4]) if rng.random() < 0.3 else 1
    tp = rng.choice([1, 1, 2]) if rng.random() < 0.2 else 1
    if ring != 1:
        case["ds.ring_attn_size"] = ring
    if tp != 1:
        case["ds.tensor_parallel_size"] = tp
    w = nodes * gpn
    dp = max(1, w // (ring * tp))
    n = rng.choice([1, 1, 2, 4, 8, 16])
    case["rollout.n_samples_per_prompt"] = n
    m = rng.choice([1, 1, 2, 4])
    case["train.micro_batch_size"] = m
    r = rng.random()
    case["train.batch_size"] = (multiple_near(rng, m * dp, 8) if r < 0.6 else near(rng, m * w) if r < 0.8
                                else rng.choice([1, 8, 128, rng.randint(1, 300)]))
    mr = rng.choice([1, 2, 4, 8])
    case["rollout.micro_batch_size"] = mr
    r = rng.random()
    case["rollout.batch_size"] = (max(1, near(rng, -(-dp * mr // n))) if r < 0.4
                                  else rng.choice([1, 8, 32, 128, 1024, rng.randint(1, 200)]))
    if rng.random() < 0.2:
        case["rollout.vllm_generate_batch_size"] = near(rng, case["rollout.batch_size"])
    if rng.random() < 0.85:
        tv = rng.choice([1, 1, 2, 4])
        case["vllm.tensor_parallel_size"] = tv
        engines = max(1, w // tv) if rng.random() < 0.6 else rng.choice([1, 2, 3, 4])
        case["vllm.num_engines"] = engines
    for flag, p in (("train.colocate_all", 0.3), ("train.colocate_actor_ref", 0.2), ("train.colocate_critic_reward", 0.15),
                    ("train.async_enable", 0.15), ("train.partial_rollout_enable", 0.05), ("vllm.enable_sleep", 0.2),
                    ("ds.packing_samples", 0.2), ("train.dynamic_batch_enable", 0.1), ("train.enable_ema", 0.1),
                    ("algo.dynamic_filtering_enable", 0.08)):
        if rng.random() < p:
            case[flag] = True
    return case


def openrlhf_cases(seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield openrlhf_case(rng), {}
