"""Host memory (the node's RAM) of one RL job, per node, term by term.

A whole class of "out of memory" reports is the node's RAM, not the GPU's: Ray's memory monitor killing a worker
("Task was killed due to the node running low on memory"), the kernel's OOM killer (exit code -9). What a node holds:

- every GPU worker process's own footprint (torch, the CUDA runtime, NCCL, the engine's libraries);
- the trained models' states that live on the CPU: FSDP / Megatron offload (verl's param_offload and
  optimizer_offload; the reference model, which verl's FSDP engine always keeps on the CPU), DeepSpeed ZeRO-Offload
  (OpenRLHF's --adam_offload, ms-swift's and TRL's zero*_offload configs);
- a sleeping vLLM engine's weights at sleep level 1 ("the model weights are backed up in CPU memory", vLLM's sleep
  mode docs): OpenRLHF's --vllm_enable_sleep, ms-swift's --sleep_level 1, verl's legacy rollouts and LoRA rollouts;
  pinned host memory, whose allocator rounds every block up to a power of two (pinned_bytes), as it does vLLM V0's
  CPU swap space;
- at start-up, the checkpoint loaded on the CPU before it is sharded or moved to the GPU: verl's rank 0 loads the
  model in fp32 while the other ranks build it on the meta device; a plain-DDP or ZeRO-1/2 process loads a whole copy.

The peak is the largest of start-up (processes + loaded copies), steady state (processes + offloaded states +
sleeping engines), for verl's LoRA actors the first weight sync (the whole model on every worker's CPU) and, when the
config saves checkpoints, the checkpoint save (the state dicts each worker copies to the CPU to write them), against
the node's RAM less what the run's killer leaves (``host_limit_share``). Constants and sources: docs/cost-model.md
section 11.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import constants as C
from .memory import (_megatron_states, _mp, _states, _trained_params, engine_weight_bytes, model_consts,
                     offloaded_checkpoint_bytes, quantized_base_bytes, quantized_model_bytes)
from .plan import Plan
from ..identity_cache import by_identity

if TYPE_CHECKING:  # pragma: no cover
    from ..catalog.models import ModelCard

GIB = 2**30

# Per GPU worker: torch, the CUDA runtime's host side, NCCL and an engine's libraries (an assumption, held to the
# corpus's host runs: docs/cost-model.md section 11)
HOST_PROCESS_BYTES = 4 * GIB
# vLLM V0's CPU swap space: every GPU worker allocates swap_space GiB of pinned, zeroed KV-cache blocks on the CPU
# (vllm/worker/cache_engine.py CacheEngine._allocate_kv_cache(num_cpu_blocks, "cpu"), v0.6.3; EngineArgs.swap_space
# default 4 GiB "per GPU", which vllm/config.py _verify_cpu_swap_space counts x GPUs per node). V1 has no swap space.
VLLM_V0_SWAP_BYTES = 4 * GIB
# Ray's memory monitor kills a worker when the node's memory use exceeds 0.95 of its RAM (Ray docs, "Out-Of-Memory
# Prevention", memory_usage_threshold default 0.95: src/ray/common/ray_config_def.h RAY_CONFIG(float,
# memory_usage_threshold, 0.95), which the environment's RAY_memory_usage_threshold overrides when Ray starts);
# without Ray, or with its monitor off (RAY_memory_monitor_refresh_ms=0), the kernel's OOM killer: the same share is
# kept for the OS and page cache
HOST_LIMIT_SHARE = 0.95

# Node RAM of the standard 8-GPU cloud shapes, per GPU (an assumption the output states; --host-mem overrides it):
# AWS p4d/p4de.24xlarge 1152 GiB for 8 A100, p5/p5e.48xlarge 2048 GiB for 8 H100/H200
# (github.com/meta-pytorch/torchx torchx/specs/named_resources_aws.py)
DEFAULT_HOST_GIB_PER_GPU = {"a100-40gb": 144, "a100-80gb": 144, "h100": 256, "h200": 256}
# ... each of 8 GPUs: the node a job's model groups share when it is not told otherwise (OpenRLHF: HostLayout.node_gpus)
STANDARD_NODE_GPUS = 8
DEFAULT_HOST_SOURCE = {"a100-40gb": "AWS p4d (1152 GiB for 8)", "a100-80gb": "AWS p4de (1152 GiB for 8)",
                       "h100": "AWS p5 (2048 GiB for 8)", "h200": "AWS p5e (2048 GiB for 8)"}

T_PROC = "GPU worker processes (torch, CUDA, NCCL, engine libraries)"
T_LOAD = "checkpoint loaded on the CPU at start-up"
T_OFF_ACTOR = "actor states offloaded to the CPU"
T_OFF_CRITIC = "critic states offloaded to the CPU"
T_OFF_REF = "reference model on the CPU"
T_ENGINE = "rollout engine's weights in host RAM"  # printed with whose copy it is (HostReport.labels)
T_DRIVER = "Ray driver process"  # printed with the framework's own process (RAY_DRIVERS)
T_CKPT = "activation checkpoints offloaded to the CPU (Unsloth)"
T_LOAD_OTHERS = "reference and reward checkpoints loaded on the CPU beside the actor's"
T_SWAP = "vLLM V0's CPU swap space (pinned KV blocks per GPU worker)"
T_LORA_SYNC = "LoRA's first weight sync: the whole fp32 model on the CPU of every worker"
T_SAVE = "checkpoint save: state dicts copied to the CPU to be written"

# torch's pinned-memory allocator (CachingHostAllocator, behind torch.empty/zeros(pin_memory=True)) rounds every
# block up to the next power of two (aten/src/ATen/core/CachingHostAllocator.h: ``c10::llvm::PowerOf2Ceil(size)``,
# since torch 1.11: pytorch/pytorch#95823) and keeps freed blocks cached; measured: vllm-project/vllm#53042 (2.08 GiB
# tensors take 4 GiB of Shmem), vllm PR 50094 (6 GiB -> 8, 10 GiB -> 16). Blocks under 1 MiB share the CUDA caching
# allocator's 2 MiB segments, whose backups are powers of two already (docs/cost-model.md section 11).
PINNED_ROUND_FROM_BYTES = 2**20

# The stacks that run their trainer loop in a Ray driver process on the head node beside the GPU workers: verl's
# main_ppo.py starts a TaskRunner actor (ray::TaskRunner.run in verl #3453's memory list), EasyR1 its Runner,
# OpenRLHF's train_ppo_ray.py drives the actor groups from the launching process. It imports torch and the trainer and
# holds the dataset and each step's batch: priced as one more worker process (HOST_PROCESS_BYTES). torchrun stacks
# (ms-swift, TRL) have no such process.
RAY_DRIVERS = {"verl": "verl's TaskRunner", "verl-megatron": "verl's TaskRunner",
               "openrlhf": "OpenRLHF's trainer loop", "easyr1": "EasyR1's Runner"}

# DeepSpeed's ZeRO-Offload host buffers by release (runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer.__init__,
# offload_config.py; the releases holding each change, from the DeepSpeed repository's tags):
# - from 0.17.0 stages 1-2 keep a 16-bit copy of the rank's partition on the CPU (param_buffer_of_bit16_for_cpu_offload
#   _groups, pinned when pin_memory; deepspeedai/DeepSpeed#7309);
# - before 0.18.3 they pin the fp32 master partition whatever pin_memory says, from 0.18.3 only when it is set
#   ("stage 1-2: don't pin memory if not configured", #7689);
# - offload_optimizer / offload_param pin_memory default to False before 0.19.5 and True from it (#8207).
DS_BIT16_OFFLOAD_BUFFER_FROM = (0, 17, 0)
DS_MASTER_PINNED_ONLY_IF_SET_FROM = (0, 18, 3)
DS_PIN_MEMORY_DEFAULT_TRUE_FROM = (0, 19, 5)
# the release the DeepSpeed terms were read at when a framework does not say which one it runs
DS_READ_AT = (0, 16, 4)


@dataclass(frozen=True)
class GroupOnNode:
    """A trained or reference model whose GPUs are a group of their own (OpenRLHF's critic and reference without
    colocation): its GPU workers on the node the estimate is for (a share of one where the flags leave open which node
    Ray puts them on) and the ZeRO partitions its states are split into (its GPUs over DeepSpeed's TP)."""

    ranks: float
    shards: int


@dataclass(frozen=True)
class HostLayout:
    """What a framework whose model groups are processes of their own (OpenRLHF's Ray actors, one per model and GPU)
    runs on each of the actor's GPUs, beyond the actor's own worker: the default is one worker process per GPU that
    loads the actor alone (verl's fused WorkerDict, torchrun's ranks)."""

    processes_per_gpu: int = 1  # GPU worker processes per GPU of the actor's group (actor, ref, reward, engine...)
    # bytes per GPU the other model groups on these GPUs load on the CPU at the same time as the actor
    other_loads_per_gpu: float = 0.0
    # the rollout engines went to sleep (weights in host RAM) before the models load: both at start-up
    engines_asleep_at_load: bool = False
    # bytes per GPU worker that the first weight sync of a LoRA actor holds on the CPU (verl's legacy workers move
    # the whole unsharded model there to send the engine its base weights): 0 if none
    lora_first_sync_bytes: float = 0.0
    # bytes per rollout-engine GPU of CPU swap space the engine allocates (vLLM V0: VLLM_V0_SWAP_BYTES): 0 if none
    engine_swap_per_gpu: float = 0.0
    # the rollout engines are built while the trained models load (OpenRLHF creates them first): their swap space is
    # held at start-up too
    engines_built_at_load: bool = False
    # the share of the node's RAM the run may use before it is killed: Ray's memory_usage_threshold as the launch
    # script's environment sets it (RAY_memory_usage_threshold), else HOST_LIMIT_SHARE
    limit_share: float = HOST_LIMIT_SHARE
    # bytes per GPU worker that a checkpoint save holds on the CPU at once (the state dicts it writes): 0 if the config
    # does not save
    save_bytes_per_gpu: float = 0.0
    # the save moves the actor's offloaded parameters back to the GPU first (verl's save_checkpoint)
    save_loads_params: bool = False
    # bytes the first rank of the node alone holds on the CPU at a save, one after the other with the per-worker ones
    # (a whole state dict gathered on rank 0): the save holds the larger of the two
    save_rank0_bytes: float = 0.0
    # the save ends in DeepSpeed's save_checkpoint (runtime/engine.py _save_zero_checkpoint): every rank torch.saves its
    # ZeRO partition, and torch.save copies a GPU storage to the CPU one at a time (torch/serialization.py _save), the
    # largest the fp32 master partition (stage_1_and_2.py single_partition_of_fp32_groups): one fp32 copy of the
    # rank's share of the trained parameters, none when the optimizer is offloaded (already on the CPU)
    save_zero_partition: bool = False
    # how the trainer moves a DeepSpeed optimizer without ZeRO-Offload to the CPU between phases: True = DeepSpeed's
    # offload_states into pinned buffers (OpenRLHF's --deepspeed_enable_sleep), False = the Adam moments copied into
    # plain CPU tensors (ms-swift's --offload_optimizer): _deepspeed_offloaded
    ds_offload_states_pinned: bool = False
    # ... and the 16-bit gradient partitions with them (offload_states' lp_grads: OpenRLHF on DeepSpeed >= 0.16.5)
    ds_offload_states_lp_grads: bool = False
    # the DeepSpeed release the trainer runs (DS_READ_AT when the framework does not say) and the offload config's
    # pin_memory (None: left out, DeepSpeed's default for that release: a config accelerate generates, TRL's)
    deepspeed: tuple[int, ...] = DS_READ_AT
    ds_offload_pin_memory: bool | None = True
    # the GPUs of the node the estimate is for, all model groups' (the assumed standard node's RAM is for them): 0 =
    # the actor's GPUs on the node (a framework whose only GPU workers are the actor's)
    node_gpus: int = 0
    # GPU worker processes on this node's GPUs that are not the actor's (OpenRLHF's groups with GPUs of their own:
    # the reference, the critic, the reward model, the vLLM engines), and the bytes they load on the CPU at start-up
    # at the same time as the actor
    other_processes: float = 0.0
    other_startup_loads: float = 0.0
    # the rollout engines' GPUs on this node (their swap space): None = as many as the actor's GPUs on the node
    engine_gpus_on_node: float | None = None
    # where the critic's and the reference's offloaded states are: None = one worker per actor GPU, partitioned as the
    # actor (verl's critic and reference share the actor's GPUs), else their own group's workers on this node
    critic_group: GroupOnNode | None = None
    ref_group: GroupOnNode | None = None
    # a node the critic's group fills apart from the actor's (OpenRLHF's critic placement group off the actor's node):
    # its workers there, and the GPU worker processes per critic GPU (2 with the reward model on the critic's GPUs)
    critic_node: GroupOnNode | None = None
    critic_node_processes: float = 1.0


@dataclass
class HostReport:
    """Bytes per node at start-up and in steady state, by term, against the node's RAM (None: not given and no
    standard node for the GPU type: the estimate alone, no verdict)."""

    ram_bytes: float | None
    ram_from: str = "given"  # "given", or the assumption the RAM came from
    limit_share: float = HOST_LIMIT_SHARE  # of the RAM, the run's killer's line (Ray's memory_usage_threshold)
    startup: dict[str, float] = field(default_factory=dict)
    steady: dict[str, float] = field(default_factory=dict)
    first_sync: dict[str, float] = field(default_factory=dict)  # a LoRA actor's first weight sync (empty: none)
    save: dict[str, float] = field(default_factory=dict)  # a checkpoint save (empty: the config saves none)
    # the node of a critic with GPUs of its own, beside the actor's node (empty: none): what its workers alone hold
    critic_node: dict[str, float] = field(default_factory=dict)
    # a term's name as printed for this framework, where it says whose process or copy it is (T_DRIVER, T_ENGINE)
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, term: str) -> str:
        return self.labels.get(term, term)

    def _states(self) -> dict[str, dict[str, float]]:
        return {"start-up": self.startup, "steady state": self.steady, "first LoRA weight sync": self.first_sync,
                "checkpoint save": self.save, "steady state on the critic's own node": self.critic_node}

    @property
    def peak_bytes(self) -> float:
        return max(sum(terms.values()) for terms in self._states().values())

    @property
    def when(self) -> str:
        """The state of the peak (the earliest of equal ones)."""
        states = self._states()
        return max(states, key=lambda k: (sum(states[k].values()), -list(states).index(k)))

    @property
    def ram_gib(self) -> float | None:
        return None if self.ram_bytes is None else self.ram_bytes / GIB

    @property
    def peak_gib(self) -> float:
        return self.peak_bytes / GIB

    @property
    def limit_gib(self) -> float | None:
        return None if self.ram_gib is None else self.limit_share * self.ram_gib

    @property
    def fits(self) -> bool | None:
        return None if self.limit_gib is None else self.peak_gib <= self.limit_gib

    @property
    def terms_gib(self) -> dict[str, float]:
        """The terms of the peak, GiB."""
        return {t: b / GIB for t, b in self._states()[self.when].items() if b > 0}

    def largest_terms_text(self, digits: int = 0, k: int = 3) -> str:
        """The largest terms of the peak in words: "actor states offloaded to the CPU 85, ..." (GiB)."""
        return ", ".join(f"{self.label(t)} {b:.{digits}f}"
                         for t, b in sorted(self.terms_gib.items(), key=lambda kv: -kv[1])[:k])

    def to_dict(self) -> dict:
        return {"ram_gib": self.ram_gib, "ram_from": self.ram_from, "limit_gib": self.limit_gib,
                "peak_gib": round(self.peak_gib, 2), "when": self.when, "fits": self.fits,
                "terms_gib": {self.label(t): round(b, 2) for t, b in self.terms_gib.items()}}


