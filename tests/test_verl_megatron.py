"""verl 0.9.1 on the Megatron backend: verl's own example configs, known-broken cases, the backend switch,
the ``verl-megatron`` search and export."""

from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.docs import rules_page
from rlbatch_solver.rules.base import Stage
from rlbatch_solver.frameworks.verl.rules_megatron import ANY_RULESET, MEGATRON_RULESET

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = yaml.safe_load((ROOT / "tests" / "data" / "verl" / "megatron_examples.yaml").read_text())
AR = "actor_rollout_ref"
MG = f"{AR}.actor.megatron"
STAGE_ORDER = list(Stage)


def by_name(name):
    return next(c for c in EXAMPLES if c["name"] == name)


def rules_of(report, stage=None):
    return {v.rule for v in report.violations if stage is None or v.stage == stage}


def replace(cfg, **changes):
    """``cfg`` with ``key=value`` overrides replaced (value None drops the key); a key the config adds with a leading
    ``+`` keeps it (Hydra refuses a new key under a struct node without it)."""
    plus = {c.lstrip("+").partition("=")[0] for c in cfg if c.startswith("+")}
    names = {k.lstrip("+") for k in changes}
    out = [c for c in cfg if c.lstrip("+").partition("=")[0] not in names]
    out += [f"{'+' if k in plus else ''}{k}={v}" for k, v in changes.items() if v is not None]
    return out


def first_stage(report):
    return min((v.stage for v in report.violations if v.severity.value == "error"), key=STAGE_ORDER.index)


@pytest.mark.parametrize("case", EXAMPLES, ids=[c["name"] for c in EXAMPLES])
def test_verl_megatron_examples(case):
    r = rb.check(case["overrides"], model=case["model"])
    assert r.values["megatron"] is True  # the pasted config selects the Megatron rules
    if case["expect"] == "valid":
        assert r.valid and not r.violations, [v.message for v in r.violations]
    else:
        assert not r.valid
        assert rules_of(r) == set(case["expect"]["invalid"]), [v.message for v in r.violations]
        assert first_stage(r).value == case["expect"]["stage"]
    # the Megatron-only framework agrees
    r2 = rb.check(case["overrides"], model=case["model"], framework="verl-megatron")
    assert [(v.rule, v.message) for v in r2.violations] == [(v.rule, v.message) for v in r.violations]


BASE = by_name("grpo_qwen2_7b_math_megatron")["overrides"]  # TP2 PP2 on 8 GPUs, B 1024, n 5, mini 256, micro 4


def parallel(tp=None, pp=None, **more):
    """Actor and ref sizes together (the ref follows the actor in every example)."""
    changes = dict(more)
    for key, v in (("tensor_model_parallel_size", tp), ("pipeline_model_parallel_size", pp)):
        if v is not None:
            changes[f"{MG}.{key}"] = v
            changes[f"{AR}.ref.megatron.{key}"] = v
    return replace(BASE, **changes)


def test_gpus_not_divisible_by_tp_pp_cp():
    r = rb.check(parallel(**{"trainer.n_gpus_per_node": 6}), model="qwen2.5-7b")
    assert "verl.megatron.driver_gpus_divisible_by_model_parallel" in rules_of(r, Stage.DRIVER)
    msg = next(v.message for v in r.violations if v.rule == "verl.megatron.driver_gpus_divisible_by_model_parallel")
    assert "= 6" in msg and "2*2*1 = 4" in msg
    assert "verl.driver.batch_divisible_by_gpus" not in rules_of(r)  # the FSDP rule is off


def test_gpus_not_divisible_by_tp_pp_cp_with_dynamic_batch_fails_at_worker_init():
    r = rb.check(parallel(**{"trainer.n_gpus_per_node": 6, f"{AR}.actor.use_dynamic_bsz": True}), model="qwen2.5-7b")
    assert "verl.megatron.gpus_divisible_by_model_parallel" in rules_of(r, Stage.WORKER_INIT)
    assert not rules_of(r, Stage.DRIVER)


def test_heads_not_divisible_by_tp():
    r = rb.check(parallel(tp=8, pp=1), model="qwen2.5-7b")  # 28 heads, 4 kv heads
    assert rules_of(r) == {"verl.megatron.heads_divisible_by_tp"}
    assert r.violations[0].stage == Stage.WORKER_INIT
    assert "28" in r.violations[0].message and "= 8" in r.violations[0].message
    assert "transformer_config.py" in r.violations[0].source


