"""Megatron's pipeline split in the memory model, and the three memory verdicts (fits / tight / no).

The tight band: a peak above the usable memory (capacity less the whole safety margin) but within the
capacity less its fixed part is a tolerated break: `check` warns and exits 0, `fix` repairs it, and the
solver's answers keep the whole margin (docs/cost-model.md section 3).
"""

from __future__ import annotations

import math

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.cli import app
from rlbatch_solver.commands.common import read_config, read_inputs
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.launch_script import read_launch_script
from rlbatch_solver.costmodel import constants as C
from rlbatch_solver.costmodel.memory import (
    T_ACT_PP, T_GRADS, T_PARAMS, estimate_memory, megatron_layer_activation_bytes, megatron_shard_params,
    megatron_stage_layers, model_consts)
from rlbatch_solver.costmodel.plan import Plan
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.rules.base import Rule, RuleSet, Severity, VarSpec
from rlbatch_solver.rules.expr import IntVar
from rlbatch_solver.solver.model import enumerate_solutions

SCRIPTS = Path(__file__).resolve().parent / "data" / "scripts"
Q235 = SCRIPTS / "verl-megatron" / "run_qwen3-235b_megatron_96gb.sh"
Q30 = SCRIPTS / "verl-megatron" / "run_qwen3moe-30b_megatron_96gb.sh"


# ----------------------------------------------------------------------------- pipeline split
def _layout(pp: int, **kw) -> SimpleNamespace:
    """The fields megatron_stage_layers and megatron_shard_params read."""
    base = dict(pp=pp, vpp=1, pp_account_embedding=False, pp_account_loss=False, pp_first_layers=None,
                pp_last_layers=None)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("kw, expected", [
    ({}, [94 / 8] * 8),  # no accounting: 94 does not divide (the rules say so); spread evenly
    ({"pp_account_embedding": True, "pp_account_loss": True}, [11] + [12] * 6 + [11]),
    ({"pp_account_embedding": True}, [11.875 - 1] + [11.875] * 7),
    ({"pp_first_layers": 10, "pp_last_layers": 12}, [10] + [12] * 6 + [12]),
    ({"pp_first_layers": 4}, [4] + [90 / 7] * 7),
])
def test_stage_layers_follow_megatron_core_split(kw, expected):
    split = megatron_stage_layers(_layout(8, **kw), 94)
    assert split == pytest.approx(expected) and sum(split) == pytest.approx(94)


def test_one_stage_holds_every_layer():
    assert megatron_stage_layers(_layout(1, pp_account_embedding=True), 94) == [94]


def test_stage_params_hold_the_embedding_first_and_the_head_last():
    card = load_model("qwen3-235b-a22b")
    mc = model_consts(card)
    plan = _layout(8, pp_account_embedding=True, pp_account_loss=True)
    dense = [megatron_shard_params(mc, 4, 8, 4, 1, plan=plan, stage=i)[0] for i in range(8)]
    layer = (mc.params - mc.embed - mc.lm_head - mc.routed_expert_params) / mc.layers / 4
    assert dense[0] == pytest.approx((11 * layer * 4 + mc.embed) / 4)
    assert dense[3] == pytest.approx(12 * layer)
    assert dense[7] == pytest.approx((11 * layer * 4 + mc.lm_head) / 4)
    # the most loaded stage (stage=None) is the largest of them, experts included
    most = megatron_shard_params(mc, 4, 8, 4, 1, plan=plan)
    assert sum(most) == pytest.approx(max(sum(megatron_shard_params(mc, 4, 8, 4, 1, plan=plan, stage=i))
                                          for i in range(8)))


def _plan_235b(**changes) -> Plan:
    """The actor update's plan of the published 235B script on H20 (its own values), with ``changes``."""
    fw = get_framework("verl-megatron")
    script = read_launch_script(Q235)
    flat, _ = read_config(fw, script.args)
    card, values = read_inputs(fw, flat, gpus=script.gpus, model="qwen3-235b-a22b", gpu="h20",
                                extra_gpus=None)
    plan = fw.cost_spec(card, load_gpu("h20")).plan(values, "actor_update")
    assert plan.pp == 8 and plan.pp_account_embedding and plan.pp_account_loss and plan.train_token_budget == 11680
    return dataclasses.replace(plan, **changes)


