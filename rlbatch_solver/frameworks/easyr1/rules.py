"""Every batch-size and parallelism rule EasyR1 0.3.2 enforces (github.com/hiyouga/EasyR1, tag v0.3.2).

EasyR1 is a fork of verl whose config keys map onto verl's: where a key means what a verl key means, its rule
variable has verl's name (``KEY_MAP``: ``data.rollout_batch_size`` is verl's ``train_batch_size``), so verl's cost
terms price it unchanged (cost.py). The rules are EasyR1's own: it checks its batches in other places and with other
arithmetic than verl (it floors the per-device update batch where verl asserts a whole one, and the DataProto split
fails later instead; it asks the global rollout batch to split into experience micro batches). Paths are inside the
EasyR1 repository at v0.3.2; each message ends with EasyR1's own words.

Sizes: ``rollout_batch_size`` and ``global_batch_size`` count prompts (EasyR1 multiplies the update batch by
rollout.n in ``FSDPWorker._init_dist_mesh``); ``*_per_device_*`` sizes count samples per GPU. With dynamic batching
(EasyR1's default) a micro batch size is a token budget of that many longest samples.
"""

from __future__ import annotations

from ...rules.base import Derived, Rule, RuleSet, Severity, Stage, VarSpec, is_set
from ...rules.expr import if_then_else, maximum
from ..verl.rules import rule_vars

VERSION = "0.3.2"

ACTOR_CFG = "verl/workers/actor/config.py:ActorConfig"
TRAINER = "verl/trainer/ray_trainer.py:RayPPOTrainer.__init__"
MESH = "verl/workers/fsdp_workers.py:FSDPWorker._init_dist_mesh"
ROLLOUT = "verl/workers/fsdp_workers.py:FSDPWorker._build_rollout"
VLLM = "verl/workers/rollout/vllm_rollout_spmd.py:vLLMRollout.__init__"
CHUNK = "verl/protocol.py:DataProto.chunk (Dispatch.DP_COMPUTE_PROTO, verl/single_controller/base/decorator.py)"
SPLIT = "verl/protocol.py:DataProto.split"
# RayPPOTrainer.fit balances every step's samples over the GPUs (equal_size=True) before dispatching them
BALANCE = ("verl/utils/seqlen_balancing.py:karmarkar_karp (l.105), from verl/trainer/ray_trainer.py:"
           "RayPPOTrainer._balance_batch (l.599)")

