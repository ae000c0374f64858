"""Cost models of verl-megatron, openrlhf, swift and swift-megatron.

* the solver tables equal the full cost model on random configs of each framework's space;
* the CP-SAT optimum equals exhaustive evaluation on a small space per framework (gap 0);
* the memory formulas against their anchors: Megatron-LM's theoretical_memory_usage.py and
  DeepSpeed's estimate_zero2/zero3_model_states_mem_needs (their published formulas, computed here);
* published example configs fit the GPUs they were written for; 72B on one 24 GB GPU does not;
* a 64-GPU Megatron MoE scenario recommends a proven config;
* CLI: recommend and check --gpu --model per framework, exit codes 0/1/2, never a traceback.
"""

import json
import time

import pytest
import yaml

from bruteforce import assert_optimum_is_exhaustive, assert_tables_match_cost_model
from clirun import run

import rlbatch_solver as rb
from rlbatch_solver.api import prepare
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel import memory as M
from rlbatch_solver.costmodel.tables import MIB
from rlbatch_solver.scenario import Scenario

AR = "actor_rollout_ref"
FRAMEWORKS = ["verl-megatron", "openrlhf", "swift", "swift-megatron"]


def scenario(fw, *, gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", search=None, fixed=None, **kw):
    return Scenario(framework=fw, gpu=gpu, gpus=gpus, model=model, algorithm=kw.pop("algo", "grpo"), n=4,
                    prompt_length=512, response_length=1024, search=dict(search or {}), fixed=dict(fixed or {}), **kw)


# Small spaces (the knob searches of each framework are on: prepare() uses with_knobs=True).
SMALL = {
    "verl-megatron": dict(search={
        "data.train_batch_size": [16, 32], f"{AR}.actor.ppo_mini_batch_size": [8, 16],
        f"{AR}.actor.ppo_micro_batch_size_per_gpu": [1, 2], f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": [2, 4],
        f"{AR}.actor.megatron.tensor_model_parallel_size": [1, 2],
        f"{AR}.actor.megatron.pipeline_model_parallel_size": [1, 2],
        f"{AR}.rollout.tensor_model_parallel_size": [1, 2]},
        fixed={f"{AR}.rollout.gpu_memory_utilization": 0.5}),
    "openrlhf": dict(search={
        "rollout.batch_size": [16, 32], "train.batch_size": [16, 32], "train.micro_batch_size": [1, 2],
        "rollout.micro_batch_size": [2, 4], "vllm.num_engines": [2, 4], "vllm.tensor_parallel_size": [1, 2],
        "actor.num_gpus_per_node": [2, 4]},
        fixed={"vllm.gpu_memory_utilization": 0.5, "train.colocate_all": True}),
    "swift": dict(search={"per_device_train_batch_size": [1, 2, 4], "gradient_accumulation_steps": [1, 2],
                          "vllm_tensor_parallel_size": [1, 2]},
                  fixed={"vllm_gpu_memory_utilization": 0.5}),
    "swift-megatron": dict(search={"tensor_model_parallel_size": [1, 2], "pipeline_model_parallel_size": [1, 2],
                                   "micro_batch_size": [1, 2], "global_batch_size": [8, 16],
                                   "vllm_tensor_parallel_size": [1, 2]},
                           fixed={"vllm_gpu_memory_utilization": 0.5}),
}



@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_tables_equal_the_full_cost_model(fw):
    sc = scenario(fw, **SMALL[fw])
    _, _, _, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=25, seed=7, label=fw, terms=terms)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_cpsat_optimum_equals_exhaustive_evaluation(fw):
    sc = scenario(fw, **SMALL[fw])
    _, _, _, space, _, terms, ruleset = prepare(sc)
    assert_optimum_is_exhaustive(ruleset, space, terms.time_us_per_sample)


# ----------------------------------------------------------------------------- anchors
def _plan(model, gpu="h100", **kw):
    from rlbatch_solver.costmodel.plan import Plan

    base = dict(model=load_model(model), gpu=load_gpu(gpu), n_gpus=8, gpus_per_node=8, prompt_len=1024,
                response_len=1024, samples_per_step=64, mini_batches=1, train_micro=1, train_token_budget=None,
                logprob_micro=1, logprob_token_budget=None, sp=1, shard_degree=8, zero_stage=0, grad_ckpt=False,
                param_offload=False, optimizer_offload=False, remove_padding=False, entropy_chunking=False,
                entropy_checkpointing=False, need_ref=False, need_critic=False, critic_micro=1, engine="vllm",
                rollout_tp=1, gpu_memory_utilization=0.5, free_cache_engine=True, enforce_eager=False,
                max_num_seqs=256, max_num_batched_tokens=8192)
    base.update(kw)
    return Plan(**base)