def test_235b_update_peaks_on_stage_1_with_its_own_layers_and_states():
    """Stage 0 holds 8 micro batches of 11 layers, stage 1 holds 7 of 12: 88 vs 84 layer-micro-batches, but
    stage 1 also holds a decoder layer more of params and grads than stage 0's embedding: the larger sum counts."""
    plan = _plan_235b()
    mc = model_consts(plan.model)
    terms = estimate_memory(plan).phases["actor_update"]
    per_layer = megatron_layer_activation_bytes(plan, mc)
    act = {i: 11680 * per_layer * n * min(8 - i, 8) for i, n in enumerate([11] + [12] * 6)}
    dense, expert = megatron_shard_params(mc, 4, 8, 4, 1, plan=plan, stage=1)
    assert terms[T_ACT_PP] == pytest.approx(act[1])
    assert terms[T_PARAMS] == pytest.approx(C.BF16 * (dense + expert))
    assert terms[T_GRADS] == pytest.approx(C.FP32 * (dense + expert))
    stage0 = act[0] + (C.BF16 + C.FP32) * sum(megatron_shard_params(mc, 4, 8, 4, 1, plan=plan, stage=0))
    assert terms[T_ACT_PP] + terms[T_PARAMS] + terms[T_GRADS] > stage0


def test_accounting_the_embedding_and_loss_lowers_the_235b_update_peak():
    even = estimate_memory(_plan_235b(pp_account_embedding=False, pp_account_loss=False)).peak("actor_update")
    split = estimate_memory(_plan_235b()).peak("actor_update")
    assert split < even - 5 * 2**30  # one decoder layer fewer in flight on the busiest stage, and its states


# ----------------------------------------------------------------------------- tolerated breaks
def _toy_ruleset() -> RuleSet:
    x = IntVar("x")
    rule = Rule("toy.memory.x", x <= 10, "x = {x} > 10", Phase.ACTOR_UPDATE, "test", tolerance=x <= 12,
                tolerance_message="x = {x} is within the tolerance")
    return RuleSet("toy", "1", {"x": VarSpec("x", "x", "int", 1, False, "x")}, [], [rule])


@pytest.mark.parametrize("x, valid, strictly, severity", [
    (10, True, True, None), (11, True, False, Severity.WARNING), (12, True, False, Severity.WARNING),
    (13, False, False, Severity.ERROR)])
def test_tolerated_break_is_a_warning_the_checker_still_reports(x, valid, strictly, severity):
    rs = _toy_ruleset()
    result = rs.check({"x": x})
    assert result.valid is valid and result.strictly_valid is strictly
    assert [v.severity for v in result.violations] == ([severity] if severity else [])
    if severity is Severity.WARNING:
        assert result.violations[0].tolerated and "within the tolerance" in result.violations[0].message
    # the repair search counts the break whatever its severity
    assert rs.failing_errors({"x": x}) == ([] if x <= 10 else ["toy.memory.x"])


def test_solver_enforces_the_rule_not_its_tolerance_and_brute_force_agrees():
    rs = _toy_ruleset()
    domains = {"x": list(range(5, 16))}
    solved = sorted(s["x"] for s in enumerate_solutions(rs, domains, time_limit_s=5).solutions)
    brute = [x for x in domains["x"] if rs.check({"x": x}).strictly_valid]
    assert solved == brute == list(range(5, 11))