def test_query_groups_vs_tp():
    r = rb.check(parallel(tp=8, pp=1), model="qwen3-8b")  # 32 heads, 8 kv heads: fine
    assert r.valid
    r = rb.check(parallel(tp=8, pp=1), model="qwen2.5-1.5b")  # 12 heads, 2 kv heads
    assert {"verl.megatron.heads_divisible_by_tp"} <= rules_of(r)
    r = rb.check(parallel(tp=3, pp=1, **{"trainer.n_gpus_per_node": 6, f"{AR}.rollout.tensor_model_parallel_size": 3}),
                 model="qwen2.5-7b")  # 28 heads
    assert "verl.megatron.query_groups_vs_tp" in rules_of(r)


def test_layers_not_divisible_by_pp():
    r = rb.check(parallel(tp=1, pp=8), model="qwen2.5-7b")  # 28 layers over 8 stages
    assert rules_of(r) == {"verl.megatron.layers_divisible_by_pp"}
    assert r.violations[0].stage == Stage.WORKER_INIT


def test_layers_not_divisible_by_pp_times_vpp():
    cfg = parallel(**{f"{MG}.virtual_pipeline_model_parallel_size": 4,
                      f"{AR}.ref.megatron.virtual_pipeline_model_parallel_size": 4})
    r = rb.check(cfg, model="qwen2.5-7b")  # 28 layers / PP 2 = 14 per stage, not divisible by VPP 4
    assert rules_of(r) == {"verl.megatron.stage_layers_divisible_by_vpp"}
    assert "leave 14 per stage" in r.violations[0].message and "= 4" in r.violations[0].message
    ok = rb.check(replace(cfg, **{f"{MG}.virtual_pipeline_model_parallel_size": 7,
                                  f"{AR}.ref.megatron.virtual_pipeline_model_parallel_size": 7}), model="qwen2.5-7b")
    assert "verl.megatron.stage_layers_divisible_by_vpp" not in rules_of(ok)


def test_vpp_needs_pp():
    cfg = parallel(tp=2, pp=1, **{f"{MG}.virtual_pipeline_model_parallel_size": 2})
    r = rb.check(cfg, model="qwen2.5-7b")
    assert "verl.megatron.vpp_needs_pp" in rules_of(r, Stage.WORKER_INIT)


def test_vpp_groups_micro_batches_by_pp():
    # TP2 PP4 on 8 GPUs: dp 1; mini 256*5 = 1280 per GPU, micro 256 -> 5 micro batches, not a multiple of PP 4
    cfg = parallel(tp=2, pp=4, **{f"{MG}.virtual_pipeline_model_parallel_size": 7,
                                  f"{AR}.ref.megatron.virtual_pipeline_model_parallel_size": 7,
                                  f"{AR}.actor.ppo_micro_batch_size_per_gpu": 256})
    r = rb.check(cfg, model="qwen2.5-7b")
    assert rules_of(r) == {"verl.megatron.vpp_micro_batches_grouped"}
    assert r.violations[0].stage == Stage.FIRST_STEP
    assert "5" in r.violations[0].message
    # without VPP the same sizes run
    assert rb.check(parallel(tp=2, pp=4, **{f"{AR}.actor.ppo_micro_batch_size_per_gpu": 256}), model="qwen2.5-7b").valid


def test_driver_batch_divisible_by_dp_times_micro():
    r = rb.check(replace(BASE, **{"data.train_batch_size": 1020}), model="qwen2.5-7b")  # 5100 % (2*4)
    assert rules_of(r, Stage.DRIVER) == {"verl.megatron.driver_batch_divisible"}
    msg = next(v.message for v in r.violations if v.rule == "verl.megatron.driver_batch_divisible")
    assert "5100" in msg and "2*4 = 8" in msg


def test_megatron_deprecated_global_micro_fails_at_the_driver():
    cfg = replace(BASE, **{f"{AR}.actor.ppo_micro_batch_size_per_gpu": None, f"{AR}.actor.ppo_micro_batch_size": 8})
    r = rb.check(cfg, model="qwen2.5-7b")
    assert "verl.megatron.driver_micro_per_gpu_required" in rules_of(r, Stage.DRIVER)


