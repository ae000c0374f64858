"""SkyRL (skyrl-train 0.3.1): validate_cfg's batch, placement and strategy checks over verl's variable names, and
verl's FSDP cost terms through a key map.

* the published examples (examples/gsm8k/run_gsm8k.sh: GRPO, 4 GPUs, Qwen2.5-1.5B-Instruct, colocated;
  examples/ppo/run_ppo.sh: with a critic; examples/gsm8k/run_32b_gsm8k.sh: 2 x 8 GPUs) and the GSM8K run
  disaggregated check valid and fit;
* broken configs report SkyRL's checks with their numbers (floored per-GPU sizes, the lcm of the dp sizes, the
  colocate_all GPU count), and explain maps SkyRL's messages back to them;
* the key map: SkyRL's placement and shared micro sizes fill verl's cost variables;
* the solver tables equal the full cost model on a small space, and CP-SAT agrees with the checker.
"""

from pathlib import Path

import pytest

import rlbatch_solver as rb

from bruteforce import assert_optimum_is_exhaustive, assert_tables_match_cost_model
from clirun import run

from rlbatch_solver.api import prepare
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.error_text import match_error
from rlbatch_solver.frameworks.skyrl.cost import verl_values
from rlbatch_solver.scenario import Scenario

FW = get_framework("skyrl")
DATA = Path(__file__).resolve().parent / "data" / "skyrl"
# skyrl-train 0.3.1's example scripts as published (repository commit ce6def0e, skyrl-train/examples/): the GPU counts
# are theirs (NUM_GPUS=4 by default; the 32B run on 2 nodes of 8), the GPU model is not named: an 80 GB H100
EXAMPLES = {"run_gsm8k.sh": ("h100", "qwen2.5-1.5b"),  # examples/gsm8k/run_gsm8k.sh: GRPO, 4 GPUs, colocated
            "run_ppo.sh": ("h100", "qwen2.5-1.5b"),  # examples/ppo/run_ppo.sh: PPO with a 1.5B critic, 4 GPUs
            "run_32b_gsm8k.sh": ("h100", "qwen2.5-32b")}  # examples/gsm8k/run_32b_gsm8k.sh: 2 x 8 GPUs, 4 engines x TP 4
BASE = ["trainer.train_batch_size=1024", "trainer.policy_mini_batch_size=256", "generator.n_samples_per_prompt=5",
        "trainer.micro_forward_batch_size_per_gpu=64", "trainer.micro_train_batch_size_per_gpu=64",
        "trainer.placement.policy_num_gpus_per_node=4", "trainer.placement.ref_num_gpus_per_node=4",
        "generator.num_inference_engines=4", "generator.inference_engine_tensor_parallel_size=1"]


def values(tokens, **kw):
    flat, _ = FW.parse(tokens)
    return FW.to_values(flat, gpus=kw.pop("gpus", None), model=None)


def errors(tokens):
    return [v.rule for v in FW.ruleset.check(values(tokens)).errors]


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_the_published_examples_check_valid_and_fit(script):
    gpu, model = EXAMPLES[script]
    out = run("check", "--framework", "skyrl", DATA / script, "--gpu", gpu, "--model", model)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "VALID" in out.stdout and "fits" in out.stdout and "OUT OF MEMORY" not in out.stdout


def test_the_example_disaggregated_checks_valid_and_fits_eight_h100s():
    """The same run with its four vLLM engines on four GPUs of their own (colocate_all=false): SkyRL's synchronous
    trainer waits for them, so the step is the colocated one's without the offload transfers."""
    split = ["trainer.placement.colocate_all=false", "trainer.policy.model.path=Qwen/Qwen2.5-1.5B-Instruct"]
    out = run("check", "--framework", "skyrl", *BASE, *split, "--gpu", "h100", "--model", "qwen2.5-1.5b")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "VALID" in out.stdout and "OUT OF MEMORY" not in out.stdout and "offload transfers" not in out.stdout


def test_the_example_reads_as_its_script_says():
    v = values(BASE + ["trainer.algorithm.use_kl_loss=true"])
    assert (v["train_batch_size"], v["actor_mini"], v["n"], v["actor_micro_per_gpu"]) == (1024, 256, 5, 64)
    assert (v["nnodes"] * v["gpus_per_node"], v["num_engines"], v["rollout_tp"]) == (4, 4, 1)
    assert v["colocate_all"] and v["need_ref"] and not v["need_critic"]
    assert FW.ruleset.check(v).valid