@pytest.mark.parametrize("tp,pp,n", [(1, 1, 8), (2, 1, 8), (2, 2, 16), (4, 2, 64)])
def test_megatron_states_equal_megatron_theoretical_memory(tp, pp, n):
    """Megatron-LM megatron/training/theoretical_memory_usage.py compute_weight_and_optimizer_memory,
    dense Llama-3.1-8B (RMSNorm, SwiGLU, GQA, untied, no biases): most loaded shard x (6 + 12/dp)."""
    card = load_model("llama3.1-8b")
    h, L, V = card.hidden_size, card.num_hidden_layers, card.vocab_size
    a, g, ffn = card.num_attention_heads, card.num_key_value_heads, card.intermediate_size
    kv_channels = card.head_dim
    self_attn = 2 * h * h * ((1 + g / a) * (kv_channels * a / h))
    layer = 2 * h * (ffn * 1.5 + 1) + self_attn  # norm_size 1 (RMSNorm)
    block = layer * L + h  # + final layernorm
    emb = h * V
    shard = (block / pp + emb) / tp + (emb / tp if pp == 1 else 0)
    dp = n // (tp * pp)
    megatron = shard * (6 + 12 / dp)
    plan = _plan("llama3.1-8b", n_gpus=n, tp=tp, pp=pp, shard_degree=dp, trainer="megatron",
                 distributed_optimizer=True)
    ours = sum(M._states(plan, M.model_consts(card), False))
    assert ours == pytest.approx(megatron, rel=2e-3)


