"""Every batch-size and parallelism rule SkyRL's trainer (skyrl-train 0.3.1) checks before it starts.

SkyRL (github.com/NovaSky-AI/SkyRL, the ``skyrl-train`` package) validates its Hydra config in
``skyrl_train/utils/utils.py``: ``validate_cfg`` calls ``validate_generator_cfg`` (with ``validate_megatron_cfg``
for the Megatron strategy) first, then its own checks, ``validate_batch_sizes`` and the placement checks. The rules
below are those checks that concern batches, parallel sizes, placement and the training strategy, in the order
SkyRL runs them; each message ends with SkyRL's own words. Paths are inside the wheel of skyrl-train 0.3.1
(repository commit ce6def0e, "Bump skyrl-train to 0.3.1").

SkyRL's batch rules are verl's in other keys: where a SkyRL key means what a verl key means, its rule variable has
verl's name (``trainer.train_batch_size`` is verl's ``train_batch_size``, ``trainer.policy_mini_batch_size`` verl's
``ppo_mini_batch_size``; both count prompts), so verl's cost terms price it through a mapping (cost.py). The
per-GPU sizes (``micro_train_batch_size_per_gpu``, ``micro_forward_batch_size_per_gpu``) count samples; one micro
train size serves the policy and the critic. SkyRL floors every per-GPU division (``//``) and asks divisibility of
the floored values.
"""

from __future__ import annotations

from ...rules.base import Derived, Rule, RuleSet, Stage, VarSpec, is_set
from ...rules.expr import if_then_else, maximum
from ..verl.rules import rule_vars

VERSION = "0.3.1"

UTILS = "skyrl_train/utils/utils.py"
BATCH = f"{UTILS}:validate_batch_sizes"
CFG = f"{UTILS}:validate_cfg"
GEN = f"{UTILS}:validate_generator_cfg"
MEGATRON = f"{UTILS}:validate_megatron_cfg"
BUILD = "skyrl_train/trainer.py:RayPPOTrainer.build_models"
ULYSSES = "skyrl_train/distributed/ulysses/monkey_patch.py:apply_monkey_patch"