def test_broken_configs_report_skyrls_checks_with_their_numbers():
    out = run("check", "--framework", "skyrl", *BASE, "trainer.micro_train_batch_size_per_gpu=48")
    assert out.returncode == 1
    assert "skyrl.batch.mini_divisible_by_micro" in out.stdout
    assert "normalized policy_mini_batch_size_per_gpu 320 should be divisible by micro_train_batch_size_per_gpu 48" \
        in " ".join(out.stdout.split())
    # colocate_all: engines x tp must be the policy's GPUs
    assert errors(BASE + ["generator.num_inference_engines=2"]) == ["skyrl.placement.colocate_all_same_gpus"]
    # 1000 prompts: not whole mini batches, and 1000 x 5 // 4 = 1250 samples per GPU not whole updates of 320
    assert errors(BASE + ["trainer.train_batch_size=1000"]) == ["skyrl.batch.train_divisible_by_mini",
                                                                 "skyrl.batch.train_per_gpu_divisible_by_mini"]


def test_floored_per_gpu_sizes_are_skyrls():
    """6 GPUs: 256 x 5 // 6 = 213 update samples per GPU (floored, no error), 1024 x 5 // 6 = 853 per step,
    853 % 213 = 1: SkyRL's check on the floored values fails, with micro 1 everything else passes."""
    six = ["trainer.placement.policy_num_gpus_per_node=6", "trainer.placement.ref_num_gpus_per_node=6",
           "generator.num_inference_engines=6", "trainer.micro_train_batch_size_per_gpu=1"]
    assert errors(BASE + six) == ["skyrl.batch.train_per_gpu_divisible_by_mini"]


def test_the_lcm_of_policy_and_reference_dp():
    """Disaggregated, no colocated reference: policy dp 4, reference dp 6 -> lcm 12; 2 prompts x 5 = 10 < 12."""
    tokens = ["trainer.placement.colocate_all=false", "trainer.placement.colocate_policy_ref=false",
              "trainer.placement.policy_num_gpus_per_node=4", "trainer.placement.ref_num_gpus_per_node=6",
              "trainer.train_batch_size=2", "trainer.policy_mini_batch_size=2", "generator.n_samples_per_prompt=5",
              "trainer.micro_train_batch_size_per_gpu=1"]
    broken = [e for e in FW.ruleset.check(values(tokens)).errors if e.rule == "skyrl.batch.samples_cover_lcm_dp"]
    assert broken and "least common multiple 12 of the policy's dp 4" in broken[0].message
    assert "skyrl.batch.samples_cover_lcm_dp" not in errors(tokens[:-4] + ["trainer.train_batch_size=4",
                                                                            "trainer.policy_mini_batch_size=2",
                                                                            "generator.n_samples_per_prompt=3",
                                                                            "trainer.micro_train_batch_size_per_gpu=1"])
    # without a reference only the policy's dp counts
    assert "skyrl.batch.samples_cover_lcm_dp" not in errors(tokens + ["trainer.algorithm.use_kl_loss=false"])


def test_the_trainers_placement_checks():
    """RayPPOTrainer.build_models, after validate_cfg: colocate_all puts the reference and the critic on the policy's
    GPUs (their counts must match), and without it every group asks Ray for GPUs of its own."""
    assert errors(BASE + ["trainer.placement.ref_num_gpus_per_node=2"]) == [
        "skyrl.placement.colocate_all_ref_same_gpus"]
    assert errors(BASE + ["trainer.algorithm.use_kl_loss=false", "trainer.placement.ref_num_gpus_per_node=2"]) == []
    ppo = BASE + ["trainer.critic.model.path=Qwen/Qwen2.5-1.5B-Instruct", "trainer.placement.critic_num_gpus_per_node=2"]
    assert errors(ppo) == ["skyrl.placement.colocate_all_critic_same_gpus"]
    split = BASE + ["trainer.placement.colocate_all=false", "trainer.placement.colocate_policy_ref=false"]
    flat, _ = FW.parse(split)
    broken = FW.ruleset.check(FW.to_values(flat, gpus=8, model=None)).errors
    assert [e.rule for e in broken] == ["skyrl.ray.gpu_budget"]  # policy 4 + reference 4 + engines 4 = 12 > 8
    assert "needs 12 GPUs" in broken[0].message
    assert FW.ruleset.check(FW.to_values(flat, gpus=12, model=None)).valid