def test_megatron_activations_against_theoretical_memory():
    """compute_activation_memory (SP + selective, Korthikanti Table 2): s*b*h*(18 + 4*ffn/h) per layer x L,
    x the interleaved factor, /t. Ours counts SwiGLU's fc1 output (2 x ffn) and GQA's smaller K/V: within 25%."""
    card = load_model("llama3.1-8b")
    h, L, ffn = card.hidden_size, card.num_hidden_layers, card.intermediate_size
    s, b = 4096, 1
    for tp, pp, vpp in [(1, 1, 1), (4, 1, 1), (2, 4, 1), (2, 4, 2)]:
        mega = s * b * h * (18 + 4 * ffn / h) * L
        if vpp > 1:
            mega *= 1 + (pp - 1) / (pp * vpp)
        mega /= tp
        plan = _plan("llama3.1-8b", tp=tp, pp=pp, vpp=vpp, trainer="megatron", recompute="selective",
                     distributed_optimizer=True, shard_degree=8 // (tp * pp) or 1)
        mc = M.model_consts(card)
        ours = s * b * M.megatron_layer_activation_bytes(plan, mc) * L * M.megatron_pipeline_factor(plan)
        assert 0.95 < ours / mega < 1.25, (tp, pp, vpp, ours / mega)


@pytest.mark.parametrize("stage,offload", [(2, False), (3, False), (2, True), (3, True)])
def test_deepspeed_states_are_deepspeed_estimators_less_the_step_time_fp32_gradients(stage, offload):
    """deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs and stage3.py
    estimate_zero3_model_states_mem_needs (0.19.x), their GPU side, without the largest-layer buffer (our
    all-gather term is reported on its own). Their 18 B/param count an fp32 gradient copy (4) that DeepSpeed
    0.19.6 makes only inside the optimizer step, a partition or a sub-group at a time, after the backward's
    activations are freed; the gradients it keeps are 16-bit (2). Stage 2's estimator has both (2 + 4 + 12),
    ours 2 + 12: 4 B/param/GPU less; stage 3's has the fp32 one only (16-bit params 2 + 4 + 12), ours
    2 + 2 + 12: 2 less. The step's copy is a term of its own only when it outgrows what the backward held."""
    card = load_model("qwen2.5-7b")
    P, N = M.model_consts(card).params, 8
    if stage == 2:
        ds = 2 * P if offload else 2 * P + int(18 * P / N)
    else:
        ds = int(2 * P / N) if offload else int(18 * P / N)
    plan = _plan("qwen2.5-7b", zero_stage=stage, shard_degree=N, trainer="deepspeed", offload_during_compute=True,
                 optimizer_offload=offload)
    rep = M.estimate_memory(plan).phases["actor_update"]
    ours = rep[M.T_PARAMS] + rep[M.T_GRADS] + rep[M.T_OPTIM]
    assert ours == pytest.approx(ds if offload else ds - (4 if stage == 2 else 2) * P / N, rel=1e-6)
    if not offload:
        assert M.deepspeed_step_bytes(P, N, stage) == pytest.approx(4 * P / N)  # 0.95B params < one sub-group
        working = sum(b for t, b in rep.items() if t not in (M.T_PARAMS, M.T_GRADS, M.T_OPTIM, M.T_DS_STEP))
        assert rep.get(M.T_DS_STEP, 0.0) == pytest.approx(max(0.0, 4 * P / N - working))
    if stage == 3:  # DeepSpeed's 4 x largest layer: our two bf16 units in flight in forward (the same 4 B/param)
        fwd = M._gather_bytes(plan, M.model_consts(card), backward=False)
        assert fwd == pytest.approx(4 * M.model_consts(card).largest_unit)


# ----------------------------------------------------------------------------- published examples
# Which GPU each published example was written for, and the memory flags of its source script that
# the rule-test data leave out (they keep batch and layout flags only).
VERL_MG = yaml.safe_load(open("tests/data/verl/megatron_examples.yaml"))
MG_OFFLOAD = [f"{AR}.actor.megatron.param_offload=True", f"{AR}.actor.megatron.optimizer_offload=True",
              f"{AR}.ref.megatron.param_offload=True"]
VERL_FITS = {
    # v0.8 scripts that name no GPU: assumed 8 x 80 GB (A100-80GB), the machine verl's docs use
    "grpo_qwen2_7b_math_megatron": ("a100-80gb", []),
    "grpo_qwen2_7b_seq_balance_megatron": ("a100-80gb", []),
    # "8_h20" in the script's name; its param/grad/optimizer offload flags (grad_offload is not a 0.9.1 key)
    "grpo_qwen2_5_32b_8_h20_megatron": ("h20", MG_OFFLOAD),
}


@pytest.mark.parametrize("name", sorted(VERL_FITS))
def test_verl_megatron_examples_fit_their_gpus(name):
    ex = next(e for e in VERL_MG if e["name"] == name)
    gpu, extra = VERL_FITS[name]
    r = rb.check(ex["overrides"] + extra, framework="verl-megatron", model=ex["model"], gpu=gpu)
    assert r.memory is not None and r.memory.fits, r.memory.peaks
    assert r.valid


OPENRLHF = yaml.safe_load(open("tests/data/openrlhf/examples.yaml"))
OPENRLHF_FITS = {
    # examples/scripts/train_ppo_ray_hybrid_engine.sh: Llama-3-8B SFT + RM on 8 GPUs; OpenRLHF's README
    # benchmarks run on 80 GB A100/H800 (assumed: A100-80GB); flags the data omit from the script:
    # --gradient_checkpointing --deepspeed_enable_sleep --enforce_eager
    "train_ppo_ray_hybrid_engine": ("a100-80gb", "llama3.1-8b", {
        "actor.gradient_checkpointing_enable": True, "ds.enable_sleep": True, "vllm.enforce_eager": True}),
}


@pytest.mark.parametrize("name", sorted(OPENRLHF_FITS))
def test_openrlhf_examples_fit_their_gpus(name):
    gpu, model, extra = OPENRLHF_FITS[name]
    ex = OPENRLHF[name]
    r = rb.check({**ex["flags"], **extra}, framework="openrlhf", gpus=ex["gpus"], model=model, gpu=gpu)
    assert r.memory.fits and r.valid, r.memory.peaks


SWIFT_HF = yaml.safe_load(open("tests/data/swift/hf_examples.yaml"))
SWIFT_MG = yaml.safe_load(open("tests/data/swift/megatron_examples.yaml"))
# ms-swift's scripts name no GPU; its docs' GRPO examples run on 80 GB A100/H800: assumed A100-80GB
# (megatron: H100). Examples whose flags as recorded leave out vllm_gpu_memory_utilization / sleep_level /
# offload or that train LoRA (not modelled: full fine-tuning is assumed) are not listed.
SWIFT_FITS = [("swift", SWIFT_HF, "train/grpo/external/grpo_7b", "a100-80gb"),
              ("swift", SWIFT_HF, "train/grpo/internal/real", "a100-80gb"),
              ("swift", SWIFT_HF, "train/grpo/multi_node/server_multi_node", "a100-80gb"),
              ("swift-megatron", SWIFT_MG, "megatron/grpo/real", "h100")]


@pytest.mark.parametrize("fw,data,name,gpu", SWIFT_FITS, ids=[c[2] for c in SWIFT_FITS])
def test_swift_examples_fit_their_gpus(fw, data, name, gpu):
    ex = data[name]
    r = rb.check(dict(ex["flags"]), framework=fw, gpus=ex.get("gpus"), model=ex["model"], gpu=gpu)
    assert r.memory.fits and r.valid, r.memory.peaks


IMPOSSIBLE = {
    "verl-megatron": ["data.train_batch_size=8", f"{AR}.actor.ppo_mini_batch_size=8",
                      f"{AR}.actor.ppo_micro_batch_size_per_gpu=1", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=1",
                      f"{AR}.ref.log_prob_micro_batch_size_per_gpu=1", "model_engine=megatron",
                      "trainer.n_gpus_per_node=1", "algorithm.adv_estimator=grpo", f"{AR}.rollout.n=2"],
    "openrlhf": {"actor.num_gpus_per_node": 1, "ref.num_gpus_per_node": 1, "reward.num_gpus_per_node": 1,
                 "critic.num_gpus_per_node": 1, "vllm.num_engines": 1, "train.colocate_all": True,
                 "train.batch_size": 8, "rollout.batch_size": 8, "reward.remote_url": "r.py"},
    "swift": ["NPROC_PER_NODE=1", "--use_vllm", "true", "--vllm_mode", "colocate", "--num_generations", "2",
              "--per_device_train_batch_size", "2"],
    "swift-megatron": ["NPROC_PER_NODE=1", "--use_vllm", "true", "--vllm_mode", "colocate", "--num_generations",
                       "2", "--micro_batch_size", "1", "--global_batch_size", "2"],
}


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_72b_full_finetune_on_one_24gb_gpu_does_not_fit(fw):
    r = rb.check(IMPOSSIBLE[fw], framework=fw, model="qwen2.5-72b", gpu="rtx4090")
    assert r.memory is not None and not r.memory.fits
    assert any(".memory." in v.rule for v in r.violations)


def test_64_gpu_megatron_moe_recommends_a_proven_config_quickly():
    """Qwen3-30B-A3B GRPO on 8 nodes x 8 H100 (verl-megatron), the batch of verl's MoE example
    (run_qwen3moe-30b_megatron_96gb.sh: 512 prompts x 16, mini 128)."""
    sc = Scenario(framework="verl-megatron", gpu="h100", gpus_per_node=8, nnodes=8, model="qwen3-30b-a3b",
                  algorithm="grpo", n=16, prompt_length=2048, response_length=8192,
                  fixed={"data.train_batch_size": 512, f"{AR}.actor.ppo_mini_batch_size": 128})
    t = time.time()
    rep = rb.recommend(sc, top=1, time_limit_s=60)
    elapsed = time.time() - t
    assert rep.best is not None and rep.proven
    assert elapsed < 30, elapsed  # a few seconds on a free machine; loose for shared CI runners
    assert any("expert_model_parallel_size" in a for a in rep.best.native)
    assert rep.best.tokens_per_s > 0
    for phase, r in rep.best.memory.items():
        assert r.peak(phase) <= rep.capacity_mib * MIB


# ----------------------------------------------------------------------------- CLI
CLI_CHECK = {
    "verl-megatron": ["model_engine=megatron", "data.train_batch_size=64", f"{AR}.actor.ppo_mini_batch_size=16",
                      f"{AR}.actor.ppo_micro_batch_size_per_gpu=2", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=4",
                      f"{AR}.ref.log_prob_micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=8",
                      "algorithm.adv_estimator=grpo", f"{AR}.rollout.n=4",
                      f"{AR}.actor.megatron.tensor_model_parallel_size=2", f"{AR}.actor.megatron.param_offload=True",
                      f"{AR}.ref.megatron.tensor_model_parallel_size=2"],
    "openrlhf": ["--train.colocate_all", "--vllm.num_engines", "8", "--vllm.gpu_memory_utilization", "0.5",
                 "--actor.num_gpus_per_node", "8", "--ref.num_gpus_per_node", "8", "--reward.remote_url", "r.py",
                 "--rollout.batch_size", "64", "--train.batch_size", "64", "--ds.zero_stage", "3",
                 "--actor.gradient_checkpointing_enable"],
    "swift": ["NPROC_PER_NODE=8", "--use_vllm", "true", "--vllm_mode", "colocate", "--num_generations", "8",
              "--per_device_train_batch_size", "2", "--vllm_gpu_memory_utilization", "0.4", "--sleep_level", "1",
              "--deepspeed", "zero3"],
    "swift-megatron": ["NPROC_PER_NODE=8", "--use_vllm", "true", "--vllm_mode", "colocate", "--num_generations",
                       "8", "--micro_batch_size", "1", "--global_batch_size", "64", "--tensor_model_parallel_size",
                       "2", "--vllm_gpu_memory_utilization", "0.4", "--sleep_level", "1"],
}


def _cli(*args):
    return run(*args)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_cli_check_with_memory(fw):
    ok = _cli("check", "--framework", fw, "--gpu", "h100", "--model", "qwen2.5-7b", "--json", "--", *CLI_CHECK[fw])
    assert ok.returncode == 0, ok.stdout[-2000:]
    data = json.loads(ok.stdout)
    assert data["valid"] and data["memory"]["fits"] and data["memory"]["phases"]
    bad = _cli("check", "--framework", fw, "--gpu", "rtx4090", "--model", "qwen2.5-72b", "--json", "--",
               *CLI_CHECK[fw])
    assert bad.returncode == 1
    assert any(".memory." in v["rule"] for v in json.loads(bad.stdout)["violations"])
    wrong = _cli("check", "--framework", fw, "--gpu", "no-such-gpu", "--model", "qwen2.5-7b", "--json", "--",
                 *CLI_CHECK[fw])
    assert wrong.returncode == 2


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_cli_recommend(fw):
    proc = _cli("recommend", "--framework", fw, "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--top",
                "1", "--json")
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])


