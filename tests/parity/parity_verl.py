"""verl 0.9.1 parity: ``verl.utils.config.validate_config`` and ``RolloutConfig`` against our verl rules.

The oracle composes verl's own ``ppo_trainer`` Hydra config once (``model_engine=megatron`` for the Megatron
backend), applies a case's overrides to it in place, runs the driver's ``validate_config`` exactly as
``verl/trainer/main_ppo.py`` does (with ``need_reference_policy`` / ``need_critic``), and restores the
overrides. A second oracle builds the rollout dataclass the way ``ActorRolloutRefWorker.init_model`` does
(``omega_conf_to_dataclass(config.rollout)``): its ``__post_init__`` is plain CPU code.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import tempfile
import warnings
from typing import Any, Iterator, Mapping

from parity_core import Allowed, Oracle, Verdict, divisor_near, divisors, multiple_near, near

AR = "actor_rollout_ref"
MODEL_ENGINE = "model_engine"

# ------------------------------------------------------------------ what is compared, and what is not
DRIVER_FSDP = frozenset({
    "verl.actor.micro_exactly_one", "verl.actor.mini_le_train", "verl.actor.global_micro_divides_mini",
    "verl.actor.global_micro_covers_gpus", "verl.rollout.logprob_micro_exactly_one",
    "verl.ref.logprob_micro_exactly_one", "verl.critic.micro_exactly_one", "verl.critic.mini_le_train",
    "verl.critic.global_micro_divides_mini", "verl.driver.batch_divisible_by_gpus",
    "verl.actor.sp_needs_remove_padding", "verl.critic.global_micro_covers_gpus",
})
DRIVER_MEGATRON = (DRIVER_FSDP - {"verl.driver.batch_divisible_by_gpus", "verl.actor.sp_needs_remove_padding",
                                  "verl.critic.global_micro_covers_gpus"}) | {
    "verl.megatron.driver_micro_per_gpu_required", "verl.megatron.driver_gpus_divisible_by_model_parallel",
    "verl.megatron.driver_batch_divisible",
}
ROLLOUT_RULES = frozenset({"verl.rollout.ep_equals_tp_dp", "verl.rollout.pp_unsupported"})
# the legacy releases (0.6-0.7) check the critic's Ulysses size against remove padding in the driver
LEGACY_DRIVER_FSDP = frozenset({"verl.critic.sp_needs_remove_padding"})

# (regex on verl's error, our rule id(s) it names)
PATTERNS = [
    (r"real_train_batch_size .* minimal possible batch size", ("verl.driver.batch_divisible_by_gpus",
                                                              "verl.megatron.driver_batch_divisible")),
    (r"n_gpus \(\d+\) must be divisible by model_parallel_size", "verl.megatron.driver_gpus_divisible_by_model_parallel"),
    (r"unsupported operand type\(s\) for \*: 'int' and 'NoneType'", "verl.megatron.driver_micro_per_gpu_required"),
    (r"\[actor\] You have set both|\[actor\] Please set at least one", "verl.actor.micro_exactly_one"),
    (r"must be >= actor\.ppo_mini_batch_size", "verl.actor.mini_le_train"),
    (r"^ValueError: ppo_mini_batch_size \(\d+\) must be divisible by ppo_micro_batch_size",
     "verl.actor.global_micro_divides_mini"),
    (r"^ValueError: ppo_micro_batch_size \(\d+\) \* ulysses_sequence_parallel_size", "verl.actor.global_micro_covers_gpus"),
    (r"sequence parallelism for actor/ref policy, you must enable `use_remove_padding`",
     "verl.actor.sp_needs_remove_padding"),
    (r"\[actor_rollout_ref\.ref\]", "verl.ref.logprob_micro_exactly_one"),
    (r"\[actor_rollout_ref\.rollout\]", "verl.rollout.logprob_micro_exactly_one"),
    (r"\[critic\] You have set both|\[critic\] Please set at least one", "verl.critic.micro_exactly_one"),
    (r"must be >= critic\.ppo_mini_batch_size", "verl.critic.mini_le_train"),
    (r"\[critic\] ppo_mini_batch_size \(\d+\) must be divisible", "verl.critic.global_micro_divides_mini"),
    (r"critic\.ppo_micro_batch_size \(\d+\) \* ulysses_sequence_parallel_size", "verl.critic.global_micro_covers_gpus"),
    (r"expert_parallel_size must be equal to tensor_model_parallel_size \* data_parallel_size",
     "verl.rollout.ep_equals_tp_dp"),
    (r"not implemented pipeline_model_parallel_size > 1", "verl.rollout.pp_unsupported"),
    (r"sequence parallelism for critic, you must enable `use_remove_padding`", "verl.critic.sp_needs_remove_padding"),
]

# Our rules at the driver stage that validate_config does not run, with the reason. (Every other rule of
# ours is at a later stage: see docs/parity.md for how those are tested.)
ALLOWED = [
    Allowed("verl.advice.group_needs_n", "ours on purpose (warning): verl runs GRPO with n=1, every advantage is 0"),
    Allowed("verl.advice.critic_sp_key_ignored", "ours on purpose (warning): the deprecated critic Ulysses key "
            "is validated but never reaches the critic engine"),
]


def _write_tokenizer(folder: str) -> None:
    """A word-level tokenizer (no download) for the configs that load one from the model path."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "pad_token": "[UNK]"}, f)