def test_strategy_and_backend_checks():
    assert errors(BASE + ["trainer.strategy=fsdp", "trainer.policy.fsdp_config.cpu_offload=true"]) == [
        "skyrl.fsdp1.no_cpu_offload"]
    assert errors(BASE + ["trainer.policy.fsdp_config.cpu_offload=true"]) == []  # FSDP2 offloads
    assert errors(BASE + ["trainer.strategy=deepspeed", "deepspeed_config.train.zero_optimization.stage=2"]) == [
        "skyrl.deepspeed.stage3"]
    assert errors(BASE + ["trainer.strategy=megatron", "trainer.policy.megatron_config.tensor_model_parallel_size=3",
                          "trainer.ref.megatron_config.tensor_model_parallel_size=2"]) == [
        "skyrl.megatron.policy_world_divisible"]
    assert errors(BASE + ["generator.backend=sglang", "generator.num_inference_engines=2",
                          "generator.inference_engine_tensor_parallel_size=2"]) == ["skyrl.generator.sglang_tp1"]
    assert errors(BASE + ["trainer.algorithm.advantage_estimator=gae"]) == ["skyrl.algorithm.gae_needs_critic"]
    with pytest.raises(rb.InputError, match="trainer.strategy"):
        values(["trainer.strategy=fsdp3"])


