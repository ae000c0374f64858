"""slime 0.3.1: Megatron-LM training and SGLang rollout, its own argument checks, verl-megatron's cost terms.

* the published example script (scripts/run-qwen3-4B.sh, 8 GPUs, Qwen3-4B) reads as a launch script (bash arrays,
  ``ray job submit ... -- python3 train.py``), checks valid and fits the H100s it was written for;
* broken configs report slime's, Megatron-LM's and the DP schedule's checks with their numbers, and explain maps
  their messages back to them;
* the key map: slime's arguments feed verl-megatron's cost terms, SGLang's KV pool from mem_fraction_static;
* the solver tables equal the full cost model on a small space, and CP-SAT agrees with the checker.
"""

import json

import pytest

from bruteforce import assert_enumerate_equals_checker, assert_tables_match_cost_model
from clirun import run

import rlbatch_solver as rb
from rlbatch_solver.api import prepare
from rlbatch_solver.catalog.gpus import load_gpu as get_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel import sglang_defaults
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.error_text import match_error
from rlbatch_solver.frameworks.slime.cost import verl_values
from rlbatch_solver.frameworks.slime.framework import config_values
from rlbatch_solver.frameworks.slime.rules import RULESET
from rlbatch_solver.launch_script import parse_launch_script
from rlbatch_solver.scenario import Scenario

FW = get_framework("slime")
# slime v0.3.1 scripts/run-qwen3-4B.sh, its argument arrays and launch line as published (the reruns, Ray's start and
# the runtime-env JSON left out); MODEL_ARGS comes from scripts/models/qwen3-4B.sh, which the script sources
EXAMPLE_SCRIPT = """#!/bin/bash
set -ex
if command -v nvidia-smi >/dev/null 2>&1; then
    DETECTED_GPUS=$(nvidia-smi -L 2>/dev/null | wc -l | tr -d ' ')
else
    DETECTED_GPUS=0
fi
NUM_GPUS=${NUM_GPUS:-${DETECTED_GPUS}}
if [ -z "$NUM_GPUS" ] || [ "$NUM_GPUS" -le 0 ]; then
    NUM_GPUS=8
fi
source "${SCRIPT_DIR}/models/qwen3-4B.sh"

CKPT_ARGS=(
   --hf-checkpoint /root/Qwen3-4B
   #--hf-checkpoint /root/Qwen3-4B-FP8
   --ref-load /root/Qwen3-4B_torch_dist
   --load /root/Qwen3-4B_slime/
   --save /root/Qwen3-4B_slime/
   --save-interval 20
)

ROLLOUT_ARGS=(
   --prompt-data /root/dapo-math-17k/dapo-math-17k.jsonl
   --input-key prompt
   --label-key label
   --apply-chat-template
   --rollout-shuffle
   --rm-type deepscaler
   --num-rollout 3000
   --rollout-batch-size 32
   --n-samples-per-prompt 8
   --rollout-max-response-len 8192
   --rollout-temperature 1

   --global-batch-size 256
   --balance-data
)

PERF_ARGS=(
   --tensor-model-parallel-size 2
   --sequence-parallel
   --pipeline-model-parallel-size 1
   --context-parallel-size 1
   --expert-model-parallel-size 1
   --expert-tensor-parallel-size 1

   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1

   # --micro-batch-size 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
)

GRPO_ARGS=(
   --advantage-estimator grpo
   --use-kl-loss
   --kl-loss-coef 0.00
   --kl-loss-type low_var_kl
   --entropy-coef 0.00
   --eps-clip 0.2
   --eps-clip-high 0.28
)

SGLANG_ARGS=(
   --rollout-num-gpus-per-engine 2
   --sglang-mem-fraction-static 0.7
)

ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json="${RUNTIME_ENV_JSON}" \\
   -- python3 train.py \\
   --actor-num-nodes 1 \\
   --actor-num-gpus-per-node ${NUM_GPUS} \\
   --colocate \\
   ${MODEL_ARGS[@]} \\
   ${CKPT_ARGS[@]} \\
   ${ROLLOUT_ARGS[@]} \\
   ${GRPO_ARGS[@]} \\
   ${PERF_ARGS[@]} \\
   ${SGLANG_ARGS[@]}
"""
# the actor and the rollout batch (8 GPUs, 32 prompts x 8), then the example's layout and batching
ACTOR = ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "8", "--colocate", "--rollout-batch-size", "32",
         "--n-samples-per-prompt", "8"]
