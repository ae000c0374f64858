"""verl 0.9.1 FSDP rules: the seed's worked examples pass, its FAQ failures fail with the right rule."""

import pytest

import rlbatch_solver as rb
from rlbatch_solver.rules.base import Stage
from rlbatch_solver.frameworks.verl.rules import RULESET

AR = "actor_rollout_ref"

# The seed's 4x RTX 4090 ADPO example (verl batch-size guide, "4x4090 (24GB) ADPO").
SEED_4090 = [
    "data.train_batch_size=64", "data.max_prompt_length=880", "data.max_response_length=1280",
    f"{AR}.rollout.n=8", f"{AR}.rollout.gpu_memory_utilization=0.35",
    f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=16", f"{AR}.actor.ppo_mini_batch_size=32",
    f"{AR}.actor.ppo_micro_batch_size_per_gpu=8", "algorithm.adv_estimator=grpo",
]
# The seed's 8x A100 80GB GRPO example.
SEED_A100 = [
    "data.train_batch_size=256", "data.max_prompt_length=1024", "data.max_response_length=2048",
    f"{AR}.rollout.n=8", f"{AR}.rollout.gpu_memory_utilization=0.7",
    f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=32", f"{AR}.actor.ppo_mini_batch_size=128",
    f"{AR}.actor.ppo_micro_batch_size_per_gpu=16", "algorithm.adv_estimator=grpo",
]


def replace(cfg, key, value):
    out = [c for c in cfg if not c.startswith(key + "=")]
    if value is not None:
        out.append(f"{key}={value}")
    return out


def rules_of(report, stage=None):
    return {v.rule for v in report.violations if stage is None or v.stage == stage}


def test_seed_examples_are_valid():
    r1 = rb.check(SEED_4090, gpus=4, model="qwen2.5-1.5b")
    assert r1.valid and not r1.violations, r1.violations
    r2 = rb.check(SEED_A100 + ["trainer.n_gpus_per_node=8"], model="qwen2.5-7b")
    assert r2.valid and not r2.violations, r2.violations


def test_seed_numbers_are_derived():
    env = RULESET.full_env(rb.check(SEED_4090, gpus=4).values)
    assert env["B_n"] == 512 and env["mini_per_gpu"] == 64 and env["grad_accum"] == 8