def test_recommend_compares_colocated_and_split_layouts():
    """--placement auto: the colocated layout and the engines on GPUs of their own, each a valid SkyRL config; the
    split one uses every GPU (policy and its reference on a share, the engines on the rest) and its stages run in
    turn (SkyRL's synchronous trainer), so on one node the colocated layout wins."""
    from rlbatch_solver.api import recommend

    sc = Scenario(framework="skyrl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=2048, placement="auto")
    report = recommend(sc, time_limit_s=30)
    kinds = {o.placement: o for o in report.placement.options if o.best is not None}
    assert set(kinds) == {"colocate", "split"}
    split = kinds["split"].best.values
    assert not split["colocate_all"] and split["gpus_per_node"] < 8
    assert split["gpus_per_node"] + split["num_engines"] * split["rollout_tp"] == 8
    assert split["ref_gpus_per_node"] == split["gpus_per_node"]
    for option in kinds.values():
        for c in option.report.choices:
            assert FW.ruleset.check(c.values).valid
    assert report.placement.winner.placement == "colocate"


def test_a_ppo_answer_is_a_command_whose_critic_is_the_model(tmp_path):
    """recommend --algo ppo: the critic starts from the trained model, named by its id (not an interpolation a shell
    would expand); the printed command, saved as a script, checks valid with the critic's rules in force."""
    import json

    args = ["recommend", "--framework", "skyrl", "--gpu", "h100", "--gpus", "4", "--model", "qwen2.5-1.5b",
            "--algo", "ppo", "--json"]
    words = json.loads(run(*args).stdout)["command"]
    assert "trainer.critic.model.path=Qwen/Qwen2.5-1.5B" in words
    script = tmp_path / "run.sh"
    script.write_text(" \\\n".join(words) + "\n")
    checked = run("check", "--framework", "skyrl", script, "--gpu", "h100", "--model", "qwen2.5-1.5b")
    assert checked.returncode == 0 and "VALID" in checked.stdout, checked.stdout + checked.stderr
    flat, _ = FW.parse(words)
    assert FW.to_values(flat, gpus=None, model=None)["need_critic"]


def test_skyrl_keys_feed_verls_cost_terms():
    colocated = verl_values(values(BASE))
    assert colocated["hybrid_engine"] and colocated["async_mode"] == 0 and colocated["free_cache_engine"]
    assert colocated["param_offload"] and colocated["optimizer_offload"]  # offloaded around generation
    assert colocated["ref_micro_per_gpu"] == 64 and colocated["critic_micro_per_gpu"] == 64
    split = verl_values(values(BASE + ["trainer.placement.colocate_all=false", "generator.num_inference_engines=2",
                                       "generator.inference_engine_tensor_parallel_size=2"]))
    assert not split["hybrid_engine"] and split["async_mode"] == 3 and split["rollout_gpus_per_node"] == 4
    assert not split["param_offload"] and not split["free_cache_engine"]


def test_explain_maps_skyrl_messages_to_its_rules():
    found = match_error("AssertionError: num_policy_gpus (8) and num_rollout_gpus (4) must be the same when "
                        "colocating all models", "skyrl")
    assert [p.rules for p, _ in found] == [("skyrl.placement.colocate_all_same_gpus",)]
    found = match_error("AssertionError: normalized policy_mini_batch_size_per_gpu 320 should be divisible by "
                        "micro_train_batch_size_per_gpu 48", "skyrl")
    assert [p.rules for p, _ in found] == [("skyrl.batch.mini_divisible_by_micro",)]


def test_enumerate_equals_the_checker_on_small_spaces():
    """CP-SAT (enumerate) and the checker agree on every config of small spaces over SkyRL's rules."""
    from bruteforce import assert_enumerate_equals_checker

    from rlbatch_solver.frameworks.skyrl.rules import RULESET

    base = {name: [spec.default] for name, spec in RULESET.variables.items()}
    base.update({"num_heads": [12], "num_kv_heads": [2], "max_position_embeddings": [32768], "n": [4],
                 "cluster_num_gpus": [8]})
    spaces = [
        {"gpus_per_node": [2, 3, 4, 6], "train_batch_size": [4, 12, 16, 24], "actor_mini": [4, 6, 8],
         "actor_micro_per_gpu": [1, 2, 4], "num_engines": [1, 2, 4]},
        {"gpus_per_node": [4, 8], "actor_sp": [1, 2, 3, 8], "ref_gpus_per_node": [2, 3, 4], "need_ref": [False, True],
         "colocate_all": [False, True], "train_batch_size": [1, 2, 3], "actor_mini": [1, 2],
         "cluster_num_gpus": [8, 12], "colocate_policy_ref": [False, True]},
        {"need_critic": [False, True], "critic_mini": [4, 6, 16], "critic_sp": [1, 2], "gae": [False, True],
         "critic_gpus_per_node": [2, 3, 4], "n": [1, 2, 5], "fsdp1": [False, True], "critic_cpu_offload": [False, True]},
        {"megatron": [False, True], "policy_mtp": [1, 2, 3], "policy_mcp": [1, 2], "remove_padding": [False, True],
         "rollout_sglang": [False, True], "engine_ep": [1, 4], "engine_dp": [1, 2], "rollout_tp": [1, 2]},
    ]
    for space in spaces:
        assert_enumerate_equals_checker(RULESET, {**base, **space})


SMALL = dict(search={"trainer.train_batch_size": [16, 32], "trainer.policy_mini_batch_size": [8, 16],
                     "trainer.micro_train_batch_size_per_gpu": [1, 2],
                     "trainer.micro_forward_batch_size_per_gpu": [2, 4],
                     "generator.inference_engine_tensor_parallel_size": [1, 2],
                     "generator.num_inference_engines": [2, 4]},
             fixed={"generator.gpu_memory_utilization": 0.5})


def _small():
    sc = Scenario(framework="skyrl", gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=4,
                  prompt_length=512, response_length=1024, search=dict(SMALL["search"]), fixed=dict(SMALL["fixed"]))
    return prepare(sc)


def test_tables_equal_the_full_cost_model():
    _, _, _, space, spec, terms, ruleset = _small()
    assert_tables_match_cost_model(space, spec, ruleset, configs=25, seed=7, label="skyrl", terms=terms)


def test_cpsat_optimum_equals_exhaustive_evaluation():
    _, _, _, space, _, terms, ruleset = _small()
    assert_optimum_is_exhaustive(ruleset, space, terms.time_us_per_sample)


@pytest.mark.parametrize("arg", ["trainer.policy_mini_batch_size=-3", "trainer.train_batch_size=0",
                                 "trainer.policy.fsdp_config.fsdp_size=0", "generator.num_inference_engines=0"])
def test_a_size_below_one_is_an_input_error_naming_the_key(arg):
    with pytest.raises(rb.InputError, match=arg.split("=")[0].replace(".", r"\.")):
        rb.check([arg], framework="skyrl")