def test_experts_divisible_by_ep():
    cfg = by_name("grpo_qwen3moe_30b_megatron_96gb")["overrides"]
    r = rb.check(replace(cfg, **{f"{MG}.expert_model_parallel_size": 3, f"{AR}.ref.megatron.expert_model_parallel_size": 3,
                                 "trainer.n_gpus_per_node": 6, f"{AR}.rollout.tensor_model_parallel_size": 2}),
                 model="qwen3-30b-a3b")  # 128 experts
    assert "verl.megatron.experts_divisible_by_ep" in rules_of(r, Stage.WORKER_INIT)


def test_expert_tensor_parallel_defaults_to_tp():
    cfg = by_name("grpo_qwen3_235b_a22b_megatron_gpu_defaults")["overrides"]
    r = rb.check(cfg, model="qwen3-235b-a22b")
    msg = next(v.message for v in r.violations if v.rule == "verl.megatron.gpus_divisible_by_expert_parallel")
    assert "4*4*8 = 128" in msg
    fixed = replace(cfg, **{f"{MG}.expert_tensor_parallel_size": 1, f"{AR}.ref.megatron.expert_tensor_parallel_size": 1,
                            f"{AR}.rollout.data_parallel_size": 8})
    assert rb.check(fixed, model="qwen3-235b-a22b").valid


def test_first_and_last_stage_layers():
    cfg = by_name("grpo_deepseek_v3_671b_megatron")["overrides"]  # 61 layers, PP 12, 6 on the last stage
    key = f"{MG}.override_transformer_config.num_layers_in_last_pipeline_stage"
    r = rb.check(replace(cfg, **{key: 7}), model="deepseek-v3")  # 54 layers over 11 stages
    assert rules_of(r) == {"verl.megatron.middle_layers_split"}
    assert "54" in r.violations[0].message and "11" in r.violations[0].message
    first = f"+{MG}.override_transformer_config.num_layers_in_first_pipeline_stage"  # a new key: + (Hydra, struct)
    r = rb.check(replace(cfg, **{first: 6}), model="deepseek-v3")  # 49 over 10
    assert rules_of(r) == {"verl.megatron.middle_layers_split"}
    r = rb.check(replace(cfg, **{f"+{MG}.override_transformer_config.account_for_loss_in_pipeline_split": True}),
                 model="deepseek-v3")
    assert rules_of(r) == {"verl.megatron.pp_layout_exclusive"}


def test_ref_and_critic_must_share_the_actor_layout():
    r = rb.check(replace(BASE, **{f"{AR}.ref.megatron.tensor_model_parallel_size": 4}), model="qwen2.5-7b")
    assert rules_of(r) == {"verl.megatron.ref_parallel_matches_actor"}
    assert "4/2/1/1/4/null" in r.violations[0].message and "2/2/1/1/2/null" in r.violations[0].message
    # the ref follows the actor when its sizes are not given
    r = rb.check(replace(BASE, **{f"{AR}.ref.megatron.tensor_model_parallel_size": None,
                                  f"{AR}.ref.megatron.pipeline_model_parallel_size": None}), model="qwen2.5-7b")
    assert r.valid


def test_backend_switch():
    fsdp_cfg = [c for c in BASE if not c.startswith("--config-name")]
    r = rb.check(fsdp_cfg, model="qwen2.5-7b")
    assert r.values["megatron"] is False
    for switch in (["model_engine=megatron"], [f"{AR}.actor.strategy=megatron"],
                   ["--config-name=ppo_megatron_trainer"], ["--config-name", "ppo_megatron_trainer.yaml"],
                   ["--config-name='ppo_megatron_trainer.yaml'"]):
        r = rb.check(fsdp_cfg + switch, model="qwen2.5-7b")
        assert r.values["megatron"] is True, switch
    # FSDP rules stay off for Megatron and the other way round
    r = rb.check(fsdp_cfg + ["model_engine=megatron", f"{AR}.actor.ulysses_sequence_parallel_size=3"], model="qwen2.5-7b")
    assert not any(x.startswith(("verl.fsdp.", "verl.ulysses.")) for x in rules_of(r))
    r = rb.check(fsdp_cfg + [f"{MG}.tensor_model_parallel_size=3"], model="qwen2.5-7b")
    assert not any(x.startswith("verl.megatron.") for x in rules_of(r))
    with pytest.raises(rb.InputError) as exc:
        rb.check(fsdp_cfg + ["model_engine=megatron", f"{AR}.actor.strategy=fsdp"])
    assert exc.value.field == f"{AR}.actor.strategy"
    with pytest.raises(rb.InputError):
        rb.check(fsdp_cfg + [f"{AR}.actor.strategy=veomni"])
    with pytest.raises(rb.InputError):
        rb.check(fsdp_cfg + ["model_engine=dp"], framework="verl-megatron")