def test_swift_and_trl_without_vllm_generate_with_the_trained_model():
    """ms-swift's and TRL's default (use_vllm false): transformers' generate on the trained model. No engine is
    counted in any phase and there is no weight sync; the rollout holds the local batch's KV cache at full length
    (ms-swift internal/transformers.sh: 7B LoRA on one 80 GB GPU, which runs upstream)."""
    args = ["NPROC_PER_NODE=1", "--rlhf_type", "grpo", "--tuner_type", "lora", "--lora_rank", "8",
            "--per_device_train_batch_size", "4", "--num_generations", "4", "--max_length", "2048",
            "--max_completion_length", "1024"]
    rep = rb.check(args, framework="swift", model="qwen2.5-7b", gpu="a100-80gb")
    mem = rep.memory
    assert mem.verdict() == "yes", mem.peaks
    assert not any("vLLM" in t or "engine" in t for p in mem.phases.values() for t in p), mem.phases
    assert mem.phases["rollout"]["generate KV cache (transformers, whole local batch)"] > 0
    assert "weight_sync" not in mem.seconds or mem.seconds["weight_sync"] == 0
    with_vllm = rb.check(args + ["--use_vllm", "true", "--vllm_mode", "colocate"], framework="swift",
                         model="qwen2.5-7b", gpu="a100-80gb")
    assert any("vLLM" in t for t in with_vllm.memory.phases["rollout"])