BASE = ACTOR + ["--global-batch-size", "256", "--tensor-model-parallel-size", "2", "--use-dynamic-batch-size",
                "--max-tokens-per-gpu", "9216", "--rollout-num-gpus-per-engine", "2", "--rollout-max-response-len", "8192"]


def values(tokens, **kw):
    flat, _ = FW.parse(tokens)
    return FW.to_values(flat, gpus=kw.get("gpus"), model=kw.get("model"))


def errors(tokens, **kw):
    return [e.rule for e in RULESET.check(values(tokens, **kw)).errors]


def test_the_published_script_reads_as_slime_with_its_arrays():
    script = parse_launch_script(EXAMPLE_SCRIPT, "run-qwen3-4B.sh")
    assert script.framework == "slime" and script.model == "/root/Qwen3-4B"
    assert any("MODEL_ARGS" in n for n in script.notes)
    v = values(script.args)
    assert (v["train_batch_size"], v["n"], v["global_batch_size"], v["tp"], v["gpus_per_engine"]) == (32, 8, 256, 2, 2)
    assert (v["actor_nodes"] * v["actor_gpus_per_node"], v["colocate"], v["dynamic_batch"]) == (8, True, True)
    assert (v["max_tokens_per_gpu"], v["gmu_permille"], v["megatron_recompute"]) == (9216, 700, 2)
    assert v["need_ref"] and not v["kl_loss_coef_on"] and not v["need_critic"]
    env = RULESET.full_env(v)
    assert (env["dp"], env["gbs"], env["steps"], env["gpus_needed"]) == (4, 256, 1, 8)
    assert RULESET.check(v).valid


def test_the_published_script_checks_valid_and_fits_its_h100s(tmp_path):
    script = tmp_path / "run-qwen3-4B.sh"
    script.write_text(EXAMPLE_SCRIPT)
    out = run("check", script, "--gpus", "8", "--gpu", "h100", "--model", "qwen3-4b")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "VALID" in out.stdout and "fits" in out.stdout and "will not fit" not in out.stdout
    assert "SGLang KV cache" in out.stdout


