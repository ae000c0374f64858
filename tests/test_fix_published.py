"""fix on the frameworks' published working configs broken in one key (tests/published.py).

Every published config that is valid (and, where its source names the GPU and we have the model, predicted
to fit) is broken by multiplying one batch or layout value by 3, 5 or 7. Going back is a one-key repair, so
``fix`` must find a repair of at most one key, valid and fitting, and prove it nearest (its status, not a
clock). Covers every framework, with and without the memory model.
"""

from __future__ import annotations

import pytest

import rlbatch_solver as rb
from published import breaks, gpu_of, published_configs


def _cases():
    out = []
    for cfg in published_configs():
        if not rb.check(cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model).valid:
            continue  # recorded as invalid on purpose (the data file says why)
        gpu = gpu_of(cfg)
        fits = bool(gpu and cfg.model) and rb.check(
            cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu=gpu,
            length_fraction=cfg.length_fraction).valid
        for br in breaks(cfg, 1):
            if not rb.check(br.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model).valid:
                out.append(pytest.param(br, None, id=br.label.replace(" ", "")))
            if fits:
                out.append(pytest.param(br, gpu, id=br.label.replace(" ", "") + f"@{gpu}"))
    return out


CASES = _cases()


def test_the_cases_cover_every_framework_with_and_without_memory():
    frameworks = {(p.values[0].config.framework, p.values[1] is not None) for p in CASES}
    for fw in ("verl", "verl-megatron", "swift", "swift-megatron", "openrlhf"):
        assert (fw, False) in frameworks, fw
    assert any(memory for _, memory in frameworks)
    # open-r1's recipe (7 processes, 7 generations) stays valid under every x3/x5/x7 break: only memory breaks it
    assert ("trl", True) in frameworks
    assert len(CASES) >= 100


@pytest.mark.parametrize("br,gpu", CASES)
def test_one_key_break_is_repaired_by_one_key(br, gpu):
    cfg = br.config
    kwargs = dict(framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu=gpu,
                  length_fraction=cfg.length_fraction if gpu else 1.0)
    broken = rb.check(br.args(), **kwargs)
    r = rb.fix(br.args(), time_limit_s=10, **kwargs)
    if broken.valid and (broken.memory is None or broken.memory.verdict() == "yes"):
        assert r.native_changes == []  # with memory, a break may still be valid and fit: nothing to repair
        return  # (a tight one, inside the safety margin, is valid with a warning and fix repairs it)
    assert r.after is not None, r.status
    # proven nearest, or (the nearest repair tight in memory) that repair proven and one more key for headroom
    assert r.proven or (r.nearest_diff and r.nearest_proven), r.status
    assert len(r.native_changes) <= 1, r.native_changes
    # solver-independent: the printed change, pasted after the broken arguments, checks valid (and fits)
    if r.native_changes:
        values = dict(br.config.values)
        values.update({k: (o, n) for k, (o, n) in br.changed.items()})
        values = {k: (v[1] if k in br.changed else v) for k, v in values.items()}
        for key, _, new in r.native_changes:
            values[key] = new
        fixed = rb.check(br.config.args(values), **kwargs)
        assert fixed.valid, [v.rule for v in fixed.violations]


def _memory_cases():
    out = []
    for cfg in published_configs():
        if gpu_of(cfg) and cfg.model:
            out.append(pytest.param(cfg, id=cfg.name))
    return out