def pinned_bytes(request: float) -> float:
    """Host bytes one pinned block of ``request`` bytes takes (CachingHostAllocator's power-of-two rounding)."""
    n = int(request)
    return float(request) if n < PINNED_ROUND_FROM_BYTES else float(1 << (n - 1).bit_length())


def _vllm_weight_numels(card: ModelCard, tp: int) -> list[float]:
    """Elements of each large weight tensor one TP rank of a vLLM engine allocates, in vLLM's fused layout: the
    vocab-parallel embedding and lm_head, per layer the merged qkv_proj and o_proj (MLA: its projections as they
    are), the merged gate_up_proj and down_proj, a MoE layer's experts as FusedMoE's two stacked tensors (w13, w2)
    plus its shared experts (vllm/model_executor/models/qwen2.py, llama.py, qwen2_moe.py, deepseek_v2.py). Norms and
    biases (small) are left out."""
    h, L = card.hidden_size, card.num_hidden_layers
    out = [card.embedding_params() / tp] + ([] if card.tie_word_embeddings else [card.lm_head_params() / tp])
    if card.is_mla:
        attn = [a * b * k / tp for a, b, k in card._attention_linears()]
    else:
        q, kv = card.num_attention_heads * card.head_dim, card.num_key_value_heads * card.head_dim
        attn = [h * (q + 2 * kv) / tp, q * h / tp]
    for i in range(L):
        out += attn
        if card.is_moe_layer(i):
            inter, e = card.moe_intermediate_size, card.num_experts
            out += [e * 2 * inter * h / tp, e * inter * h / tp]
            if card.num_shared_experts:
                shared = (card.shared_expert_intermediate_size or inter) * card.num_shared_experts
                out += [2 * shared * h / tp, shared * h / tp]
        else:
            out += [2 * card.intermediate_size * h / tp, card.intermediate_size * h / tp]
    return out


