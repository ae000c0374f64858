"""EasyR1 0.3.2: a verl fork whose keys map onto verl's rule variables and cost terms, with its own checks.

* the published example (examples/config.yaml, 8 GPUs, Qwen2.5-7B-Instruct) and the DAPO example script check valid
  and fit the GPUs they name;
* broken configs report EasyR1's own checks with their numbers, and explain maps EasyR1's messages back to them;
* the key map: EasyR1's keys feed verl's cost terms (the token budget is micro size x longest sample);
* the solver tables equal the full cost model on a small space, and the CP-SAT optimum is the exhaustive one;
* a config file here is read under the overrides (the command line wins, as main.py merges them).
"""

import pytest

import rlbatch_solver as rb

from bruteforce import assert_optimum_is_exhaustive, assert_tables_match_cost_model
from clirun import run

from rlbatch_solver.api import prepare
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.easyr1.cost import verl_values
from rlbatch_solver.frameworks.error_text import match_error
from rlbatch_solver.scenario import Scenario

FW = get_framework("easyr1")
EXAMPLE = ["python3", "-m", "verl.trainer.main", "config=examples/config.yaml",
           "worker.actor.model.model_path=Qwen/Qwen2.5-7B-Instruct"]
# examples/qwen3_14b_dapo17k_dapo.sh (EasyR1 v0.3.2), its batch and layout overrides
DAPO = EXAMPLE[:4] + [
    "data.max_prompt_length=2048", "data.max_response_length=20480", "data.rollout_batch_size=512",
    "data.mini_rollout_batch_size=256", "worker.actor.ulysses_size=8", "worker.actor.model.model_path=Qwen/Qwen3-14B-Base",
    "worker.actor.global_batch_size=32", "worker.rollout.n=16", "worker.rollout.max_num_batched_tokens=22528",
    "worker.rollout.gpu_memory_utilization=0.8", "worker.rollout.tensor_parallel_size=4", "algorithm.disable_kl=True",
    "trainer.n_gpus_per_node=8"]


def values(tokens, **kw):
    flat, _ = FW.parse(tokens)
    return FW.to_values(flat, gpus=None, model=None, **kw)


def test_the_published_example_reads_as_its_file_says():
    v = values(EXAMPLE)
    assert (v["train_batch_size"], v["actor_mini"], v["n"], v["actor_micro_per_gpu"], v["logprob_micro_per_gpu"]) == (
        512, 128, 5, 1, 2)
    assert (v["rollout_tp"], v["gmu_permille"], v["nnodes"] * v["gpus_per_node"]) == (2, 600, 8)
    assert v["param_offload"] and v["optimizer_offload"] and v["ref_cpu_offload"] and v["need_ref"]
    assert not v["need_critic"] and v["group_estimator"]
    assert FW.ruleset.check(v).valid


@pytest.mark.parametrize("tokens, gpu, model", [(EXAMPLE, "h100", "qwen2.5-7b"), (DAPO, "h100", "qwen3-14b")],
                         ids=["config.yaml", "qwen3_14b_dapo"])
def test_examples_check_valid_and_fit_their_gpus(tmp_path, tokens, gpu, model):
    script = tmp_path / "run.sh"
    script.write_text(" \\\n    ".join(tokens) + "\n")
    out = run("check", "--framework", "easyr1", script, "--gpu", gpu, "--model", model)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "VALID" in out.stdout and "will not fit" not in out.stdout
    assert "published examples/config.yaml" in out.stdout


def test_broken_config_reports_easyr1s_checks_with_their_numbers():
    out = run("check", "--framework", "easyr1", "config=examples/config.yaml", "worker.actor.global_batch_size=96",
              "worker.rollout.tensor_parallel_size=3", "data.rollout_batch_size=500")
    assert out.returncode == 1
    text = out.stdout
    assert "easyr1.trainer.rollout_divisible_by_global" in text
    assert "data.rollout_batch_size = 500 is not divisible by worker.actor.global_batch_size = 96" in text
    assert 'rollout world size 8 is not divisible by tp size 3.' in text
    # 500 prompts do not split over 8 GPUs: DataProto.chunk's assertion, with its numbers
    assert "Got size of DataProto 500 and chunk 8." in text