@pytest.mark.parametrize("cfg", _memory_cases())
def test_memory_grows_with_every_grows_memory_value(cfg):
    """The repair widens a memory cut to every larger value of the policy's ``grows_memory`` keys
    (solver/repair.py ``_exclude``), and fix's proof that no repair fits reads the least memory at the smallest value
    of those and of ``batch_grows_memory`` (costmodel/tables.py ``least_memory``): sound only if no phase needs less
    memory at a larger value, with the token budgets on or off."""
    from rlbatch_solver.api import read_config
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.memory import estimate_memory
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.frameworks.repair_policies import policy_for

    fw = get_framework(cfg.framework)
    card = load_model(cfg.model)
    flat, _ = read_config(fw, cfg.args())
    values = fw.to_values(flat, gpus=cfg.gpus, model=card)
    policy = policy_for(fw.name, fw.ruleset, values)
    spec = fw.cost_spec(card, load_gpu(gpu_of(cfg)))
    checked = 0
    budgets = [n for n in policy.rules if n.endswith("_dyn") and n in values]  # verl's token-budget switches
    for dyn in ([False, True] if budgets else [None]):
        config = {**values, **({n: dyn for n in budgets} if dyn is not None else {})}
        for name in sorted(policy.grows_memory | policy.batch_grows_memory):
            base = config.get(name)
            if not isinstance(base, int) or isinstance(base, bool):
                continue
            ladder = [300, 450, 600, 750, 900] if name == "gmu_permille" else \
                sorted({max(1, base // 4), max(1, base // 2), base, base * 2, base * 4})
            for phase in spec.phases_run(config):
                peaks = [estimate_memory(spec.plan({**config, name: v}, phase)).peak(phase) for v in ladder]
                assert peaks == sorted(peaks), (name, dyn, phase, list(zip(ladder, peaks)))
                checked += 1
    assert checked


def test_memory_repairs_of_three_keys_and_more_answer_within_seconds():
    """verl's Megatron GSM8K example (8 GPUs) on 24 GB cards: a fit needs offload switches, a larger TP and a
    smaller micro batch together, which the one- and two-key search cannot find; the greedy descent gives an
    answer (checked here: every rule holds and every phase fits) and the exact search a bound to beat."""
    from pathlib import Path

    from rlbatch_solver import api
    from rlbatch_solver.launch_script import read_launch_script

    script = read_launch_script(Path(__file__).resolve().parent / "data/scripts/verl-megatron/run_qwen2-7b_math_megatron.sh")
    # the script's default rollout_mode="sync" is verl 0.6's; its async branch is what 0.9.1 runs
    args = script.args + ["actor_rollout_ref.rollout.mode=async"]
    r = api.fix(args, framework=script.framework, gpu="rtx4090", model="qwen2.5-7b", time_limit_s=10)
    assert r.after is not None and r.status in ("optimal", "feasible")
    assert len(r.diff) >= 3
    assert all(peak <= cap for peak, cap in r.memory_after.values()), r.memory_after


def test_moe_activation_overflow_is_repaired_by_recompute_alone():
    """verl's Qwen3-235B Megatron script (32 H20s, no activation recompute, 11,680-token micro batches, 8 in flight
    on PP stage 0) is predicted over in the actor update; the nearest fit switches on full recompute (one change,
    spelled as verl's override_transformer_config keys), not a re-layout of TP/PP/EP."""
    from pathlib import Path

    from rlbatch_solver import api
    from rlbatch_solver.launch_script import read_launch_script

    script = read_launch_script(Path(__file__).resolve().parent / "data/scripts/verl-megatron/run_qwen3-235b_megatron_96gb.sh")
    r = api.fix(script.args, framework=script.framework, gpus=script.gpus, gpu="h20", model="qwen3-235b-a22b",
                time_limit_s=10)
    assert r.status == "optimal" and len(r.diff) == 1, r.diff
    key, old, new = r.diff[0]
    assert key.endswith("override_transformer_config.recompute_granularity") and "=full" in new, r.diff
    assert "recompute_method=uniform" in new and "recompute_num_layers=1" in new
    assert all(peak <= cap for peak, cap in r.memory_after.values()), r.memory_after


@pytest.mark.parametrize("name", ["grpo_qwen3_235b_a22b_megatron_gpu_defaults", "grpo_deepseek_v3_671b_megatron",
                                  "grpo_qwen3_235b_megatron_96gb"])
def test_large_moe_layouts_are_repaired_with_memory(name):
    """verl's 235B and 671B MoE examples on 96 GB cards (64 to 96 GPUs): the rules and the memory model together
    need several keys (the actor's expert layout with the reference's, offload switches); an answer is found
    (every rule holds, every phase fits), not "none found in time". The first one also breaks two layout rules:
    the greedy descent mends a rule with one key and the reference layout it breaks with a second."""
    cfg = next(c for c in published_configs() if c.name == name)
    from rlbatch_solver import api

    r = api.fix(cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu="h20", time_limit_s=10)
    assert r.after is not None and r.status in ("optimal", "feasible"), (r.status, r.diff)
    assert all(peak <= cap for peak, cap in r.memory_after.values()), r.memory_after
    # solver-independent: the paste-ready changes, pasted after the published arguments, check valid and fit
    pasted = cfg.args() + [tok for arg in r.native_after for tok in arg.split()]
    fixed = rb.check(pasted, framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu="h20")
    assert fixed.valid, [v.rule for v in fixed.violations]


def _first_config_of_each_framework():
    seen = {}
    for cfg in published_configs():
        seen.setdefault(cfg.framework, cfg)
    return list(seen.values())


@pytest.mark.parametrize("cfg", _first_config_of_each_framework(), ids=lambda c: c.framework)
def test_every_value_fix_may_propose_is_one_the_framework_accepts(cfg):
    """fix's candidate values, set one at a time and pasted back, are read without an input error: a repair
    never proposes what the framework's own reader refuses (OpenRLHF's ZeRO stage 4 did)."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.errors import InputError
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.frameworks.repair_policies import repair_domains

    fw = get_framework(cfg.framework)
    card = load_model(cfg.model) if cfg.model else None
    flat, _ = fw.parse(cfg.args())
    values = fw.to_values(flat, gpus=cfg.gpus, model=card)
    total, seq_len = fw.hardware(values)
    domains = repair_domains(fw.ruleset, fw.repair_policy(values), dict(values), keep=set(), memory=True,
                             total_gpus=total, seq_len=seq_len)
    tried = 0
    for name, options in domains.items():
        if name not in fw.ruleset.variables or len(options) < 2:
            continue
        for value in options[1:]:
            if value is None:
                continue
            token = fw.assignment(name, value)
            if token.startswith("("):  # a change said in words ("(drop --vllm_mode)"), never pasted
                continue
            try:
                again, _ = fw.parse([*cfg.args(), *token.split()])
                fw.to_values(again, gpus=cfg.gpus, model=card)
            except InputError as err:
                raise AssertionError(f"fix may propose {token!r}, which {cfg.framework} refuses: {err}") from err
            tried += 1
    assert tried > 20