def installed_version() -> tuple[int, ...]:
    """The installed verl's release, e.g. (0, 7, 1) (the harness follows the rule pack of that release)."""
    try:
        import verl
    except ImportError:
        return (0, 9, 1)
    return tuple(int(x) for x in str(getattr(verl, "__version__", "0.9.1")).split(".")[:3] if x.isdigit())


VERSION = installed_version()


# ------------------------------------------------------------------ the oracle
class VerlOracle:
    """verl's own config and validation code, imported from the installed verl package."""

    def __init__(self, megatron: bool):
        import verl
        from hydra import compose, initialize_config_dir
        from omegaconf import OmegaConf, open_dict
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import omega_conf_to_dataclass, validate_config

        _memoize_interpolation_parser()
        self._omegaconf, self._open_dict = OmegaConf, open_dict
        self._validate, self._to_dataclass = validate_config, omega_conf_to_dataclass
        self._need_critic, self._need_ref = need_critic, need_reference_policy
        import inspect

        if "role_worker_mapping" in inspect.signature(need_reference_policy).parameters:
            # verl 0.6: main_ppo.py's TaskRunner adds the reference role when KL is on, and validate_config asks
            # whether the mapping has it
            self._need_ref = lambda cfg: bool(cfg.algorithm.use_kl_in_reward or cfg.actor_rollout_ref.actor.use_kl_loss)
        self._tmp = tempfile.TemporaryDirectory(prefix="parity-critic-")
        # the critic's HFModelConfig reads a config.json (never weights): a tiny one-architecture model
        with open(os.path.join(self._tmp.name, "config.json"), "w") as f:
            json.dump({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
                       "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
                       "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 4096}, f)
        config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
        # every launch script names the rollout engine (the yaml leaves it mandatory); ours defaults to vLLM
        overrides = [f"{AR}.model.path=/nonexistent", f"critic.model.path={self._tmp.name}", f"{AR}.rollout.name=vllm"]
        if VERSION >= (0, 9):  # the critic's model config reads the tokenizer unless told not to (0.9's option)
            overrides.append("+critic.model.load_tokenizer=False")
        else:  # older critic configs read the tokenizer from the actor's model path: a local tokenizer there
            _write_tokenizer(self._tmp.name)
            overrides[0] = f"{AR}.model.path={self._tmp.name}"
        name = "ppo_trainer"
        if megatron:  # 0.9's model_engine group; older releases have their own Megatron trainer config
            has_group = os.path.exists(os.path.join(config_dir, MODEL_ENGINE, "megatron.yaml"))
            if has_group:
                overrides.append(f"{MODEL_ENGINE}=megatron")
            else:
                name = "ppo_megatron_trainer"
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            self.base = compose(config_name=name, overrides=overrides)

    @contextlib.contextmanager
    def applied(self, overrides: Mapping[str, Any]) -> Iterator[Any]:
        """The base config with ``overrides`` set (Hydra-style dotted keys), restored afterwards."""
        cfg, oc = self.base, self._omegaconf
        saved = []
        with self._open_dict(cfg):
            for key, value in overrides.items():
                if key == MODEL_ENGINE:
                    continue
                parent_key, _, leaf = key.rpartition(".")
                parent = oc.select(cfg, parent_key) if parent_key else cfg
                raw = parent._get_node(leaf)._value() if leaf in parent else _ABSENT
                saved.append((parent, leaf, raw))
                parent[leaf] = value
        try:
            yield cfg
        finally:
            with self._open_dict(cfg):
                for parent, leaf, raw in reversed(saved):
                    if raw is _ABSENT:
                        del parent[leaf]
                    else:
                        parent[leaf] = raw

    def driver(self, overrides: Mapping[str, Any]) -> Verdict:
        with self.applied(overrides) as cfg, warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return Verdict.run(lambda: self._validate(cfg, use_reference_policy=self._need_ref(cfg),
                                                      use_critic=self._need_critic(cfg)))

    def rollout(self, overrides: Mapping[str, Any]) -> Verdict | None:
        if not any(k.startswith(f"{AR}.rollout.") and k.endswith("parallel_size") for k in overrides):
            return None  # verl's defaults (TP 2, DP/EP/PP 1) pass: spend the time on layouts that vary
        with self.applied(overrides) as cfg, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Verdict.run(lambda: self._to_dataclass(cfg.actor_rollout_ref.rollout))

    def oracles(self, megatron: bool) -> list[Oracle]:
        return [
            Oracle("driver: verl/utils/config.py:validate_config", self.driver,
                   DRIVER_MEGATRON if megatron else DRIVER_FSDP | (LEGACY_DRIVER_FSDP if VERSION < (0, 8) else set()),
                   PATTERNS),
            Oracle("worker_init: RolloutConfig.__post_init__ (CPU dataclass)", self.rollout, ROLLOUT_RULES, PATTERNS),
        ]


_ABSENT = object()


def _memoize_interpolation_parser() -> None:
    """Cache OmegaConf's parse trees of interpolation strings (``${oc.select:...}``).

    Every ``omega_conf_to_dataclass`` resolves the same few hundred interpolation strings of verl's yaml
    with ANTLR, about 80% of an oracle call. A parse tree depends only on the string, and resolving does
    not change it, so caching it changes no result; it makes the suite about 3x faster.
    """
    import functools

    import omegaconf.base

    if not hasattr(omegaconf.base.parse, "cache_info"):
        omegaconf.base.parse = functools.lru_cache(maxsize=4096)(omegaconf.base.parse)


# ------------------------------------------------------------------ the generator
ESTIMATORS = ["grpo", "grpo", "gae", "gae", "rloo", "reinforce_plus_plus", "remax", "grpo_passk"]


def _micro_pair(rng: random.Random, cfg: dict, global_key: str, per_gpu_key: str, global_near: int,
                per_gpu_near: int, *, interpolated_per_gpu: bool = False) -> None:
    """Set the deprecated global micro size, the per-GPU one, both, or neither (the exactly-one edges)."""
    mode = rng.choices(["per_gpu", "global", "both", "neither"], weights=[14, 3, 1, 1])[0]
    if mode in ("per_gpu", "both"):
        cfg[per_gpu_key] = max(1, divisor_near(rng, max(1, per_gpu_near)) if rng.random() < 0.8 else rng.randint(1, 9))
    if mode in ("global", "both"):
        cfg[global_key] = max(1, near(rng, global_near) if rng.random() < 0.7 else rng.randint(1, 64))
    if mode == "global" and interpolated_per_gpu and rng.random() < 0.5:
        cfg[per_gpu_key] = None  # explicitly null: the only way to set just the global critic micro size


def verl_case(rng: random.Random, megatron: bool) -> dict[str, Any]:
    nnodes = rng.choice([1, 1, 1, 2, 4])
    gpn = rng.choice([1, 2, 3, 4, 6, 8, 8, 16])
    n_gpus = nnodes * gpn
    cfg: dict[str, Any] = {"trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpn}
    if megatron:
        cfg[MODEL_ENGINE] = "megatron"
    est = rng.choice(ESTIMATORS)
    cfg["algorithm.adv_estimator"] = est
    if rng.random() < 0.15:
        cfg["critic.enable"] = rng.random() < 0.5
    if rng.random() < 0.6:
        cfg[f"{AR}.actor.use_kl_loss"] = rng.random() < 0.5
    if rng.random() < 0.4:
        cfg["algorithm.use_kl_in_reward"] = rng.random() < 0.3
    n = rng.choice([1, 1, 2, 3, 4, 5, 8, 16])
    if n != 1 or rng.random() < 0.5:
        cfg[f"{AR}.rollout.n"] = n
    dyn = rng.random() < 0.12
    if dyn or rng.random() < 0.1:
        cfg[f"{AR}.actor.use_dynamic_bsz"] = dyn
    # the parallel layout the driver divides by
    mp, sp = 1, 1
    if megatron:
        mg = f"{AR}.actor.megatron"
        # a layout that tiles the GPUs, sometimes one size off by one (the driver's N % (TP*PP*CP) edge)
        tp = rng.choice(divisors(n_gpus)) if rng.random() < 0.6 else 1
        pp = rng.choice(divisors(n_gpus // tp)) if rng.random() < 0.4 else 1
        cp = rng.choice(divisors(n_gpus // (tp * pp))) if rng.random() < 0.3 else 1
        if rng.random() < 0.25:
            tp = near(rng, tp)
        for key, v in (("tensor_model_parallel_size", tp), ("pipeline_model_parallel_size", pp),
                       ("context_parallel_size", cp)):
            if v != 1 or rng.random() < 0.2:
                cfg[f"{mg}.{key}"] = v
        mp = tp * pp * cp
    else:
        if rng.random() < 0.3:
            sp = divisor_near(rng, n_gpus)
            cfg[f"{AR}.actor.ulysses_sequence_parallel_size"] = sp
        if rng.random() < 0.25:
            cfg[f"{AR}.model.use_remove_padding"] = rng.random() < 0.5
    dp = max(1, n_gpus // mp)
    # train batch: B*n around a multiple of the minimal batch (N for FSDP, dp*micro for Megatron)
    micro_hint = rng.choice([1, 1, 2, 4, 8])
    unit = n_gpus if not megatron else dp * micro_hint
    shape = rng.random()
    if shape < 0.7:
        total = multiple_near(rng, unit, 6)
        b = max(1, -(-total // n))
        b = near(rng, b)
    elif shape < 0.78:
        b = 1
    else:
        b = rng.choice([2, 4, 8, 16, 32, 64, 96, 128, 256, 512, 1024, rng.randint(1, 300)])
    if b != 1024 or rng.random() < 0.5:
        cfg["data.train_batch_size"] = b
    # mini batch: equal to B, just above it, a divisor of it, or left at the default 256
    r = rng.random()
    mini = b if r < 0.3 else near(rng, b) if r < 0.5 else divisor_near(rng, b) if r < 0.85 else None
    if mini is not None:
        cfg[f"{AR}.actor.ppo_mini_batch_size"] = mini
    mini_v = mini if mini is not None else 256
    per_gpu = max(1, mini_v * n // dp)
    _micro_pair(rng, cfg, f"{AR}.actor.ppo_micro_batch_size", f"{AR}.actor.ppo_micro_batch_size_per_gpu",
                rng.choice([-(-n_gpus // sp), mini_v, micro_hint * dp]), micro_hint if megatron else per_gpu)
    _micro_pair(rng, cfg, f"{AR}.rollout.log_prob_micro_batch_size", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu",
                n_gpus, per_gpu)
    _micro_pair(rng, cfg, f"{AR}.ref.log_prob_micro_batch_size", f"{AR}.ref.log_prob_micro_batch_size_per_gpu",
                n_gpus, per_gpu)
    # critic (runs for gae or critic.enable): its mini follows the actor's unless set
    if rng.random() < 0.3:
        cfg["critic.ppo_mini_batch_size"] = rng.choice([b, near(rng, b), divisor_near(rng, b)])
    _micro_pair(rng, cfg, "critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu",
                rng.choice([n_gpus, mini_v, -(-n_gpus // 2)]), per_gpu, interpolated_per_gpu=True)
    if not megatron and rng.random() < 0.2:
        cfg["critic.ulysses_sequence_parallel_size"] = divisor_near(rng, n_gpus)
    # rollout engine layout (RolloutConfig.__post_init__)
    if rng.random() < 0.4:
        tp = divisor_near(rng, gpn)
        rdp = rng.choice([1, 1, 2])
        cfg[f"{AR}.rollout.tensor_model_parallel_size"] = tp
        if rdp != 1:
            cfg[f"{AR}.rollout.data_parallel_size"] = rdp
        if rng.random() < 0.5:
            cfg[f"{AR}.rollout.expert_parallel_size"] = rng.choice([1, tp * rdp, near(rng, tp * rdp), 2])
        if rng.random() < 0.2:
            cfg[f"{AR}.rollout.pipeline_model_parallel_size"] = rng.choice([1, 2])
    if rng.random() < 0.15:
        cfg[f"{AR}.actor.ppo_max_token_len_per_gpu"] = rng.choice([1024, 4096, 16384])
    return cfg


def verl_cases(seed: int, count: int, megatron: bool) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield verl_case(rng, megatron), {}