def test_megatron_memory_is_predicted_by_verl_megatron():
    """--framework verl with a Megatron config and --gpu points to verl-megatron, which has the cost model
    (tests/test_cost_frameworks.py covers it)."""
    with pytest.raises(rb.InputError) as exc:
        rb.check(BASE, model="qwen2.5-7b", gpu="h100")
    assert "verl-megatron" in str(exc.value)
    report = rb.check(BASE, framework="verl-megatron", model="qwen2.5-7b", gpu="h100")
    assert report.memory is not None and report.memory.phases


def test_enumerate_verl_megatron_searches_layouts_and_exports_megatron_overrides():
    sc = rb.Scenario(
        framework="verl-megatron", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=4, prompt_length=512,
        response_length=512,
        search={"data.train_batch_size": [32, 64], f"{AR}.actor.ppo_mini_batch_size": [16, 32],
                f"{AR}.actor.ppo_micro_batch_size_per_gpu": [2, 4],
                f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": [8],
                f"{AR}.rollout.tensor_model_parallel_size": [2]},
    )
    res = rb.enumerate(sc, time_limit_s=60)
    assert res.complete and res.count > 0
    layouts = {(s["tp"], s["pp"]) for s in res.solutions}
    assert {s[0] for s in layouts} <= {1, 2, 4}  # 28 heads: TP 8 is out
    assert {s[1] for s in layouts} <= {1, 2, 4} and len(layouts) > 2  # 28 layers: PP 1, 2, 4
    fw = get_framework("verl-megatron")
    for sol, native in zip(res.solutions, res.native):
        assert fw.ruleset.check(sol).valid
        assert native[0] == "model_engine=megatron"
        assert any(x.startswith(f"{MG}.tensor_model_parallel_size=") for x in native)
        assert any(x.startswith(f"{AR}.ref.megatron.tensor_model_parallel_size=") for x in native)  # GRPO: KL on
        assert not any("ulysses" in x or "fsdp_config" in x for x in native)
        back = rb.check(native, model="qwen2.5-7b")  # --framework verl reads it back as Megatron
        assert back.valid and back.values["megatron"], (native, [v.message for v in back.violations])


def test_enumerate_verl_megatron_searches_vpp_moe_and_cp_when_asked():
    sc = rb.Scenario(
        framework="verl-megatron", gpus=16, nnodes=2, model="qwen3-30b-a3b", algorithm="dapo", n=8,
        prompt_length=4096, response_length=12288,
        fixed={f"{AR}.actor.use_dynamic_bsz": True, f"{AR}.actor.ppo_max_token_len_per_gpu": 16384,
               f"{AR}.rollout.tensor_model_parallel_size": 4, "data.train_batch_size": 64,
               f"{AR}.actor.ppo_mini_batch_size": 16},
        search={f"{MG}.virtual_pipeline_model_parallel_size": [None, 2, 3],
                f"{MG}.expert_tensor_parallel_size": [None, 1]},
    )
    res = rb.enumerate(sc, time_limit_s=60)
    assert res.complete and res.count > 0
    seen = {(s["tp"], s["pp"], s["cp"], s["ep"], s["etp"], s["vpp"]) for s in res.solutions}
    assert {x[2] for x in seen} == {1, 2} and {x[3] for x in seen} == {1, 2, 4, 8}  # CP (16k tokens), EP (MoE)
    assert {x[5] for x in seen} == {None, 2, 3}
    for tp, pp, cp, ep, etp, vpp in seen:
        assert 16 % (tp * pp * cp) == 0 and 16 % ((etp or tp) * ep * pp) == 0
        assert vpp is None or (pp > 1 and 48 % (pp * vpp) == 0)
    fw = get_framework("verl-megatron")
    for sol in res.solutions[:200]:
        assert fw.ruleset.check(sol).valid