# name in rules (verl's name where the meaning is verl's) -> (SkyRL key, kind, default, optional, description);
# defaults are skyrl_train/config/ppo_base_config.yaml at 0.3.1 (deepspeed_config/train.yaml, megatron_config/*.yaml)
ROWS = [
    ("nnodes", "trainer.placement.policy_num_nodes", "int", 1, False, "policy nodes"),
    ("gpus_per_node", "trainer.placement.policy_num_gpus_per_node", "int", 4, False, "policy GPUs per node"),
    ("ref_nnodes", "trainer.placement.ref_num_nodes", "int", 1, False, "reference nodes"),
    ("ref_gpus_per_node", "trainer.placement.ref_num_gpus_per_node", "int", 4, False, "reference GPUs per node"),
    ("critic_nnodes", "trainer.placement.critic_num_nodes", "int", 1, False, "critic nodes"),
    ("critic_gpus_per_node", "trainer.placement.critic_num_gpus_per_node", "int", 4, False, "critic GPUs per node"),
    ("colocate_all", "trainer.placement.colocate_all", "bool", True, False, "training and inference engines share the GPUs"),
    ("colocate_policy_ref", "trainer.placement.colocate_policy_ref", "bool", True, False, "policy and reference share GPUs"),
    ("num_engines", "generator.num_inference_engines", "int", 1, False, "inference engines"),
    ("rollout_tp", "generator.inference_engine_tensor_parallel_size", "int", 4, False, "engine tensor parallel"),
    ("engine_pp", "generator.inference_engine_pipeline_parallel_size", "int", 1, False, "engine pipeline parallel"),
    ("engine_dp", "generator.inference_engine_data_parallel_size", "int", 1, False, "engine data parallel"),
    ("engine_ep", "generator.inference_engine_expert_parallel_size", "int", 1, False, "engine expert parallel"),
    ("train_batch_size", "trainer.train_batch_size", "int", 1024, False, "prompts per step"),
    ("actor_mini", "trainer.policy_mini_batch_size", "int", 256, False, "prompts per policy update (verl's ppo_mini_batch_size)"),
    ("critic_mini", "trainer.critic_mini_batch_size", "int", 256, False, "prompts per critic update"),
    # passes over the step's batch, each over all its mini batches with an optimizer step each, the policy's and the
    # critic's (skyrl_train/workers/worker.py PolicyWorkerBase.ppo_train and CriticWorkerBase.ppo_train: for epoch in
    # range(update_epochs_per_batch))
    ("update_epochs", "trainer.update_epochs_per_batch", "int", 1, False, "passes of the policy and critic updates over the step's batch"),
    ("actor_micro_per_gpu", "trainer.micro_train_batch_size_per_gpu", "int", 1, False, "samples per forward/backward per GPU (policy and critic)"),
    ("logprob_micro_per_gpu", "trainer.micro_forward_batch_size_per_gpu", "int", 1, False, "samples per log-prob/value forward per GPU"),
    ("n", "generator.n_samples_per_prompt", "int", 5, False, "responses per prompt"),
    ("max_prompt_length", "trainer.max_prompt_length", "int", 512, False, "longest prompt, tokens"),
    ("max_input_length", "generator.max_input_length", "int", None, True, "generator input length (unset: max_prompt_length)"),
    ("max_turns", "generator.max_turns", "int", 1, False, "turns per trajectory"),
    ("max_response_length", "generator.sampling_params.max_generate_length", "int", 1024, False, "longest response, tokens"),
    ("actor_sp", "trainer.policy.sequence_parallel_size", "int", 1, False, "policy Ulysses size"),
    ("ref_sp", "trainer.ref.sequence_parallel_size", "int", 1, False, "reference Ulysses size"),
    ("critic_sp", "trainer.critic.sequence_parallel_size", "int", 1, False, "critic Ulysses size"),
    ("policy_mtp", "trainer.policy.megatron_config.tensor_model_parallel_size", "int", 1, False, "policy Megatron TP"),
    ("policy_mpp", "trainer.policy.megatron_config.pipeline_model_parallel_size", "int", 1, False, "policy Megatron PP"),
    ("policy_mcp", "trainer.policy.megatron_config.context_parallel_size", "int", 1, False, "policy Megatron CP"),
    ("ref_mtp", "trainer.ref.megatron_config.tensor_model_parallel_size", "int", 1, False, "reference Megatron TP"),
    ("ref_mpp", "trainer.ref.megatron_config.pipeline_model_parallel_size", "int", 1, False, "reference Megatron PP"),
    ("ref_mcp", "trainer.ref.megatron_config.context_parallel_size", "int", 1, False, "reference Megatron CP"),
    ("ds_stage", "trainer.policy.deepspeed_config.zero_optimization.stage", "int", 3, False, "policy DeepSpeed ZeRO stage"),
    ("fsdp_size", "trainer.policy.fsdp_config.fsdp_size", "int", -1, False, "FSDP shard group size (-1: all GPUs)"),
    ("actor_cpu_offload", "trainer.policy.fsdp_config.cpu_offload", "bool", False, False, "policy FSDP CPU offload"),
    ("ref_cpu_offload", "trainer.ref.fsdp_config.cpu_offload", "bool", False, False, "reference FSDP CPU offload"),
    ("critic_cpu_offload", "trainer.critic.fsdp_config.cpu_offload", "bool", False, False, "critic FSDP CPU offload"),
    ("offload_after_step", "trainer.policy.optimizer_config.offload_after_step", "bool", True, False, "policy optimizer to CPU after each step (colocate_all)"),
    ("critic_offload_after_step", "trainer.critic.optimizer_config.offload_after_step", "bool", True, False, "critic optimizer to CPU after each step"),
    ("grad_ckpt", "trainer.gradient_checkpointing", "bool", True, False, "activation recompute"),
    ("remove_padding", "trainer.use_sample_packing", "bool", True, False, "sequence packing"),
    ("use_torch_compile", "trainer.policy.use_torch_compile", "bool", False, False, "torch.compile in the policy"),
    ("lora_rank", "trainer.policy.model.lora.rank", "int", 0, False, "policy LoRA rank (0: full fine-tuning)"),
    ("use_kl_loss", "trainer.algorithm.use_kl_loss", "bool", True, False, "KL loss against the reference"),
    ("use_kl_in_reward", "trainer.algorithm.use_kl_in_reward", "bool", False, False, "KL penalty in the reward"),
    ("gmu_permille", "generator.gpu_memory_utilization", "int", 800, False, "engine memory fraction x1000"),
    ("max_num_batched_tokens", "generator.max_num_batched_tokens", "int", 8192, False, "vLLM prefill token budget"),
    ("max_num_seqs", "generator.max_num_seqs", "int", 1024, False, "vLLM running sequences"),
    ("enforce_eager", "generator.enforce_eager", "bool", True, False, "no CUDA graphs in the engine"),
    ("async_engine", "generator.async_engine", "bool", True, False, "the engines' async API"),
    ("batched", "generator.batched", "bool", False, False, "generate the batch in one call"),
    ("cluster_num_gpus", "--gpus", "int", None, False, "GPUs in the Ray cluster (unknown: the budget is not checked)"),
    # decided from other keys (DECIDED)
    ("need_critic", "trainer.critic.model.path is set", "bool", False, False, "a critic is trained"),
    ("need_ref", "use_kl_loss or use_kl_in_reward", "bool", True, False, "a reference model runs"),
    ("gae", "trainer.algorithm.advantage_estimator==gae", "bool", False, False, "GAE advantages (PPO)"),
    ("fsdp1", "trainer.strategy==fsdp", "bool", False, False, "FSDP1 training"),
    ("deepspeed", "trainer.strategy==deepspeed", "bool", False, False, "DeepSpeed training"),
    ("megatron", "trainer.strategy==megatron", "bool", False, False, "Megatron training"),
    ("rollout_sglang", "generator.backend==sglang", "bool", False, False, "SGLang engines (else vLLM)"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads"),
    ("max_position_embeddings", "model.max_position_embeddings", "int", None, False, "model context"),
]
VARIABLES = {name: VarSpec(name, key, kind, default, optional, desc) for name, key, kind, default, optional, desc in ROWS}
DECIDED = frozenset({"cluster_num_gpus", "need_critic", "need_ref", "gae", "fsdp1", "deepspeed", "megatron", "rollout_sglang",
                     "num_heads", "num_kv_heads", "max_position_embeddings"})
V = rule_vars(VARIABLES)

# lcm(policy dp, ref dp) as the first multiple of the policy's dp that the reference's divides (exact up to
# 16 multiples, that is for a reference dp up to 16 or sharing a factor with the policy's; past that the product,
# a common multiple, stands in)
_LCM_STEPS = 16


def _lcm(a, b):
    out = a * b
    for k in range(_LCM_STEPS, 0, -1):
        out = if_then_else((a * k % maximum(1, b)).eq(0), a * k, out)
    return out


MEGA = V["policy_mtp"] * V["policy_mpp"] * V["policy_mcp"]
REF_MEGA = V["ref_mtp"] * V["ref_mpp"] * V["ref_mcp"]
WORLD = V["nnodes"] * V["gpus_per_node"]
REF_WORLD = V["ref_nnodes"] * V["ref_gpus_per_node"]
CRITIC_WORLD = V["critic_nnodes"] * V["critic_gpus_per_node"]
DP = if_then_else(V["megatron"], WORLD // maximum(1, MEGA), WORLD // maximum(1, V["actor_sp"]))
REF_DP = if_then_else(V["megatron"], REF_WORLD // maximum(1, REF_MEGA), REF_WORLD // maximum(1, V["ref_sp"]))
CRITIC_DP = CRITIC_WORLD // maximum(1, V["critic_sp"])
MINI_PG = V["actor_mini"] * V["n"] // maximum(1, DP)
CRITIC_MINI_PG = V["critic_mini"] * V["n"] // maximum(1, CRITIC_DP)
DERIVED = [
    Derived("N", WORLD, "policy GPUs: policy_num_nodes x policy_num_gpus_per_node"),
    Derived("ref_world", REF_WORLD, "reference GPUs"),
    Derived("critic_world", CRITIC_WORLD, "critic GPUs"),
    Derived("mega", MEGA, "policy Megatron model-parallel size: tp x pp x cp"),
    Derived("ref_mega", REF_MEGA, "reference Megatron model-parallel size"),
    Derived("dp", DP, "policy data-parallel size (floored): N // sequence_parallel_size (Megatron: // tp*pp*cp)"),
    Derived("ref_dp", REF_DP, "reference data-parallel size (floored)"),
    Derived("critic_dp", CRITIC_DP, "critic data-parallel size (floored)"),
    Derived("B_n", V["train_batch_size"] * V["n"], "samples per step"),
    Derived("mini_per_gpu", MINI_PG, "policy update samples per GPU: policy_mini_batch_size x n // dp"),
    Derived("local_batch", V["train_batch_size"] * V["n"] // maximum(1, DP), "samples per GPU in a step (floored)"),
    Derived("critic_mini_per_gpu", CRITIC_MINI_PG, "critic update samples per GPU"),
    Derived("critic_local_batch", V["train_batch_size"] * V["n"] // maximum(1, CRITIC_DP),
            "samples per critic GPU in a step"),
    # math.lcm(a, 0) is 0: a reference with sequence_parallel_size above its GPUs passes this check
    Derived("lcm_dp", if_then_else(V["need_ref"], if_then_else(DP.eq(REF_DP), DP, if_then_else(
        REF_DP.eq(0), 0, _lcm(DP, REF_DP))), DP),
            "least common multiple of the policy's and (with a reference) the reference's dp"),
    Derived("rollout_gpus", V["num_engines"] * V["rollout_tp"] * V["engine_pp"] * V["engine_dp"],
            "inference GPUs: engines x tp x pp x dp"),
    # RayPPOTrainer.build_models: colocate_all shares one group of the engines' GPUs; otherwise the policy's group (the
    # reference in it with colocate_policy_ref), the reference's own actors, the critic's, and the engines' group
    Derived("gpus_needed", if_then_else(V["colocate_all"], WORLD, WORLD + if_then_else(
        V["need_ref"] & ~V["colocate_policy_ref"], REF_WORLD, 0) + if_then_else(V["need_critic"], CRITIC_WORLD, 0)
        + V["num_engines"] * V["rollout_tp"] * V["engine_pp"] * V["engine_dp"]),
            "GPUs the placement groups and actors ask Ray for"),
    Derived("grad_accum", MINI_PG // maximum(1, V["actor_micro_per_gpu"]), "micro batches per policy update"),
    Derived("prompt_in", if_then_else(is_set("max_input_length"), V["max_input_length"], V["max_prompt_length"]),
            "generator.max_input_length (unset: trainer.max_prompt_length)"),
]
D = rule_vars({d.name: VarSpec(d.name, d.name) for d in DERIVED})


def _rules() -> list[Rule]:
    r: list[Rule] = []
    add = r.append
    critic, mega, sglang = V["need_critic"], V["megatron"], V["rollout_sglang"]
    # ---------------- validate_generator_cfg (first) ----------------
    add(Rule(
        "skyrl.generator.input_length_single_turn",
        D["prompt_in"].eq(V["max_prompt_length"]),
        "single-turn generation (generator.max_turns = 1) with generator.max_input_length = {prompt_in} and "
        "trainer.max_prompt_length = {max_prompt_length} (SkyRL: \"generator.max_input_length should be set equal to "
        "trainer.max_prompt_length for single-turn generation\")",
        Stage.DRIVER, f"{GEN} (utils.py:377)", when=V["max_turns"].eq(1),
    ))
    add(Rule(
        "skyrl.generator.input_length_multi_turn",
        D["prompt_in"] >= V["max_prompt_length"],
        "multi-turn generation (generator.max_turns = {max_turns}) with generator.max_input_length = {prompt_in} below "
        "trainer.max_prompt_length = {max_prompt_length} (SkyRL: \"generator.max_input_length should be set greater "
        "than or equal to trainer.max_prompt_length for multi-turn generation\")",
        Stage.DRIVER, f"{GEN} (utils.py:381)", when=~V["max_turns"].eq(1),
    ))
    add(Rule(
        "skyrl.generator.offline_vllm_needs_batched",
        V["batched"],
        "generator.async_engine=false with vLLM and generator.batched=false (SkyRL: \"if we are using the offline vLLM "
        "engine, we need to put generator in batched mode for faster generation\")",
        Stage.DRIVER, f"{GEN} (utils.py:392)", when=~V["async_engine"] & ~sglang,
    ))
    add(Rule(
        "skyrl.generator.sglang_tp1",
        V["rollout_tp"].eq(1),
        "generator.backend=sglang with local engines and generator.inference_engine_tensor_parallel_size = "
        "{rollout_tp} (SkyRL: \"We do not support tensor parallel inference engine with SGLang when running engines "
        "locally. Please set `inference_engine_tensor_parallel_size` to 1.\")",
        Stage.DRIVER, f"{GEN} (utils.py:410)", when=sglang,
    ))
    add(Rule(
        "skyrl.megatron.needs_vllm",
        ~sglang,
        "trainer.strategy=megatron with generator.backend=sglang (SkyRL: \"only vllm is supported for with megatron\")",
        Stage.DRIVER, f"{MEGATRON} (utils.py:185)", when=mega,
    ))
    add(Rule(
        "skyrl.megatron.no_critic",
        ~critic,
        "trainer.strategy=megatron with a critic (trainer.critic.model.path set) (SkyRL: \"only GRPO training is "
        "currently supported for megatron\")",
        Stage.DRIVER, f"{MEGATRON} (utils.py:186)", when=mega,
    ))
    add(Rule(
        "skyrl.megatron.cp_needs_packing",
        V["remove_padding"],
        "Megatron context parallel (policy {policy_mcp}, ref {ref_mcp}) with trainer.use_sample_packing=false "
        "(SkyRL: \"context parallel is only supported with sample packing\")",
        Stage.DRIVER, f"{MEGATRON} (utils.py:199)", when=mega & ((V["policy_mcp"] > 1) | (V["ref_mcp"] > 1)),
    ))
    add(Rule(
        "skyrl.megatron.no_ulysses",
        V["actor_sp"].eq(1) & V["ref_sp"].eq(1),
        "trainer.strategy=megatron with Ulysses sequence parallel (policy {actor_sp}, ref {ref_sp}) (SkyRL: "
        "\"ulysses style sequence parallel is not supported for megatron\")",
        Stage.DRIVER, f"{MEGATRON} (utils.py:201)", when=mega,
    ))
    add(Rule(
        "skyrl.generator.sglang_no_engine_dp_ep",
        V["engine_dp"].eq(1) & V["engine_ep"].eq(1),
        "generator.backend=sglang with inference_engine_data_parallel_size = {engine_dp} and "
        "inference_engine_expert_parallel_size = {engine_ep} (SkyRL: \"Inference data parallelism is not yet supported "
        "for SGLang backend.\" / \"Inference expert parallelism is not yet supported for SGLang backend.\")",
        Stage.DRIVER, f"{GEN} (utils.py:476)", when=sglang,
    ))
    add(Rule(
        "skyrl.generator.ep_is_dp_times_tp",
        (V["engine_dp"] * V["rollout_tp"]).eq(V["engine_ep"]),
        "inference expert parallel {engine_ep} is not data parallel {engine_dp} x tensor parallel {rollout_tp} (SkyRL: "
        "\"If inference expert parallel is enabled, data parallel size * tensor parallel size must equal expert "
        "parallel size. Got dp_size={engine_dp}, tp_size={rollout_tp}, ep_size={engine_ep}\")",
        Stage.DRIVER, f"{GEN} (utils.py:479)", when=V["engine_ep"] > 1,
    ))
    # ---------------- validate_cfg ----------------
    add(Rule(
        "skyrl.algorithm.gae_needs_critic",
        critic,
        "trainer.algorithm.advantage_estimator=gae without trainer.critic.model.path (SkyRL: \"`trainer.critic.model."
        "path` should be provided for PPO training, got `None`\")",
        Stage.DRIVER, f"{CFG} (utils.py:218)", when=V["gae"],
    ))
    add(Rule(
        "skyrl.algorithm.kl_one_place",
        ~(V["use_kl_loss"] & V["use_kl_in_reward"]),
        "trainer.algorithm.use_kl_loss=true and use_kl_in_reward=true (SkyRL: \"use_kl_in_reward and use_kl_loss "
        "should be mutually exclusive\")",
        Stage.DRIVER, f"{CFG} (utils.py:222)",
    ))
    add(Rule(
        "skyrl.fsdp1.no_cpu_offload",
        ~V["actor_cpu_offload"] & ~V["critic_cpu_offload"],
        "trainer.strategy=fsdp with trainer.policy (or trainer.critic) .fsdp_config.cpu_offload=true (SkyRL: \"fwd "
        "pass cpu offloading is not supported for FSDP1 policy worker, use FSDP2 instead\"; the critic's the same)",
        Stage.DRIVER, f"{CFG} (utils.py:227)", when=V["fsdp1"],
    ))
    add(Rule(
        "skyrl.deepspeed.stage3",
        V["ds_stage"].eq(3),
        "trainer.strategy=deepspeed with ZeRO stage {ds_stage} (SkyRL: \"only deepspeed stage 3 is currently "
        "supported!\")",
        Stage.DRIVER, f"{CFG} (utils.py:235)", when=V["deepspeed"],
    ))
    # ---------------- validate_batch_sizes ----------------
    add(Rule(
        "skyrl.batch.train_covers_mini",
        V["train_batch_size"] >= V["actor_mini"],
        "trainer.train_batch_size = {train_batch_size} is below trainer.policy_mini_batch_size = {actor_mini} "
        "(SkyRL asserts train_batch_size >= policy_mini_batch_size, with no message)",
        Stage.DRIVER, f"{BATCH} (utils.py:64)",
    ))
    add(Rule(
        "skyrl.batch.train_covers_critic_mini",
        V["train_batch_size"] >= V["critic_mini"],
        "the critic trains: trainer.train_batch_size = {train_batch_size} is below trainer.critic_mini_batch_size = "
        "{critic_mini} (SkyRL asserts train_batch_size >= critic_mini_batch_size, with no message)",
        Stage.DRIVER, f"{BATCH} (utils.py:67)", when=critic,
    ))
    add(Rule(
        "skyrl.megatron.policy_world_divisible",
        (D["N"] % maximum(1, D["mega"])).eq(0),
        "the {N} policy GPUs do not divide by Megatron tp*pp*cp = {policy_mtp}*{policy_mpp}*{policy_mcp} = {mega} "
        "(SkyRL: \"policy_world_size {N} should be divisible by (pp * cp * tp) {mega}. This ensures that the data "
        "parallel size is an integer.\")",
        Stage.DRIVER, f"{BATCH} (utils.py:79)", when=mega,
    ))
    add(Rule(
        "skyrl.batch.sp_within_policy_gpus",
        D["dp"] >= 1,
        "trainer.policy.sequence_parallel_size = {actor_sp} is more than the {N} policy GPUs: the data-parallel size "
        "N // sp is 0 (SkyRL divides by it: ZeroDivisionError)",
        Stage.DRIVER, f"{BATCH} (utils.py:91)", when=~mega,
    ))
    add(Rule(
        "skyrl.batch.train_divisible_by_mini",
        (V["train_batch_size"] % V["actor_mini"]).eq(0),
        "trainer.train_batch_size = {train_batch_size} is not divisible by trainer.policy_mini_batch_size = "
        "{actor_mini} (SkyRL: \"train_batch_size {train_batch_size} should be divisible by policy_mini_batch_size "
        "{actor_mini}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:87)",
    ))
    add(Rule(
        "skyrl.batch.mini_covers_dp",
        D["mini_per_gpu"] >= 1,
        "policy_mini_batch_size x n_samples_per_prompt = {actor_mini}*{n} is fewer than the {dp} data-parallel policy "
        "ranks (SkyRL: \"Invalid policy_mini_batch_size_per_gpu: {mini_per_gpu}. mini_batch_size={actor_mini}, "
        "n_samples_per_prompt={n}, dp_size={dp}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:94)", when=D["dp"] >= 1,
    ))
    add(Rule(
        "skyrl.batch.mini_divisible_by_micro",
        (D["mini_per_gpu"] % V["actor_micro_per_gpu"]).eq(0),
        "the policy's update samples per GPU, {actor_mini}*{n} // {dp} = {mini_per_gpu}, are not divisible by "
        "trainer.micro_train_batch_size_per_gpu = {actor_micro_per_gpu} (SkyRL: \"normalized "
        "policy_mini_batch_size_per_gpu {mini_per_gpu} should be divisible by micro_train_batch_size_per_gpu "
        "{actor_micro_per_gpu}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:100)", when=(D["dp"] >= 1) & (D["mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "skyrl.batch.train_per_gpu_divisible_by_mini",
        (D["local_batch"] % maximum(1, D["mini_per_gpu"])).eq(0),
        "the step's samples per GPU, {train_batch_size}*{n} // {dp} = {local_batch}, are not divisible by the "
        "update samples per GPU {mini_per_gpu} (SkyRL: \"normalized policy_train_batch_size_per_gpu (train_batch_size "
        "* n_samples_per_prompt // policy_dp_size) {local_batch} should be divisible by policy_mini_batch_size_per_gpu "
        "(policy_mini_batch_size * n_samples_per_prompt // policy_dp_size) {mini_per_gpu}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:113)", when=(D["dp"] >= 1) & (D["mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "skyrl.batch.critic_sp_within_gpus",
        D["critic_dp"] >= 1,
        "the critic trains: trainer.critic.sequence_parallel_size = {critic_sp} is more than its {critic_world} GPUs "
        "(SkyRL divides by the data-parallel size 0: ZeroDivisionError)",
        Stage.DRIVER, f"{BATCH} (utils.py:129)", when=critic,
    ))
    add(Rule(
        "skyrl.batch.train_divisible_by_critic_mini",
        (V["train_batch_size"] % V["critic_mini"]).eq(0),
        "the critic trains: trainer.train_batch_size = {train_batch_size} is not divisible by "
        "trainer.critic_mini_batch_size = {critic_mini} (SkyRL: \"train_batch_size {train_batch_size} should be "
        "divisible by critic_mini_batch_size {critic_mini}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:124)", when=critic,
    ))
    add(Rule(
        "skyrl.batch.critic_mini_covers_dp",
        D["critic_mini_per_gpu"] >= 1,
        "critic_mini_batch_size x n_samples_per_prompt = {critic_mini}*{n} is fewer than the {critic_dp} critic ranks "
        "(SkyRL: \"Invalid critic_mini_batch_size_per_gpu: {critic_mini_per_gpu}. mini_batch_size={critic_mini}, "
        "n_samples_per_prompt={n}, dp_size={critic_dp}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:131)", when=critic & (D["critic_dp"] >= 1),
    ))
    add(Rule(
        "skyrl.batch.critic_mini_divisible_by_micro",
        (D["critic_mini_per_gpu"] % V["actor_micro_per_gpu"]).eq(0),
        "the critic's update samples per GPU, {critic_mini_per_gpu}, are not divisible by "
        "trainer.micro_train_batch_size_per_gpu = {actor_micro_per_gpu} (SkyRL: \"normalized "
        "critic_mini_batch_size_per_gpu {critic_mini_per_gpu} should be divisible by micro_train_batch_size_per_gpu "
        "{actor_micro_per_gpu}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:137)", when=critic & (D["critic_dp"] >= 1) & (D["critic_mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "skyrl.batch.critic_train_per_gpu_divisible_by_mini",
        (D["critic_local_batch"] % maximum(1, D["critic_mini_per_gpu"])).eq(0),
        "the critic's step samples per GPU, {critic_local_batch}, are not divisible by its update samples per GPU "
        "{critic_mini_per_gpu} (SkyRL: \"normalized critic_train_batch_size_per_gpu (train_batch_size * "
        "n_samples_per_prompt // critic_dp_size) {critic_local_batch} should be divisible by "
        "critic_mini_batch_size_per_gpu (critic_mini_batch_size * n_samples_per_prompt // critic_dp_size) "
        "{critic_mini_per_gpu}\")",
        Stage.DRIVER, f"{BATCH} (utils.py:148)", when=critic & (D["critic_dp"] >= 1) & (D["critic_mini_per_gpu"] >= 1),
    ))
    add(Rule(
        "skyrl.megatron.ref_world_divisible",
        (D["ref_world"] % maximum(1, D["ref_mega"])).eq(0),
        "the {ref_world} reference GPUs do not divide by Megatron tp*pp*cp = {ref_mega} (SkyRL: \"ref_world_size "
        "{ref_world} should be divisible by (pp * cp * tp) {ref_mega}. This ensures that the data parallel size is an "
        "integer.\")",
        Stage.DRIVER, f"{BATCH} (utils.py:164)", when=mega & V["need_ref"],
    ))
    add(Rule(
        "skyrl.batch.samples_cover_lcm_dp",
        D["B_n"] >= D["lcm_dp"],
        "train_batch_size x n_samples_per_prompt = {B_n} is below the least common multiple {lcm_dp} of the policy's "
        "dp {dp} and (with a reference) the reference's dp {ref_dp} (SkyRL: \"train_batch_size * n_samples_per_prompt "
        "({B_n}) should be larger than or equal to the least common multiple of the data parallel sizes of the enabled "
        "models\")",
        Stage.DRIVER, f"{BATCH} (utils.py:173)", when=D["dp"] >= 1,
    ))
    # ---------------- validate_cfg, after the batch sizes ----------------
    add(Rule(
        "skyrl.deepspeed.offload_after_step",
        V["offload_after_step"] & V["critic_offload_after_step"],
        "trainer.strategy=deepspeed with optimizer_config.offload_after_step=false (policy or critic) (SkyRL: "
        "\"`offload_after_step=False` is not supported for DeepSpeed, please set `offload_after_step` to `true` for "
        "both policy and critic\")",
        Stage.DRIVER, f"{CFG} (utils.py:293)", when=V["deepspeed"],
    ))
    add(Rule(
        "skyrl.lora.needs_vllm",
        ~sglang,
        "trainer.policy.model.lora.rank = {lora_rank} with generator.backend=sglang (SkyRL: \"LoRA enabled requires "
        "vLLM backend\")",
        Stage.DRIVER, f"{CFG} (utils.py:322)", when=V["lora_rank"] > 0,
    ))
    add(Rule(
        "skyrl.lora.not_deepspeed",
        ~V["deepspeed"],
        "trainer.policy.model.lora.rank = {lora_rank} with trainer.strategy=deepspeed (SkyRL: \"LoRA enabled requires "
        "fsdp/fsdp2/megatron training backend\")",
        Stage.DRIVER, f"{CFG} (utils.py:323)", when=V["lora_rank"] > 0,
    ))
    add(Rule(
        "skyrl.placement.colocate_all_same_gpus",
        D["N"].eq(D["rollout_gpus"]),
        "trainer.placement.colocate_all=true with {N} policy GPUs and {rollout_gpus} inference GPUs "
        "(num_inference_engines {num_engines} x tp {rollout_tp} x pp {engine_pp} x dp {engine_dp}) (SkyRL: "
        "\"num_policy_gpus ({N}) and num_rollout_gpus ({rollout_gpus}) must be the same when colocating all models\")",
        Stage.DRIVER, f"{CFG} (utils.py:347)", when=V["colocate_all"],
    ))
    add(Rule(
        "skyrl.placement.policy_ref_same_nodes",
        V["nnodes"].eq(V["ref_nnodes"]),
        "colocate_policy_ref=true (colocate_all=false) with policy_num_nodes = {nnodes} and ref_num_nodes = "
        "{ref_nnodes} (SkyRL: \"policy_num_nodes ({nnodes}) and ref_num_nodes ({ref_nnodes}) must be the same when "
        "colocate policy and ref model.\")",
        Stage.DRIVER, f"{CFG} (utils.py:354)", when=~V["colocate_all"] & V["colocate_policy_ref"] & V["need_ref"],
    ))
    add(Rule(
        "skyrl.placement.policy_ref_same_gpus_per_node",
        V["gpus_per_node"].eq(V["ref_gpus_per_node"]),
        "colocate_policy_ref=true (colocate_all=false) with policy_num_gpus_per_node = {gpus_per_node} and "
        "ref_num_gpus_per_node = {ref_gpus_per_node} (SkyRL: \"policy_num_gpus_per_node ({gpus_per_node}) and "
        "ref_num_gpus_per_node ({ref_gpus_per_node}) must be the same when colocate policy and ref model.\")",
        Stage.DRIVER, f"{CFG} (utils.py:358)", when=~V["colocate_all"] & V["colocate_policy_ref"] & V["need_ref"],
    ))
    # ---------------- RayPPOTrainer.build_models: after validate_cfg, before any worker ----------------
    add(Rule(
        "skyrl.placement.colocate_all_ref_same_gpus",
        D["N"].eq(D["ref_world"]),
        "trainer.placement.colocate_all=true with {N} policy GPUs and {ref_world} reference GPUs "
        "(ref_num_nodes x ref_num_gpus_per_node) (SkyRL: \"num_policy_gpus and num_ref_gpus must be the same when "
        "colocating policy and ref model\")",
        Stage.TRAINER_INIT, f"{BUILD} (trainer.py:413)", when=V["colocate_all"] & V["need_ref"],
    ))
    add(Rule(
        "skyrl.placement.colocate_all_critic_same_gpus",
        D["N"].eq(D["critic_world"]),
        "trainer.placement.colocate_all=true with {N} policy GPUs and {critic_world} critic GPUs "
        "(critic_num_nodes x critic_num_gpus_per_node) (SkyRL: \"num_policy_gpus and num_critic_gpus must be the same "
        "when colocating policy and critic model\")",
        Stage.TRAINER_INIT, f"{BUILD} (trainer.py:428)", when=V["colocate_all"] & V["need_critic"],
    ))
    add(Rule(
        "skyrl.ray.gpu_budget",
        D["gpus_needed"] <= V["cluster_num_gpus"],
        "the placement needs {gpus_needed} GPUs (policy {N}, and without colocate_all the reference's own, the "
        "critic's and the engines' {rollout_gpus}) but the cluster has {cluster_num_gpus}: Ray cannot place them "
        "(SkyRL: \"Failed to create placement group ... This might indicate insufficient GPU resources.\" after "
        "SKYRL_RAY_PG_TIMEOUT_IN_S, 180 s)",
        Stage.TRAINER_INIT, f"{BUILD} and skyrl_train/utils/utils.py:get_ray_pg_ready_with_timeout",
    ))
    # ---------------- the workers: what validate_cfg does not check ----------------
    add(Rule(
        "skyrl.fsdp.sp_divides_gpus",
        (D["N"] % V["actor_sp"]).eq(0),
        "trainer.policy.sequence_parallel_size = {actor_sp} does not divide the {N} policy GPUs: the (dp, sp) device "
        "mesh needs whole groups (validate_cfg floors N // sp and does not check it; torch's init_device_mesh refuses)",
        Stage.WORKER_INIT, "skyrl_train/workers/worker.py:DistributedTorchRayActor.init_worker_process_group (init_device_mesh, worker.py:91)",
        when=~mega,
    ))
    add(Rule(
        "skyrl.ulysses.heads_divisible",
        (V["num_heads"] % V["actor_sp"]).eq(0),
        "trainer.policy.sequence_parallel_size = {actor_sp} does not divide the model's {num_heads} attention heads: "
        "(SkyRL: \"num_attention_heads {num_heads} must be divisible by ulysses_sp_size {actor_sp}\")",
        Stage.WORKER_INIT, f"{ULYSSES} (monkey_patch.py:143)", when=~mega & (V["actor_sp"] > 1),
    ))
    add(Rule(
        "skyrl.ulysses.kv_heads_divisible",
        (V["num_kv_heads"] % V["actor_sp"]).eq(0) | (V["actor_sp"] % V["num_kv_heads"]).eq(0),
        "trainer.policy.sequence_parallel_size = {actor_sp} and the model's {num_kv_heads} key/value heads: neither "
        "divides the other (SkyRL: \"num_key_value_heads {num_kv_heads} must be divisible by ulysses_sp_size "
        "{actor_sp}or vise versa.\")",
        Stage.WORKER_INIT, f"{ULYSSES} (monkey_patch.py:146)", when=~mega & (V["actor_sp"] > 1),
    ))
    return r


RULES = _rules()
RULESET = RuleSet("skyrl", VERSION, VARIABLES, DERIVED, RULES)