# name in rules (verl's name where the meaning is verl's) -> (EasyR1 key, kind, default, optional, description);
# defaults are EasyR1 0.3.2's dataclass defaults (verl/trainer/config.py, verl/workers/actor/config.py,
# verl/workers/critic/config.py, verl/workers/rollout/config.py)
ROWS = [
    ("nnodes", "trainer.nnodes", "int", 1, False, "number of nodes"),
    ("gpus_per_node", "trainer.n_gpus_per_node", "int", 8, False, "GPUs per node"),
    ("train_batch_size", "data.rollout_batch_size", "int", 512, False, "prompts per step (verl's data.train_batch_size)"),
    ("gen_batch", "data.mini_rollout_batch_size", "int", None, True, "prompts per generation batch (unset: rollout_batch_size; verl's data.gen_batch_size)"),
    ("max_prompt_length", "data.max_prompt_length", "int", 512, False, "longest prompt, tokens"),
    ("max_response_length", "data.max_response_length", "int", 512, False, "longest response, tokens"),
    ("n", "worker.rollout.n", "int", 1, False, "responses per prompt"),
    ("actor_mini", "worker.actor.global_batch_size", "int", 256, False, "prompts per actor update (verl's ppo_mini_batch_size)"),
    # passes of the update over the step's batch, each over all its mini batches with an optimizer step each
    # (v0.3.2 verl/workers/actor/dp_actor.py DataParallelPPOActor.update_policy: for _ in range(ppo_epochs))
    ("actor_epochs", "worker.actor.ppo_epochs", "int", 1, False, "passes of the actor update over the step's batch"),
    ("actor_micro_per_gpu", "worker.actor.micro_batch_size_per_device_for_update", "int", 4, False, "samples per forward/backward per GPU"),
    ("logprob_micro_per_gpu", "worker.actor.micro_batch_size_per_device_for_experience", "int", 16, False, "samples per log-prob forward per GPU (the reference's too)"),
    ("actor_dyn", "worker.actor.dynamic_batching", "bool", True, False, "micro batches by tokens: micro size x longest sample"),
    ("remove_padding", "worker.actor.padding_free", "bool", True, False, "sequence packing"),
    ("actor_sp", "worker.actor.ulysses_size", "int", 1, False, "Ulysses sequence parallel size (the reference's too)"),
    ("fsdp_size", "worker.actor.fsdp.fsdp_size", "int", -1, False, "FSDP shard group size (-1: all GPUs)"),
    ("actor_cpu_offload", "worker.actor.fsdp.enable_cpu_offload", "bool", False, False, "FSDP's own CPU offload"),
    ("param_offload", "worker.actor.offload.offload_params", "bool", False, False, "actor params on CPU between phases"),
    ("optimizer_offload", "worker.actor.offload.offload_optimizer", "bool", False, False, "actor optimizer on CPU between phases"),
    ("grad_ckpt", "worker.actor.model.enable_gradient_checkpointing", "bool", True, False, "activation recompute"),
    ("use_torch_compile", "worker.actor.use_torch_compile", "bool", True, False, "entropy under torch.compile"),
    ("ref_param_offload", "worker.ref.offload.offload_params", "bool", False, False, "reference params on CPU"),
    ("ref_cpu_offload", "worker.ref.fsdp.enable_cpu_offload", "bool", False, False, "reference FSDP CPU offload"),
    ("rollout_tp", "worker.rollout.tensor_parallel_size", "int", 2, False, "vLLM tensor parallel"),
    ("gmu_permille", "worker.rollout.gpu_memory_utilization", "int", 600, False, "vLLM memory fraction x1000"),
    ("enforce_eager", "worker.rollout.enforce_eager", "bool", False, False, "no CUDA graphs in rollout"),
    ("max_num_batched_tokens", "worker.rollout.max_num_batched_tokens", "int", 8192, False, "vLLM prefill token budget"),
    ("max_model_len", "worker.rollout.max_model_len", "int", None, True, "vLLM context length (unset: prompt + response)"),
    ("critic_mini", "worker.critic.global_batch_size", "int", 256, False, "prompts per critic update"),
    # its own key, not the actor's (v0.3.2 verl/workers/critic/dp_critic.py DataParallelPPOCritic.update_critic)
    ("critic_epochs", "worker.critic.ppo_epochs", "int", 1, False, "passes of the critic update over the step's batch"),
    ("critic_micro_per_gpu", "worker.critic.micro_batch_size_per_device_for_update", "int", 4, False, "critic samples per forward/backward per GPU"),
    ("critic_exp_micro", "worker.critic.micro_batch_size_per_device_for_experience", "int", 16, False, "critic samples per value forward per GPU"),
    ("critic_sp", "worker.critic.ulysses_size", "int", 1, False, "critic Ulysses size"),
    # not verl's critic_dyn (which the cost terms read): the critic is priced with token budgets either way (cost.py)
    ("critic_dyn_batching", "worker.critic.dynamic_batching", "bool", True, False, "critic micro batches by tokens"),
    ("critic_cpu_offload", "worker.critic.fsdp.enable_cpu_offload", "bool", False, False, "critic FSDP CPU offload"),
    ("critic_param_offload", "worker.critic.offload.offload_params", "bool", False, False, "critic params on CPU"),
    ("critic_optimizer_offload", "worker.critic.offload.offload_optimizer", "bool", False, False, "critic optimizer on CPU"),
    ("critic_grad_ckpt", "worker.critic.model.enable_gradient_checkpointing", "bool", True, False, "critic recompute"),
    ("need_critic", "algorithm.adv_estimator==gae", "bool", False, False, "a critic is trained"),
    ("need_ref", "not algorithm.disable_kl", "bool", True, False, "a reference model runs"),
    ("group_estimator", "algorithm.adv_estimator in (grpo, rloo)", "bool", True, False, "advantage relative within a group of n"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads"),
    ("max_position_embeddings", "model.max_position_embeddings", "int", None, False, "model context"),
]
VARIABLES = {name: VarSpec(name, key, kind, default, optional, desc) for name, key, kind, default, optional, desc in ROWS}
# variables a config does not set by its own key: decided from other keys, or the model card's
DECIDED = frozenset({"need_critic", "need_ref", "group_estimator", "num_heads", "num_kv_heads", "max_position_embeddings"})
V = rule_vars(VARIABLES)

N = maximum(1, V["nnodes"] * V["gpus_per_node"])
DERIVED = [
    Derived("N", V["nnodes"] * V["gpus_per_node"], "GPUs in the job"),
    Derived("dp", maximum(1, N // V["actor_sp"]), "actor data-parallel size: N / ulysses_size"),
    Derived("critic_dp", maximum(1, N // V["critic_sp"]), "critic data-parallel size"),
    Derived("B_n", V["train_batch_size"] * V["n"], "samples per step"),
    Derived("gen_prompts", if_then_else(is_set("gen_batch"), V["gen_batch"], V["train_batch_size"]),
            "prompts per generation batch"),
    Derived("L", V["max_prompt_length"] + V["max_response_length"], "longest sample, tokens"),
    Derived("mini_n", V["actor_mini"] * V["n"], "samples per actor update"),
    # FSDPWorker._init_dist_mesh: global_batch_size * n // (world_size // ulysses_size), floored
    Derived("mini_per_gpu", V["actor_mini"] * V["n"] // maximum(1, N // V["actor_sp"]),
            "actor update samples per GPU (EasyR1's global_batch_size_per_device)"),
    Derived("local_batch", V["train_batch_size"] * V["n"] // maximum(1, N // V["actor_sp"]),
            "samples per GPU in a step (after the Ulysses all-gather)"),
    Derived("critic_mini_per_gpu", V["critic_mini"] * V["n"] // maximum(1, N // V["critic_sp"]),
            "critic update samples per GPU"),
    Derived("critic_local_batch", V["train_batch_size"] * V["n"] // maximum(1, N // V["critic_sp"]),
            "samples per GPU in a critic step"),
    Derived("grad_accum", V["actor_mini"] * V["n"] // maximum(1, N // V["actor_sp"]) // maximum(1, V["actor_micro_per_gpu"]),
            "micro batches per actor update"),
]
D = rule_vars({d.name: VarSpec(d.name, d.name) for d in DERIVED})


def _rules() -> list[Rule]:
    r: list[Rule] = []
    add = r.append
    critic = V["need_critic"]
    # ---------------- the driver: RayPPOTrainer.__init__ ----------------
    add(Rule(
        "easyr1.trainer.rollout_divisible_by_global",
        (V["train_batch_size"] % V["actor_mini"]).eq(0),
        "data.rollout_batch_size = {train_batch_size} is not divisible by worker.actor.global_batch_size = "
        "{actor_mini} (EasyR1: \"Rollout batch size must be divisible by actor global batch size.\")",
        Stage.DRIVER, f"{TRAINER} (ray_trainer.py:211)",
    ))
    add(Rule(
        "easyr1.trainer.samples_divisible_by_experience_micro",
        (D["B_n"] % V["logprob_micro_per_gpu"]).eq(0),
        "data.rollout_batch_size * worker.rollout.n = {train_batch_size}*{n} = {B_n} is not divisible by "
        "worker.actor.micro_batch_size_per_device_for_experience = {logprob_micro_per_gpu} (EasyR1: \"Rollout batch "
        "size * rollout.n must be divisible by actor micro batch size for experience.\")",
        Stage.DRIVER, f"{TRAINER} (ray_trainer.py:214)",
    ))
    add(Rule(
        "easyr1.trainer.critic_rollout_divisible_by_global",
        (V["train_batch_size"] % V["critic_mini"]).eq(0),
        "the algorithm trains a critic: data.rollout_batch_size = {train_batch_size} is not divisible by "
        "worker.critic.global_batch_size = {critic_mini} (EasyR1: \"Rollout batch size must be divisible by critic "
        "global batch size.\")",
        Stage.DRIVER, f"{TRAINER} (ray_trainer.py:222)", when=critic,
    ))
    add(Rule(
        "easyr1.trainer.critic_samples_divisible_by_experience_micro",
        (D["B_n"] % V["critic_exp_micro"]).eq(0),
        "the algorithm trains a critic: data.rollout_batch_size * worker.rollout.n = {B_n} is not divisible by "
        "worker.critic.micro_batch_size_per_device_for_experience = {critic_exp_micro} (EasyR1: \"Rollout batch size * "
        "rollout.n must be divisible by critic micro batch size for experience.\")",
        Stage.DRIVER, f"{TRAINER} (ray_trainer.py:225)", when=critic,
    ))
    add(Rule(
        "easyr1.trainer.group_needs_n",
        V["n"] > 1,
        "GRPO and RLOO compare the responses of one prompt: worker.rollout.n = {n} (EasyR1: \"GRPO and RLOO algorithm "
        "need `config.worker.rollout.n > 1`.\")",
        Stage.DRIVER, f"{TRAINER} (ray_trainer.py:232)", when=V["group_estimator"],
    ))
    # ---------------- the GPU workers: FSDPWorker ----------------
    add(Rule(
        "easyr1.fsdp.sp_divides_gpus",
        (D["N"] % V["actor_sp"]).eq(0),
        "worker.actor.ulysses_size = {actor_sp} does not divide the {N} GPUs (torch's init_device_mesh refuses the "
        "(dp, sp) mesh)",
        Stage.WORKER_INIT, f"{MESH} (init_device_mesh)",
    ))
    add(Rule(
        "easyr1.actor.global_covers_gpus",
        D["mini_per_gpu"] >= 1,
        "worker.actor.global_batch_size * rollout.n = {actor_mini}*{n} = {mini_n} samples is fewer than the {dp} "
        "data-parallel GPUs (N / ulysses_size) (EasyR1: \"actor global batch size * ulysses size must be larger than "
        "num gpus.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:137)",
    ))
    add(Rule(
        "easyr1.actor.micro_divides_per_device",
        (D["mini_per_gpu"] % V["actor_micro_per_gpu"]).eq(0),
        "the actor's update batch per GPU, {actor_mini}*{n} // {dp} = {mini_per_gpu}, is not divisible by "
        "worker.actor.micro_batch_size_per_device_for_update = {actor_micro_per_gpu} (EasyR1: \"actor global batch "
        "size per device must be divisible by the micro batch size.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:140)", when=D["mini_per_gpu"] >= 1,
    ))
    add(Rule(
        "easyr1.actor.cpu_offload_no_accumulation",
        D["mini_per_gpu"].eq(V["actor_micro_per_gpu"]),
        "worker.actor.fsdp.enable_cpu_offload=true with {grad_accum} micro batches per update ({mini_per_gpu} samples "
        "per GPU, micro {actor_micro_per_gpu}) (EasyR1: \"actor cannot use FSDP's CPU offload when gradient "
        "accumulation is enabled.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:143)", when=V["actor_cpu_offload"] & (D["mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "easyr1.critic.global_covers_gpus",
        D["critic_mini_per_gpu"] >= 1,
        "worker.critic.global_batch_size * rollout.n = {critic_mini}*{n} samples is fewer than the {critic_dp} "
        "data-parallel GPUs (EasyR1: \"critic global batch size * ulysses size must be larger than num gpus.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:137)", when=critic,
    ))
    add(Rule(
        "easyr1.critic.micro_divides_per_device",
        (D["critic_mini_per_gpu"] % V["critic_micro_per_gpu"]).eq(0),
        "the critic's update batch per GPU, {critic_mini_per_gpu}, is not divisible by "
        "worker.critic.micro_batch_size_per_device_for_update = {critic_micro_per_gpu} (EasyR1: \"critic global batch "
        "size per device must be divisible by the micro batch size.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:140)", when=critic & (D["critic_mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "easyr1.critic.cpu_offload_no_accumulation",
        D["critic_mini_per_gpu"].eq(V["critic_micro_per_gpu"]),
        "worker.critic.fsdp.enable_cpu_offload=true with {critic_mini_per_gpu} update samples per GPU in micro batches "
        "of {critic_micro_per_gpu} (EasyR1: \"critic cannot use FSDP's CPU offload when gradient accumulation is "
        "enabled.\")",
        Stage.WORKER_INIT, f"{MESH} (fsdp_workers.py:143)",
        when=critic & V["critic_cpu_offload"] & (D["critic_mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "easyr1.rollout.tp_le_gpus",
        V["rollout_tp"] <= D["N"],
        "worker.rollout.tensor_parallel_size = {rollout_tp} is more than the {N} GPUs (EasyR1: \"Tensor parallelism "
        "size should be less than world size.\")",
        Stage.WORKER_INIT, f"{VLLM} (vllm_rollout_spmd.py:94)",
    ))
    add(Rule(
        "easyr1.rollout.tp_divides_gpus",
        (D["N"] % V["rollout_tp"]).eq(0),
        "worker.rollout.tensor_parallel_size = {rollout_tp} does not divide the {N} GPUs (EasyR1: \"rollout world size "
        "{N} is not divisible by tp size {rollout_tp}.\")",
        Stage.WORKER_INIT, f"{ROLLOUT} (fsdp_workers.py:334)",
    ))
    add(Rule(
        "easyr1.rollout.batched_tokens_cover_sample",
        V["max_num_batched_tokens"] >= D["L"],
        "worker.rollout.max_num_batched_tokens = {max_num_batched_tokens} is less than max_prompt_length + "
        "max_response_length = {L} (EasyR1: \"max_num_batched_tokens should be greater than prompt_length + "
        "response_length.\")",
        Stage.WORKER_INIT, f"{VLLM} (vllm_rollout_spmd.py:97)",
    ))
    # ---------------- the first step: DataProto.chunk / split asserts ----------------
    add(Rule(
        "easyr1.dispatch.prompts_divisible_by_gpus",
        (D["gen_prompts"] % D["N"]).eq(0),
        "a generation batch of {gen_prompts} prompts (data.mini_rollout_batch_size, else rollout_batch_size) does not "
        "split over the {N} GPUs (EasyR1: \"only support equal chunk. Got size of DataProto {gen_prompts} and chunk "
        "{N}.\")",
        Stage.FIRST_STEP, f"{CHUNK}: generate_sequences",
    ))
    add(Rule(
        "easyr1.dispatch.samples_divisible_by_gpus",
        (D["B_n"] % D["N"]).eq(0),
        "the step's {B_n} samples (rollout_batch_size * n) do not split over the {N} GPUs (EasyR1 balances them "
        "over the GPUs before it dispatches them: \"{B_n} % {N} != 0\")",
        Stage.FIRST_STEP, f"{BALANCE}, then {CHUNK}: compute_log_prob / update_actor",
    ))
    add(Rule(
        "easyr1.actor.update_batches_split_step",
        (D["local_batch"] % maximum(1, D["mini_per_gpu"])).eq(0),
        "a GPU's {local_batch} samples of the step do not split into update batches of {mini_per_gpu} "
        "(global_batch_size * n // (N / ulysses_size)) (EasyR1: \"only support equal split. Got size of DataProto "
        "{local_batch} and split {mini_per_gpu}.\")",
        Stage.FIRST_STEP, f"{SPLIT} (verl/workers/actor/dp_actor.py:DataParallelPPOActor.update_policy)",
        when=D["mini_per_gpu"] >= 1,
    ))
    add(Rule(
        "easyr1.actor.experience_micro_splits_local",
        (D["local_batch"] % V["logprob_micro_per_gpu"]).eq(0),
        "without dynamic batching a GPU's {local_batch} samples do not split into log-prob micro batches of "
        "{logprob_micro_per_gpu} (worker.actor.micro_batch_size_per_device_for_experience) (EasyR1: \"only support "
        "equal split. Got size of DataProto {local_batch} and split {logprob_micro_per_gpu}.\")",
        Stage.FIRST_STEP, f"{SPLIT} (verl/workers/actor/dp_actor.py:DataParallelPPOActor.compute_log_prob)",
        when=~V["actor_dyn"],
    ))
    add(Rule(
        "easyr1.critic.update_batches_split_step",
        (D["critic_local_batch"] % maximum(1, D["critic_mini_per_gpu"])).eq(0),
        "a GPU's {critic_local_batch} samples do not split into critic update batches of {critic_mini_per_gpu} "
        "(EasyR1: \"only support equal split. Got size of DataProto {critic_local_batch} and split "
        "{critic_mini_per_gpu}.\")",
        Stage.FIRST_STEP, f"{SPLIT} (verl/workers/critic/dp_critic.py:DataParallelPPOCritic.update_critic)",
        when=critic & (D["critic_mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "easyr1.critic.experience_micro_splits_local",
        (D["critic_local_batch"] % V["critic_exp_micro"]).eq(0),
        "without the critic's dynamic batching a GPU's {critic_local_batch} samples do not split into value micro "
        "batches of {critic_exp_micro} (worker.critic.micro_batch_size_per_device_for_experience) (EasyR1: \"only "
        "support equal split. Got size of DataProto {critic_local_batch} and split {critic_exp_micro}.\")",
        Stage.FIRST_STEP, f"{SPLIT} (verl/workers/critic/dp_critic.py:DataParallelPPOCritic.compute_values, l.153)",
        when=critic & ~V["critic_dyn_batching"],
    ))
    add(Rule(
        "easyr1.ulysses.heads_divisible",
        (V["num_heads"] % V["actor_sp"]).eq(0),
        "worker.actor.ulysses_size = {actor_sp} does not divide the model's {num_heads} attention heads: Ulysses "
        "splits the heads over the sequence-parallel group",
        Stage.FIRST_STEP, "verl/utils/ulysses.py (all-to-all over heads; validate_ulysses_config is not called in 0.3.2)",
        severity=Severity.ERROR, when=V["actor_sp"] > 1,
    ))
    return r


RULES = _rules()
RULESET = RuleSet("easyr1", VERSION, VARIABLES, DERIVED, RULES)