def test_enumerate_verl_framework_refuses_megatron_scenarios():
    sc = rb.Scenario(framework="verl", gpus=8, model="qwen2.5-7b", fixed={"model_engine": "megatron"})
    with pytest.raises(rb.InputError) as exc:
        rb.enumerate(sc)
    assert "verl-megatron" in exc.value.fix


def test_every_megatron_rule_has_id_stage_source_and_numbers():
    for rule in MEGATRON_RULESET.rules + ANY_RULESET.rules:
        assert rule.id.startswith("verl.")
        assert rule.source and isinstance(rule.stage, Stage)
        assert "{" in rule.message, rule.id


def test_rules_doc_is_in_sync():
    assert rules_page(get_framework("verl-megatron")) == (ROOT / "docs" / "rules-verl-megatron.md").read_text()
    assert rules_page(get_framework("verl")) == (ROOT / "docs" / "rules-verl.md").read_text()


def test_fused_kernels_drop_the_logits_tensor():
    """model.use_fused_kernels=True: verl's fused linear cross-entropy replaces the [tokens, vocab] logits in the
    actor's passes; the engine workers (0.9.1) use it for the reference too, the legacy workers (0.6.1) patch the
    actor only; without padding removal the 0.9.1 engine falls back to the logits (cost_megatron.fused_logits)."""
    cfg = replace(parallel(tp=2, pp=1), **{f"{AR}.ref.log_prob_micro_batch_size_per_gpu": 4})
    fused = replace(cfg, **{f"{AR}.model.use_fused_kernels": True})

    def terms(args, framework="verl-megatron"):
        return rb.check(args, framework=framework, model="qwen2.5-7b", gpu="h100").memory.phases

    plain, on = terms(cfg), terms(fused)
    assert on["old_log_prob"]["logits+entropy"] < plain["old_log_prob"]["logits+entropy"] / 50
    assert on["actor_update"]["logits"] < plain["actor_update"]["logits"] / 4  # d_logits slice + lm_head grad
    assert on["ref"]["logits"] < plain["ref"]["logits"] / 50
    legacy = terms(fused, "verl-megatron==0.6.1")
    assert legacy["old_log_prob"]["logits+entropy"] == on["old_log_prob"]["logits+entropy"]
    assert legacy["ref"]["logits"] == terms(cfg, "verl-megatron==0.6.1")["ref"]["logits"]
    padded = terms(replace(fused, **{f"{AR}.model.use_remove_padding": False}))
    assert padded["old_log_prob"]["logits+entropy"] == terms(
        replace(cfg, **{f"{AR}.model.use_remove_padding": False}))["old_log_prob"]["logits+entropy"]


