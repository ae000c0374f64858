"""``enumerate`` with a GPU and a model: feasible means it fits (the memory rules and margin of ``check``); with none
fitting, the proven floor per phase and what would help; without a GPU and a model, the rules only, said so."""

from __future__ import annotations

import json
import random
import time

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.scenario import Scenario

SEED = dict(framework="verl", gpus_per_node=4, model="qwen2.5-1.5b", algorithm="grpo", n=8, prompt_length=880,
            response_length=1280)


def _scenario(**kw) -> Scenario:
    sc = Scenario(**{**SEED, **kw})
    sc.validate()
    return sc


def test_7b_full_fine_tune_fits_no_single_4090_and_says_how_far_off():
    r = rb.enumerate(_scenario(gpu="rtx4090", gpus_per_node=1, model="qwen2.5-7b"), time_limit_s=20)
    assert r.count == 0 and r.status == "infeasible" and r.memory_applied
    assert r.memory_floor and any(least > line for least, line in r.memory_floor.values())
    out = run(*["enumerate", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-7b", "--algo", "grpo"])
    assert out.returncode == 1
    assert "0 valid configs that fit rtx4090" in out.stdout and "No valid config fits" in out.stdout
    assert "no config of the search space fits: the nearest needs" in out.stdout and "what would help" in out.stdout


def test_with_a_gpu_and_a_model_every_listed_config_fits_and_fewer_are_listed():
    """The README's 4x RTX 4090 scenario: fewer configs than the rules alone allow, and each listed one is one
    ``check --gpu --model`` calls fitting (a random sample of 120; the small space below is checked whole)."""
    sc = _scenario(gpu="rtx4090")
    fitting = rb.enumerate(sc, time_limit_s=60)
    rules_only = rb.enumerate(_scenario(), time_limit_s=60)
    assert fitting.complete and rules_only.complete and fitting.memory_applied and not rules_only.memory_applied
    assert 0 < fitting.count < rules_only.count
    rng = random.Random(0)
    for i in rng.sample(range(fitting.count), 120):
        r = rb.check(fitting.native[i], framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="rtx4090")
        assert r.memory.fits, (fitting.native[i], r.memory.peaks)
        assert fitting.fits[i]["headroom_mib"] >= 0


def test_on_a_small_space_the_listed_configs_are_exactly_the_valid_ones_that_fit():
    """Brute force: every valid config of the rules-only listing is checked; those check calls fitting are exactly
    the configs enumerate lists with memory."""
    pins = {"data.train_batch_size": 32, "actor_rollout_ref.actor.ppo_mini_batch_size": 16,
            "actor_rollout_ref.actor.ulysses_sequence_parallel_size": 1}
    sc_mem = _scenario(gpu="rtx4090", model="qwen2.5-3b", fixed=dict(pins))
    sc_rules = _scenario(model="qwen2.5-3b", fixed=dict(pins))
    with_mem = rb.enumerate(sc_mem, time_limit_s=60)
    rules = rb.enumerate(sc_rules, time_limit_s=60)
    assert rules.complete and with_mem.complete and 0 < rules.count <= 2000
    fit = set()
    for native in rules.native:
        r = rb.check(native, framework="verl", gpus=4, model="qwen2.5-3b", gpu="rtx4090")
        if r.memory.fits:
            fit.add(tuple(native))
    assert {tuple(n) for n in with_mem.native} == fit
    assert 0 < len(fit) < rules.count


def test_json_lines_carry_each_configs_tightest_phase_and_the_summary_says_memory_was_applied():
    out = run(*["enumerate", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--algo", "grpo",
                   "--set", "data.train_batch_size=32", "--json"])
    lines = [json.loads(x) for x in out.stdout.strip().splitlines()]
    summary, configs = lines[-1], lines[:-1]
    assert summary["memory_applied"] is True and summary["count"] == len(configs) > 0
    for c in configs:
        m = c["_memory"]
        assert m["headroom_mib"] >= 0 and m["peak_mib"] > 0 and m["phase"] in ("rollout", "old_log_prob", "ref",
                                                                                 "actor_update")
    plain = run(*["enumerate", "--gpus", "4", "--algo", "grpo", "--set", "data.train_batch_size=32", "--json"])
    plain_lines = [json.loads(x) for x in plain.stdout.strip().splitlines()]
    assert plain_lines[-1]["memory_applied"] is False and "_memory" not in plain_lines[0]
    text = run(*["enumerate", "--gpus", "4", "--algo", "grpo", "--set", "data.train_batch_size=32"])
    assert "memory not applied" in text.stdout


def test_the_header_names_each_line_and_a_listing_held_at_defaults_says_which_switches_fit():
    """TRL 1.5B on one RTX 4090: the header quoted 21.8 GiB usable 'every phase' beside spare figures of a vLLM rollout
    held to 23.0 (as check says, the rollout engine's own line); and with TRL's default fp32 weights none fits, while
    recommend answers with --dtype bfloat16: the listing says which setting of the switches recommend searches fits,
    and that setting lists configs."""
    base = ["enumerate", "-f", "trl", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-1.5b"]
    held = run(*base)
    assert held.returncode == 1 and "0 valid configs" in held.stdout and " on 1 GPU (" in held.stdout, held.stdout
    assert ("21.8 GiB usable per GPU by the training phases, 23.0 by the rollout engine" in held.stdout
            and "every phase" not in held.stdout), held.stdout
    assert "with, for one, --set dtype=bfloat16 a config fits" in held.stdout, held.stdout
    fits = run(*base, "--set", "dtype=bfloat16")
    assert fits.returncode == 0 and not fits.stdout.startswith("0 "), fits.stdout


def test_a_listing_held_at_defaults_names_the_fewest_switch_settings_a_fit_needs_in_every_framework():
    """ms-swift 3.8.0, Qwen2.5-7B on 8 H100: the listing (vLLM's default 0.9 share colocated, no DeepSpeed) fits none
    while recommend answers with one; the no-fit answer named the first fitting setting the probe met (--set
    deepspeed=zero2 --set vllm_gpu_memory_utilization=0.4 --set sleep_level=1), of which one is needed. It names the
    fewest switches a fit moves off their defaults, the same probe for each framework: OpenRLHF's Qwen2.5-14B on 2
    H100 needs two (gradient checkpointing and Adam offload; it named the engine share too), neither enough alone."""
    swift = ["enumerate", "-f", "swift==3.8.0", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b"]
    held = run(*swift)
    assert held.returncode == 1 and "0 valid configs" in held.stdout, held.stdout
    assert "with, for one, --set vllm_gpu_memory_utilization=0.4 a config fits" in held.stdout, held.stdout
    assert run(*swift, "--set", "vllm_gpu_memory_utilization=0.4").returncode == 0
    summary = json.loads(run(*swift, "--json").stdout.strip().splitlines()[-1])
    assert summary["switches_fit"] == ["--set vllm_gpu_memory_utilization=0.4"], summary
    assert summary["switches_fit_fewest"] is True, summary  # proven: the search was not cut short
    assert summary["switches_search"] == "optimal", summary
    assert "--set vllm_gpu_memory_utilization=0.4 a config fits" in summary["helps"][0], summary
    assert run("recommend", *swift[1:]).returncode == 0
    openrlhf = ["enumerate", "-f", "openrlhf", "--gpu", "h100", "--gpus", "2", "--model", "qwen2.5-14b"]
    held = run(*openrlhf)
    both = ["--set", "actor.gradient_checkpointing_enable=true", "--set", "ds.adam_offload=true"]
    assert f"with, for one, {' '.join(both)} a config fits" in held.stdout, held.stdout
    assert run(*openrlhf, *both).returncode == 0
    assert run(*openrlhf, *both[:2]).returncode == 1 and run(*openrlhf, *both[2:]).returncode == 1


def test_a_listed_configs_headroom_is_measured_against_its_own_engines_line():
    """With TRL's use_vllm searched both ways a vLLM rollout is held to the hard line and transformers' generate to
    the usable one (CostTerms.arm_lines): a config without vLLM had its rollout spare measured against vLLM's line,
    overstated by the margin, and its tightest phase misnamed."""
    from rlbatch_solver.commands.enumerate import _headroom
    from rlbatch_solver.costmodel.tables import CostTerms

    terms = CostTerms(derived=[], rules=[], time_us_per_sample=None, headroom_mib=None, capacity_mib=22311,
                      phases=["rollout", "actor_update"], hard_mib=23540,
                      phase_capacity_mib={"rollout": 23540, "actor_update": 22311},
                      arm_lines={"rollout": (("use_vllm",), {(True,): 23540, (False,): 22311})})

    class Env:
        @staticmethod
        def full_env(solution):
            return solution

    peaks = {"mem_rollout": 22000, "mem_actor_update": 21000}
    generate = _headroom(Env, terms, {"use_vllm": False, **peaks})
    assert generate == {"phase": "rollout", "peak_mib": 22000, "headroom_mib": 311}
    vllm = _headroom(Env, terms, {"use_vllm": True, **peaks})
    assert vllm == {"phase": "actor_update", "peak_mib": 21000, "headroom_mib": 1311}
    assert terms.capacity_of("rollout") == 23540 and terms.capacity_of("rollout", {"use_vllm": False}) == 22311


def test_a_line_a_searched_switch_moves_is_said_with_the_frameworks_own_flag():
    """The memory rule of a phase whose line TRL's use_vllm moves (searched both ways) named the internal variable
    ("usable with use_vllm=True"): it says each line with the flag as the user writes it (Framework.value_words)."""
    from rlbatch_solver.commands.recommend import prepare
    from rlbatch_solver.scenario import Scenario

    prepared = prepare(Scenario(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-0.5b",
                                search={"use_vllm": [True, False]}))
    (message,) = [r.message for r in prepared.terms.rules if "usable with" in r.message]
    assert "GiB usable with --use_vllm true (" in message and "GiB usable with --use_vllm false (" in message, message
    assert "use_vllm=" not in message, message


def test_the_switch_search_has_its_own_budget_after_the_listing_and_a_cut_short_answer_is_not_called_the_fewest(
        monkeypatch):
    """The search of recommend's switches (solver/repair.fewest_moved) runs within its own budget after the listing
    (a quarter of --time-limit, at least 1 s), and a setting it found when its time ran out (CP-SAT's FEASIBLE) is
    not named as if it moved the fewest switches."""
    from rlbatch_solver.cli import _enumerate_json
    from rlbatch_solver.commands.enumerate import enumerate as listing
    from rlbatch_solver.render import no_fit_helps
    from rlbatch_solver.solver import model, repair

    limits: dict[str, float] = {}
    enumerate_solutions, fewest_moved = model.enumerate_solutions, repair.fewest_moved

    def timed_listing(*args, time_limit_s, **kw):
        limits["enumerate"] = time_limit_s
        return enumerate_solutions(*args, time_limit_s=time_limit_s, **kw)

    def cut_short(*args, time_limit_s, **kw):
        limits["switches_end"] = time.monotonic() + time_limit_s  # the latest its solve may end
        found, _ = fewest_moved(*args, time_limit_s=max(1.0, time_limit_s), **kw)
        return found, "feasible"  # as when the time limit comes before the proof

    monkeypatch.setattr(model, "enumerate_solutions", timed_listing)
    monkeypatch.setattr(repair, "fewest_moved", cut_short)
    scenario = Scenario(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-1.5b")
    started = time.monotonic()
    report = listing(scenario, time_limit_s=4.0)
    assert report.count == 0 and report.switches_fit == ["--set dtype=bfloat16"], report.switches_fit
    # the listing has the limit; the search after it a budget of its own (a quarter of the limit, at least 1 s)
    assert limits["enumerate"] <= 4.0 and limits["switches_end"] <= started + 4.0 + 1.0 + 0.05, (limits, started)
    assert not report.switches_fit_fewest
    assert ("with, for one, --set dtype=bfloat16 a config fits (found within the time limit, not proven the fewest"
            in no_fit_helps(report)[0]), no_fit_helps(report)
    assert _enumerate_json(report, None)[-1]["switches_fit_fewest"] is False
    assert report.switches_search == _enumerate_json(report, None)[-1]["switches_search"] == "cut_short"


def test_the_json_says_how_the_switch_search_ended(monkeypatch):
    """switches_fit_fewest was False where nothing was searched and where the search ran out of time with nothing,
    True where it proved that no setting fits: switches_search says which, switches_fit_fewest only 'proven the
    fewest'."""
    from rlbatch_solver.cli import _enumerate_json
    from rlbatch_solver.commands.enumerate import SWITCHES_SEARCH
    from rlbatch_solver.commands.enumerate import enumerate as listing
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.solver import repair

    def ended(report) -> tuple:
        summary = _enumerate_json(report, None)[-1]
        assert summary["switches_search"] == report.switches_search in SWITCHES_SEARCH, summary
        return summary["switches_search"], summary["switches_fit"], summary["switches_fit_fewest"]

    small = Scenario(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-1.5b")
    # none fits at fp32 weights; the search proves one switch enough
    assert ended(listing(small, time_limit_s=10.0)) == ("optimal", ["--set dtype=bfloat16"], True)
    # configs fit: nothing searched
    fits = listing(Scenario(framework="trl", gpu="h100", gpus=1, model="qwen2.5-1.5b"), time_limit_s=10.0)
    assert fits.count and ended(fits) == ("not_run", [], False)
    # proven that no setting fits, and a search the limit ended before it found one or proved none
    for status, want in (("infeasible", "proven_none"), ("unknown", "nothing_found")):
        monkeypatch.setattr(repair, "fewest_moved", lambda *a, status=status, **k: (None, status))
        report = listing(small, time_limit_s=10.0)
        assert ended(report) == (want, [], False)
        assert bool(report.switches_tried) == (want == "proven_none"), report.switches_tried
    # a framework whose listing holds no switch another setting could move: nothing to search
    fw = type(get_framework("trl"))
    plain = fw.space
    monkeypatch.setattr(fw, "space", lambda self, scenario, card, with_knobs=False: plain(self, scenario, card))
    assert ended(listing(small, time_limit_s=10.0)) == ("no_switches", [], False)
    # the README's enumerate JSON description names each
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert all(f"`{key}`" in readme for key in SWITCHES_SEARCH), [k for k in SWITCHES_SEARCH if f"`{k}`" not in readme]


def test_with_memory_a_listing_empty_for_a_rules_sake_names_the_rule_not_memory():
    """--set values that break a rule on their own (Unsloth's load_in_16bit beside the default load_in_4bit): with
    --gpu/--model the listing said every phase fits alone and asked for more GPUs; it names the rule, as without."""
    flags = ["enumerate", "-f", "unsloth", "--gpus", "1", "--set", "load_in_16bit=true"]
    with_memory = run(*flags, "--gpu", "rtx4090", "--model", "qwen2.5-1.5b")
    assert with_memory.returncode == 1, with_memory.stdout + with_memory.stderr
    assert "unsloth.load.one_precision" in with_memory.stdout, with_memory.stdout
    assert "more GPUs" not in with_memory.stdout and "each phase fits alone" not in with_memory.stdout
    rules_only = run(*flags)
    assert rules_only.returncode == 1 and "unsloth.load.one_precision" in rules_only.stdout
    lines = [json.loads(x) for x in run(*flags, "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--json").stdout.splitlines()]
    assert lines[-1]["conflict"] == ["unsloth.load.one_precision"], lines[-1]