def test_floor_division_of_the_update_batch_is_easyr1s_not_verls():
    """EasyR1 floors global_batch_size * n / dp (fsdp_workers.py:136) where verl asserts a whole one: 10 prompts x 2
    on 8 GPUs is 2 samples per GPU per update (20 // 8), and a GPU's 10 samples split into 5 such updates."""
    v = values(EXAMPLE + ["worker.actor.global_batch_size=10", "worker.rollout.n=2", "data.rollout_batch_size=40"])
    env = FW.ruleset.full_env(v)
    assert env["mini_per_gpu"] == 20 // 8 == 2 and env["local_batch"] == 40 * 2 // 8 == 10
    assert FW.ruleset.check(v).valid
    # 12 x 5 = 60 // 8 = 7 per GPU: a GPU's 60 samples of 96 prompts do not split into 7s (DataProto.split)
    broken = values(EXAMPLE + ["worker.actor.global_batch_size=12", "worker.rollout.n=5", "data.rollout_batch_size=96"])
    errs = FW.ruleset.check(broken).errors
    assert [e.rule for e in errs] == ["easyr1.actor.update_batches_split_step"]
    assert "Got size of DataProto 60 and split 7." in errs[0].message


def test_cpu_offload_needs_one_micro_batch_per_update():
    v = values(EXAMPLE + ["worker.actor.fsdp.enable_cpu_offload=True"])
    errs = FW.ruleset.check(v).errors
    assert [e.rule for e in errs] == ["easyr1.actor.cpu_offload_no_accumulation"]
    assert "80 micro batches per update" in errs[0].message
    ok = values(EXAMPLE + ["worker.actor.fsdp.enable_cpu_offload=True",
                           "worker.actor.micro_batch_size_per_device_for_update=80"])
    assert FW.ruleset.check(ok).valid


def test_grpo_with_one_response_and_the_critic_checks():
    assert [e.rule for e in FW.ruleset.check(values(EXAMPLE + ["worker.rollout.n=1"])).errors] == [
        "easyr1.trainer.group_needs_n"]
    ppo = values(EXAMPLE + ["algorithm.adv_estimator=gae", "worker.critic.global_batch_size=96"])
    assert ppo["need_critic"]
    assert "easyr1.trainer.critic_rollout_divisible_by_global" in {e.rule for e in FW.ruleset.check(ppo).errors}


def test_easyr1_keys_feed_verls_cost_terms():
    v = values(EXAMPLE)
    verl = verl_values(v)
    assert verl["actor_max_tokens"] == 1 * 4096 and verl["logprob_max_tokens"] == verl["ref_max_tokens"] == 2 * 4096
    assert verl["ref_micro_per_gpu"] == 2 and verl["ref_param_offload"]  # FSDP CPU offload of the reference
    assert verl["max_model_len"] == 4096 and verl["logprob_dyn"] and verl["ref_sp"] == 1


def test_explain_maps_easyr1_messages_to_its_rules():
    found = match_error("ValueError: rollout world size 6 is not divisible by tp size 4.", "easyr1")
    assert [p.rules for p, _ in found] == [("easyr1.rollout.tp_divides_gpus",)]
    assert found[0][1] == {"world": "6", "tp": "4"}
    assert match_error("ValueError: actor cannot use FSDP's CPU offload when gradient accumulation is enabled.",
                       "easyr1")