def test_faq_q1_normalized_mini_not_divisible_by_micro():
    r = rb.check(replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", 24), gpus=4)
    assert not r.valid
    assert rules_of(r) == {"verl.step.mini_divisible_by_micro"}
    v = r.violations[0]
    assert v.stage == Stage.FIRST_STEP
    assert "64" in v.message and "24" in v.message  # the numbers, not just the rule
    assert "prepare_micro_batches" in v.source


def test_samples_not_divisible_by_gpus():
    r = rb.check(replace(SEED_4090, "data.train_batch_size", 65) + [f"{AR}.rollout.n=1"], gpus=4)
    assert "verl.driver.batch_divisible_by_gpus" in rules_of(r, Stage.DRIVER)
    msg = next(v.message for v in r.violations if v.rule == "verl.driver.batch_divisible_by_gpus")
    assert "= 65" in msg and "= 4" in msg


def test_mini_larger_than_train():
    r = rb.check(replace(SEED_4090, f"{AR}.actor.ppo_mini_batch_size", 128), gpus=4)
    assert "verl.actor.mini_le_train" in rules_of(r, Stage.DRIVER)


def test_deprecated_global_micro_passes_driver_fails_worker():
    cfg = replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", None) + [f"{AR}.actor.ppo_micro_batch_size=32"]
    r = rb.check(cfg, gpus=4, framework="verl==0.9.1")  # named: unnamed, the global key shows 0.7.1
    assert rules_of(r, Stage.DRIVER) == set()
    assert "verl.worker.actor_micro_per_gpu_required" in rules_of(r, Stage.WORKER_INIT)


def test_both_micro_sizes_set():
    r = rb.check(SEED_4090 + [f"{AR}.actor.ppo_micro_batch_size=32"], gpus=4)
    assert "verl.actor.micro_exactly_one" in rules_of(r)


def test_missing_micro_size():
    r = rb.check(replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", None), gpus=4)
    assert "verl.actor.micro_exactly_one" in rules_of(r)


def test_ulysses_heads_need_model():
    cfg = SEED_A100 + ["trainer.n_gpus_per_node=8", f"{AR}.actor.ulysses_sequence_parallel_size=8"]
    without_model = rb.check(cfg)
    assert "verl.ulysses.actor_heads_divisible" not in rules_of(without_model)
    assert any("model" in n for n in without_model.notes)
    r = rb.check(cfg, model="qwen2.5-7b")  # 28 heads, 4 kv heads
    assert "verl.ulysses.actor_heads_divisible" in rules_of(r)
    assert "verl.ulysses.actor_kv_heads" not in rules_of(r)  # 8 % 4 == 0


def test_rollout_tp_must_divide_gpus():
    r = rb.check(SEED_A100 + ["trainer.n_gpus_per_node=8", f"{AR}.rollout.tensor_model_parallel_size=3"])
    assert "verl.worker.rollout_world_divides_gpus" in rules_of(r, Stage.WORKER_INIT)


def test_dynamic_bsz_budget_and_consistency():
    cfg = SEED_4090 + [f"{AR}.actor.use_dynamic_bsz=True", f"{AR}.actor.ppo_max_token_len_per_gpu=2000"]
    r = rb.check(cfg, gpus=4)
    assert "verl.step.actor_token_budget" in rules_of(r)
    assert "verl.worker.dynamic_bsz_consistent" not in rules_of(r)  # log-prob follows the actor
    r2 = rb.check(cfg + [f"{AR}.rollout.log_prob_use_dynamic_bsz=False"], gpus=4)
    assert "verl.worker.dynamic_bsz_consistent" in rules_of(r2)


def test_grpo_with_one_response_is_a_warning_only():
    r = rb.check(replace(SEED_4090, f"{AR}.rollout.n", 1), gpus=4)
    assert r.valid
    assert [v.rule for v in r.violations] == ["verl.advice.group_needs_n"]


def test_ppo_needs_critic_micro():
    cfg = replace(SEED_4090, "algorithm.adv_estimator", "gae")
    r = rb.check(cfg, gpus=4)
    assert "verl.critic.micro_exactly_one" in rules_of(r)
    ok = rb.check(cfg + ["critic.ppo_micro_batch_size_per_gpu=8"], gpus=4)
    assert ok.valid, ok.violations


def test_kl_needs_ref_micro():
    r = rb.check(SEED_4090 + [f"{AR}.actor.use_kl_loss=True"], gpus=4)
    assert "verl.ref.logprob_micro_exactly_one" in rules_of(r)


def test_every_rule_has_id_stage_source_and_numbers_in_message():
    for rule in RULESET.rules:
        assert rule.id.startswith("verl.")
        assert rule.source
        assert isinstance(rule.stage, Stage)
        assert "{" in rule.message, rule.id  # every message shows the actual numbers


@pytest.mark.parametrize("bad,field", [
    (["data.train_batch_size=0"], "data.train_batch_size"),
    (["data.train_batch_size=-8"], "data.train_batch_size"),
    (["data.train_batch_size=$BS"], "data.train_batch_size"),
    ([f"{AR}.actor.use_dynamic_bsz=maybe"], f"{AR}.actor.use_dynamic_bsz"),
    (["algorithm.adv_estimator=grpoo"], "algorithm.adv_estimator"),
    (["=5"], "override"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(rb.InputError) as exc:
        rb.check(SEED_4090 + bad, gpus=4)
    assert exc.value.field == field


# ---- verl 0.9.1 behaviours the rule set follows (checked against the 0.9.1 wheel) ----

def test_ref_batching_follows_the_actor_not_the_rollout():
    # ref.log_prob_use_dynamic_bsz / log_prob_max_token_len_per_gpu interpolate from actor.* (ref/dp_ref.yaml)
    cfg = SEED_4090 + [f"{AR}.actor.use_kl_loss=True", f"{AR}.actor.use_dynamic_bsz=True",
                       f"{AR}.actor.ppo_max_token_len_per_gpu=2000", f"{AR}.rollout.log_prob_max_token_len_per_gpu=8192"]
    r = rb.check(cfg, gpus=4)
    assert "verl.step.ref_token_budget" in rules_of(r)  # ref budget 2000 < 2160, from the actor
    assert "verl.step.logprob_token_budget" not in rules_of(r)


def test_critic_dynamic_batch_follows_the_actor():
    cfg = replace(SEED_4090, "algorithm.adv_estimator", "gae") + [f"{AR}.actor.use_dynamic_bsz=True"]
    r = rb.check(cfg, gpus=4)
    assert "verl.critic.micro_exactly_one" not in rules_of(r)  # critic.use_dynamic_bsz follows the actor's


def test_critic_global_micro_alone_counts_as_both():
    # critic yaml: ppo_micro_batch_size_per_gpu: ${oc.select:.ppo_micro_batch_size,null}
    cfg = replace(SEED_4090, "algorithm.adv_estimator", "gae") + ["critic.ppo_micro_batch_size=8"]
    r = rb.check(cfg, gpus=4, framework="verl==0.9.1")
    assert "verl.critic.micro_exactly_one" in rules_of(r, Stage.DRIVER)
    v = next(v for v in r.violations if v.rule == "verl.critic.micro_exactly_one")
    assert "(now ppo_micro_batch_size_per_gpu = 8, ppo_micro_batch_size = 8;" in v.message  # the yaml copied the global 8 into the per-GPU key: both are set
    # unpinned, only verl 0.2 accepts it (its yaml has no copy): checked with 0.2.0, the upgrade line names the rule
    dated = rb.check(cfg, gpus=4)
    assert dated.version == "0.2.0" and "verl.critic.micro_exactly_one" not in rules_of(dated)
    assert "verl.critic.micro_exactly_one" in [rule for rule, _ in dated.upgrade.fails]


def test_critic_token_budget_is_the_infer_budget():
    ppo = replace(SEED_4090, "algorithm.adv_estimator", "gae") + ["critic.ppo_micro_batch_size_per_gpu=8"]
    assert rb.check(ppo + ["critic.ppo_max_token_len_per_gpu=1000"], gpus=4).valid  # not read by the v1 critic
    r = rb.check(ppo + ["+critic.ppo_infer_max_token_len_per_gpu=1000"], gpus=4)
    assert rules_of(r) == {"verl.step.critic_token_budget"}
    assert "1000*1" in r.violations[0].message and "2160" in r.violations[0].message


def test_critic_sequence_parallel_is_the_engine_key():
    ppo = replace(SEED_4090, "algorithm.adv_estimator", "gae") + ["critic.ppo_micro_batch_size_per_gpu=8"]
    r = rb.check(ppo + ["critic.ulysses_sequence_parallel_size=2"], gpus=4)
    assert r.valid and rules_of(r) == {"verl.advice.critic_sp_key_ignored"}
    r = rb.check(ppo + ["critic.fsdp.ulysses_sequence_parallel_size=3"], gpus=4)
    assert "verl.fsdp.critic_sp_divides_gpus" in rules_of(r, Stage.WORKER_INIT)


def test_step_padding_sets_the_log_prob_batch():
    # 48 prompts, mini 32, 4 GPUs: the v1 trainer pads to 64 samples, 16 per GPU
    cfg = replace(replace(replace(SEED_4090, "data.train_batch_size", 48), f"{AR}.rollout.n", 1),
                  f"{AR}.actor.ppo_mini_batch_size", 32)
    r = rb.check(replace(cfg, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu", 3), gpus=4)
    assert "verl.step.logprob_micro_divides_local_batch" in rules_of(r)
    v = next(v for v in r.violations if v.rule == "verl.step.logprob_micro_divides_local_batch")
    assert "= 64" in v.message and "16" in v.message
    ok = rb.check(replace(cfg, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu", 16), gpus=4)
    assert "verl.step.logprob_micro_divides_local_batch" not in rules_of(ok)


def test_ref_deprecated_global_micro_fails_at_the_first_ref_step():
    cfg = SEED_4090 + [f"{AR}.actor.use_kl_loss=True", f"{AR}.ref.log_prob_micro_batch_size=16"]
    r = rb.check(cfg, gpus=4, framework="verl==0.9.1")
    assert rules_of(r) == {"verl.step.ref_micro_per_gpu_required"}
    assert r.violations[0].stage == Stage.FIRST_STEP


def test_rollout_config_checks_run_in_the_workers():
    r = rb.check(SEED_4090 + [f"{AR}.rollout.expert_parallel_size=4"], gpus=4)  # TP 2 * DP 1 = 2
    v = next(v for v in r.violations if v.rule == "verl.rollout.ep_equals_tp_dp")
    assert v.stage == Stage.WORKER_INIT and "RolloutConfig.__post_init__" in v.source


def test_vllm_data_parallel_uses_the_replica_gpus_per_node():
    # rollout.n_gpus_per_node=2: each replica places 2 GPUs per node, TP 4 does not fit in them
    cfg = SEED_A100 + ["trainer.n_gpus_per_node=8", f"{AR}.rollout.tensor_model_parallel_size=4",
                       f"{AR}.rollout.data_parallel_size=2", f"{AR}.rollout.n_gpus_per_node=2"]
    r = rb.check(cfg)
    assert "verl.vllm.dp_needs_tp_within_node" in rules_of(r)
    ok = rb.check(replace(cfg, f"{AR}.rollout.n_gpus_per_node", None))
    assert "verl.vllm.dp_needs_tp_within_node" not in rules_of(ok)


def test_unset_max_model_len_is_the_model_context():
    # gemma2-9b has 8192 positions; unset max_model_len means 8192, so long samples are capped, not refused
    cfg = replace(replace(SEED_A100, "data.max_prompt_length", 4096), "data.max_response_length", 8192)
    r = rb.check(cfg + ["trainer.n_gpus_per_node=8"], model="gemma2-9b")
    assert "verl.vllm.model_len_le_positions" not in rules_of(r)
    r = rb.check(cfg + ["trainer.n_gpus_per_node=8", f"{AR}.rollout.max_model_len=12288"], model="gemma2-9b")
    assert "verl.vllm.model_len_le_positions" in rules_of(r, Stage.WORKER_INIT)


def test_rollout_defaults_follow_the_0_9_1_yaml():
    values = rb.check(SEED_4090, gpus=4).values
    assert values["max_num_seqs"] == 256 and values["rollout_tp"] == 2 and values["gmu_permille"] == 350
    assert values["remove_padding"] is True and values["grad_ckpt"] is True and values["critic_max_tokens"] == 32768


def test_algorithms_match_verl_examples():
    from rlbatch_solver.frameworks.verl.fsdp import ALGORITHMS, config_to_values

    need = {a: (config_to_values(dict(cfg))["need_ref"], config_to_values(dict(cfg))["need_critic"])
            for a, cfg in ALGORITHMS.items()}
    assert need["ppo"] == (False, True)
    assert need["grpo"] == (True, False) and need["rloo"] == (True, False) and need["reinforce++"] == (True, False)
    assert need["adpo"] == (False, False) and need["dapo"] == (False, False) and need["gspo"] == (False, False)


def test_gdpo_is_a_group_estimator():
    r = rb.check(replace(replace(SEED_4090, "algorithm.adv_estimator", "gdpo"), f"{AR}.rollout.n", 1), gpus=4)
    assert rules_of(r) == {"verl.advice.group_needs_n"}


def test_fsdp_config_ulysses_key_is_the_engine_size():
    cfg = SEED_A100 + ["trainer.n_gpus_per_node=8", f"{AR}.actor.fsdp_config.ulysses_sequence_parallel_size=8"]
    r = rb.check(cfg, model="qwen2.5-7b")  # 28 heads
    assert "verl.ulysses.actor_heads_divisible" in rules_of(r)
    assert r.values["actor_sp"] == 8 and r.values["ref_sp"] == 1  # the ref follows the deprecated actor key only