def test_swift_logits_cover_the_completion_only():
    """ms-swift's loss forward keeps logits for the completion positions (logits_to_keep = completion + 1): a longer
    prompt limit does not grow the logits term, a longer completion does."""
    base = ["NPROC_PER_NODE=8", "--rlhf_type", "grpo", "--per_device_train_batch_size", "4", "--num_generations", "8",
            "--max_completion_length", "1024", "--deepspeed", "zero3"]

    def logits(*extra):
        terms = rb.check(base + list(extra), framework="swift", model="qwen2.5-7b", gpu="a100-80gb").memory.phases
        return terms["actor_update"]["logits"]

    assert logits("--max_length", "4096") == pytest.approx(logits("--max_length", "1024"), abs=1)
    assert logits("--max_completion_length", "2048") > 1.5 * logits()


def test_openrlhf_step_counts_separate_groups_at_their_slowest_in_solver_and_reports():
    """OpenRLHF runs the actor's, the critic's value and the reference's forwards, and the actor's and critic's
    training, at the same time on separate GPU groups (make_experience, ppo_train): with colocate_all searched, the solver's step objective
    is the reports' step (one definition, CostSpec.concurrency), and a separate layout's step is less than the
    sum of its phases. colocate_actor_ref and colocate_critic_reward searched too: groups with a branch of phases
    one after another (colocate_critic_reward: the critic's then the reference's forward beside the actor's)."""
    from rlbatch_solver.costmodel.tables import full_reports, step_seconds

    sc = scenario("openrlhf", gpus=8, algo="ppo", search={
        "train.colocate_all": [True, False], "train.colocate_actor_ref": [False, True],
        "train.colocate_critic_reward": [False, True], "rollout.batch_size": [32], "train.batch_size": [32],
        "actor.num_gpus_per_node": [2, 4], "ref.num_gpus_per_node": [2], "critic.num_gpus_per_node": [2],
        "vllm.num_engines": [1, 2], "vllm.tensor_parallel_size": [1, 2]},
        fixed={"vllm.gpu_memory_utilization": 0.5})
    _, _, _, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=40, seed=11, label="openrlhf-groups", terms=terms)
    values = {n: v[0] for n, v in space.domains.items()}
    values.update(colocate_all=False, colocate_actor_ref=False, colocate_critic_reward=False, actor_gpus_per_node=2)
    _, seconds = full_reports(spec, values)
    assert step_seconds(spec, values, seconds) < sum(seconds.values())
    forwards = [seconds["old_log_prob"], seconds["critic_values"], seconds["ref"]]
    assert seconds["critic_values"] > 0
    overlap = sum(forwards) - max(forwards) + min(seconds["actor_update"], seconds["critic_update"])
    assert step_seconds(spec, values, seconds) == pytest.approx(sum(seconds.values()) - overlap)


