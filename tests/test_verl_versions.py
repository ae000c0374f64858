"""verl's rule packs for 0.1.0, 0.2.0, 0.6.1, 0.7.1 and 0.8.0 (frameworks/verl/versions.py): each built from 0.9.1's rules by its
own edits, the checker and the solver agreeing on each, the version read from a config's keys or an error message,
and each version's verdict on configs whose fate differs between versions (read from that version's code)."""

from __future__ import annotations

import json

import pytest

from bruteforce import assert_enumerate_equals_checker
from clirun import run
from rlbatch_solver import api
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.verl import versions as VV
from rlbatch_solver.rules.base import Stage

AR = "actor_rollout_ref"
PACKED = ("0.8.0", "0.7.1", "0.6.1", "0.2.0", "0.1.0")

# the seed's FAQ mistake: micro 24 against a normalized mini batch of 64 samples per GPU
FAQ = ["trainer.n_gpus_per_node=4", "data.train_batch_size=64", f"{AR}.rollout.n=8",
       f"{AR}.actor.ppo_mini_batch_size=32", f"{AR}.actor.ppo_micro_batch_size_per_gpu=24",
       f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=16", "algorithm.adv_estimator=grpo"]


def _ids(report) -> set[str]:
    return {v.rule for v in report.violations}


@pytest.mark.parametrize("version", VV.VERSIONS)
@pytest.mark.parametrize("part", ["fsdp", "megatron", "any"])
def test_every_pack_builds_and_cites_its_sources(version, part):
    rs = VV.ruleset_for(version, part)
    assert rs.version == version
    assert all(r.source and isinstance(r.stage, Stage) for r in rs.rules)
    for r in rs.rules:  # every rule reads only variables and derived quantities the rule set has
        known = set(rs.variables) | {d.name for d in rs.derived} | {f"{n}_set" for n in rs.variables}
        assert r.reads() <= known, (r.id, r.reads() - known)
    if version != VV.NEWEST:
        assert not any(f"verl {VV.NEWEST}" in r.message for r in rs.rules)


@pytest.mark.parametrize("version", PACKED)
def test_each_pack_differs_from_0_9_1_as_its_summary_says(version):
    diff = VV.changes(version)
    assert diff["absent"] or diff["added"]
    ids = {kind: {i for i, _ in rows} for kind, rows in diff.items()}
    if version == "0.8.0":
        # and the split placements, modelled for 0.9.1 only (docs/async.md)
        assert ids["absent"] == {"verl.advice.batch_padded"} | VV.ASYNC_RULES
        assert "verl.advice.async_modelled_for_0_9_only" in ids["added"]
        assert "verl.step.train_divisible_by_mini" in ids["added"]
    else:  # the legacy workers
        assert {"verl.worker.actor_micro_per_gpu_required", "verl.step.mini_divisible_by_micro"} <= ids["absent"]
        assert "verl.legacy.mini_divisible_by_micro" in ids["added"]
    if version == "0.6.1":
        assert "verl.vllm.context_covers_prompt_response" in ids["added"]


# small spaces where the versions' rules differ: the solver enumerates exactly what the checker accepts
def _base(rs) -> dict:
    base = {n: [s.default] for n, s in rs.variables.items() if s.default is not None or s.optional}
    base.update({"need_critic": [False], "need_ref": [False], "group_estimator": [True], "num_heads": [12],
                 "num_kv_heads": [2], "max_position_embeddings": [4096], "max_prompt_length": [512],
                 "max_response_length": [1024], "actor_micro_per_gpu": [2], "logprob_micro_per_gpu": [2],
                 "actor_mini": [4], "train_batch_size": [8], "num_layers": [12], "num_experts": [0]})
    return base


SPACES = {
    "legacy micro batches": {
        "gpus_per_node": [2, 3, 4], "train_batch_size": [2, 4, 6, 8], "n": [1, 2, 3], "actor_mini": [1, 2, 3, 4],
        "actor_micro_per_gpu": [None, 1, 2, 3], "actor_micro": [None, 2, 4], "logprob_micro": [None, 1, 4],
        "logprob_micro_per_gpu": [None, 2], "actor_dyn": [False, True],
    },
    "critic and steps": {
        "gpus_per_node": [2, 4], "need_critic": [False, True], "critic_mini": [2, 3, 4], "critic_micro": [None, 4],
        "critic_micro_per_gpu": [None, 1, 2], "critic_sp": [1, 2], "critic_remove_padding": [False, True],
        "critic_dyn": [False, True], "train_batch_size": [4, 6, 8], "actor_mini": [2, 4],
    },
    "rollout and context": {
        "gpus_per_node": [4, 8], "rollout_tp": [1, 2, 4], "rollout_dp": [1, 2], "rollout_ep": [1, 2],
        "max_model_len": [None, 512, 1536], "max_position_embeddings": [1024, 4096], "max_num_batched_tokens": [1024, 8192],
        "train_batch_size": [16], "actor_mini": [8], "actor_micro_per_gpu": [1], "logprob_micro_per_gpu": [1],
    },
}


@pytest.mark.parametrize("version", PACKED)
@pytest.mark.parametrize("space", list(SPACES))
def test_each_pack_enumerates_exactly_what_its_checker_accepts(version, space):
    rs = VV.ruleset_for(version, "fsdp")
    domains = {**_base(rs), **{k: v for k, v in SPACES[space].items() if k in rs.variables}}
    if "rollout_sync" in rs.variables:
        domains["rollout_sync"] = [False, True]
    assert_enumerate_equals_checker(rs, domains, time_limit_s=120)


@pytest.mark.parametrize("version", PACKED)
def test_megatron_packs_enumerate_exactly_what_their_checkers_accept(version):
    rs = VV.ruleset_for(version, "megatron")
    domains = {**_base(rs), "gpus_per_node": [4, 8], "tp": [1, 2], "pp": [1, 2], "train_batch_size": [4, 6, 8],
               "actor_mini": [2, 4], "n": [1, 2], "need_ref": [False, True], "ref_micro": [None, 4],
               "ref_micro_per_gpu": [None, 1], "ref_tp": [1, 2], "actor_dyn": [False, True]}
    assert_enumerate_equals_checker(rs, domains, time_limit_s=120)


# ----------------------------------------------------------------------------- verdicts per version
def test_the_faq_mistake_fails_where_each_version_checks_it():
    """0.9.1 and 0.8.0 (engine workers) fail it in the first step; 0.7.1 and 0.6.1 (legacy workers) when the
    workers start, with the legacy message's rule."""
    for version, rule in (("0.9.1", "verl.step.mini_divisible_by_micro"), ("0.8.0", "verl.step.mini_divisible_by_micro"),
                          ("0.7.1", "verl.legacy.mini_divisible_by_micro"), ("0.6.1", "verl.legacy.mini_divisible_by_micro")):
        rep = api.check(FAQ, framework=f"verl=={version}")
        assert rep.version == version and rule in _ids(rep), (version, _ids(rep))
        stage = next(v.stage for v in rep.violations if v.rule == rule)
        assert stage == (Stage.FIRST_STEP if version >= "0.8" else Stage.WORKER_INIT)


def test_a_train_batch_that_is_not_whole_mini_batches():
    """96 prompts in mini batches of 64: 0.9.1 pads (a warning), 0.8.0 fails (train % mini), the legacy workers
    run a short last mini batch (a warning)."""
    cfg = [x for x in FAQ if "micro" not in x and "train_batch" not in x] + [
        "data.train_batch_size=96", f"{AR}.actor.ppo_mini_batch_size=64", f"{AR}.actor.ppo_micro_batch_size_per_gpu=8",
        f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=8"]
    r091, r080, r071 = (api.check(cfg, framework=f"verl=={v}") for v in ("0.9.1", "0.8.0", "0.7.1"))
    assert r091.valid and "verl.advice.batch_padded" in _ids(r091)
    assert not r080.valid and "verl.step.train_divisible_by_mini" in _ids(r080)
    assert r071.valid and "verl.advice.short_mini_batch" in _ids(r071)


def test_deprecated_global_micro_keys_run_on_the_legacy_workers():
    cfg = [x for x in FAQ if "micro" not in x] + [f"{AR}.actor.ppo_micro_batch_size=32",
                                                   f"{AR}.rollout.log_prob_micro_batch_size=64"]
    assert "verl.worker.actor_micro_per_gpu_required" in _ids(api.check(cfg, framework="verl==0.9.1"))
    legacy = api.check(cfg, framework="verl==0.7.1")
    assert legacy.valid, [v.message for v in legacy.violations]
    small = [x for x in cfg if "log_prob_micro" not in x] + [f"{AR}.rollout.log_prob_micro_batch_size=2"]
    assert "verl.legacy.logprob_global_micro_covers_dp" in _ids(api.check(small, framework="verl==0.7.1"))


@pytest.mark.parametrize("version,checked", [("0.1.0", False), ("0.2.0", False), ("0.3.0", False), ("0.5.0", True)])
def test_the_megatron_driver_checks_the_minimal_batch_from_0_4_on(version, checked):
    """verl v0.1 examples/ppo_trainer/run_deepseek_full_hh_rlhf.sh (Megatron, global micro batches): 0.2 and 0.3's
    _validate_config has no minimal_bsz = megatron_dp * ppo_micro_batch_size_per_gpu (v0.4.1 ray_trainer.py has), and
    their megatron_workers.py converts the global micro batch."""
    cfg = ["trainer.n_gpus_per_node=8", "data.train_batch_size=512", f"{AR}.actor.ppo_mini_batch_size=128",
           f"{AR}.actor.ppo_micro_batch_size=16", f"{AR}.rollout.log_prob_micro_batch_size=16",
           f"{AR}.ref.log_prob_micro_batch_size=16", f"{AR}.rollout.tensor_model_parallel_size=4"]
    found = _ids(api.check(cfg, framework=f"verl-megatron=={version}"))
    assert ("verl.megatron.driver_micro_per_gpu_required" in found) == checked, found


def test_0_6_1_checks_the_model_context_of_its_in_process_engine():
    cfg = FAQ[:-3] + [f"{AR}.actor.ppo_micro_batch_size_per_gpu=8", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=8",
                      "data.max_prompt_length=2048", "data.max_response_length=4096", "algorithm.adv_estimator=grpo"]
    sync = api.check(cfg, framework="verl==0.6.1", model="llama3.2-1b")  # context 131072: fits
    assert not {"verl.vllm.context_covers_prompt_response", "verl.vllm.chunked_prefill_batched_tokens"} & _ids(sync)
    short = api.check(cfg, framework="verl==0.6.1", model="llama2-7b")  # context 4096 < 2048 + 4096
    assert "verl.vllm.context_covers_prompt_response" in _ids(short)
    long = api.check(cfg + ["data.max_response_length=40000"], framework="verl==0.6.1", model="llama3.2-1b")
    assert "verl.vllm.chunked_prefill_batched_tokens" in _ids(long)  # 8192 batched tokens < 42048
    asynchronous = api.check(cfg + [f"{AR}.rollout.mode=async"], framework="verl==0.6.1", model="llama2-7b")
    assert "verl.vllm.context_covers_prompt_response" not in _ids(asynchronous)
    assert "verl.rollout.sync_mode_removed" in _ids(api.check(cfg + [f"{AR}.rollout.mode=sync"], framework="verl==0.7.1"))


# A blog's verl-megatron GRPO run of Qwen2.5-7B on one node of 8 x 80 GB (longls777/blog
# source/_posts/Work/LLM_reasoning_model_practice.md, 2025-06-18, --config-name ppo_megatron_trainer.yaml): 1K + 15K
# tokens with the default rollout.max_num_batched_tokens (8192); it ran.
BLOG_MEGATRON_16K = [
    "algorithm.adv_estimator=grpo", "data.train_batch_size=32", "data.max_prompt_length=1024",
    "data.max_response_length=15360", f"{AR}.actor.ppo_mini_batch_size=16", f"{AR}.actor.ppo_micro_batch_size_per_gpu=1",
    f"{AR}.actor.megatron.pipeline_model_parallel_size=2", f"{AR}.actor.megatron.tensor_model_parallel_size=2",
    f"{AR}.actor.use_kl_loss=True", f"{AR}.actor.kl_loss_coef=0.001", f"{AR}.actor.kl_loss_type=low_var_kl",
    f"{AR}.actor.entropy_coeff=0", f"{AR}.model.enable_gradient_checkpointing=True",
    f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=1", f"{AR}.rollout.tensor_model_parallel_size=2",
    f"{AR}.rollout.name=vllm", f"{AR}.rollout.gpu_memory_utilization=0.45", f"{AR}.rollout.n=3",
    f"{AR}.ref.log_prob_micro_batch_size_per_gpu=1", f"{AR}.ref.megatron.pipeline_model_parallel_size=2",
    f"{AR}.ref.megatron.tensor_model_parallel_size=2", "algorithm.use_kl_in_reward=False", "trainer.critic_warmup=0",
    "trainer.n_gpus_per_node=8", "trainer.nnodes=1",
]


@pytest.mark.parametrize("release", ["0.3.0", "0.4.1", "0.5.0"])
def test_the_megatron_trainer_of_0_3_to_0_5_runs_vllm_without_chunked_prefill(release):
    """verl 0.3.0.post1-0.5.0's ppo_megatron_trainer.yaml sets rollout.enable_chunked_prefill False (ppo_trainer.yaml:
    True); 0.6.1's rollout.yaml sets True for both. vLLMRollout.__init__ refuses max_num_batched_tokens <
    max_model_len only with chunked prefill on: the blog's 16K run is valid at its release, not at 0.6.1."""
    chunked = "verl.vllm.chunked_prefill_batched_tokens"
    kw = dict(model="Qwen/Qwen2.5-7B", gpu="H100-80GB")
    assert chunked not in _ids(api.check(BLOG_MEGATRON_16K, framework=f"verl-megatron=={release}", **kw))
    on = BLOG_MEGATRON_16K + [f"{AR}.rollout.enable_chunked_prefill=True"]
    assert chunked in _ids(api.check(on, framework=f"verl-megatron=={release}", **kw))  # turned on: refused
    assert chunked in _ids(api.check(BLOG_MEGATRON_16K, framework="verl-megatron==0.6.1", **kw))
    # the FSDP trainer of the same release had it on; --framework verl reads the backend from actor.strategy
    assert VV.ruleset_for(VV.SERIES.get(release[:3], release), "fsdp").variables["enable_chunked_prefill"].default
    mega = BLOG_MEGATRON_16K + [f"{AR}.actor.strategy=megatron"]
    assert chunked not in _ids(api.check(mega, framework=f"verl=={release}", model="Qwen/Qwen2.5-7B"))
    assert chunked in _ids(api.check(mega, framework="verl==0.6.1", model="Qwen/Qwen2.5-7B"))


@pytest.mark.parametrize("version", ["0.5.0", "0.3.0"])
def test_the_0_3_to_0_5_packs_cite_their_releases_files(version):
    """verl 0.3.0.post1-0.5.0's wheels have no verl/workers/config/ (0.6's config dataclasses), no
    verl/utils/config.py:validate_config, no rollout replica (verl/workers/rollout/replica.py), and 0.5.0's
    MegatronWorker is in verl/single_controller/base/megatron/worker.py: the packs cited 0.6.1's files. Their checks
    are in RayPPOTrainer._validate_config (and the workers' __init__)."""
    moved = ("verl/workers/config/", "verl/utils/config.py", "verl/workers/rollout/replica.py", "vLLMHttpServerBase",
             "SGLangHttpServer", "verl/workers/megatron_workers.py:MegatronWorker")
    for part in ("fsdp", "megatron"):
        rules = {r.id: r for r in VV.ruleset_for(version, part).rules}
        assert [(i, r.source) for i, r in rules.items() if any(m in r.source for m in moved)] == []
        assert rules["verl.actor.micro_exactly_one"].source == f"{VV.RAY_VALIDATE} (check_mutually_exclusive)"
        # the rollout's expert / data / pipeline parallel sizes are no keys of these releases' config
        assert not {"verl.rollout.ep_equals_tp_dp", "verl.rollout.pp_unsupported",
                    "verl.vllm.dp_needs_tp_within_node"} & set(rules)
    megatron = {r.id: r for r in VV.ruleset_for(version, "megatron").rules}
    assert ("verl.megatron.driver_batch_divisible" in megatron) == (version == "0.5.0")  # dp * micro came in 0.4


def test_the_0_3_to_0_5_driver_checks_the_batch_with_dynamic_batch_too():
    """RayPPOTrainer._validate_config of 0.3.0.post1-0.5.0 asserts train_batch_size*rollout.n against the GPUs before
    anything else, use_dynamic_bsz or not (0.6.1's validate_config only without it)."""
    dyn = ["trainer.n_gpus_per_node=8", "data.train_batch_size=12", f"{AR}.rollout.n=1",
           f"{AR}.actor.ppo_mini_batch_size=12", f"{AR}.actor.use_dynamic_bsz=True",
           f"{AR}.actor.ppo_max_token_len_per_gpu=16384"]
    rule = "verl.driver.batch_divisible_by_gpus"
    for version in ("0.5.0", "0.3.0"):
        r = api.check(dyn, framework=f"verl=={version}")
        assert rule in _ids(r) and "12*1 = 12" in next(v.message for v in r.violations if v.rule == rule)
    assert rule not in _ids(api.check(dyn, framework="verl==0.6.1"))
    # on Megatron, 0.5.0 multiplies dp by the per-GPU micro batch, dynamic batch or not (None: a TypeError)
    mega = dyn + [f"{AR}.actor.strategy=megatron", "data.train_batch_size=16", f"{AR}.actor.ppo_mini_batch_size=16"]
    assert "verl.megatron.driver_micro_per_gpu_required" in _ids(api.check(mega, framework="verl==0.5.0"))
    assert "verl.megatron.driver_micro_per_gpu_required" not in _ids(api.check(mega, framework="verl==0.6.1"))


# ----------------------------------------------------------------------------- which version
@pytest.mark.parametrize("keys,version", [
    (["trainer.use_legacy_worker_impl=auto"], "0.7.1"),
    (["critic.model.fsdp_config.param_offload=True"], "0.7.1"),
    ([f"{AR}.rollout.mode=sync"], "0.6.1"),
    (["critic.fsdp.param_offload=True"], "0.9.1"),
    ([f"{AR}.rollout.skip.enable=True"], "0.8.0"),
    (["trainer.use_v1=True"], "0.9.1"),
    ([], None),
])
def test_the_version_is_read_from_keys_only_some_versions_have(keys, version):
    flat = dict(k.split("=", 1) for k in keys)
    found, why = VV.detect(flat)
    assert found == version, why
    rep = api.check(FAQ + keys)
    assert rep.version == (version or VV.NEWEST)
    assert any("checked with the verl" in n for n in rep.notes)


def test_keys_of_no_single_version_fall_back_to_the_newest_and_say_why():
    rep = api.check(FAQ + ["trainer.use_legacy_worker_impl=auto", "trainer.use_v1=True"])
    assert rep.version == VV.NEWEST and any("no single version" in n for n in rep.notes)


def test_versions_named_on_the_command_line():
    proc = run("check", "--framework", "verl==0.7.0", "--json", "--", *FAQ)
    out = json.loads(proc.stdout)
    assert out["rules_version"] == "0.7.1" and any("0.7.0 is checked with the rules of 0.7.1" in n for n in out["notes"])
    older = json.loads(run("check", "--framework", "verl==0.4.1", "--json", "--", *FAQ).stdout)
    assert older["rules_version"] == "0.5.0" and any("0.4.1 is checked with the rules of 0.5.0" in n for n in older["notes"])
    bad = run("check", "--framework", "verl==0.4.1rc1", "--", *FAQ)
    assert bad.returncode == 2 and "0.9.1, 0.8.0, 0.7.1, 0.6.1, 0.5.0, 0.3.0, 0.2.0, 0.1.0" in bad.stderr
    assert get_framework("verl-megatron==0.8.0").ruleset.version == "0.8.0"


def test_the_legacy_message_is_explained_and_fixed_with_the_legacy_rules():
    """The seed's FAQ line is the legacy workers' message: explained with their rules, and the fix changes the
    micro batch (a mini batch that is not a divisor of the train batch would leave a short last mini batch)."""
    rep = api.explain("AssertionError: normalized ppo_mini_batch_size should be divisible by "
                      "ppo_micro_batch_size_per_gpu", config=FAQ, time_limit_s=10)
    assert [r.rule for r in rep.rules] == ["verl.legacy.mini_divisible_by_micro"]
    assert rep.check.version == "0.7.1" and rep.fix.after is not None
    assert [k for k, _, _ in rep.fix.native_changes] == [f"{AR}.actor.ppo_micro_batch_size_per_gpu"]


@pytest.mark.parametrize("version", ["0.2.0", "0.1.0", "0.3.0"])
def test_fix_proposes_no_memory_feature_the_release_lacks(version):
    """verl's entropy chunking and entropy checkpointing keys came in 0.4.1 (its ppo_trainer.yaml; the 0.2.0.post2,
    0.3.0.post1 and 0.4.0 wheels have neither): fix must not propose them for an older release's config, whose Hydra
    struct config would refuse them, nor price them."""
    rs = get_framework(f"verl=={version}").ruleset
    assert "entropy_chunking" not in rs.variables and "entropy_checkpointing" not in rs.variables
    res = run("fix", "--framework", f"verl=={version}", "--gpu", "a100-80gb", "--model", "qwen2.5-7b",
              "tests/data/scripts/verl/run_qwen2-7b.sh")
    assert res.returncode in (0, 1), res.stdout + res.stderr
    assert "entropy_from_logits_with_chunking" not in res.stdout and "entropy_checkpointing" not in res.stdout


def test_recommend_exports_the_keys_of_the_version():
    """The critic's Ulysses size is critic.ulysses_sequence_parallel_size on the legacy workers, critic.fsdp.* on 0.8+."""
    old, new = get_framework("verl==0.7.1"), get_framework("verl==0.8.0")
    assert old.native_key("critic_sp") == "critic.ulysses_sequence_parallel_size"
    assert new.native_key("critic_sp") == "critic.fsdp.ulysses_sequence_parallel_size"
    sol = {**{n: s.default for n, s in old.ruleset.variables.items()}, "need_critic": True, "critic_sp": 2,
           "actor_micro_per_gpu": 2, "critic_micro_per_gpu": 2}
    assert "critic.ulysses_sequence_parallel_size=2" in old.export(sol)


# ----------------------------------------------------------------------------- the cost model follows the version
# A PPO run with a critic: micro 4 samples of 1,024 + 512 tokens on every GPU, no dynamic batching.
PPO = ["trainer.n_gpus_per_node=8", "data.train_batch_size=256", "data.max_prompt_length=1024",
       "data.max_response_length=512", "algorithm.adv_estimator=gae", f"{AR}.actor.ppo_mini_batch_size=64",
       f"{AR}.actor.ppo_micro_batch_size_per_gpu=4", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=4",
       "critic.ppo_micro_batch_size_per_gpu=4", f"{AR}.model.use_remove_padding=True"]


def _critic_plan(framework: str, extra: list[str] = ()):
    from rlbatch_solver.calibration import make_run

    run = make_run(framework, PPO + list(extra), gpu="h100", model="qwen2.5-7b", gpus=None)
    return run.spec.plan(run.values, "critic_update")


@pytest.mark.parametrize("backend", ["verl", "verl-megatron"])
def test_the_critic_trains_as_each_version_batches_it(backend):
    """0.9.1's critic engine packs by critic.ppo_infer_max_token_len_per_gpu (32768 by default), 0.8.0's by
    critic.ppo_max_token_len_per_gpu; the legacy critic of 0.7.1 and 0.6.1 splits by its micro batch (4 samples
    here) unless critic.use_dynamic_bsz (verl/workers/critic/dp_critic.py, megatron_critic.py update_critic)."""
    newest = _critic_plan(backend)
    assert newest.train_token_budget == 32768
    assert _critic_plan(f"{backend}==0.8.0", ["critic.ppo_max_token_len_per_gpu=12288"]).train_token_budget == 12288
    for version in ("0.7.1", "0.6.1"):
        legacy = _critic_plan(f"{backend}=={version}")
        assert legacy.train_token_budget is None and legacy.train_micro == 4
        dynamic = _critic_plan(f"{backend}=={version}", ["critic.use_dynamic_bsz=True",
                                                         "critic.ppo_max_token_len_per_gpu=12288"])
        assert dynamic.train_token_budget == 12288


def test_the_legacy_megatron_critic_and_reference_run_on_the_actors_layout():
    """0.7.1's CriticWorker initialises megatron-core's groups only when torch.distributed is not up yet: sharing the
    actor's process, it is built on the actor's TP (verl/workers/megatron_workers.py:CriticWorker.__init__)."""
    layout = [f"{AR}.actor.megatron.tensor_model_parallel_size=2", "critic.megatron.tensor_model_parallel_size=1",
              f"{AR}.ref.megatron.tensor_model_parallel_size=1"]
    assert _critic_plan("verl-megatron==0.7.1", layout).tp == 2
    assert _critic_plan("verl-megatron", layout).tp == 1  # 0.9.1 reads the critic's own (and a rule demands equal)
    from rlbatch_solver.calibration import make_run

    run = make_run("verl-megatron==0.7.1", PPO + layout, gpu="h100", model="qwen2.5-7b", gpus=None)
    assert run.spec.plan(run.values, "ref").tp == 2


def test_a_legacy_ppo_run_checks_its_critic_at_its_micro_batch():
    """0.9.1 packs the critic's micro batches up to 32768 tokens (capped by a GPU's share of the mini batch, 8 x
    1,536 here); the legacy workers hold 4 x 1,536 tokens at a time: fewer activations. Their two micro batches per
    mini batch keep the first one's gradients through the second backward; 0.9.1's single micro batch starts its
    backward without any (verl zeroes them before each mini batch)."""
    new = api.check(PPO, framework="verl", gpu="h100", model="qwen2.5-7b").memory.phases["critic_update"]
    old = api.check(PPO, framework="verl==0.7.1", gpu="h100", model="qwen2.5-7b").memory.phases["critic_update"]
    act = "activations (grad ckpt)"
    assert old[act] == pytest.approx(new[act] / 2, abs=2)
    assert old["gradients (sharded)"] == old["params (sharded)"] and "gradients (sharded)" not in new


@pytest.mark.parametrize("framework,search", [
    ("verl==0.7.1", {"critic.ppo_micro_batch_size_per_gpu": [1, 2, 4], "critic.use_dynamic_bsz": [False, True],
                     "critic.ppo_max_token_len_per_gpu": [4096, 8192]}),
    ("verl==0.8.0", {"critic.ppo_micro_batch_size_per_gpu": [1, 2], "critic.ppo_max_token_len_per_gpu": [4096, 8192]}),
    ("verl-megatron==0.7.1", {"critic.ppo_micro_batch_size_per_gpu": [1, 2],
                              f"{AR}.actor.megatron.tensor_model_parallel_size": [1, 2],
                              "critic.megatron.tensor_model_parallel_size": [1, 2]}),
])
def test_the_solver_tables_read_what_each_versions_critic_reads(framework, search):
    """The solver's per-phase tables equal the full cost model in the older packs too: a table that missed the
    critic's batching switch or (legacy Megatron) the actor's layout would differ."""
    from bruteforce import assert_tables_match_cost_model
    from rlbatch_solver.api import prepare
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework=framework, gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algorithm="ppo", n=4,
                  prompt_length=512, response_length=1024,
                  search={"data.train_batch_size": [16, 32], f"{AR}.actor.ppo_mini_batch_size": [8, 16],
                          f"{AR}.actor.ppo_micro_batch_size_per_gpu": [1, 2], **search},
                  fixed={f"{AR}.rollout.gpu_memory_utilization": 0.5})
    _, _, _, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=25, seed=7, label=framework, terms=terms)