def test_a_config_file_here_is_read_under_the_overrides(tmp_path):
    cfg = tmp_path / "mine.yaml"
    cfg.write_text("data:\n  rollout_batch_size: 64\nworker:\n  actor:\n    global_batch_size: 32\n"
                   "  rollout:\n    n: 4\n")
    v = values([f"config={cfg}", "worker.rollout.n=8"])
    assert (v["train_batch_size"], v["actor_mini"], v["n"]) == (64, 32, 8)
    assert v["actor_micro_per_gpu"] == 4  # EasyR1's dataclass default, not the example's
    missing = run("check", "--framework", "easyr1", "config=nowhere.yaml")
    assert "config=nowhere.yaml is not here" in missing.stdout


def test_recommend_from_the_example_keeps_its_batch_and_frees_the_rest(tmp_path):
    """recommend --from reads the example file's keys as the user's: the rollout and update batches stay (512, 128),
    the micro batches, offload and the rollout's memory share are searched, and the answer checks valid."""
    script = tmp_path / "run.sh"
    script.write_text(" \\\n    ".join(EXAMPLE) + "\n")
    out = run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-7b", "--json").stdout
    import json

    best = json.loads(out)["choices"][0]["native"]
    assert "data.rollout_batch_size=512" in best and "worker.actor.global_batch_size=128" in best
    assert "worker.rollout.n=5" in best
    checked = run("check", "--framework", "easyr1", "config=examples/config.yaml", *best, "--gpu", "h100",
                  "--model", "qwen2.5-7b")
    assert checked.returncode == 0 and "will not fit" not in checked.stdout, checked.stdout


def test_enumerate_equals_the_checker_on_small_spaces():
    """CP-SAT (enumerate) and the checker agree on every config of small spaces over EasyR1's rules."""
    from bruteforce import assert_enumerate_equals_checker

    from rlbatch_solver.frameworks.easyr1.rules import RULESET

    base = {name: [spec.default] for name, spec in RULESET.variables.items()}
    base.update({"num_heads": [12], "num_kv_heads": [2], "max_position_embeddings": [32768], "n": [4]})
    spaces = [
        {"gpus_per_node": [2, 3, 4, 6, 8], "train_batch_size": [12, 16, 24, 32], "actor_mini": [4, 6, 8],
         "actor_micro_per_gpu": [1, 2, 4], "logprob_micro_per_gpu": [2, 3, 8], "actor_dyn": [False, True]},
        {"gpus_per_node": [4, 8], "actor_sp": [1, 2, 4, 8], "rollout_tp": [1, 2, 3, 16], "gen_batch": [None, 8, 12],
         "actor_cpu_offload": [False, True], "actor_mini": [2, 8], "max_num_batched_tokens": [512, 1024, 8192]},
        {"need_critic": [False, True], "critic_mini": [4, 6, 16], "critic_micro_per_gpu": [1, 3],
         "critic_exp_micro": [2, 6], "critic_sp": [1, 2], "critic_cpu_offload": [False, True], "n": [1, 2, 5],
         "group_estimator": [False, True]},
    ]
    for space in spaces:
        assert_enumerate_equals_checker(RULESET, {**base, **space})


SMALL = dict(search={"data.rollout_batch_size": [16, 32], "worker.actor.global_batch_size": [8, 16],
                     "worker.actor.micro_batch_size_per_device_for_update": [1, 2],
                     "worker.actor.micro_batch_size_per_device_for_experience": [2, 4],
                     "worker.rollout.tensor_parallel_size": [1, 2]},
             fixed={"worker.rollout.gpu_memory_utilization": 0.5})


def _small():
    sc = Scenario(framework="easyr1", gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=4,
                  prompt_length=512, response_length=1024, search=dict(SMALL["search"]), fixed=dict(SMALL["fixed"]))
    return prepare(sc)


def test_tables_equal_the_full_cost_model():
    _, _, _, space, spec, terms, ruleset = _small()
    assert_tables_match_cost_model(space, spec, ruleset, configs=25, seed=7, label="easyr1", terms=terms)