def test_recompute_modules_reach_the_memory_model_and_an_unknown_one_is_refused():
    """override_transformer_config.recompute_modules (megatron-core TransformerConfig.recompute_modules, default
    [core_attn]) is read with selective recompute: on a MoE model "moe" drops each MoE layer's block but its input,
    "moe_act" only the experts' SwiGLU outputs (less), "mlp" nothing (it skips MoE layers); on a dense model "mlp"
    drops the MLP's; full recompute ignores the list. megatron-core refuses a name it does not know, so do we."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.memory import mcore_recompute_drop, model_consts

    moe = model_consts(load_model("qwen3-30b-a3b"))
    dense = model_consts(load_model("qwen2.5-7b"))
    assert mcore_recompute_drop(moe, ["core_attn"]) == (0, 0) == mcore_recompute_drop(moe, ["mlp"])
    whole, act = mcore_recompute_drop(moe, ["moe"])[0], mcore_recompute_drop(moe, ["moe_act"])[0]
    assert 0 < act < whole == mcore_recompute_drop(moe, ["moe", "moe_act"])[0]
    assert mcore_recompute_drop(dense, ["mlp"])[0] > 0 == mcore_recompute_drop(dense, ["moe", "moe_act"])[0]

    key = f"{MG}.override_transformer_config"
    cfg = parallel(pp=1, **{f"+{key}.recompute_granularity": "selective"})  # one stage: its activations term

    def update_activations(*extra):
        r = rb.check(cfg + list(extra), framework="verl-megatron", model="qwen2.5-7b", gpu="h100")
        return r.memory.phases["actor_update"]["activations"]

    default = update_activations()
    assert update_activations(f"{key}.recompute_modules=[core_attn]") == default
    assert update_activations(f"{key}.recompute_modules=[core_attn,mlp]") < default
    full = [f"{key}.recompute_granularity=full", f"{key}.recompute_method=uniform", f"{key}.recompute_num_layers=1"]
    r = rb.check(cfg + full, framework="verl-megatron", model="qwen2.5-7b", gpu="h100")
    r2 = rb.check(cfg + full + [f"{key}.recompute_modules=[mlp]"], framework="verl-megatron", model="qwen2.5-7b",
                  gpu="h100")
    assert r.memory.peaks == r2.memory.peaks
    with pytest.raises(rb.InputError) as exc:
        rb.check(cfg + [f"{key}.recompute_modules=[core_attn,attention]"], framework="verl-megatron",
                 model="qwen2.5-7b", gpu="h100")
    assert exc.value.field == f"{key}.recompute_modules" and "attention" in str(exc.value)


@pytest.mark.parametrize("path, read", [(["--config-path=config"], True), (["--config-path", "./config/"], True),
                                        (["--config-path=/home/me/cfg"], False)])
def test_hydra_config_path_at_verls_own_folder_is_not_reported_ignored(path, read):
    """verl's Megatron examples start `main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml'`: the
    check said "ignored 1 tokens that are not key=value: --config-path=config", the folder of the yaml it checks
    against. A folder of the user's own stays reported (its yaml is not read)."""
    from rlbatch_solver.frameworks.verl.fsdp import parse_verl_tokens

    flat, ignored = parse_verl_tokens(path + ["--config-name=ppo_megatron_trainer", "data.train_batch_size=64"])
    assert flat["model_engine"] == "megatron" and flat["data.train_batch_size"] == 64
    assert (ignored == []) is read, ignored
    flat, ignored = parse_verl_tokens(path + ["data.train_batch_size=64"])
    assert (ignored == []) is read, ignored


@pytest.mark.parametrize("version,selects", [("0.9.1", True), ("0.8.0", True), ("0.7.1", False), ("0.6.1", False),
                                             ("0.5.0", False)])
def test_the_printed_command_names_model_engine_only_where_the_megatron_config_has_it(version, selects):
    """The printed command starts main_ppo with --config-name=ppo_megatron_trainer.yaml. From 0.8.0 that file's defaults
    are ppo_trainer with "override model_engine: megatron", so model_engine=megatron is accepted; 0.7.1's file lists
    megatron_actor itself and no model_engine (Hydra: "Could not override 'model_engine'. No match in the defaults
    list"), and 0.6.1 and older have no model_engine group at all ("Key 'model_engine' is not in struct"): printed
    there, the command stops at launch."""
    fw = get_framework(f"verl-megatron=={version}")
    sol = {**{n: s.default for n, s in fw.ruleset.variables.items()}, "megatron": True}
    out = fw.export(sol)
    assert ("model_engine=megatron" in out) is selects


def _example_terms(*env: str) -> dict:
    """Per-phase terms (MiB) of verl v0.9.0's examples/ppo_trainer/run_qwen3_8b_megatron.sh on H100."""
    import json

    from typer.testing import CliRunner

    from rlbatch_solver.cli import app

    script = Path(__file__).resolve().parent / "data" / "scripts" / "verl-megatron" / "ppo_run_qwen3_8b_megatron.sh"
    out = CliRunner().invoke(app, ["check", "--json", "--gpu", "h100", str(script), *env]).output
    phases = json.loads(out[out.index("{"):])["memory"]["phases"]
    return {name: phase["terms_mib"] for name, phase in phases.items()}


def test_qwen3_8b_ppo_example_terms_follow_verl_0_9_code():
    """verl v0.9.0's Megatron PPO example (Qwen3-8B, actor and critic TP 2 PP 2 on 8 GPUs, dynamic batching at 24576
    tokens per GPU, no recompute) as verl 0.9.0 and 0.9.1 run it, term by term:

    - the critic trains at critic.ppo_infer_max_token_len_per_gpu (CriticConfig's default 32768; no yaml sets it): the
      v1 trainer writes it into both the engine's training and inference budgets (trainer/ppo/v1/trainer_base.py
      PPOTrainer, "define critic class"), so the script's critic.ppo_max_token_len_per_gpu=24576 is not read there;
      the actor trains at its own actor.ppo_max_token_len_per_gpu (workers/engine_workers.py). The engine scales a
      budget by the context-parallel size only (workers/engine/utils.py prepare_micro_batches, sp_size =
      context_parallel_size), not by TP or PP: the critic's micro batches are split under 32768 tokens, the actor's
      under 24576.
    - the critic's output layer is a 1-wide value head (models/mcore/bridge.py LinearForLastLayer): no logits term.
    - log-probs and entropy work on the vocabulary-parallel logits, vocab / TP columns a GPU
      (workers/engine/megatron/transformer_impl.py _lm_head_logits_processor: the bf16 logits, their clone for the
      entropy, vocab_parallel_entropy's fp32 work): 8 B per logit of 24576 tokens x 151936 / 2.
    - no recompute (engine/megatron.yaml recompute_granularity: null) and 1F1B (megatron-core
      forward_backward_pipelining_without_interleaving: stage 0 runs pp - 1 warm-up forwards): PP stage 0 holds two
      micro batches of its 18 layers, as many layer-passes as PP 1's one micro batch of 36 (less the final norm's
      output, which only the last stage keeps)."""
    t = _example_terms()
    pp_act = "activations (micro batches in flight on a PP stage)"
    actor, critic = t["actor_update"][pp_act], t["critic_update"][pp_act]
    # at the limits every sequence is 3,072 tokens and a rank's mini batch holds 128 of them: verl 0.9.0's
    # rearrange_micro_batches makes ceil(128 x 3072 / budget) micro batches balanced by Karmarkar-Karp, the largest of
    # ceil(128 / k) sequences (memory.balanced_split_tokens): 8 at 24,576 (k 16), 11 at 32,768 (k 12)
    assert critic / actor == pytest.approx(11 * 3072 / (8 * 3072), rel=1e-3)
    assert not any("logits" in name for name in t["critic_update"])
    assert t["old_log_prob"]["logits+entropy"] == pytest.approx(24576 * 151936 / 2 * 8 / 2**20, rel=1e-3)
    tail = 24576 * (4 + 2) * 4096 / 2**20  # fp32 norm input + bf16 output per token, h = 4096
    flat = _example_terms("ACTOR_PP=1", "CRITIC_PP=1")
    assert actor == pytest.approx(flat["actor_update"]["activations"] - tail, rel=1e-3)


def test_a_pipeline_stage_prices_its_own_dense_and_moe_layers():
    """megatron-core builds each pipeline stage from the moe_layer_freq pattern sliced by the stage's layer offset
    (models/gpt/gpt_layer_specs.py get_gpt_decoder_block_spec, transformer/transformer_layer.py
    get_transformer_layer_offset; verl models/mcore/config_converter.py hf_to_mcore_config_dpskv3 sets the first
    first_k_dense_replace entries to 0). On verl's DeepSeek-V3 example for 512 H20 (PP 16, 3 layers on the first stage,
    EP 32) the first stage holds the three dense layers and no routed expert; the second holds four MoE layers, all 8
    of each layer's 256 experts that its EP rank owns, and 15 micro batches of them (1F1B)."""
    import memory_corpus as mc_corpus
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.memory import T_ACT_PP, _shard_params, model_consts, stage_layer_bounds

    card = load_model("deepseek-v3")
    mc = model_consts(card)
    split = (3.0,) + (4.0,) * 14 + (2.0,)
    per_moe_layer = card.num_experts * 3 * card.hidden_size * card.moe_intermediate_size
    # the stage's own MoE layers, one count for its parameters and its activations
    bounds = stage_layer_bounds(mc, split)
    assert [mc.stage_moe_layers(bounds, i) for i in (0, 1, 15)] == [0, 4, 2]
    assert mc.moe_layers == sum(mc.stage_moe_layers(bounds, i) for i in range(16)) == card.num_hidden_layers - 3
    dense0, routed0 = _shard_params(mc, 1, 16, 32, 1, False, split, 0)
    assert routed0 == 0
    assert dense0 == pytest.approx(mc.embed + sum(card.layer_params(i) for i in range(3)), rel=0.01)
    dense1, routed1 = _shard_params(mc, 1, 16, 32, 1, False, split, 1)
    assert routed1 == 4 * per_moe_layer / 32
    assert dense1 == pytest.approx(sum(card.layer_params(i) for i in range(3, 7)) - 4 * per_moe_layer, rel=0.01)
    # one stage, every layer: the split changes nothing
    assert sum(_shard_params(mc, 1, 1, 32, 1, False, None, None)) == pytest.approx(
        (mc.params - mc.routed_expert_params) + mc.routed_expert_params / 32)

    case = next(c for c in mc_corpus.cases() if c.name == "verl-megatron_example_deepseek_v3_grpo_512xh20")
    r = rb.check(case.args, framework=case.framework, gpus=case.gpus, model=case.model, gpu=case.gpu)
    terms = r.memory.phases["actor_update"]  # MiB
    # micro batch 1 at the maximum lengths (2,048 + 4,096 tokens), no recompute, TP 1
    assert terms[T_ACT_PP] == pytest.approx(15 * 6144 * 4 * mc.act_layer_mcore[1] / 2**20, abs=1)
    assert mc.act_layer_mcore[0] < mc.act_all_layers_mcore / mc.layers < mc.act_layer_mcore[1]


def test_an_interleaved_pipeline_prices_the_average_layer_for_the_actor_the_reference_and_the_step_time():
    """With VPP a stage holds every PP-th chunk of layers (megatron-core transformer_layer.py
    get_transformer_layer_offset with a virtual rank), not one run of them, so the dense/MoE kind of a contiguous
    split does not apply. verl's DeepSeek-V3 example (PP 16, 3 dense layers first) with VPP 2: the first stage's
    activations and states are the average layer's times its layers (with VPP 1: its three dense layers, no routed
    expert), and the reference model's weights and the update's gradient sync read the same layout as the actor's."""
    import dataclasses

    import memory_corpus as mc_corpus
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.commands.common import read_config, read_inputs
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import (_ref_param_bytes, _shard_params, megatron_layer_activation_bytes,
                                                 megatron_shard_params, megatron_stage_activation_bytes,
                                                 megatron_stage_layers, model_consts)
    from rlbatch_solver.costmodel.time import _grad_sync_and_adam

    case = next(c for c in mc_corpus.cases() if c.name == "verl-megatron_example_deepseek_v3_grpo_512xh20")
    fw = get_framework(case.framework)
    flat, _ = read_config(fw, case.args)
    card, values = read_inputs(fw, flat, gpus=case.gpus, model=case.model, gpu=case.gpu, extra_gpus=None)
    plain = fw.cost_spec(card, load_gpu(case.gpu)).plan(values, "actor_update")
    assert plain.pp == 16 and max(1, plain.vpp) == 1
    vpp = dataclasses.replace(plain, vpp=2)
    mc = model_consts(card)
    split = megatron_stage_layers(vpp, mc.layers)
    assert split == megatron_stage_layers(plain, mc.layers) and split[0] == 3
    # activations: the first stage's three dense layers alone under VPP 1, the average layer's under VPP 2
    average = megatron_layer_activation_bytes(vpp, mc) * split[0]
    assert megatron_stage_activation_bytes(vpp, mc, split, 0) == pytest.approx(average)
    assert megatron_stage_activation_bytes(plain, mc, split, 0) < 0.9 * megatron_layer_activation_bytes(plain, mc) * 3
    # states: the even spread of the stage's layers (routed experts too) under VPP 2
    tp, pp, ep, etp = plain.tp, plain.pp, plain.ep, plain.etp or plain.tp
    spread = _shard_params(mc, tp, pp, ep, etp, False, tuple(split), 0, False)
    assert megatron_shard_params(mc, tp, pp, ep, etp, False, vpp, 0) == spread and spread[1] > 0
    assert megatron_shard_params(mc, tp, pp, ep, etp, False, plain, 0)[1] == 0
    # the reference model's weights and the step's gradient sync follow the actor's layout (VPP included)
    for plan in (plain, vpp):
        most = sum(megatron_shard_params(mc, tp, pp, ep, etp, False, plan))
        assert _ref_param_bytes(plan, mc) == pytest.approx(C.REF_PARAM_BYTES * most)
    assert _ref_param_bytes(plain, mc) != pytest.approx(_ref_param_bytes(vpp, mc))
    assert _grad_sync_and_adam(plain, mc, mc.params, False) != pytest.approx(_grad_sync_and_adam(vpp, mc, mc.params,
                                                                                                   False))