def test_no_length_flags_stop_slimes_generate_and_are_priced_at_the_context():
    # neither --rollout-max-prompt-len nor --rollout-max-response-len (both default to None): slime's generate asserts
    # max_new_tokens >= 0 on None at the first sample, so the config is refused; memory is still priced, at a
    # sample that fills the context (it raised a TypeError before)
    flags = ["--rollout-batch-size", "32", "--n-samples-per-prompt", "8", "--global-batch-size", "256"]
    out = run("check", "-f", "slime", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-7b", "--", *flags)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert "slime.rollout.response_len_required" in out.stdout and "TypeError at the first sample" in out.stdout
    assert "no --rollout-max-prompt-len nor --rollout-max-response-len" in out.stdout
    assert "are priced at a sample that fills the context" in out.stdout
    custom = run("check", "-f", "slime", "--gpus", "8", "--", *flags, "--custom-generate-function-path", "my.gen")
    assert "slime.rollout.response_len_required" not in custom.stdout, custom.stdout
    given = run("check", "-f", "slime", "--gpus", "8", "--", *flags, "--rollout-max-response-len", "1024")
    assert "slime.rollout.response_len_required" not in given.stdout, given.stdout
    card = load_model("qwen2.5-7b")
    values = config_values({"rollout-batch-size": 32, "n-samples-per-prompt": 8}, model=card)
    assert values["max_prompt_length"] + values["max_response_length"] == card.max_position_embeddings


def test_dynamic_batch_without_its_token_budget_is_priced_by_micro_batches():
    # --use-dynamic-batch-size with no --max-tokens-per-gpu (default None): slime stops in slime_validate_args and
    # the rule says so; the memory check prices micro batches of --micro-batch-size (it raised a TypeError before)
    unbudgeted = [t for t in BASE if t not in ("--max-tokens-per-gpu", "9216")]
    out = run("check", "-f", "slime", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-7b", "--", *unbudgeted)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "slime.args.dynamic_batch_needs_max_tokens" in out.stdout and "peak GiB" in out.stdout
    card = load_model("qwen2.5-7b")
    plan = verl_values(values(unbudgeted + ["--micro-batch-size", "2"], model=card), get_gpu("h100"))
    assert (plan["actor_dyn"], plan["logprob_dyn"], plan["ref_dyn"]) == (False, False, False)
    assert plan["critic_max_tokens"] == 2 * (plan["max_prompt_length"] + plan["max_response_length"])
    assert verl_values(values(BASE, model=card), get_gpu("h100"))["actor_dyn"] is True


def test_broken_batches_report_slimes_and_megatrons_checks_with_their_numbers():
    out = run("check", "--framework", "slime", "--", *ACTOR, "--global-batch-size", "100", "--num-steps-per-rollout", "2", "--use-dynamic-batch-size")
    assert out.returncode == 1
    text = out.stdout
    # 32 x 8 // 2 = 128, not 100: slime_validate_args's assertion with its numbers
    assert "global_batch_size 100 is not equal to rollout_batch_size 32 * n_samples_per_prompt 8 // " \
           "num_steps_per_rollout 2" in text
    assert "max_tokens_per_gpu must be set when use_dynamic_batch_size is set" in text
    # Megatron's micro-batch calculator: 100 samples over micro 1 x dp 8
    assert "global batch size (100) is not divisible by micro batch size (1) times data parallel size (8)" in text


def test_the_global_batch_slime_and_megatron_derive():
    """Unset: rollout_batch_size x n // num_steps_per_rollout (floored), else Megatron's micro x dp."""
    steps = RULESET.full_env(values(ACTOR + ["--num-steps-per-rollout", "3"]))
    assert steps["gbs"] == 32 * 8 // 3 == 85 and steps["dropped"] == 256 - 3 * 85
    unset = RULESET.full_env(values(ACTOR + ["--micro-batch-size", "2"]))
    assert unset["gbs"] == 2 * 8 and unset["steps"] == 256 // 16
    # 85 samples over dp 8 x micro 1: Megatron's calculator refuses; the dropped tail is advice
    result = RULESET.check(values(ACTOR + ["--num-steps-per-rollout", "3", "--rollout-max-response-len", "1024"]))
    assert [e.rule for e in result.errors] == ["slime.megatron.global_batch_divisible_by_micro_dp"]
    assert "slime.advice.rollout_divisible_by_global_batch" in {w.rule for w in result.warnings}


def test_a_rollout_smaller_than_the_global_batch_fails_the_schedule():
    errs = errors(ACTOR + ["--global-batch-size", "512", "--rollout-max-response-len", "1024"])
    assert errs == ["slime.schedule.rollout_covers_global_batch"]


def test_placement_separate_pools_and_the_gpu_budget():
    separate = [t for t in BASE if t != "--colocate"]
    assert errors(separate) == ["slime.placement.separate_needs_rollout_gpus"]
    assert errors(separate + ["--rollout-num-gpus", "8"], gpus=8) == ["slime.placement.gpu_budget"]
    assert errors(separate + ["--rollout-num-gpus", "8"], gpus=16) == []
    # an engine bigger than the rollout pool: no engine starts
    assert errors(separate + ["--rollout-num-gpus", "1"], gpus=9) == ["slime.rollout.engine_fits_rollout_gpus"]
    assert errors(BASE, gpus=8) == []


def test_megatron_layout_rules():
    # TP 3 on 8 GPUs: Megatron's world check, megatron-core's expert group (ETP defaults to TP) and the calculator's
    # dp (8 // 3 = 2 there, 256 splits) -- megatron-core stops at the first
    assert errors(BASE + ["--tensor-model-parallel-size", "3"]) == [
        "slime.megatron.world_divisible_by_model_parallel", "slime.megatron.world_divisible_by_expert_parallel"]
    assert errors(BASE + ["--pipeline-model-parallel-size", "4", "--num-layers", "30"]) == [
        "slime.megatron.layers_divisible_by_pp"]
    assert errors(BASE + ["--decoder-first-pipeline-num-layers", "10"]) == ["slime.megatron.uneven_pipeline_needs_pp"]
    assert errors(BASE + ["--expert-model-parallel-size", "16"]) == ["slime.megatron.world_divisible_by_expert_parallel"]


def test_algorithm_and_sglang_checks():
    assert errors(BASE + ["--kl-coef", "0.01", "--kl-loss-coef", "0.01"]) == ["slime.args.kl_coef_or_kl_loss_coef"]
    assert errors(BASE + ["--advantage-estimator", "reinforce_plus_plus"]) == [
        "slime.args.reinforce_needs_normalized_advantages"]
    assert errors(BASE + ["--sglang-pp-size", "4"]) == ["slime.sglang.engine_gpus_divisible_by_pp"]
    assert errors(BASE + ["--sglang-dp-size", "2"]) == ["slime.sglang.dp_needs_dp_attention"]
    assert errors(BASE + ["--over-sampling-batch-size", "16"]) == ["slime.args.over_sampling_covers_rollout_batch"]
    assert values(BASE + ["--advantage-estimator", "ppo"])["need_critic"]
    with pytest.raises(InputError) as e:
        values(BASE + ["--advantage-estimator", "grpoo"])
    assert e.value.field == "advantage-estimator"


@pytest.mark.parametrize("arg", [["--rollout-batch-size", "0"], ["--tensor-model-parallel-size", "-1"],
                                 ["--sglang-mem-fraction-static", "1.5"], ["--recompute-granularity", "most"],
                                 ["--n-samples-per-prompt", "two"], ["--rollout-num-gpus", "-2"]])
def test_bad_values_are_input_errors_naming_the_flag(arg):
    with pytest.raises(InputError) as e:
        values(BASE + arg)
    assert e.value.field == arg[0].lstrip("-")


def test_rollout_batch_size_is_required():
    with pytest.raises(InputError) as e:
        values(["--n-samples-per-prompt", "8"])
    assert e.value.field == "rollout-batch-size"


def test_slime_arguments_feed_verl_megatrons_cost_terms():
    gpu = get_gpu("h100")
    v = verl_values(values(BASE + ["--sglang-mem-fraction-static", "0.7"]), gpu)
    assert (v["nnodes"], v["gpus_per_node"], v["rollout_tp"], v["gmu_permille"]) == (1, 8, 2, 700)
    assert v["rollout_sglang"] and v["free_cache_engine"] and v["megatron_param_offload"]
    assert v["actor_dyn"] and v["actor_max_tokens"] == 9216 and v["logprob_max_tokens"] == 9216
    assert v["actor_mini"] == 256 // 8 and v["ref_megatron_param_offload"] and v["async_mode"] == 0
    no_offload = values(BASE + ["--no-offload-train", "--no-offload-rollout"])
    assert not no_offload["offload_train"] and not no_offload["offload_rollout"]
    assert values(BASE + ["--no-offload-train", "--advantage-estimator", "ppo"])["offload_train"]  # a critic forces it
    separate = verl_values(values([t for t in BASE if t != "--colocate"] + ["--rollout-num-gpus", "8"]), gpu)
    assert (separate["async_mode"], separate["rollout_gpus_per_node"], separate["hybrid_engine"]) == (3, 8, False)


def test_sglangs_own_memory_fraction_when_unset():
    """SGLang 0.5.15.post1 ServerArgs._handle_gpu_memory_settings on an 80 GiB H100 at TP 2: reserved = 512 + 8192 x
    1.5 + 256 x 2 + 2/8 x 1024 = 13568 MiB, above the 10 GiB floor."""
    h100 = get_gpu("h100")
    mib = h100.memory_bytes / (1 << 20)
    assert sglang_defaults.mem_fraction_static(h100.memory_bytes, 2) == round((mib - 13568) / mib, 3)
    assert sglang_defaults.chunked_prefill_and_max_bs(24 * 2**30, 1) == (2048, 24)
    v = verl_values(values(BASE), h100)
    assert v["gmu_permille"] == round(1000 * sglang_defaults.mem_fraction_static(h100.memory_bytes, 2))


def test_explain_maps_slimes_messages_to_its_rules():
    found = match_error("AssertionError: global batch size (100) is not divisible by micro batch size (1) times data "
                        "parallel size (8)", "slime")
    assert [p.rules for p, _ in found] == [("slime.megatron.global_batch_divisible_by_micro_dp",)]
    assert found[0][1] == {"gbs": "100", "micro": "1", "dp": "8"}
    assert match_error("AssertionError: num_rollouts (64) < global_batch_size (256); need at least one rollout per "
                       "step.", "slime")


def test_enumerate_equals_the_checker_on_small_spaces():
    base = {name: [spec.default] for name, spec in RULESET.variables.items()}
    base.update({"train_batch_size": [8], "n": [4], "colocate": [True], "num_layers": [24]})
    spaces = [
        {"actor_gpus_per_node": [2, 4, 6, 8], "tp": [1, 2, 3], "micro_batch_size": [1, 2, 3],
         "global_batch_size": [None, 8, 12, 64], "steps_per_rollout": [None, 2, 3]},
        {"pp": [1, 2, 5], "cp": [1, 2], "ep": [1, 2, 16], "first_pp_layers": [None, 4], "actor_gpus_per_node": [4, 8],
         "dynamic_batch": [False, True], "max_tokens_per_gpu": [None, 4096]},
        {"colocate": [False, True], "rollout_gpus": [None, 0, 1, 4], "gpus_per_engine": [1, 2, 8],
         "cluster_num_gpus": [None, 8, 12], "sglang_pp": [1, 2], "sglang_dp": [1, 2], "dp_attention": [False, True]},
    ]
    for space in spaces:
        assert_enumerate_equals_checker(RULESET, {**base, **space})


def _small():
    sc = Scenario(framework="slime", gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=4,
                  prompt_length=512, response_length=1024,
                  search={"rollout-batch-size": [16, 32], "global-batch-size": [16, 64],
                          "micro-batch-size": [1, 2], "tensor-model-parallel-size": [1, 2],
                          "rollout-num-gpus-per-engine": [1, 2]},
                  fixed={"sglang-mem-fraction-static": 0.6})
    return prepare(sc)


def test_tables_equal_the_full_cost_model():
    _, _, _, space, spec, terms, ruleset = _small()
    assert_tables_match_cost_model(space, spec, ruleset, configs=20, seed=3, label="slime", terms=terms)


def test_recommend_answers_a_command_that_checks_valid(tmp_path):
    out = run("recommend", "--framework", "slime", "--gpu", "h100", "--gpus", "8", "--model", "qwen3-4b",
              "--prompt-len", "1024", "--response-len", "4096", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    best = json.loads(out.stdout)["choices"][0]["native"]
    assert "--rollout-batch-size 32" in " ".join(best) and "--global-batch-size 256" in " ".join(best)
    checked = run("check", "--framework", "slime", "--gpus", "8", "--gpu", "h100", "--model", "qwen3-4b", "--",
                  *" ".join(best).split())
    assert checked.returncode == 0 and "will not fit" not in checked.stdout, checked.stdout


def test_a_space_where_nothing_fits_says_the_floor_not_a_traceback():
    """recommend --framework slime on one RTX 4090 (qwen2.5-1.5b) ended in a TypeError traceback: the memory floor
    tried prompt and response lengths unset (their tables' `_set` flags at False), which a scenario always sets. Now
    the proven no-fit answer with the phase's least memory, exit 1."""
    out = run("recommend", "--framework", "slime", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-1.5b")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "No valid config fits" in out.stdout
    assert "slime.memory.actor_update: no config of the search space fits: the nearest needs" in out.stdout


def test_recompute_modules_reach_verl_megatrons_cost_terms_and_export_as_flags():
    """Megatron-LM's --recompute-modules (nargs='*', default megatron-core's ["core_attn"]) with selective recompute:
    "mlp" drops a dense model's MLP activations; export writes the names back; an unknown name is an input error."""
    sel = BASE + ["--recompute-granularity", "selective"]

    def update(tokens):
        r = rb.check(tokens, framework="slime", model="qwen3-4b", gpu="h100")
        phase = r.memory.phases["actor_update"]
        return sum(b for t, b in phase.items() if t.startswith("activations"))

    assert values(sel)["megatron_recompute_modules"] == 1
    assert update(sel + ["--recompute-modules", "core_attn"]) == update(sel)
    assert update(sel + ["--recompute-modules", "core_attn", "mlp"]) < update(sel)
    v = values(sel + ["--recompute-modules", "core_attn", "mlp"])
    assert FW.assignment("megatron_recompute_modules", v["megatron_recompute_modules"]) == \
        "--recompute-modules core_attn mlp"
    assert FW.assignment("megatron_recompute_modules", 1) == ""
    with pytest.raises(InputError) as exc:
        values(sel + ["--recompute-modules", "attention"])
    assert exc.value.field == "recompute-modules"


@pytest.mark.parametrize("tokens", [["--rollout-batch-size", "32"],
                                    [t for t in BASE if t != "--colocate"]])
def test_fix_compiles_the_dropped_samples_advice_with_the_global_batch_unset_or_searched(tokens):
    # the advice's divisor, the global batch, may floor to 0 on a branch of its definition the search spans (an
    # unset --global-batch-size over a searched --num-steps-per-rollout): fix stopped with a CompileError
    out = run("fix", "-f", "slime", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-7b", "--time-limit", "0.5",
              "--", *tokens)
    assert out.returncode in (0, 1), out.stdout + out.stderr