# ----------------------------------------------------------------------------- the published MoE scripts
@pytest.mark.parametrize("script, model", [(Q30, "qwen3-30b-a3b"), (Q235, "qwen3-235b-a22b")])
def test_tight_published_script_checks_valid_with_a_margin_warning(script, model):
    res = CliRunner().invoke(app, ["check", str(script), "--gpu", "h20", "--model", model, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    assert out["valid"] and out["memory"]["verdict"] == "tight"
    assert out["memory"]["phases"]["actor_update"]["verdict"] == "tight"
    warn = [v for v in out["violations"] if v["rule"] == "verl-megatron.memory.actor_update"]
    assert warn and warn[0]["severity"] == "warning" and warn[0].get("tolerated") is True
    assert out["memory"]["capacity_mib"] < out["memory"]["phases"]["actor_update"]["peak_mib"] \
        <= out["memory"]["hard_limit_mib"]


def test_fix_repairs_a_tight_script_into_the_margin():
    res = CliRunner().invoke(app, ["fix", str(Q30), "--gpu", "h20", "--model", "qwen3-30b-a3b"])
    assert res.exit_code == 0, res.output
    assert "TIGHT" in res.output and "Nearest valid config (1 change" in res.output


# ----------------------------------------------------------------------------- the rollout's line
def test_vllm_rollout_is_held_to_capacity_less_the_fixed_margin_and_sglang_to_the_whole_margin():
    """vLLM reserves util x total whole after profiling its own peak (and CUDA graphs): no fragmentation
    allowance on top, only the CUDA contexts and NCCL buffers outside it. SGLang's activations and graphs live
    outside its budget, so its rollout keeps the whole margin; every other phase does too."""
    from test_costmodel import make_plan

    gpu = load_gpu("a100-80gb")
    vllm = estimate_memory(make_plan("qwen2.5-7b", gpu, n_gpus=8, gpu_memory_utilization=0.9))
    sglang = estimate_memory(make_plan("qwen2.5-7b", gpu, n_gpus=8, gpu_memory_utilization=0.9, engine="sglang"))
    assert vllm.usable_for("rollout") == vllm.capacity_bytes - C.MARGIN_FIXED_BYTES == vllm.hard_bytes
    assert sglang.usable_for("rollout") == sglang.usable_bytes < sglang.hard_bytes
    for phase in ("old_log_prob", "actor_update"):
        assert vllm.usable_for(phase) == vllm.usable_bytes


def test_openrlhf_default_vllm_share_on_its_own_gpus_fits():
    """OpenRLHF's default --vllm.gpu_memory_utilization 0.95 on GPUs of their own (its README benchmark runs):
    the engine's peak is its budget, under the card less the CUDA contexts: it fits, not 'tight'."""
    args = ["--actor.num_gpus_per_node", "2", "--ref.num_gpus_per_node", "2", "--critic.num_gpus_per_node", "2",
            "--reward.num_gpus_per_node", "1", "--reward.model_name_or_path", "RM", "--vllm.num_engines", "1",
            "--vllm.tensor_parallel_size", "1", "--train.batch_size", "128", "--rollout.batch_size", "1024",
            "--train.micro_batch_size", "8", "--rollout.micro_batch_size", "16"]
    res = CliRunner().invoke(app, ["check", "--framework", "openrlhf", "--gpus", "8", "--gpu", "a100-80gb",
                                   "--model", "llama2-7b", "--json", "--", *args])
    mem = json.loads(res.output[res.output.index("{"):])["memory"]
    rollout = mem["phases"]["rollout"]
    assert rollout["peak_mib"] > mem["capacity_mib"]  # above the trainer phases' line ...
    assert rollout["verdict"] == "yes" and rollout["capacity_mib"] == mem["hard_limit_mib"]  # ... under its own


def test_a_peak_past_the_margin_but_within_the_error_is_not_called_merely_tight():
    """The 30B MoE script on H100: the actor update is 15.4 GiB over the usable memory and past the margin, so the
    memory rule breaks (INVALID). Within the model's error, 'will it OOM?' says it is likely out of memory, not only
    'may run out of memory' under an ERROR line; past it (20.6% over against the 16% the measured training peaks
    show since verl FSDP's root-unit gradients were priced at the backward's end and a Megatron pipeline stage prices
    its own dense and MoE layers), out of memory. On H20 (into the
    margin, tolerated) it stays 'TIGHT: may run out of memory'."""
    import dataclasses

    import rlbatch_solver as rb
    from rlbatch_solver.render import outlook_text

    over = CliRunner().invoke(app, ["check", str(Q30), "--gpu", "h100", "--model", "qwen3-30b-a3b"])
    assert over.exit_code == 1, over.output
    assert "OUT OF MEMORY: the actor update peaks at 90.1 of 74.7" in over.output
    assert "1.3x the model's observed error" in over.output
    mem = rb.check(str(Q30), gpu="h100", model="qwen3-30b-a3b").memory
    assert mem.verdict("actor_update") == "no" and mem.outlook() == "OOM"
    wider = dataclasses.replace(mem, error_log=math.log(1.25))  # an error of 25%: the same peak is within it
    assert wider.outlook() == "tight"
    assert "TIGHT, over the line: likely out of memory" in outlook_text(wider)
    margin = CliRunner().invoke(app, ["check", str(Q30), "--gpu", "h20", "--model", "qwen3-30b-a3b"])
    assert margin.exit_code == 0 and "TIGHT: may run out of memory" in margin.output


def test_a_memory_rule_says_gib_as_the_tables_do():
    """The out-of-memory rule said "needs 36244 MiB per GPU; the GPU has 22311 MiB usable" beside tables and verdicts
    in GiB; now the same numbers in GiB, one decimal, as the table beside it."""
    from clirun import run

    res = run("check", "--gpu", "rtx4090", "--model", "qwen2.5-7b", "--gpus", "4", "--", "data.train_batch_size=64",
              "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=16",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
              "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
              "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1", "algorithm.adv_estimator=grpo")
    line = next(x for x in res.stdout.splitlines() if "actor update (forward + backward + optimizer) needs" in x)
    assert res.returncode == 1 and "MiB" not in line, line
    assert " GiB per GPU; the GPU has 21.8 GiB usable (capacity less the safety margin)" in line, line