def test_verl_engine_must_hold_one_max_model_len_sequence_which_defaults_to_the_model_context():
    """verl 0.9.1 leaves an unset rollout.max_model_len at max_position_embeddings (vllm_async_server.py
    _validate_configs) and vLLM will not start unless its KV cache holds one such sequence: Llama-3.1-8B's 131,072
    tokens need 16 GiB of KV, more than a 0.4 share of an H100 leaves after the weights; max_model_len=8192 fits."""
    base = ["trainer.n_gpus_per_node=8", "data.train_batch_size=64", f"{AR}.rollout.n=8",
            f"{AR}.actor.ppo_mini_batch_size=32", f"{AR}.actor.ppo_micro_batch_size_per_gpu=4",
            f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=8", "algorithm.adv_estimator=grpo",
            f"{AR}.rollout.tensor_model_parallel_size=1", f"{AR}.rollout.gpu_memory_utilization=0.4",
            "data.max_prompt_length=1024", "data.max_response_length=2048"]
    unset = rb.check(base, model="llama3.1-8b", gpu="h100")
    assert "verl.memory.rollout" in {v.rule for v in unset.violations}
    capped = rb.check(base + [f"{AR}.rollout.max_model_len=8192"], model="llama3.1-8b", gpu="h100")
    assert capped.valid and capped.memory.verdict("rollout") == "yes"


def test_openrlhf_experience_forwards_pack_by_the_rollout_token_budget():
    """With --train.dynamic_batch_enable OpenRLHF's make_experience packs the forwards by --rollout.max_tokens_per_gpu
    (experience_maker.py split_rollout_samples; unset: --train.max_tokens_per_gpu), not by --rollout.micro_batch_size:
    a 40K-token job at micro 8 fits its old log-prob forward under a 16K budget, and a larger budget costs more."""
    args = ["--actor.num_nodes", "1", "--actor.num_gpus_per_node", "4", "--vllm.num_engines", "2",
            "--vllm.tensor_parallel_size", "2", "--ds.zero_stage", "3", "--data.max_len", "40960",
            "--rollout.max_new_tokens", "32000", "--rollout.batch_size", "128", "--rollout.n_samples_per_prompt", "8",
            "--train.batch_size", "1024", "--train.micro_batch_size", "1", "--rollout.micro_batch_size", "8",
            "--reward.remote_url", "http://x", "--algo.advantage.estimator", "reinforce_baseline"]

    def old_log_prob(*extra):
        return rb.check(args + list(extra), framework="openrlhf", model="qwen3-4b", gpu="h100").memory.peaks["old_log_prob"]

    static = old_log_prob()
    dynamic = old_log_prob("--train.dynamic_batch_enable", "--train.max_tokens_per_gpu", "16192")
    larger = old_log_prob("--train.dynamic_batch_enable", "--train.max_tokens_per_gpu", "16192",
                          "--rollout.max_tokens_per_gpu", "65536")
    assert dynamic < static / 2 and dynamic < larger
