"""What ``rlbatch fix`` may change in each framework, and in which order.

``ranks``: rule-variable name -> 0..9, smaller is tried first when two repairs
change equally many keys by equal amounts. The verl order follows the seed
guide's out-of-memory advice ("lower gpu_memory_utilization, lower micro, lower
log-prob micro, lower train and mini together", then the memory features:
gradient checkpointing, entropy chunking, offload); the deprecated global
micro sizes come last, since verl 0.9.1's workers need the per-GPU ones.

``rules``: variables a rule-only repair may change (batch and parallel sizes).
``memory``: knobs added when the memory model is evaluated (``--gpu`` and
``--model`` given): they do not affect any divisibility rule, only the fit.
Everything else (GPU counts, lengths, ``n``, the algorithm, the engine) is
what the user asked for and stays; pin more with ``--keep``.

Every framework names its movable keys explicitly (verl and verl Megatron here,
OpenRLHF here, ms-swift's two paths in ``frameworks/swift.py`` when it loads);
there is no catch-all. ``hardware`` names the variables that hold the GPU count:
``fix`` never moves them, but when nothing fits it tries other counts to say how
many GPUs would (``api.relaxations``). ``algorithm`` names the settings that
change what is trained (``n``, ``num_generations``): never moved, reported when
they are part of a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RepairPolicy:
    rules: tuple[str, ...]
    memory: tuple[str, ...] = ()
    ranks: dict[str, int] = field(default_factory=dict)
    # parallel sizes: candidates are divisors of the GPU count, not neighbours
    parallel: frozenset[str] = frozenset()
    # token budgets: candidates are multiples of prompt+response
    token_budgets: frozenset[str] = frozenset()
    permille: frozenset[str] = frozenset()
    # deprecated keys: fix may unset them, never set them
    unset_only: frozenset[str] = frozenset()
    # an unset key, when set, should resemble this related key (same unit)
    anchors: dict[str, str] = field(default_factory=dict)
    # an unset per-GPU key whose deprecated global key is set: when set, it should resemble the global
    # value over the GPU count (what the framework's older versions computed from it)
    per_gpu_of: dict[str, str] = field(default_factory=dict)
    # GPU-count variables -> "per_node" (GPUs of one node, at most 8 unless already more) or "count"
    hardware: dict[str, str] = field(default_factory=dict)
    # algorithm settings: never changed by fix, named when they are part of a conflict
    algorithm: tuple[str, ...] = ()
    # response/sequence length variables a "shorter response" relaxation may lower
    lengths: tuple[str, ...] = ()
    # values memory grows with (vLLM's memory share, micro batches, token budgets): raising one costs a
    # little more than lowering it (solver/costs.py), as the seeds' out-of-memory advice lowers them first;
    # a phase that misfits at a value misfits at every larger one, which widens the repair's memory cuts
    # (solver/repair.py; tests/test_fix.py checks that the memory model grows with each of them)
    grows_memory: frozenset[str] = frozenset()


VERL = RepairPolicy(
    rules=(
        "actor_micro", "logprob_micro", "ref_micro", "critic_micro",
        "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu",
        "train_batch_size", "actor_mini", "critic_mini",
        "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
        "actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn", "remove_padding",
        "actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
        "rollout_gpus_per_node", "max_model_len",
    ),
    memory=("gmu_permille", "grad_ckpt", "entropy_chunking", "param_offload", "optimizer_offload",
            "ref_param_offload", "critic_grad_ckpt", "critic_param_offload", "critic_optimizer_offload"),
    ranks={
        # deprecated global micro sizes: last resort (verl 0.9.1 workers need the per-GPU keys)
        "actor_micro": 9, "logprob_micro": 9, "ref_micro": 9, "critic_micro": 9,
        "gmu_permille": 1,
        "actor_micro_per_gpu": 2, "critic_micro_per_gpu": 2,
        "logprob_micro_per_gpu": 3, "ref_micro_per_gpu": 3,
        "grad_ckpt": 4, "critic_grad_ckpt": 4, "entropy_chunking": 4,
        "actor_max_tokens": 4, "logprob_max_tokens": 4, "ref_max_tokens": 4, "critic_max_tokens": 4,
        "train_batch_size": 5, "actor_mini": 5, "critic_mini": 5,
        "rollout_tp": 6, "rollout_dp": 6, "rollout_ep": 6, "rollout_gpus_per_node": 6, "max_model_len": 6,
        "actor_sp": 7, "ref_sp": 7, "critic_sp": 7, "fsdp_size": 7,
        "param_offload": 8, "optimizer_offload": 8, "ref_param_offload": 8,
        "critic_param_offload": 8, "critic_optimizer_offload": 8,
        "actor_dyn": 9, "logprob_dyn": 9, "ref_dyn": 9, "critic_dyn": 9, "remove_padding": 9,
    },
    parallel=frozenset({"actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
                        "rollout_gpus_per_node"}),
    token_budgets=frozenset({"actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
                             "max_model_len"}),
    permille=frozenset({"gmu_permille"}),
    unset_only=frozenset({"actor_micro", "logprob_micro", "ref_micro", "critic_micro"}),
    anchors={"critic_micro_per_gpu": "actor_micro_per_gpu", "logprob_micro_per_gpu": "actor_micro_per_gpu",
             "ref_micro_per_gpu": "logprob_micro_per_gpu", "actor_micro_per_gpu": "logprob_micro_per_gpu"},
    # verl <= 0.4 divided the global micro sizes by the world size (workers/fsdp_workers.py, ActorRolloutRefWorker
    # __init__: ppo_micro_batch_size //= device_mesh.size() // ulysses_sequence_parallel_size)
    per_gpu_of={"actor_micro_per_gpu": "actor_micro", "logprob_micro_per_gpu": "logprob_micro",
                "ref_micro_per_gpu": "ref_micro", "critic_micro_per_gpu": "critic_micro"},
    hardware={"gpus_per_node": "per_node", "nnodes": "count"},
    algorithm=("n",),
    lengths=("max_response_length",),
    grows_memory=frozenset({"gmu_permille", "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu",
                            "critic_micro_per_gpu", "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens"}),
)

# verl 0.9.1, Megatron backend (rules.verl_megatron). The batch keys move as under FSDP; then the
# parallel layout: the ref and critic sizes first (verl's v0.9 examples copy the actor's sizes into
# them), the rollout's data parallel before its tensor parallel (more replicas of a small TP, as the
# seeds' perf notes advise), the actor's TP/PP/EP before CP/VPP and the uneven-pipeline overrides.
_MEGATRON_PARALLEL = ("tp", "pp", "cp", "ep", "etp", "ref_tp", "ref_pp", "ref_cp", "ref_ep", "ref_etp",
                      "critic_tp", "critic_pp", "critic_cp", "critic_ep", "critic_etp")
_VERL_BATCH = ("actor_micro", "logprob_micro", "ref_micro", "critic_micro",
               "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu",
               "train_batch_size", "actor_mini", "critic_mini",
               "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
               "actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn")
VERL_MEGATRON = RepairPolicy(
    rules=_VERL_BATCH + ("rollout_tp", "rollout_dp", "rollout_ep", "rollout_pp", "rollout_gpus_per_node",
                         "max_model_len") + _MEGATRON_PARALLEL
    + ("vpp", "ref_vpp", "critic_vpp", "first_stage_layers", "last_stage_layers", "pp_account_embedding",
       "pp_account_loss"),
    memory=("gmu_permille", "megatron_param_offload", "megatron_optimizer_offload", "ref_megatron_param_offload",
            "critic_megatron_param_offload", "critic_megatron_optimizer_offload"),
    ranks={
        **{k: v for k, v in VERL.ranks.items() if k in _VERL_BATCH or k.startswith("rollout_") or k == "gmu_permille"
           or k == "max_model_len"},
        "rollout_dp": 5, "rollout_pp": 5,
        "ref_tp": 5, "ref_pp": 5, "ref_cp": 5, "ref_ep": 5, "ref_etp": 5, "ref_vpp": 5,
        "critic_tp": 5, "critic_pp": 5, "critic_cp": 5, "critic_ep": 5, "critic_etp": 5, "critic_vpp": 5,
        "etp": 6, "ep": 6, "tp": 7, "pp": 7, "cp": 8, "vpp": 8,
        "first_stage_layers": 8, "last_stage_layers": 8, "pp_account_embedding": 9, "pp_account_loss": 9,
        "megatron_param_offload": 8, "megatron_optimizer_offload": 8, "ref_megatron_param_offload": 8,
        "critic_megatron_param_offload": 8, "critic_megatron_optimizer_offload": 8,
    },
    parallel=frozenset({"rollout_tp", "rollout_dp", "rollout_ep", "rollout_pp", "rollout_gpus_per_node",
                        *_MEGATRON_PARALLEL}),
    token_budgets=VERL.token_budgets,
    permille=VERL.permille,
    unset_only=VERL.unset_only,
    anchors=dict(VERL.anchors),
    hardware=dict(VERL.hardware),
    algorithm=VERL.algorithm,
    lengths=VERL.lengths,
    grows_memory=VERL.grows_memory,
)

# OpenRLHF 0.11.2 (rules.openrlhf). Batch sizes first (micro sizes, then the train batch, then the
# rollout batch), then the vLLM layout, DeepSpeed's ring/TP sizes, the ref/critic/reward groups' GPU
# counts (the actor's count and the cluster are the hardware), and the switches last.
OPENRLHF = RepairPolicy(
    rules=("micro_train_batch_size", "micro_rollout_batch_size", "train_batch_size", "rollout_batch_size",
           "vllm_generate_batch_size", "train_max_tokens", "vllm_num_engines", "vllm_tp", "ring_attn_size", "ds_tp",
           "fp16", "vllm_sleep", "packing_samples", "ref_gpus_per_node", "critic_gpus_per_node",
           "reward_gpus_per_node", "colocate_actor_ref", "colocate_critic_reward", "colocate_all", "async_train",
           "partial_rollout", "dynamic_batch"),
    memory=("gmu_permille", "zero_stage", "grad_ckpt", "adam_offload", "ref_offload", "reward_offload"),
    ranks={
        "micro_train_batch_size": 2, "micro_rollout_batch_size": 2, "gmu_permille": 1, "vllm_generate_batch_size": 3,
        "train_batch_size": 4, "train_max_tokens": 4, "grad_ckpt": 4, "rollout_batch_size": 5,
        "vllm_num_engines": 5, "vllm_tp": 5, "fp16": 6, "vllm_sleep": 6, "zero_stage": 6,
        "ring_attn_size": 7, "ds_tp": 7, "packing_samples": 7,
        "ref_gpus_per_node": 8, "critic_gpus_per_node": 8, "reward_gpus_per_node": 8, "adam_offload": 8,
        "ref_offload": 8, "reward_offload": 8, "colocate_actor_ref": 8, "colocate_critic_reward": 8,
        "colocate_all": 9, "async_train": 9, "partial_rollout": 8, "dynamic_batch": 9,
    },
    parallel=frozenset({"vllm_num_engines", "vllm_tp", "ring_attn_size", "ds_tp", "ref_gpus_per_node",
                        "critic_gpus_per_node", "reward_gpus_per_node"}),
    token_budgets=frozenset({"train_max_tokens"}),
    permille=frozenset({"gmu_permille"}),
    unset_only=frozenset({"vllm_generate_batch_size"}),
    hardware={"actor_gpus_per_node": "per_node", "cluster_num_gpus": "count"},
    algorithm=("n",),
    lengths=("max_new_tokens",),
    grows_memory=frozenset({"gmu_permille", "micro_train_batch_size", "micro_rollout_batch_size", "train_max_tokens"}),
)

POLICIES: dict[str, RepairPolicy] = {"verl": VERL, "verl-megatron": VERL_MEGATRON, "openrlhf": OPENRLHF}


def policy_for(framework: str, ruleset=None, values: dict | None = None) -> RepairPolicy:
    """The framework's own policy (verl: the Megatron one when the config selects that backend).

    There is no fallback: a framework without a policy is a programming error, so that no
    framework's repair silently moves keys it should not (algorithm settings, GPU counts).
    """
    if framework not in POLICIES:
        from .base import get_framework

        get_framework(framework)  # a framework module registers its policy when it loads (ms-swift)
    if framework == "verl" and values is not None and values.get("megatron"):
        return VERL_MEGATRON
    if framework not in POLICIES:
        raise LookupError(f"no repair policy for framework '{framework}'")
    return POLICIES[framework]


def references(policy: RepairPolicy, values: dict) -> dict[str, int]:
    """For each unset key with an anchor: the anchor's value, if the user set it."""
    out = {}
    for name, anchor in policy.anchors.items():
        if values.get(name) is None and isinstance(values.get(anchor), int) and values[anchor] > 0:
            out[name] = values[anchor]
    gpus = int(values.get("gpus_per_node") or 1) * int(values.get("nnodes") or 1)
    for name, old in policy.per_gpu_of.items():
        given = values.get(old)
        if values.get(name) is None and isinstance(given, int) and not isinstance(given, bool) and given > 0:
            out[name] = max(1, given // gpus)  # the user's own global size, per GPU, wins over an anchor
    return out


def _divisors(x: int) -> set[int]:
    return {d for d in range(1, x + 1) if x % d == 0} if x > 0 else set()


def _pow2(lo: int, hi: int) -> set[int]:
    return {2**i for i in range(0, 24) if lo <= 2**i <= hi}


def candidates(name: str, kind: str, optional: bool, current, policy: RepairPolicy, *, total_gpus: int,
               seq_len: int, narrow: bool, gpu_counts: tuple[int, ...] = ()) -> list:
    """Values ``fix`` may give one variable: the current one first, then its neighbours.

    ``narrow`` (memory evaluated: every candidate fills cost tables) keeps
    powers of two, divisors and simple multiples; otherwise small steps
    (64 -> 66) are candidates too, since they are often the nearest fix.
    """
    if kind == "bool":
        return [current, not current] if current is not None else [False, True]
    if name in policy.unset_only:
        return [current] if current is None else [current, None]
    vals: set = set()
    if name in policy.parallel:
        # divisors of the GPU count (and of the training world, when a rollout server takes some),
        # powers of two up to it (server layouts)
        for count in (total_gpus, *gpu_counts):
            vals |= _divisors(count)
        vals |= _pow2(1, total_gpus)
        if name == "fsdp_size":
            vals.add(-1)
    elif name in policy.token_budgets:
        vals |= {k * seq_len for k in (1, 2, 3, 4)}
    elif name in policy.permille:
        vals |= set(range(300, 951, 50))
    else:
        base = int(current) if current else 8
        vals |= _pow2(1, max(4 * base, 64 if narrow else 1024)) | _divisors(base) | {2 * base, 3 * base}
        if not narrow:
            vals |= {base + k for k in range(-4, 5) if base + k >= 1}
            vals |= {k * total_gpus for k in range(1, 9)}
    rest = sorted(v for v in vals if v is not None and v != current and v != 0)
    return [current] + ([None] if optional and current is not None else []) + rest


def repair_domains(ruleset, policy: RepairPolicy, values: dict, *, keep: set[str], memory: bool, total_gpus: int,
                   seq_len: int) -> dict[str, list]:
    """One-value domains for what stays, candidate lists for what ``fix`` may change."""
    free = set(policy.rules) | (set(policy.memory) if memory else set())
    free -= set(policy.algorithm) | set(policy.hardware)
    counts = tuple(sorted({int(values[k]) * int(values.get(k.replace("gpus_per_node", "nnodes")) or 1)
                           for k in policy.hardware if k.endswith("gpus_per_node") and isinstance(values.get(k), int)}))
    domains = {}
    for name, value in values.items():
        spec = ruleset.variables.get(name)
        if spec is None or name not in free or name in keep:
            domains[name] = [value]
            continue
        domains[name] = candidates(name, spec.kind, spec.optional, value, policy, total_gpus=total_gpus,
                                   seq_len=seq_len, narrow=memory, gpu_counts=counts)
    return domains


def hardware_candidates(policy: RepairPolicy, values: dict) -> dict[str, list]:
    """Other GPU counts to try when nothing fits: the current one first, then more (and fewer)."""
    out: dict[str, list] = {}
    for name, kind in policy.hardware.items():
        cur = values.get(name)
        if not isinstance(cur, int) or isinstance(cur, bool) or cur < 1:
            continue
        if kind == "per_node":
            rest = range(1, max(8, cur) + 1)
        else:
            rest = range(1, 4 * cur + 1)
        out[name] = [cur] + [v for v in rest if v != cur]
    return out
