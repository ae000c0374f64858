"""verl 0.9.1's own error messages (and megatron-core's, as verl's Megatron backend hits them), mapped to our rules.

``tests/test_explain.py`` checks that every rule id exists in the verl rule sets and that each
pattern matches the message the framework really prints (``example``).
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..base import divisors
from ..error_text import _MCORE, _MCORE_TC, _P, ErrorPattern, _n, _near, some_divisors


# where verl's Megatron layout keys live (the ref's and critic's mirror them)
_MEG = "actor_rollout_ref.actor.megatron"


def _sec(who: str) -> str:
    """The config section a verl message names ('actor' is actor_rollout_ref.actor; 'critic' stays)."""
    return who if who == "critic" or "." in who else f"actor_rollout_ref.{who}"


def _dyn(who: str) -> str:
    """The switch that packs a section's micro batches by tokens (the rollout's and ref's follow the actor's)."""
    if who == "critic":
        return "critic.use_dynamic_bsz"
    return "actor_rollout_ref.actor.use_dynamic_bsz (with rollout.log_prob_use_dynamic_bsz to match)"


PATTERNS: list[ErrorPattern] = [
    # ---- verl 0.9.1
    ErrorPattern(
        "verl",
        rf"real_train_batch_size \({_n('samples')}\) must be divisible by minimal possible batch size \({_n('minimal')}\)",
        ("verl.driver.batch_divisible_by_gpus", "verl.megatron.driver_batch_divisible"),
        "verl/utils/config.py:validate_config",
        "AssertionError: real_train_batch_size (260) must be divisible by minimal possible batch size (8)",
        hint=lambda x: (f"data.train_batch_size*rollout.n = {x['samples']} samples per step must be a multiple of "
                        f"{x['minimal']} (FSDP: the GPU count; Megatron: dp*ppo_micro_batch_size_per_gpu); "
                        f"the nearest multiples are {_near(x['samples'], x['minimal'])}."),
        numbers=("samples", "minimal"),
    ),
    ErrorPattern(
        "verl",
        r"You have set both '(?P<who>actor|critic|[\w.]+)\.(?P<key>ppo_micro_batch_size|log_prob_micro_batch_size)' "
        r"AND",
        ("verl.actor.micro_exactly_one", "verl.critic.micro_exactly_one", "verl.rollout.logprob_micro_exactly_one",
         "verl.ref.logprob_micro_exactly_one"),
        "verl/workers/config/actor.py:ActorConfig.__post_init__, verl/utils/config.py:check_mutually_exclusive",
        "ValueError: [actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'.",
        hint=lambda x: (f"{_sec(x['who'])}.{x['key']} (deprecated, a global count) and "
                        f"{_sec(x['who'])}.{x['key']}_per_gpu are both set; remove {_sec(x['who'])}.{x['key']} and "
                        f"keep only {x['key']}_per_gpu (samples per GPU in one forward pass)."),
    ),
    ErrorPattern(
        "verl",
        r"Please set at least one of '(?P<who>[\w.]+)\.(?P<key>ppo_micro_batch_size|log_prob_micro_batch_size)'",
        ("verl.actor.micro_exactly_one", "verl.critic.micro_exactly_one", "verl.rollout.logprob_micro_exactly_one",
         "verl.ref.logprob_micro_exactly_one"),
        "verl/workers/config/actor.py:ActorConfig.__post_init__, verl/utils/config.py:check_mutually_exclusive",
        "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or 'actor.ppo_micro_batch_size_per_gpu' "
        "if use_dynamic_bsz is not enabled.",
        hint=lambda x: (f"neither {_sec(x['who'])}.{x['key']} nor {_sec(x['who'])}.{x['key']}_per_gpu is set; set "
                        f"{_sec(x['who'])}.{x['key']}_per_gpu (samples per GPU in one forward pass), or turn on "
                        f"{_dyn(x['who'])} to split micro batches by tokens instead."),
    ),
    ErrorPattern(
        "verl",
        rf"train_batch_size \({_n('train')}\) must be >= (?P<who>actor|critic)\.ppo_mini_batch_size \({_n('mini')}\)",
        ("verl.actor.mini_le_train", "verl.critic.mini_le_train"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)",
        hint=lambda x: (f"{_sec(x['who'])}.ppo_mini_batch_size = {x['mini']} prompts is more than the {x['train']} "
                        "prompts of a step (data.train_batch_size); lower ppo_mini_batch_size to at most "
                        f"{x['train']}, or raise data.train_batch_size to at least {x['mini']}."),
        numbers=("train", "mini"),
    ),
    ErrorPattern(
        "verl",
        rf"ppo_mini_batch_size \({_n('mini')}\) must be divisible by ppo_micro_batch_size \({_n('micro')}\)",
        ("verl.actor.global_micro_divides_mini", "verl.critic.global_micro_divides_mini"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: ppo_mini_batch_size (32) must be divisible by ppo_micro_batch_size (12)",
        hint=lambda x: (f"the deprecated global ppo_micro_batch_size = {x['micro']} does not divide "
                        f"ppo_mini_batch_size = {x['mini']}; set it to a divisor of {x['mini']} "
                        f"({some_divisors(x['mini'])}), or remove it and set ppo_micro_batch_size_per_gpu "
                        "(actor_rollout_ref.actor. or critic.) instead."),
        numbers=("mini", "micro"),
    ),
    ErrorPattern(
        "verl",
        rf"ppo_micro_batch_size \({_n('micro')}\) \* .{{0,40}}must be >= n_gpus \({_n('gpus')}\)",
        ("verl.actor.global_micro_covers_gpus", "verl.critic.global_micro_covers_gpus"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: ppo_micro_batch_size (4) * ulysses_sequence_parallel_size (1) must be >= n_gpus (8)",
        hint=lambda x: (f"the deprecated global ppo_micro_batch_size = {x['micro']} (times "
                        f"ulysses_sequence_parallel_size) is fewer than the {x['gpus']} GPUs, so some GPU gets no "
                        f"sample; raise it to at least {x['gpus']} / ulysses_sequence_parallel_size, or remove it "
                        "and set ppo_micro_batch_size_per_gpu (actor_rollout_ref.actor. or critic.) instead."),
        numbers=("micro", "gpus"),
    ),
    ErrorPattern(
        "verl",
        r"data size must be divisible by force_group_size \* micro_batch_size_per_gpu",
        ("verl.step.mini_divisible_by_micro", "verl.step.logprob_micro_divides_local_batch",
         "verl.step.ref_micro_divides_local_batch"),
        "verl/workers/engine/utils.py:prepare_micro_batches",
        "AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu",
        hint=lambda x: ("the samples one GPU gets for an update (ppo_mini_batch_size*rollout.n over the "
                        "data-parallel size) or for a log-prob pass are not a whole number of micro batches; set "
                        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu (and "
                        "rollout./ref.log_prob_micro_batch_size_per_gpu) to a divisor of that per-GPU count."),
    ),
    # ---- the legacy workers' messages (verl 0.6.1, 0.7.1 by default; and the releases before them)
    ErrorPattern(
        "verl",
        rf"normalized ppo_mini_batch_size (?:{_n('mini')} )?should be divisible by ppo_micro_batch_size_per_gpu"
        rf"(?: {_n('micro')})?",
        ("verl.legacy.mini_divisible_by_micro", "verl.legacy.critic_mini_divisible_by_micro"),
        "verl/workers/fsdp_workers.py:ActorRolloutRefWorker.__init__ (CriticWorker.__init__ for the critic)",
        "AssertionError: normalized ppo_mini_batch_size 64 should be divisible by ppo_micro_batch_size_per_gpu 24",
        hint=lambda x: (f"each GPU's share of a mini batch, ppo_mini_batch_size*n//dp = {x['mini']} samples, must be "
                        f"a whole number of micro batches of {x['micro']}; divisors of {x['mini']} that work: "
                        f"{', '.join(str(d) for d in divisors(x['mini']))}."),
        numbers=("mini", "micro"),
        versions=("0.6.1", "0.7.1"),
    ),
    ErrorPattern(
        "verl",
        rf"ppo_mini_batch_size (?:{_n('mini')} )?should be larger than 0 after normalization",
        ("verl.legacy.actor_mini_positive",),
        "verl/workers/fsdp_workers.py:ActorRolloutRefWorker.__init__",
        "AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization",
        hint=lambda x: (f"each GPU's share of a mini batch, ppo_mini_batch_size*rollout.n // dp, is {x['mini']}: the "
                        "mini batch has fewer samples than the actor's data-parallel size dp (the GPU count over "
                        "ulysses_sequence_parallel_size); raise actor.ppo_mini_batch_size until "
                        "ppo_mini_batch_size*rollout.n is at least dp."),
        numbers=("mini",),
        versions=("0.6.1", "0.7.1"),
    ),
    ErrorPattern(
        "verl",
        r"model context length should be greater than total sequence length",
        ("verl.vllm.context_covers_prompt_response",),
        "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:vLLMRollout.__init__",
        "AssertionError: model context length should be greater than total sequence length",
        hint=lambda x: ("the model's max_position_embeddings (times its rope_scaling factor) is shorter than "
                        "data.max_prompt_length + data.max_response_length; lower those two lengths to fit the "
                        "model's context."),
        versions=("0.6.1",),
    ),
    ErrorPattern(
        "verl",
        r"Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len",
        ("verl.vllm.chunked_prefill_batched_tokens",),
        "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:vLLMRollout.__init__",
        "AssertionError: Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len, please "
        "increase max_num_batched_tokens or disable chunked prefill",
        hint=lambda x: ("chunked prefill is on and actor_rollout_ref.rollout.max_num_batched_tokens is below "
                        "max_model_len (data.max_prompt_length + data.max_response_length when "
                        "rollout.max_model_len is unset); raise max_num_batched_tokens to at least that, or set "
                        "actor_rollout_ref.rollout.enable_chunked_prefill=False."),
        versions=("0.6.1",),
    ),
    ErrorPattern(
        "verl",
        r"When using sequence parallelism for critic, you must enable `use_remove_padding`",
        ("verl.critic.sp_needs_remove_padding",),
        "verl/workers/config/critic.py:FSDPCriticConfig.__post_init__",
        "ValueError: When using sequence parallelism for critic, you must enable `use_remove_padding`.",
        hint=lambda x: ("critic.ulysses_sequence_parallel_size > 1 needs critic.model.use_remove_padding=True; "
                        "set it, or set critic.ulysses_sequence_parallel_size=1."),
        versions=("0.6.1", "0.7.1"),
    ),
    ErrorPattern(
        "verl",
        rf"Prompt length \({_n('prompt')}\) exceeds the model's maximum context length \({_n('model_len')}\)",
        ("verl.vllm.prompt_fits_model_len",),
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py:vLLMHttpServer.generate",
        "ValueError: Prompt length (4096) exceeds the model's maximum context length (2048).",
        hint=lambda x: (f"a {x['prompt']}-token prompt does not fit actor_rollout_ref.rollout.max_model_len = "
                        f"{x['model_len']}; raise max_model_len to at least data.max_prompt_length + "
                        "data.max_response_length, or lower data.max_prompt_length "
                        "(data.filter_overlong_prompts=True drops longer prompts)."),
        numbers=("prompt", "model_len"),
        versions=("0.7.1",),
    ),
    ErrorPattern(
        "verl",
        r"expert_parallel_size must be equal to tensor_model_parallel_size \* data_parallel_size",
        ("verl.rollout.ep_equals_tp_dp",),
        "verl/workers/config/rollout.py:RolloutConfig.__post_init__",
        "ValueError: expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size",
        hint=lambda x: ("actor_rollout_ref.rollout.expert_parallel_size must equal the rollout's "
                        "tensor_model_parallel_size * data_parallel_size; set it to that product, or pick TP and "
                        "DP whose product is the expert size you want."),
    ),
    ErrorPattern(
        "verl",
        rf"rollout world_size: {_n('world')} is not divisible by infer_world_size: {_n('infer')}",
        ("verl.worker.rollout_world_divides_gpus",),
        "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model",
        "AssertionError: rollout world_size: 8 is not divisible by infer_world_size: 3",
        hint=lambda x: (f"the {x['world']} GPUs do not split into rollout replicas of {x['infer']} GPUs "
                        "(actor_rollout_ref.rollout.tensor_model_parallel_size * data_parallel_size * "
                        f"pipeline_model_parallel_size); use a replica size that divides {x['world']}: "
                        f"{some_divisors(x['world'])}."),
        numbers=("world", "infer"),
    ),
    ErrorPattern(
        "verl",
        rf"world_size {_n('world')} must be divisible by gpus_per_node {_n('per_node')}",
        ("verl.rollout.replica_fits_nodes",),
        "verl/workers/rollout/replica.py:RolloutReplica.__init__",
        "AssertionError: world_size 12 must be divisible by gpus_per_node 8",
        hint=lambda x: (f"a rollout replica of {x['world']} GPUs (actor_rollout_ref.rollout TP*DP*PP) spans more "
                        f"than a node's {x['per_node']} GPUs (n_gpus_per_node) but not whole nodes; make it at "
                        f"most {x['per_node']} (a divisor: {some_divisors(x['per_node'])}) or a multiple of "
                        f"{x['per_node']}."),
        numbers=("world", "per_node"),
    ),
    ErrorPattern(
        "verl",
        r"gpus_per_node should be divisible by tensor_model_parallel_size",
        ("verl.vllm.dp_needs_tp_within_node",),
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "AssertionError: gpus_per_node should be divisible by tensor_model_parallel_size",
        hint=lambda x: ("a rollout replica spans nodes with rollout data_parallel_size > 1, and the GPUs per node "
                        "are not a multiple of actor_rollout_ref.rollout.tensor_model_parallel_size; use a "
                        "tensor_model_parallel_size that divides trainer.n_gpus_per_node (rollout.n_gpus_per_node "
                        "for a separate rollout pool)."),
    ),
    ErrorPattern(
        "verl",
        rf"max_model_len \({_n('model_len')}\) should be less than or equal to",
        ("verl.vllm.model_len_le_positions",),
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "max_model_len (65536) should be less than or equal to max_position_embeddings (32768)",
        hint=lambda x: (f"actor_rollout_ref.rollout.max_model_len = {x['model_len']} is longer than the model's "
                        "max_position_embeddings; lower it to at most the model's context, or leave it unset (it "
                        "then defaults to max_position_embeddings)."),
        numbers=("model_len",),
    ),
    ErrorPattern(
        "verl",
        rf"num_attention_heads {_n('heads')} must be divisible by ulysses_sp_size {_n('sp')}"
        rf"|num_heads \({_n('heads2')}\) must be divisible by ulysses sequence size\({_n('sp2')}\)",
        ("verl.ulysses.actor_heads_divisible",),
        "verl/models/transformers/monkey_patch.py, verl/utils/ulysses.py",
        "AssertionError: num_attention_heads 28 must be divisible by ulysses_sp_size 8",
        hint=lambda x: (f"actor_rollout_ref.actor.ulysses_sequence_parallel_size = {x.get('sp') or x['sp2']} does "
                        f"not divide the model's {x.get('heads') or x['heads2']} attention heads; use a divisor of "
                        f"{x.get('heads') or x['heads2']}: {some_divisors(x.get('heads') or x['heads2'])} (the "
                        "ref's and critic's ulysses_sequence_parallel_size too)."),
        numbers=("heads", "sp"),
    ),
    ErrorPattern(
        "verl",
        rf"num_key_value_heads {_n('kv_heads')} must be divisible by ulysses_sp_size",
        ("verl.ulysses.actor_kv_heads",),
        "verl/models/transformers/monkey_patch.py",
        "AssertionError: num_key_value_heads 4 must be divisible by ulysses_sp_size 8or vise versa.",
        hint=lambda x: (f"the model's {x['kv_heads']} key/value heads and "
                        "actor_rollout_ref.actor.ulysses_sequence_parallel_size must divide one another; use a "
                        f"Ulysses size that divides {x['kv_heads']} ({some_divisors(x['kv_heads'])}) or a multiple "
                        "of it that still divides the attention heads."),
        numbers=("kv_heads",),
    ),
    ErrorPattern(
        "verl",
        rf"max_token_len must be greater than the sequence length\. Got max_token_len={_n('budget')} and "
        rf"max_seq_len={_n('longest')}",
        ("verl.step.actor_token_budget", "verl.step.logprob_token_budget", "verl.step.ref_token_budget",
         "verl.step.critic_token_budget"),
        "verl/utils/seqlen_balancing.py:rearrange_micro_batches",
        "AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=2000 and "
        "max_seq_len=2160",
        hint=lambda x: (f"a micro batch's token budget of {x['budget']} "
                        "(actor_rollout_ref.actor.ppo_max_token_len_per_gpu, "
                        "rollout./ref.log_prob_max_token_len_per_gpu or critic.ppo_infer_max_token_len_per_gpu, "
                        f"times the Ulysses size) is below a {x['longest']}-token sample; raise it to at least "
                        f"{x['longest']} (data.max_prompt_length + data.max_response_length)."),
        numbers=("budget", "longest"),
    ),
    ErrorPattern(
        "verl",
        rf"Total number of attention heads \({_n('heads')}\) must be divisible by tensor parallel size \({_n('tp')}\)",
        ("verl.vllm.heads_divisible_by_tp",),
        "vLLM config check of num_attention_heads vs tensor_parallel_size (raised inside verl's rollout workers)",
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
        hint=lambda x: (f"the model's {x['heads']} attention heads do not split over "
                        f"actor_rollout_ref.rollout.tensor_model_parallel_size = {x['tp']}; use a divisor of "
                        f"{x['heads']}: {some_divisors(x['heads'])}."),
        numbers=("heads", "tp"),
    ),
    # ---- verl 0.9.1, more driver / worker / step messages (Megatron backend included)
    ErrorPattern(
        "verl",
        rf"n_gpus {_P('gpus')} must be divisible by model_parallel_size {_P('mp')} times context_parallel_size "
        rf"{_P('cp')}",
        ("verl.megatron.driver_gpus_divisible_by_model_parallel",),
        "verl/utils/config.py:validate_config",
        "AssertionError: n_gpus (8) must be divisible by model_parallel_size (3) times context_parallel_size (1)",
        hint=lambda x: (f"{x['gpus']} GPUs do not split into Megatron groups of TP*PP*CP = {x['mp']}*{x['cp']} = "
                        f"{x['mp'] * x['cp']}; choose {_MEG}.tensor_model_parallel_size, pipeline_model_parallel_size "
                        f"and context_parallel_size whose product divides {x['gpus']}: {some_divisors(x['gpus'])}."),
        numbers=("gpus", "mp", "cp"),
    ),
    ErrorPattern(
        "verl",
        r"not implemented pipeline_model_parallel_size > 1 yet",
        ("verl.rollout.pp_unsupported",),
        "verl/workers/config/rollout.py:RolloutConfig.__post_init__",
        "NotImplementedError: Current rollout self.name='vllm' not implemented pipeline_model_parallel_size > 1 yet.",
        hint=lambda x: ("verl's vLLM/SGLang rollout has no pipeline parallel; set "
                        "actor_rollout_ref.rollout.pipeline_model_parallel_size=1 and split the model with "
                        "tensor_model_parallel_size instead."),
    ),
    ErrorPattern(
        "verl",
        rf"Got mini_batch_size={_n('mini_n')} and self\.engine\.get_data_parallel_size\(\)={_n('dp')}",
        ("verl.step.mini_divisible_by_dp", "verl.step.critic_mini_divisible_by_dp"),
        "verl/workers/engine_workers.py:TrainingWorker.train_mini_batch",
        "AssertionError: Got mini_batch_size=40 and self.engine.get_data_parallel_size()=3",
        hint=lambda x: (f"a mini batch of ppo_mini_batch_size*rollout.n = {x['mini_n']} samples is split over "
                        f"{x['dp']} data-parallel ranks; it must be a multiple of {x['dp']} "
                        f"(nearest: {_near(x['mini_n'], x['dp'])})."),
        numbers=("mini_n", "dp"),
    ),
    ErrorPattern(
        "verl",
        rf"micro_batches .{{0,400}}? must be divisible by num_batches_divided_by {_n('group')} for megatron backend",
        ("verl.megatron.vpp_micro_batches_grouped", "verl.megatron.vpp_logprob_micro_batches_grouped",
         "verl.megatron.vpp_ref_micro_batches_grouped"),
        "verl/workers/engine/megatron/transformer_impl.py:MegatronEngine.forward_backward_batch",
        "AssertionError: micro_batches [...] must be divisible by num_batches_divided_by 2 for megatron backend",
        hint=lambda x: (f"with virtual pipeline stages the micro batches of a mini batch must come in multiples of "
                        f"{x['group']} (the pipeline size): set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu "
                        "(rollout./ref.log_prob_micro_batch_size_per_gpu for the log-prob passes) so that each GPU's "
                        f"share splits into a multiple of {x['group']} micro batches, or drop "
                        f"{_MEG}.virtual_pipeline_model_parallel_size."),
        numbers=("group",),
    ),
    ErrorPattern(
        "verl",
        r"assert self\.config\.actor\.use_dynamic_bsz == self\.config\.rollout\.log_prob_use_dynamic_bsz",
        ("verl.worker.dynamic_bsz_consistent",),
        "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model (an assert without a message)",
        "    assert self.config.actor.use_dynamic_bsz == self.config.rollout.log_prob_use_dynamic_bsz\nAssertionError",
        hint=lambda x: ("actor_rollout_ref.actor.use_dynamic_bsz and "
                        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz differ; set them to the same value."),
    ),
    ErrorPattern(
        "verl",
        r"assert self\.config\.(actor\.ppo|rollout\.log_prob)_micro_batch_size_per_gpu is not None",
        ("verl.worker.actor_micro_per_gpu_required", "verl.worker.logprob_micro_per_gpu_required"),
        "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model (an assert without a message)",
        "    assert self.config.actor.ppo_micro_batch_size_per_gpu is not None\nAssertionError",
        hint=lambda x: ("verl 0.9.1's worker needs actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu and "
                        "rollout.log_prob_micro_batch_size_per_gpu: it no longer converts the deprecated global "
                        "ppo_micro_batch_size / log_prob_micro_batch_size; replace them with the _per_gpu keys "
                        "(the global size divided by the data-parallel GPU count)."),
    ),
    ErrorPattern(
        "verl",
        rf"world_size {_P('world')} is not divisible by (?P<mp>\d+)\b",
        ("verl.megatron.gpus_divisible_by_model_parallel",),
        _MCORE,
        "RuntimeError: world_size (8) is not divisible by 3",
        hint=lambda x: (f"{x['world']} GPUs do not split into Megatron groups of TP*PP*CP = {x['mp']}; choose "
                        f"{_MEG}.tensor_model_parallel_size, pipeline_model_parallel_size and context_parallel_size "
                        f"whose product divides {x['world']}: {some_divisors(x['world'])}."),
        numbers=("world", "mp"),
    ),
    ErrorPattern(
        "verl",
        rf"world_size {_P('world')} is not divisible by expert_tensor_model_pipeline_parallel size "
        rf"{_P('expert_mp')}",
        ("verl.megatron.gpus_divisible_by_expert_parallel",),
        _MCORE,
        "RuntimeError: world_size (64) is not divisible by expert_tensor_model_pipeline_parallel size (128)",
        hint=lambda x: (f"the expert layout ETP*EP*PP = {x['expert_mp']} does not divide the {x['world']} GPUs; "
                        f"lower {_MEG}.expert_model_parallel_size or expert_tensor_parallel_size (unset, it is the TP "
                        f"size) until the product divides {x['world']}."),
        numbers=("world", "expert_mp"),
    ),
    ErrorPattern(
        "verl",
        rf"num_attention_heads {_P('heads')} must be a multiple of tensor_model_parallel_size {_P('tp')}",
        ("verl.megatron.heads_divisible_by_tp",),
        _MCORE_TC,
        "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).",
        hint=lambda x: (f"{_MEG}.tensor_model_parallel_size = {x['tp']} must divide the model's {x['heads']} "
                        f"attention heads; divisors of {x['heads']}: {', '.join(str(d) for d in divisors(x['heads']))}."),
        numbers=("heads", "tp"),
    ),
    ErrorPattern(
        "verl",
        rf"num_query_groups {_P('groups')} must be a multiple or divisor of tensor_model_parallel_size {_P('tp')}",
        ("verl.megatron.query_groups_vs_tp",),
        _MCORE_TC,
        "ValueError: num_query_groups (4) must be a multiple or divisor of tensor_model_parallel_size (3).",
        hint=lambda x: (f"the model's {x['groups']} key/value head groups and {_MEG}.tensor_model_parallel_size = "
                        f"{x['tp']}: one must be a multiple of the other; divisors of {x['groups']}: "
                        f"{some_divisors(x['groups'])}."),
        numbers=("groups", "tp"),
    ),
    ErrorPattern(
        "verl",
        r"num_layers should be divisible by pipeline_model_parallel_size",
        ("verl.megatron.layers_divisible_by_pp",),
        "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core)",
        "AssertionError: num_layers should be divisible by pipeline_model_parallel_size",
        hint=lambda x: ("the model's layers do not split evenly over "
                        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size; use a pipeline size that "
                        "divides the model's num_hidden_layers (the ref's and critic's "
                        "megatron.pipeline_model_parallel_size too)."),
    ),
    # ---- split placements (docs/async.md): the separate_async trainer, the recipes, Ray's pool check
    ErrorPattern(
        "verl",
        rf"train_batch_size must equal parameter_sync_step \* ppo_mini_batch_size in separate async training, but got "
        rf"train_batch_size={_n('train')}, parameter_sync_step={_n('sync')}, ppo_mini_batch_size={_n('mini')}",
        ("verl.async.separate_batch_is_sync_steps_of_minis",),
        "verl/trainer/ppo/v1/trainer_separate_async.py:PPOTrainerSeparateAsync.__init__",
        "AssertionError: train_batch_size must equal parameter_sync_step * ppo_mini_batch_size in separate async "
        "training, but got train_batch_size=6, parameter_sync_step=4, ppo_mini_batch_size=1",
        hint=lambda x: (f"separate_async trains one mini batch per step between weight syncs: data.train_batch_size "
                        f"must be {x['sync']} x {x['mini']} = {x['sync'] * x['mini']}, or parameter_sync_step "
                        f"{x['train'] // x['mini'] if x['train'] % x['mini'] == 0 else 'a divisor'} for "
                        f"{x['train']} prompts."),
        numbers=("train", "sync", "mini"),
    ),
    ErrorPattern(
        "verl", r"nnodes must be > 0 in (separate async training|standalone mode)|config\.rollout\.nnodes must be greater "
        r"than 0", ("verl.async.rollout_pool_needed",),
        "verl/trainer/ppo/v1/trainer_separate_async.py:PPOTrainerSeparateAsync.__init__; "
        "verl/experimental/separation/utils.py:create_resource_pool_manager",
        "AssertionError: nnodes must be > 0 in separate async training",
        hint=lambda x: ("separate async training generates on GPUs of its own, but the rollout pool has 0 nodes: "
                        "set actor_rollout_ref.rollout.nnodes and n_gpus_per_node (the fully_async / one_step_off "
                        "recipes: rollout.nnodes and rollout.n_gpus_per_node) to the rollout GPUs, and lower "
                        "trainer.nnodes / trainer.n_gpus_per_node by as many."),
    ),
    ErrorPattern(
        "verl", r"please use nccl/nixl/mooncake, etc\. backend for separate async training",
        ("verl.async.checkpoint_engine_not_naive",),
        "verl/trainer/ppo/v1/trainer_separate_async.py:PPOTrainerSeparateAsync.__init__",
        "AssertionError: please use nccl/nixl/mooncake, etc. backend for separate async training",
        hint=lambda x: ("separate async training sends weights to the rollout GPUs over the network; set "
                        "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl (or nixl / mooncake) instead of "
                        "naive."),
    ),
    ErrorPattern(
        "verl", r"train_batch_size must be zero", ("verl.async.fully_async_train_batch_zero",),
        "verl/experimental/fully_async_policy/fully_async_rollouter.py:FullyAsyncRollouter.__init__",
        "AssertionError: train_batch_size must be zero",
        hint=lambda x: ("the fully_async recipe sizes a step by actor_rollout_ref.actor.ppo_mini_batch_size x "
                        "async_training.require_batches; set data.train_batch_size=0."),
    ),
    ErrorPattern(
        "verl", rf"Total available GPUs {_n('have')} is less than total desired GPUs {_n('want')}",
        ("verl.async.pools_fit_cluster",),
        "verl/single_controller/ray/base.py:ResourcePoolManager._check_resource_available",
        "ValueError: Total available GPUs 8 is less than total desired GPUs 12",
        hint=lambda x: (f"the job's pools ask Ray for {x['want']} GPUs but the cluster has {x['have']}: add "
                        f"{x['want'] - x['have']} GPUs, or shrink trainer.nnodes x trainer.n_gpus_per_node and the "
                        "rollout pool (rollout.nnodes x rollout.n_gpus_per_node) to fit."),
        numbers=("have", "want"),
    ),
]


# ----------------------------------------------------------------------------- out of memory (frameworks/oom_text.py)
# The worker methods verl's driver calls for each phase (verl/workers/fsdp_workers.py, megatron_workers.py and
# engine_workers.py: generate_sequences, compute_log_prob, compute_ref_log_prob, update_actor, compute_values,
# update_critic; the Ray workers' names as ray prints them, "ActorRolloutRefWorker.actor_rollout_compute_log_prob").
# The reference pass calls the actor's compute_log_prob inside compute_ref_log_prob, so it is matched first.
OOM_FRAMES = (
    (r"compute_ref_log_prob|_compute_ref_log_prob|ref_compute_(?:ref_)?log_prob", Phase.REF),
    (r"\bupdate_critic\b|critic_update_critic|compute_values|critic_compute_values", Phase.CRITIC_UPDATE),
    (r"\bupdate_actor\b|\bupdate_policy\b|actor_rollout_update_actor|actor_rollout_ref_update_actor"
     r"|torch/optim/|_multi_tensor_adam|step_with_ready_grads|_optimizer_step", Phase.ACTOR_UPDATE),
    (r"compute_log_prob|_compute_old_log_prob", Phase.OLD_LOG_PROB),
    (r"generate_sequences|vllm_rollout|vllm_async_server|sglang_rollout|agent_loop|wake_up|update_weights",
     Phase.ROLLOUT),
)
A = "actor_rollout_ref"
OOM_ADVICE = {
    Phase.ROLLOUT: (
        f"{A}.rollout.gpu_memory_utilization lower: the engine reserves that share of the whole GPU on top of what "
        "the trainer keeps there",
        f"{A}.actor.fsdp_config.param_offload=True and optimizer_offload=True: the actor's states leave the GPU "
        "while the engine generates",
        f"{A}.rollout.tensor_model_parallel_size higher: the engine's weights and KV cache split over more GPUs",
        f"{A}.rollout.max_num_seqs / max_num_batched_tokens lower: a smaller profile peak and batch",
        f"{A}.rollout.free_cache_engine=True: the KV cache is freed between rollouts"),
    "engine_start": (
        f"{A}.rollout.max_model_len lower (unset, verl passes the model's whole context): one sequence of it must fit "
        "the KV cache",
        f"{A}.rollout.gpu_memory_utilization higher, where the trainer's states leave room (offload them)",
        f"{A}.rollout.tensor_model_parallel_size higher: the weights split, more of the budget is KV cache"),
    Phase.OLD_LOG_PROB: (
        f"{A}.rollout.log_prob_micro_batch_size_per_gpu lower, or with log_prob_use_dynamic_bsz "
        "log_prob_max_token_len_per_gpu lower: fewer tokens of logits per pass",
        f"{A}.actor.entropy_from_logits_with_chunking=True: the entropy in 2,048-row chunks",
        f"{A}.actor.ulysses_sequence_parallel_size higher: a sequence's tokens split over GPUs",
        f"{A}.actor.fsdp_config.param_offload=True: the critic's and the engine's share stay, the actor's leaves"),
    Phase.REF: (
        f"{A}.ref.log_prob_micro_batch_size_per_gpu lower, or ref.log_prob_max_token_len_per_gpu lower",
        f"{A}.ref.ulysses_sequence_parallel_size higher",
        f"{A}.actor.fsdp_config.param_offload=True and optimizer_offload=True: the actor's states leave the GPU "
        "while the reference computes"),
    Phase.ACTOR_UPDATE: (
        f"{A}.actor.ppo_micro_batch_size_per_gpu lower, or with use_dynamic_bsz ppo_max_token_len_per_gpu lower",
        f"{A}.model.enable_gradient_checkpointing=True: one layer's activations instead of all",
        f"{A}.actor.ulysses_sequence_parallel_size higher",
        f"{A}.actor.fsdp_config.optimizer_offload=True / param_offload=True: fewer states beside the update",
        f"{A}.model.lora_rank > 0 (LoRA): adapter states only"),
    Phase.CRITIC_UPDATE: (
        "critic.ppo_micro_batch_size_per_gpu lower, or critic.ppo_max_token_len_per_gpu lower",
        "critic.model.enable_gradient_checkpointing=True",
        "critic.model.fsdp_config.param_offload=True / optimizer_offload=True",
        "critic.ulysses_sequence_parallel_size higher"),
    Phase.HOST: (
        "fewer offloaded states per node: offload only what the GPU cannot hold (param_offload / optimizer_offload)",
        "more nodes for the same GPUs, or nodes with more RAM (--host-mem to check a node)",
        "RAY_memory_usage_threshold raises Ray's kill line above 0.95 (it does not create memory)"),
}
MEGATRON_OOM_ADVICE = {
    **OOM_ADVICE,
    Phase.ACTOR_UPDATE: (
        f"{A}.actor.ppo_micro_batch_size_per_gpu lower, or with use_dynamic_bsz ppo_max_token_len_per_gpu lower",
        f"{A}.actor.megatron.override_transformer_config.recompute_granularity=full (with recompute_method=uniform, "
        "recompute_num_layers=1): a layer's input instead of its activations",
        f"{A}.actor.megatron.tensor_model_parallel_size / pipeline_model_parallel_size / context_parallel_size "
        "higher",
        f"{A}.actor.megatron.param_offload=True / optimizer_offload=True / grad_offload=True"),
    Phase.CRITIC_UPDATE: (
        "critic.ppo_max_token_len_per_gpu lower (0.9 packs the critic by tokens)",
        "critic.megatron.tensor_model_parallel_size / pipeline_model_parallel_size higher",
        "critic.megatron.override_transformer_config.recompute_granularity=full",
        "critic.megatron.param_offload=True / optimizer_offload=True"),
}