_PINNED_RATIO: dict = {}


def pinned_weight_ratio(card: ModelCard, tp: int) -> float:
    """Pinned host bytes over weight bytes of one engine rank's weights backed up tensor by tensor (vLLM sleep level
    1: vllm/device_allocator/cumem.py CuMemAllocator.sleep, one ``torch.empty(size, pin_memory=True)`` per CUDA
    allocation of the "weights" pool, one per weight tensor), each rounded up to a power of two (pinned_bytes): about
    1.9 for Qwen2.5-7B at TP 1 (its 259 MiB gate_up_proj takes 512). Counted at 16-bit; the ratio is applied to the
    engine's weight bytes as priced (quantized too)."""
    def ratio() -> float:
        sizes = [C.BF16 * n for n in _vllm_weight_numels(card, max(1, tp))]
        total = sum(sizes)
        return sum(pinned_bytes(b) for b in sizes) / total if total else 1.0
    return by_identity(_PINNED_RATIO, card, ratio, tp, limit=1024)


def pinned_swap_bytes(swap_bytes: float, card: ModelCard) -> float:
    """Host bytes of vLLM V0's CPU swap space on one GPU worker: one pinned KV tensor per attention layer
    (vllm/worker/cache_engine.py CacheEngine._allocate_kv_cache(num_cpu_blocks, "cpu"), ``torch.zeros(...,
    pin_memory=True)`` per layer, v0.6.3 to 0.8.5), each of swap_space / layers bytes, rounded up to a power of two."""
    layers = max(1, card.num_hidden_layers)
    return layers * pinned_bytes(swap_bytes / layers)