def test_cpsat_optimum_equals_exhaustive_evaluation():
    _, _, _, space, _, terms, ruleset = _small()
    assert_optimum_is_exhaustive(ruleset, space, terms.time_us_per_sample)


@pytest.mark.parametrize("arg", ["worker.actor.global_batch_size=-3", "data.rollout_batch_size=0",
                                 "worker.actor.fsdp.fsdp_size=0"])
def test_a_size_below_one_is_an_input_error_naming_the_key(arg):
    with pytest.raises(rb.InputError, match=arg.split("=")[0].replace(".", r"\.")):
        rb.check([arg], framework="easyr1")


def _errors(extra):
    return [e for e in FW.ruleset.check(values(EXAMPLE + extra)).errors]


def test_first_step_splits_that_the_parity_harness_leaves_to_these_cases():
    """The DataProto chunk/split asserts of the first step (verl/protocol.py: len % chunks, len % split_size), worked
    by hand on the published example (8 GPUs, 512 prompts x 5) as EasyR1's dispatch and dp_actor/dp_critic cut it."""
    # 12 prompts x 3 = 36 samples over 8 GPUs (the generation batch of 8 prompts chunks evenly)
    errs = _errors(["data.rollout_batch_size=12", "data.mini_rollout_batch_size=8", "worker.rollout.n=3",
                    "worker.actor.global_batch_size=12"])
    assert [e.rule for e in errs] == ["easyr1.dispatch.samples_divisible_by_gpus"]
    assert '"36 % 8 != 0"' in errs[0].message  # RayPPOTrainer._balance_batch asserts it before DataProto.chunk
    assert [p.rules for p, _ in match_error("AssertionError: 36 % 8 != 0", "easyr1")] == [
        ("easyr1.dispatch.samples_divisible_by_gpus",)]
    # without dynamic batching dp_actor.compute_log_prob splits a GPU's 2560 / 8 = 320 samples into 128s
    errs = _errors(["worker.actor.dynamic_batching=False",
                    "worker.actor.micro_batch_size_per_device_for_experience=128"])
    assert [e.rule for e in errs] == ["easyr1.actor.experience_micro_splits_local"]
    assert "Got size of DataProto 320 and split 128." in errs[0].message
    assert not _errors(["worker.actor.micro_batch_size_per_device_for_experience=128"])  # a token budget instead
    # the critic's value pass (dp_critic.compute_values) the same way, under its own dynamic_batching switch
    gae = ["algorithm.adv_estimator=gae", "worker.critic.micro_batch_size_per_device_for_experience=128"]
    errs = _errors(gae + ["worker.critic.dynamic_batching=False"])
    assert [e.rule for e in errs] == ["easyr1.critic.experience_micro_splits_local"]
    assert "Got size of DataProto 320 and split 128." in errs[0].message
    assert not _errors(gae)
    # the critic's update: 12 x 5 // 8 = 7 samples per GPU per update, a GPU's 96 x 5 / 8 = 60 do not split into 7s
    errs = _errors(["algorithm.adv_estimator=gae", "data.rollout_batch_size=96", "worker.actor.global_batch_size=96",
                    "worker.critic.global_batch_size=12", "worker.critic.micro_batch_size_per_device_for_update=7"])
    assert [e.rule for e in errs] == ["easyr1.critic.update_batches_split_step"]
    assert "Got size of DataProto 60 and split 7." in errs[0].message


def test_ulysses_sizes_the_device_mesh_and_the_heads_refuse():
    assert [e.rule for e in _errors(["worker.actor.ulysses_size=3"])] == ["easyr1.fsdp.sp_divides_gpus"]
    out = run("check", "--framework", "easyr1", *EXAMPLE[3:], "worker.actor.ulysses_size=8", "--model", "qwen2.5-7b")
    assert out.returncode == 1 and "easyr1.ulysses.heads_divisible" in out.stdout  # 28 heads over 8
