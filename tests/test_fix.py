"""``fix``: the nearest valid config, minimal by brute force, and conflicts when none exists."""

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlbatch_solver as rb
from rlbatch_solver.api import fix
from rlbatch_solver.frameworks.verl.repair import VERL
from rlbatch_solver.frameworks.verl.rules import RULESET, VARIABLES
from rlbatch_solver.solver.costs import candidate_cost, waste_of
from rlbatch_solver.solver.nearest import nearest_small_repair
from rlbatch_solver.solver.repair import change_cost, repair

from clirun import run
from test_verl_rules import AR, SEED_4090, replace

BASE = {name: spec.default for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({"need_critic": False, "need_ref": False, "group_estimator": True, "num_heads": 12, "num_kv_heads": 2,
             "max_position_embeddings": 4096, "max_prompt_length": 512, "max_response_length": 1024,
             "gpus_per_node": 4, "train_batch_size": 8, "n": 4, "actor_mini": 4, "actor_micro_per_gpu": 2,
             "logprob_micro_per_gpu": 2, "rollout_tp": 1})

# small repair spaces: the current value is always in its domain
SMALL = {
    "train_batch_size": [1, 2, 3, 4, 6, 8, 12], "actor_mini": [1, 2, 3, 4, 6, 8],
    "actor_micro_per_gpu": [None, 1, 2, 3, 4, 8], "logprob_micro_per_gpu": [None, 1, 2, 4, 8],
    "rollout_tp": [1, 2, 3, 4], "actor_sp": [1, 2, 4],
}


_VALID: list[tuple[dict, int]] = []


def valid_small_configs() -> list[tuple[dict, int]]:
    """Every valid config of the SMALL space (around BASE), with its waste: enumerated once by the checker."""
    if not _VALID:
        names = list(SMALL)
        for combo in itertools.product(*(SMALL[n] for n in names)):
            cand = dict(BASE, **dict(zip(names, combo)))
            if RULESET.check(cand).valid:
                _VALID.append((cand, waste_of(RULESET, cand)))
    return _VALID


def brute_min(domains, current, ranks, max_keys=None, held=frozenset()):
    """The least repair cost (changes, distances, ranks and waste) over the valid configs, by enumeration."""
    best = None
    for cand, _ in valid_small_configs():
        if max_keys is not None and sum(cand[n] != current[n] or type(cand[n]) is not type(current[n])
                                        for n in SMALL) > max_keys:
            continue
        c = candidate_cost(RULESET, current, cand, ranks, held=held)
        best = c if best is None else min(best, c)
    return best


# a broken (or valid) config of the small space: the values the brute-force tests start from
SMALL_CONFIG = dict(
    tb=st.sampled_from(SMALL["train_batch_size"]), mini=st.sampled_from(SMALL["actor_mini"]),
    micro=st.sampled_from(SMALL["actor_micro_per_gpu"]), lp=st.sampled_from(SMALL["logprob_micro_per_gpu"]),
    tp=st.sampled_from(SMALL["rollout_tp"]), sp=st.sampled_from(SMALL["actor_sp"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**SMALL_CONFIG)
def test_repair_is_minimal_by_brute_force(tb, mini, micro, lp, tp, sp):
    current = dict(BASE, train_batch_size=tb, actor_mini=mini, actor_micro_per_gpu=micro,
                   logprob_micro_per_gpu=lp, rollout_tp=tp, actor_sp=sp)
    domains = {n: [v] for n, v in current.items()}
    domains.update(SMALL)
    held = VERL.algorithm_batch  # the algorithm's batch: far moves cost as keys (solver/costs.py)
    res = repair(RULESET, domains, current, ranks=VERL.ranks, time_limit_s=20, held=held)
    if RULESET.check(current).valid:  # its own repair, however much it pads
        assert res.proven and res.changes == []
        return
    expected = brute_min(domains, current, VERL.ranks, held=held)
    if expected is None:
        assert res.solution is None and res.status == "infeasible"
        return
    assert res.proven
    assert RULESET.check(res.solution).valid
    assert res.objective == expected == candidate_cost(RULESET, current, res.solution, VERL.ranks, held=held)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**SMALL_CONFIG)
def test_direct_search_is_the_nearest_small_repair_by_brute_force(tb, mini, micro, lp, tp, sp):
    """The direct search of one- and two-key moves finds the brute-force optimum among repairs of at most
    two keys, and says it is complete; when it finds none, no repair of at most two keys exists."""
    current = dict(BASE, train_batch_size=tb, actor_mini=mini, actor_micro_per_gpu=micro,
                   logprob_micro_per_gpu=lp, rollout_tp=tp, actor_sp=sp)
    domains = {n: [v] for n, v in current.items()}
    domains.update(SMALL)
    near = nearest_small_repair(RULESET, domains, current, ranks=VERL.ranks)
    assert near.complete
    if RULESET.check(current).valid:
        assert near.keys == 0 and near.solution == current
        return
    one, two = brute_min(domains, current, VERL.ranks, 1), brute_min(domains, current, VERL.ranks, 2)
    expected = two  # the least over at most two keys: a one-key repair that pads beyond the tolerance may lose
    if expected is None:
        assert near.solution is None and near.partial is not None
        return
    assert RULESET.check(near.solution).valid
    assert near.cost == expected == candidate_cost(RULESET, current, near.solution, VERL.ranks)
    assert near.keys == (1 if one == two else 2)


# the direct search's wide domains: every integer in a range, a superset of SMALL's grid
WIDE = {"train_batch_size": list(range(1, 25)), "actor_mini": list(range(1, 17)),
        "actor_micro_per_gpu": [None, *range(1, 17)], "logprob_micro_per_gpu": [None, *range(1, 17)],
        "rollout_tp": [1, 2, 3, 4], "actor_sp": [1, 2, 4]}


def _moves_min(current, domains, ranks):
    """The least cost of a valid config at most two keys from ``current`` over ``domains`` and its key count, by
    trying every one- and two-key move (a one-key repair that pads beyond the tolerance may cost more than two)."""
    names = [n for n in domains if len(domains[n]) > 1]
    costs = []
    for size in (1, 2):
        for keys in itertools.combinations(names, size):
            for combo in itertools.product(*(domains[k] for k in keys)):
                if any(v == current[k] and type(v) is type(current[k]) for k, v in zip(keys, combo)):
                    continue
                cand = dict(current, **dict(zip(keys, combo)))
                if RULESET.check(cand).valid:
                    costs.append((candidate_cost(RULESET, current, cand, ranks), size))
    return min(costs) if costs else (None, 0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**SMALL_CONFIG)
def test_direct_search_over_wide_domains_is_nearest_by_brute_force(tb, mini, micro, lp, tp, sp):
    """A repair found on the candidate grid is bettered over the wide domains (every integer in a range): the
    result is the cheapest one- or two-key repair there, as trying every move finds."""
    current = dict(BASE, train_batch_size=tb, actor_mini=mini, actor_micro_per_gpu=micro,
                   logprob_micro_per_gpu=lp, rollout_tp=tp, actor_sp=sp)
    domains, wide = {n: [v] for n, v in current.items()}, {n: [v] for n, v in current.items()}
    domains.update({n: [current[n]] + [v for v in vals if v != current[n]] for n, vals in SMALL.items()})
    wide.update({n: [current[n]] + [v for v in vals if v != current[n]] for n, vals in WIDE.items()})
    expected, size = _moves_min(current, wide, VERL.ranks)
    for order in (list(domains), list(reversed(domains))):  # the answer may not depend on the keys' order
        near = nearest_small_repair(RULESET, {n: domains[n] for n in order}, current, ranks=VERL.ranks,
                                    wide_domains={n: wide[n] for n in order})
        if RULESET.check(current).valid:
            continue
        assert near.complete and near.wide_complete
        if expected is None:
            assert near.solution is None
            continue
        assert RULESET.check(near.solution).valid
        assert (near.cost, near.keys) == (expected, size)


def test_a_two_key_repair_off_the_grid_beats_a_three_key_one_on_it():
    """158 prompts, mini 56, micro 5 on 12 GPUs: the grid (powers of two, divisors, neighbours) has no one- or
    two-key repair, but 240/60 is one: it is found off the grid and proven, not a three-key repair."""
    r = fix(["data.train_batch_size=158", "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.actor.ppo_mini_batch_size=56",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=5",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "algorithm.adv_estimator=grpo"], gpus=12)
    assert r.proven and len(r.native_changes) == 2
    assert sorted(r.native_after) == ["actor_rollout_ref.actor.ppo_mini_batch_size=60", "data.train_batch_size=240"]


def test_fix_reaches_off_grid_values_and_proves_them():
    """341 prompts x 6 on 8 GPUs with a mini batch of 31: 352 and 32 (+3%, two keys) beat 256 (-25%), the nearest
    power of two; the answer is proven over every integer up to 8x each value."""
    r = fix(["data.train_batch_size=341", "actor_rollout_ref.rollout.n=6",
             "actor_rollout_ref.actor.ppo_mini_batch_size=31", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "algorithm.adv_estimator=grpo"], gpus=8)
    assert r.proven
    assert sorted(r.native_after) == ["actor_rollout_ref.actor.ppo_mini_batch_size=32", "data.train_batch_size=352"]


def test_change_cost_orders_count_then_distance_then_rank():
    assert change_cost(8, 8) == 0 and change_cost(None, None) == 0 and change_cost(True, True) == 0
    one_far = change_cost(1, 1024, rank=9)
    two_near = change_cost(64, 66) + change_cost(4, 4 + 1)
    assert one_far < two_near  # fewer changed keys first
    assert change_cost(64, 66) < change_cost(64, 32)  # then distance
    assert change_cost(8, 16, rank=2) < change_cost(8, 16, rank=5)  # then the seeds' order
    assert change_cost(None, 4, reference=4) < change_cost(None, 1, reference=4)


def changed_keys(report):
    return {k for k, _, _ in report.native_changes}


def test_faq_normalized_mini_repaired_by_changing_one_key():
    cfg = replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", 24)
    r = fix(cfg, gpus=4)
    assert r.after is not None and r.proven
    assert len(r.changes) == 1
    assert rb.check(r.after and _as_overrides(cfg, r), gpus=4).valid
    assert "verl.step.mini_divisible_by_micro" in next(iter(r.satisfies.values()))


def _as_overrides(cfg, report):
    """The user's overrides with the repair pasted over them."""
    out = list(cfg)
    for item in report.native_after:
        key = item.partition("=")[0]
        out = [c for c in out if not c.startswith(key + "=")] + [item]
    return [c for c in out if not c.endswith("=null")]


@pytest.mark.parametrize("key,value,must_change,extra", [
    ("data.train_batch_size", 65, None, [f"{AR}.rollout.n=1"]),  # (B*n) % N: 65 * 1 over 4 GPUs
    (f"{AR}.actor.ppo_mini_batch_size", 128, None, []),  # mini > train
    (f"{AR}.rollout.log_prob_micro_batch_size_per_gpu", 48, None, []),  # local batch % log-prob micro
    (f"{AR}.rollout.tensor_model_parallel_size", 3, f"{AR}.rollout.tensor_model_parallel_size", []),
])
def test_seed_faq_failures_are_repaired_minimally(key, value, must_change, extra):
    cfg = replace(SEED_4090, key, value) + extra
    before = rb.check(cfg, gpus=4)
    assert not before.valid
    r = fix(cfg, gpus=4)
    assert r.after is not None and r.proven
    after = rb.check(_as_overrides(cfg, r), gpus=4)
    assert after.valid, after.violations
    assert len(r.changes) == 1  # one key was wrong; one key changes
    if must_change:
        assert changed_keys(r) == {must_change}


def test_deprecated_global_micro_is_replaced_by_per_gpu():
    cfg = replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", None) + [f"{AR}.actor.ppo_micro_batch_size=32"]
    r = fix(cfg, gpus=4, framework="verl==0.9.1")  # with no release named, the global key shows 0.7.1
    assert r.after["actor_micro"] is None and r.after["actor_micro_per_gpu"] is not None
    assert rb.check(_as_overrides(cfg, r), gpus=4).valid
    assert f"{AR}.actor.ppo_micro_batch_size=null" in r.native_after


def test_keep_pins_keys():
    micro, mini = f"{AR}.actor.ppo_micro_batch_size_per_gpu", f"{AR}.actor.ppo_mini_batch_size"
    cfg = replace(SEED_4090, micro, 24)
    free = fix(cfg, gpus=4)
    assert changed_keys(free) == {micro}  # 24 -> 16: lowering the micro batch, no padding
    assert free.after["actor_micro_per_gpu"] == 16
    pinned = fix(cfg, gpus=4, keep=[micro])
    assert pinned.after is not None and pinned.after["actor_micro_per_gpu"] == 24
    assert changed_keys(pinned) == {mini}
    assert rb.check(_as_overrides(cfg, pinned), gpus=4).valid


def test_seed_faq_repair_prefers_no_padding():
    """Issue: mini 32 -> 36 is valid and one key, but 64 prompts are no longer whole mini batches of 36: the
    v1 trainer pads every step to 72 prompts. An expert changes the micro batch; check warns about the padding."""
    micro, mini = f"{AR}.actor.ppo_micro_batch_size_per_gpu", f"{AR}.actor.ppo_mini_batch_size"
    cfg = replace(SEED_4090, micro, 24)
    r = fix(cfg, gpus=4)
    assert r.proven and changed_keys(r) == {micro} and r.after["actor_micro_per_gpu"] in (8, 16)
    padded = rb.check(replace(cfg, mini, 36), gpus=4)
    warn = [v for v in padded.violations if v.rule == "verl.advice.batch_padded"]
    assert warn and "to 72 prompts" in warn[0].message
    assert "11%" in warn[0].message and "64 synthetic samples" in warn[0].message
    # with the micro batch pinned, the padded mini batch is the only one-key repair: named as padding
    pinned = fix(cfg, gpus=4, keep=[micro])
    assert changed_keys(pinned) == {mini} and "pads every step to 72 prompts" in pinned.waste


def test_pinned_conflict_is_explained():
    # n is the user's algorithm setting (never changed); pinning B (and static batches, since
    # dynamic batching skips the driver's check) leaves (B*n) % N unfixable
    cfg = replace(SEED_4090, "data.train_batch_size", 65) + [f"{AR}.rollout.n=1"]
    r = fix(cfg, gpus=4, keep=["data.train_batch_size", f"{AR}.actor.use_dynamic_bsz"])
    assert r.after is None and r.status == "infeasible"
    assert "verl.driver.batch_divisible_by_gpus" in [x.id for x in r.conflict.rules]
    assert r.pinned_in_conflict.get("data.train_batch_size") == 65
    assert any("--keep" in x for x in r.relaxations)


def test_valid_config_needs_no_change():
    r = fix(SEED_4090, gpus=4)
    assert r.already_valid and r.native_after == []


def run_cli(*args):
    return run(*args)


def test_cli_fix_json_and_exit_codes():
    cfg = replace(SEED_4090, "data.train_batch_size", 65) + [f"{AR}.rollout.n=1"]
    p = run_cli("fix", "--gpus", "4", "--json", "--", *cfg)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["valid_before"] is False and data["changes"] and data["proven_nearest"]
    bad = run_cli("fix", "--gpus", "4", "--keep", "data.train_batch_sise", "--", *cfg)
    assert bad.returncode == 2 and "keep" in bad.stderr and "Traceback" not in bad.stderr
    stuck = run_cli("fix", "--gpus", "4", "--keep", f"data.train_batch_size,{AR}.actor.use_dynamic_bsz", "--", *cfg)
    assert stuck.returncode == 1 and "batch_divisible_by_gpus" in stuck.stdout


def test_deprecated_global_micro_sizes_become_their_per_gpu_share():
    """verl's own qwen2-7b GRPO example (tests/data/scripts/verl/run_qwen2-7b.sh) sets the deprecated global
    ref.log_prob_micro_batch_size=128 on 8 GPUs; verl 0.9.1 needs the per-GPU key, and the per-GPU share the
    older versions computed from it (128 / 8 = 16) is the value to set, not an arbitrary 1."""
    args = ["trainer.n_gpus_per_node=8", "data.train_batch_size=1024", "actor_rollout_ref.rollout.n=5",
            "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=True",
            "actor_rollout_ref.actor.ppo_mini_batch_size=256",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
            "actor_rollout_ref.ref.log_prob_micro_batch_size=128"]
    # one key (switching the ref pass to token budgets) is nearer; pinned, the key is replaced
    r = fix(args, time_limit_s=10, keep=["actor_rollout_ref.ref.log_prob_use_dynamic_bsz"], framework="verl==0.9.1")
    new = {k: n for k, _, n in r.native_changes}
    assert r.proven
    assert new.get("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu") == 16, r.native_changes
    assert "actor_rollout_ref.ref.log_prob_micro_batch_size" in new  # the deprecated key unset
    assert new["actor_rollout_ref.ref.log_prob_micro_batch_size"] is None


def test_a_pair_whose_first_key_no_broken_rule_reads_is_found_in_any_key_order():
    """b must move (3 divides b) and then breaks 'b divides a', which a mends: the pair {a, b} is the repair though
    no broken rule reads a. The search finds it whichever key comes first."""
    from rlbatch_solver.rules.base import Rule, RuleSet, VarSpec
    from rlbatch_solver.rules.expr import IntVar, divides

    a, b = IntVar("a"), IntVar("b")
    toy = RuleSet("toy", "0", {"a": VarSpec("a", "a"), "b": VarSpec("b", "b")}, [],
                  [Rule("r1", divides(3, b), "b%3", "s", "src"), Rule("r2", divides(b, a), "b|a", "s", "src")])
    current = {"a": 8, "b": 8}
    for order in (["a", "b"], ["b", "a"]):
        domains = {k: [8] + [v for v in range(1, 13) if v != 8] for k in order}
        near = nearest_small_repair(toy, domains, current)
        assert near.complete and near.solution == {"a": 9, "b": 9}


def test_an_unset_per_gpu_micro_batch_is_set_like_the_older_global_one_its_anchor_was_given_as():
    """verl 0.2's published GRPO script sets the actor's global micro batch (ppo_micro_batch_size=128 on 8 GPUs, 16 a
    GPU) and no critic micro batch, which its driver refuses: the repair set the critic's per-GPU micro batch to 1 (its
    anchor, the actor's per-GPU key, was unset, so every value cost the same), a critic update of one sample at a time.
    The anchor given as its older global size anchors it too: 16, as the actor's."""
    from rlbatch_solver.frameworks.repair_policies import references

    refs = references(VERL, {"actor_micro": 128, "actor_micro_per_gpu": None, "critic_micro_per_gpu": None,
                             "gpus_per_node": 8, "nnodes": 1})
    assert refs["critic_micro_per_gpu"] == 16 and refs["actor_micro_per_gpu"] == 16, refs
    out = run("fix", "tests/data/scripts/verl/run_qwen2-7b.sh", "--json")
    changes = {c["key"]: c["new"] for c in json.loads(out.stdout)["changes"]}
    assert changes == {"critic.ppo_micro_batch_size_per_gpu": 16}, changes