def _offloaded(plan: Plan, critic: bool, params_off: bool, opt_off: bool, layout: HostLayout | None = None) -> float:
    """Host bytes of one rank's offloaded share of a trained model."""
    mc = model_consts(plan.model)
    if plan.trainer == "deepspeed":
        if not (opt_off or params_off):
            return 0.0
        frozen = _offloaded_frozen_base(plan, mc) if params_off and plan.lora_params and not critic else 0.0
        return _deepspeed_offloaded(plan, mc, critic, params_off, layout or HostLayout()) + frozen
    w, g, o = _megatron_states(plan, mc, critic) if plan.trainer == "megatron" else _states(plan, mc, critic)
    keep_g = plan.trainer == "megatron"  # Megatron offloads its fp32 grad buffer with the params
    return (w + (g if keep_g else 0.0) if params_off else 0.0) + (o if opt_off else 0.0)


def _sub_groups(numel: float) -> list[float]:
    """ZeRO-3's optimizer sub-groups of one rank's partition: closed once they reach ``sub_group_size`` elements
    (deepspeed/runtime/zero/stage3.py _create_fp16_sub_groups; zero/config.py default 1e9)."""
    size = float(C.DEEPSPEED_SUB_GROUP_SIZE)
    full = int(numel // size)
    rest = numel - full * size
    return [size] * full + ([rest] if rest > 0 else [])


def _deepspeed_offloaded(plan: Plan, mc, critic: bool, params_off: bool, layout: HostLayout) -> float:
    """Host bytes of one rank's trained states that DeepSpeed keeps on the CPU, buffer by buffer as DeepSpeed
    allocates them (read at 0.16.4; 0.14.4 allocates the same; the later changes by release in DS_*_FROM above, read
    at 0.19.6), for ``layout.deepspeed``; ``numel`` is the rank's partition of the trained parameters. Every buffer
    made with ``get_accelerator().pin_memory(t)`` (``t.pin_memory()``, accelerator/cuda_accelerator.py) is a pinned
    block, rounded up to a power of two (pinned_bytes); OpenRLHF's and ms-swift's offload configs set ``pin_memory:
    true`` (OpenRLHF's get_train_ds_config, 0.4.0-0.11.2; ms-swift's zero2_offload.json / zero3_offload.json); the
    config accelerate generates from its DeepSpeed plugin (TRL's: ``zero_stage``, ``offload_optimizer_device``)
    leaves it out (accelerate 1.6.0 and 1.10.1 utils/dataclasses.py DeepSpeedPlugin.__post_init__:
    ``offload_optimizer: {device, nvme_path}``), so DeepSpeed's default decides (``layout.ds_offload_pin_memory``
    None). CPU Adam's moments are
    plain ``torch.zeros_like`` of the CPU master weights (ops/adam/cpu_adam.py DeepSpeedCPUAdam.step): 8 bytes per
    element, not pinned. Optimizer param groups other than the first (OpenRLHF's no-decay group: norms and biases)
    hold well under 1 MiB per rank and are counted with the first.

    ZeRO-Offload (the config's offload_optimizer device cpu: OpenRLHF's --adam_offload, zero*_offload configs):
      stages 1-2 (stage_1_and_2.py DeepSpeedZeroOptimizer.__init__ and initialize_optimizer_states): the fp32 master
      partition (``single_partition_of_fp32_groups``, pinned whatever pin_memory says before DeepSpeed 0.18.3), its
      fp32 gradient partition, CPU Adam's moments, ``temp_grad_buffer_for_cpu_offload`` (the largest parameter in
      the 16-bit dtype) and from DeepSpeed 0.17.0 a 16-bit copy of the partition
      (``param_buffer_of_bit16_for_cpu_offload_groups``), each pinned when pin_memory is;
      stage 3 (stage3.py _create_fp32_partitions, _setup_for_real_optimizer, initialize_optimizer_states): the fp32
      master per sub-group (``.to("cpu").clone().float()``: not pinned), the 16-bit gradient partitions
      (``grad_partitions_flat_buffer``; fp32 when data_types.grad_accum_dtype is), each sub-group's fp32 gradient
      buffer (both pinned when pin_memory is), CPU Adam's moments, and with offload_param the 16-bit parameter
      partitions (_create_param_groups_fp16_flat_cpu_memory: one pinned flat buffer, whatever pin_memory says)
      besides zero.Init's per-parameter partitions, pinned when pin_memory is and then freed into the pinned
      allocator's cache (zero3_pinned_ratio).
    Without ZeRO-Offload, the states the trainer moves out between phases: OpenRLHF's --deepspeed_enable_sleep
    (``layout.ds_offload_states_pinned``; utils/deepspeed/deepspeed_utils.py offload_deepspeed_states, 0.6.2, calls
    stage3.py offload_states(hp_params, optim_states, pin_memory=True)) pins the fp32 master and both Adam moments,
    each sub-group's copy on its own (offload_states.py offload_adam_states), from DeepSpeed 0.16.5 (OpenRLHF 0.7.5 on)
    the 16-bit gradient partitions too (lp_grads: ``lp_grad_partitions_flat_pin_buffers``), never the 16-bit
    parameters (lp_params stays commented out, read to 0.11.2);
    ms-swift's --offload_optimizer (rlhf_trainers/rollout_mixin.py offload_optimizer, 4.6.0) copies the Adam moments
    into plain ``torch.empty_like(value, device="cpu")`` tensors, and --offload_model its parameters
    (``tensor.data.to("cpu")``)."""
    _, _, o = _states(plan, mc, critic)
    numel = o / (3 * C.FP32)  # _states counts 12 B (fp32 master + two moments) per element of the partition
    if numel <= 0:
        return 0.0
    dtype = max(C.BF16, plan.model_dtype_bytes)
    if not plan.optimizer_offload:  # states moved out between phases, no ZeRO-Offload
        if layout.ds_offload_states_pinned:
            # one fp32 partition per sub-group at ZeRO-3, per param group below it
            groups = _sub_groups(numel) if plan.zero_stage >= 3 else [numel]
            grad_dtype = C.FP32 if plan.deepspeed_grad_accum_fp32 else dtype
            lp_grads = pinned_bytes(grad_dtype * numel) if layout.ds_offload_states_lp_grads else 0.0
            return 3 * sum(pinned_bytes(C.FP32 * n) for n in groups) + lp_grads
        # --offload_model moves each parameter's data to the CPU (rollout_mixin.py offload_model: ZeRO-3's
        # ds_tensor partition, below ZeRO-3 the whole parameter every rank holds)
        whole = numel * (1 if plan.zero_stage >= 3 else max(1, plan.shard_degree))
        return 2 * C.FP32 * numel + (dtype * whole if params_off else 0.0)
    pin = layout.ds_offload_pin_memory
    if pin is None:
        pin = layout.deepspeed >= DS_PIN_MEMORY_DEFAULT_TRUE_FROM

    def held(b: float) -> float:  # a buffer pinned only when the offload config's pin_memory is
        return pinned_bytes(b) if pin else b

    lp_params = 0.0
    if params_off:  # stage 3's offload_param: the flat pinned buffer, and zero.Init's per-parameter partitions
        # (pinned when offload_param's pin_memory is: partition_parameters.py _partition_param), which the move into
        # the flat buffer frees into the pinned allocator's cache, where they stay (a LoRA's adapters: a few MiB)
        per_param = 0.0 if plan.lora_params and not critic or not pin else zero3_pinned_ratio(
            plan.model, plan.shard_degree, dtype)
        lp_params = pinned_bytes(dtype * numel) + per_param * dtype * numel
    adam = 2 * C.FP32 * numel
    if plan.zero_stage >= 3:
        grad_dtype = C.FP32 if plan.deepspeed_grad_accum_fp32 else dtype
        return (C.FP32 * numel + adam + held(grad_dtype * numel) + lp_params
                + sum(held(C.FP32 * n) for n in _sub_groups(numel)))
    # the largest trained parameter, whole (stage_1_and_2.py largest_param_numel); a LoRA's adapters are a few MiB
    largest = 0.0 if plan.lora_params and not critic else max(_hf_weight_numels(plan.model)) / _mp(plan)
    master = pinned_bytes(C.FP32 * numel) if pin or layout.deepspeed < DS_MASTER_PINNED_ONLY_IF_SET_FROM else (
        C.FP32 * numel)
    bit16 = held(dtype * numel) if layout.deepspeed >= DS_BIT16_OFFLOAD_BUFFER_FROM else 0.0
    return master + held(C.FP32 * numel) + adam + held(dtype * largest) + bit16


def _hf_weight_numels(card: ModelCard) -> list[float]:
    """Elements of each large weight tensor of the model as transformers builds it (one parameter per projection: q, k,
    v, o, gate, up, down; a MoE layer's experts one module each, plus its shared experts; MLA's projections as they
    are), the embedding and an untied lm_head. Norms and biases (small: ZeRO-3 keeps them on the GPU, below
    stage3_param_persistence_threshold) are left out."""
    h, L = card.hidden_size, card.num_hidden_layers
    out = [float(card.embedding_params())] + ([] if card.tie_word_embeddings else [float(card.lm_head_params())])
    if card.is_mla:
        attn = [float(a * b * k) for a, b, k in card._attention_linears()]
    else:
        q, kv = card.num_attention_heads * card.head_dim, card.num_key_value_heads * card.head_dim
        attn = [float(h * q), float(h * kv), float(h * kv), float(q * h)]
    for i in range(L):
        out += attn
        if card.is_moe_layer(i):
            out += [float(card.moe_intermediate_size * h)] * (3 * card.num_experts)
            if card.num_shared_experts:
                shared = (card.shared_expert_intermediate_size or card.moe_intermediate_size) * card.num_shared_experts
                out += [float(shared * h)] * 3
        else:
            out += [float(card.intermediate_size * h)] * 3
    return out


_ZERO3_PINNED_RATIO: dict = {}


def zero3_pinned_ratio(card: ModelCard, shards: int, dtype_bytes: int) -> float:
    """Pinned host bytes over the bytes of one rank's ZeRO-3 partitions of the model's weights: each parameter's
    partition (numel / shards) is pinned on its own, rounded up to a power of two (pinned_bytes)."""
    def ratio() -> float:
        sizes = [dtype_bytes * -(-n // max(1, shards)) for n in _hf_weight_numels(card)]
        total = sum(sizes)
        return sum(pinned_bytes(b) for b in sizes) / total if total else 1.0
    return by_identity(_ZERO3_PINNED_RATIO, card, ratio, (shards, dtype_bytes), limit=1024)


def _offloaded_frozen_base(plan: Plan, mc) -> float:
    """Host bytes of one rank's share of a LoRA's frozen base under ZeRO-3 parameter offload. DeepSpeed partitions
    every parameter, trained or not, onto the offload device: zero.Init's _partition_param allocates each partition
    with ``torch.empty(partition_size, dtype=param.dtype, device=remote_device)`` and pins it when offload_param's
    pin_memory is set (deepspeed/runtime/zero/partition_parameters.py, 0.16.3; remote_device is offload_param.device),
    as ms-swift's zero3_offload.json sets it (offload_param and offload_optimizer: device cpu, pin_memory true;
    swift/config/zero3_offload.json, 4.6.0). The optimizer holds the adapter alone (the 18 B per trained parameter of
    DeepSpeed's estimator cover it); the base adds its own dtype's bytes per parameter, pinned tensor by tensor."""
    shards = max(1, plan.shard_degree)
    frozen = _trained_params(mc, plan, False) / _mp(plan)
    if plan.base_weight_bytes:
        return quantized_base_bytes(plan, mc) / shards
    dtype_bytes = max(C.BF16, plan.model_dtype_bytes)
    return dtype_bytes * frozen / shards * zero3_pinned_ratio(plan.model, shards, dtype_bytes)


def _startup_load(plan: Plan) -> float:
    """Bytes one node holds loading the trained model before it is sharded or moved to the GPU."""
    mc = model_consts(plan.model)
    per_node = gpus_on_node(plan)
    if plan.trainer == "fsdp":
        # verl: rank 0 loads the model in fp32 and broadcasts it; the other ranks build it on the meta device,
        # except for models whose word embeddings are tied (verl/utils/fsdp_utils.py
        # get_init_weight_context_manager(use_meta_tensor=not tie_word_embeddings))
        copies = per_node if plan.model.tie_word_embeddings else 1
        return copies * C.FP32 * mc.params
    if plan.trainer == "megatron" or (plan.trainer == "deepspeed" and plan.zero_stage >= 3):
        return 0.0  # each rank loads its own shard (ZeRO-3's zero.Init, megatron's distributed checkpoint)
    # plain DDP and ZeRO-1/2: every process loads a whole copy in the dtype it loads the checkpoint in
    if plan.prequantized_checkpoint and plan.base_weight_bytes:
        # ... or at the bytes a pre-quantized repo stores (its linears quantized, the embeddings and lm_head 16-bit)
        return per_node * quantized_model_bytes(mc, plan.base_weight_bytes, C.BF16)
    load_bytes = max(C.BF16, plan.load_dtype_bytes, plan.model_dtype_bytes)
    if plan.trainer == "deepspeed" and plan.zero_stage in (1, 2) and not plan.lora_params:
        # then ZeRO-1/2's optimizer builds its flat 16-bit buffer on the CPU: every trained parameter copied to the
        # CPU (param.cpu_data = param.data.cpu()) and flattened there beside it before the buffer moves to the GPU
        # (deepspeed/runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer.__init__, "create flat buffer in CPU",
        # 0.16.4): two 16-bit copies per rank at once, DeepSpeed's own estimators' "4 * num_gpus_per_node" bytes per
        # parameter (estimate_zero2_model_states_mem_needs without offload). A LoRA's optimizer holds the adapter only.
        load_bytes = max(load_bytes, 2 * C.BF16 * _trained_params(mc, plan, False) / mc.params)
    return per_node * load_bytes * mc.params


def gpus_on_node(plan: Plan) -> int:
    """The GPUs (one worker process each) of one node of the job."""
    return max(1, min(plan.gpus_per_node, plan.n_gpus))


def estimate_host(rollout: Plan, update: Plan, ram_bytes: float | None, ram_from: str = "given",
                  framework: str = "", layout: HostLayout | None = None) -> HostReport:
    """The host memory of a node of this job (the head node: the one with the Ray driver, where the framework runs
    one), from its rollout and actor-update plans (which say what is offloaded while the engine generates and while
    the actor trains, and whether the sleeping engine keeps its weights) and, for a framework of one process per
    model and GPU, its layout on the actor's GPUs."""
    layout = layout or HostLayout()
    rep = HostReport(ram_bytes, ram_from, layout.limit_share)
    per_node = gpus_on_node(update)
    nodes = max(1, -(-update.n_gpus // per_node))
    procs = (per_node * layout.processes_per_gpu + layout.other_processes) * HOST_PROCESS_BYTES
    rep.startup = {T_PROC: procs, T_LOAD: _startup_load(update)}
    if layout.other_loads_per_gpu or layout.other_startup_loads:
        rep.startup[T_LOAD_OTHERS] = per_node * layout.other_loads_per_gpu + layout.other_startup_loads
    steady: dict[str, float] = {T_PROC: procs}
    driver = RAY_DRIVERS.get(framework.split("==")[0])
    if driver:
        rep.startup[T_DRIVER] = steady[T_DRIVER] = HOST_PROCESS_BYTES
        rep.labels[T_DRIVER] = f"{T_DRIVER} ({driver})"
    # the actor: what is offloaded during its own update (DeepSpeed offload, FSDP2 CPU offload), or while the engine
    # generates (verl's and ms-swift's offload switches move the states out between phases)
    a_param = bool(update.param_offload and update.offload_during_compute) or bool(
        rollout.actor_param_offload if rollout.actor_param_offload is not None else rollout.param_offload)
    a_opt = bool(update.optimizer_offload) or bool(
        rollout.actor_optimizer_offload if rollout.actor_optimizer_offload is not None else rollout.optimizer_offload)
    steady[T_OFF_ACTOR] = per_node * _offloaded(update, False, a_param, a_opt, layout)
    # a model on GPUs of its own counts only its workers on this node, each its own group's partition
    critic, ref = layout.critic_group, layout.ref_group
    if update.need_critic and (critic is None or critic.ranks > 0):
        critic_plan = update if critic is None else replace(update, shard_degree=max(1, critic.shards))
        steady[T_OFF_CRITIC] = (per_node if critic is None else critic.ranks) * _offloaded(
            critic_plan, True, update.critic_param_offload, update.critic_optimizer_offload, layout)
    own = layout.critic_node
    if update.need_critic and own is not None and own.ranks > 0:
        # the critic's node holds at least its own workers and their offloaded states (a lower bound: whatever else
        # Ray puts on that node is left out); its peak is compared with the same node RAM
        own_plan = replace(update, shard_degree=max(1, own.shards))
        rep.critic_node = {T_PROC: own.ranks * layout.critic_node_processes * HOST_PROCESS_BYTES,
                           T_OFF_CRITIC: own.ranks * _offloaded(own_plan, True, update.critic_param_offload,
                                                                update.critic_optimizer_offload, layout)}
    # DeepSpeed offloads parameters at ZeRO-3 only (its config docs: offload_param "Valid only with stage 3")
    ref_offloads = update.zero_stage >= 3 if update.trainer == "deepspeed" else True
    if update.need_ref and not update.ref_in_actor and update.ref_param_offload and ref_offloads:
        mc = model_consts(update.model)
        shard = max(1, update.shard_degree) if update.zero_stage >= 3 or update.trainer in ("fsdp", "mixed") else 1
        if ref is not None:
            shard = max(1, ref.shards)
        steady[T_OFF_REF] = (per_node if ref is None else ref.ranks) * C.REF_PARAM_BYTES * mc.params / shard
    if update.ckpt_offload:  # Unsloth's use_gradient_checkpointing="unsloth": every layer's input in host RAM
        steady[T_CKPT] = per_node * offloaded_checkpoint_bytes(update)
    if rollout.engine_sleep_host_weights:
        engine_gpus = rollout.rollout_gpus or rollout.n_gpus
        engines = max(1, engine_gpus // max(1, rollout.rollout_tp))
        # sleep level 1 backs the weights up in pinned blocks (pinned_weight_ratio); verl 0.1-0.2's bundled vLLM
        # points them at pageable CPU tensors instead (torch.empty_like(device="cpu"): engine_weights_released)
        pinned = 1.0 if rollout.engine_weights_released else pinned_weight_ratio(rollout.model, max(1, rollout.rollout_tp))
        steady[T_ENGINE] = engines * engine_weight_bytes(rollout, model_consts(rollout.model)) * max(
            1, rollout.rollout_tp) / nodes * pinned
        if layout.engines_asleep_at_load:
            rep.startup[T_ENGINE] = steady[T_ENGINE]
        whose = "verl 0.1-0.2's CPU copy" if rollout.engine_weights_released else "vLLM sleep level 1"
        rep.labels[T_ENGINE] = f"{T_ENGINE} ({whose})"
    if layout.engine_swap_per_gpu:
        engines_here = layout.engine_gpus_on_node if layout.engine_gpus_on_node is not None else min(
            per_node, rollout.rollout_gpus or rollout.n_gpus)
        steady[T_SWAP] = engines_here * pinned_swap_bytes(
            layout.engine_swap_per_gpu, rollout.model)
        if layout.engines_built_at_load:
            rep.startup[T_SWAP] = steady[T_SWAP]
    rep.steady = steady
    if layout.lora_first_sync_bytes:
        # the sync loads the actor's params onto the GPU first (an offloaded actor's too), then holds the whole model
        # on the CPU of every worker; everything else is as in the steady state
        rep.first_sync = {**steady, T_OFF_ACTOR: per_node * _offloaded(update, False, False, a_opt, layout),
                          T_LORA_SYNC: per_node * layout.lora_first_sync_bytes}
    partition = 0.0
    if layout.save_zero_partition and update.trainer == "deepspeed" and not update.optimizer_offload:
        _, _, o = _states(update, model_consts(update.model), False)  # 12 B per trained parameter of the rank's share
        partition = o / 3
    per_gpu = max(layout.save_bytes_per_gpu, partition)  # the model's state dict, then the optimizer's partition
    if per_gpu or layout.save_rank0_bytes:
        # every worker on the node writes its own shards at the same step; the rest is as in the steady state
        rep.save = {**steady, T_SAVE: max(per_node * per_gpu, layout.save_rank0_bytes)}
        if layout.save_loads_params:
            rep.save[T_OFF_ACTOR] = per_node * _offloaded(update, False, False, a_opt, layout)
    return rep


def node_ram(gpu_name: str, gpus_per_node: int, given_gib: float | None) -> tuple[float | None, str]:
    """The node's RAM (bytes) and where it comes from: the given one, else the standard cloud node's for the GPU type
    (an assumption the output states), else None (no standard node)."""
    if given_gib is not None:
        return given_gib * GIB, "given"
    per_gpu = DEFAULT_HOST_GIB_PER_GPU.get(gpu_name)
    if per_gpu is None:
        return None, "not given (no standard node for this GPU type)"
    return per_gpu * max(1, gpus_per_node) * GIB, (
        f"{per_gpu} GiB per GPU x {gpus_per_node}, the RAM of {DEFAULT_HOST_SOURCE[gpu_name]}")
