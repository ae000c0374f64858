"""A memory line a searched switch moves (TRL's use_vllm both ways: a vLLM rollout is held to capacity less the fixed
margin, transformers' generate to capacity less the whole margin; ``CostTerms.arm_lines``) is read for each config by
``CostTerms.capacity_of(phase, values)``, and every reader holds a config to its own arm's line:

- the least memory a phase needs in a space against its line (``tables.memory_floors``: one definition, which
  recommend and enumerate quote when none fits and fix's early "no repair exists" proof reads), each arm scanned once
  over its own part of the space. fix's proof skipped such a phase (it compared the least over both arms with one
  line: a generate base arm's lower line could prove "no repair" that a vLLM arm's higher line allows);
- fix's greedy descent, which measured every candidate's excess against the base arm's line (a config without vLLM
  whose rollout was over generate's line but under vLLM's scored as fitting, and the descent stopped on it);
- recommend's roomier alternatives, whose tightest phase was measured against the base arm's line."""

from __future__ import annotations

from types import SimpleNamespace

from rlbatch_solver.commands import roomier
from rlbatch_solver.commands.fix_job import read_job
from rlbatch_solver.commands.fix_search import repair_once
from rlbatch_solver.costmodel.tables import CostTerms, build_cost_terms, memory_floors
from rlbatch_solver.deadline import Deadline
from rlbatch_solver.frameworks.repair_policies import repair_domains
from rlbatch_solver.rules.base import Derived, Phase, Rule, RuleKind, RuleSet, VarSpec
from rlbatch_solver.rules.expr import BoolVar, IntVar, Table, if_then_else
from rlbatch_solver.solver.nearest import greedy_repair

VLLM, GENERATE = 23540, 22311  # an RTX 4090's two lines (MiB): capacity less the fixed margin, less the whole margin
ARMS = {"rollout": (("use_vllm",), {(True,): VLLM, (False,): GENERATE})}


def _terms(rollout, update=lambda micro: 10_000, base_line=GENERATE, calls=None):
    """Toy cost terms: the rollout's peak a function of (micro, use_vllm), its line moved by use_vllm; the actor
    update's of micro alone. ``base_line``: the rollout line of the base values (the first of use_vllm's domain)."""
    def counted(fn, name):
        def wrapped(*args):
            if calls is not None:
                calls[name] = calls.get(name, 0) + 1
            return fn(*args)
        return wrapped

    derived = [Derived("mem_rollout", Table("mem_rollout", (IntVar("micro"), BoolVar("use_vllm")),
                                            counted(rollout, "rollout")), "rollout"),
               Derived("mem_actor_update", Table("mem_actor_update", (IntVar("micro"),), counted(update, "update")),
                       "update")]
    return CostTerms(derived, [], None, None, GENERATE, ["rollout", "actor_update"], VLLM,
                     {"rollout": base_line, "actor_update": GENERATE}, dict(ARMS))


DOMAINS = {"micro": [1, 2, 4, 8], "use_vllm": [False, True]}


def test_each_arm_is_held_to_its_own_line_and_a_phase_fits_where_one_arm_does():
    # vLLM's rollout needs 23000 at least (under its 23540), generate's too (over its 22311): the phase fits with vLLM
    terms = _terms(lambda micro, vllm: 22_000 + 1000 * micro)
    floors = memory_floors(terms, DOMAINS, "trl", stop=True)
    assert not any(least > line for least, line in floors.values()), floors  # no proof: a vLLM config may fit
    assert floors["trl.memory.rollout"] == (23_000, VLLM)
    # the floor recommend quotes: the arm nearest to fitting, with its own line
    assert memory_floors(terms, DOMAINS, "trl")["trl.memory.rollout"] == (23_000, VLLM)


def test_a_phase_over_its_line_in_every_arm_is_a_proof_quoting_the_nearest_arm():
    # vLLM's least 24000 (460 over 23540), generate's 23000 (689 over 22311)
    terms = _terms(lambda micro, vllm: (23_000 if vllm else 22_000) + 1000 * micro)
    for stop in (True, False):
        floors = memory_floors(terms, DOMAINS, "trl", stop=stop)
        assert floors["trl.memory.rollout"] == (24_000, VLLM), (stop, floors)


def test_each_row_is_scanned_once_and_a_narrowed_switch_keeps_its_one_arm():
    calls: dict[str, int] = {}
    terms = _terms(lambda micro, vllm: 30_000 - 1000 * micro, calls=calls)
    floors = memory_floors(terms, DOMAINS, "trl")
    assert calls["rollout"] == len(DOMAINS["micro"]) * len(DOMAINS["use_vllm"]), calls  # once per row, not twice
    assert floors["trl.memory.rollout"] == (22_000, VLLM)
    alone = memory_floors(terms, {**DOMAINS, "use_vllm": [False]}, "trl")
    assert alone["trl.memory.rollout"] == (22_000, GENERATE)  # the vLLM arm is not in this space


def test_an_arm_cut_short_by_the_deadline_leaves_its_phase_out():
    terms = _terms(lambda micro, vllm: 30_000)
    assert "trl.memory.rollout" not in memory_floors(terms, DOMAINS, "trl", deadline=Deadline(0.0))


def _job(model: str, *extra: str):
    args = ["--num_processes", "1", "--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "1",
            "--num_generations", "8", "--max_completion_length", "1024", "--bf16", "--use_peft", "--use_vllm",
            "--vllm_mode", "colocate", *extra]
    return read_job(args, "trl", None, model, "rtx4090", (), None, 1.0, None)


def _fix_space(job):
    """fix's space, and its cost terms; the per-device batch at 1 alone (memory grows with it: the least is there)."""
    total, seq_len = job.fw.hardware(job.values)
    domains = repair_domains(job.fw.ruleset, job.policy, dict(job.values), keep=job.kept, memory=True,
                             total_gpus=total, seq_len=seq_len)
    terms = build_cost_terms(job.spec, domains, time=False)
    return {**domains, "per_device_train_batch_size": [1]}, terms


def test_fix_repairs_a_trl_config_whose_vllm_arm_fits_nowhere_by_its_generate_arm():
    """Qwen2.5-14B QLoRA on one RTX 4090 with colocated vLLM: the vLLM rollout fits nowhere in fix's space, generate's
    does: a repair exists (vLLM off), no proof of none."""
    job = _job("qwen2.5-14b", "--load_in_4bit")
    domains, terms = _fix_space(job)
    assert set(domains["use_vllm"]) == {True, False} and "rollout" in terms.arm_lines
    vllm = memory_floors(terms, {**domains, "use_vllm": [True]}, "trl")["trl.memory.rollout"]
    generate = memory_floors(terms, {**domains, "use_vllm": [False]}, "trl")["trl.memory.rollout"]
    assert vllm[0] > vllm[1] and generate[0] <= generate[1] and vllm[1] != generate[1], (vllm, generate)
    res = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec, deadline=Deadline(30.0)).result
    assert res.method != "floor" and res.solution is not None and res.solution["use_vllm"] is False, res


def test_fix_proves_no_repair_where_no_arm_fits_and_quotes_each_arms_own_line():
    """Qwen2.5-32B QLoRA on one RTX 4090: no config fits (proof, at once). The rollout's floor is the generate arm's,
    over its own line though under vLLM's: against the base (vLLM) arm's line it read as fitting."""
    job = _job("qwen2.5-32b", "--load_in_4bit")
    domains, terms = _fix_space(job)
    least, line = memory_floors(terms, domains, "trl")["trl.memory.rollout"]
    assert line == terms.capacity_of("rollout", {"use_vllm": False}) < least <= terms.capacity_of("rollout")
    res = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec, deadline=Deadline(30.0)).result
    assert res.method == "floor" and res.status == "infeasible" and res.memory_floor, res
    assert all(a > b for a, b in res.memory_floor.values())


def _toy_ruleset():
    variables = {n: VarSpec(n, n, kind) for n, kind in (("micro", "int"), ("train_micro", "int"),
                                                        ("use_vllm", "bool"))}
    derived = [Derived("mem_rollout", Table("mem_rollout", (IntVar("micro"), BoolVar("use_vllm")),
                                            lambda micro, vllm: 20_000 + 600 * micro), "rollout"),
               Derived("mem_actor_update", Table("mem_actor_update", (IntVar("train_micro"),),
                                                 lambda micro: 20_000 + 100 * micro), "update")]
    rules = [Rule("toy.memory.rollout", IntVar("mem_rollout") <= if_then_else(BoolVar("use_vllm"), VLLM, GENERATE),
                  "rollout", Phase("rollout"), "test", kind=RuleKind.MEMORY),
             Rule("toy.memory.actor_update", IntVar("mem_actor_update") <= GENERATE, "update", Phase("actor_update"),
                  "test", kind=RuleKind.MEMORY)]
    return RuleSet("toy", "0", variables, derived, rules)


def test_the_descent_measures_a_config_without_vllm_against_generates_line():
    """A config without vLLM whose rollout (22400 MiB) is over generate's line and under vLLM's: measured against the
    base (vLLM) arm's line it scored as fitting and the descent stopped on it, a config that breaks its memory rule."""
    ruleset = _toy_ruleset()
    terms = _terms(lambda micro, vllm: 0, base_line=VLLM)
    domains = {"micro": [1, 2, 4], "train_micro": [1, 2, 4], "use_vllm": [True, False]}
    start = {"micro": 4, "train_micro": 4, "use_vllm": False}
    assert ruleset.failing_errors(start) == ["toy.memory.rollout"]
    found = greedy_repair(ruleset, domains, start, start, capacity_of=terms.capacity_of,
                          ranks={"micro": 1, "train_micro": 1, "use_vllm": 9}, deadline=Deadline(10.0))
    assert found is not None and not ruleset.failing_errors(found), found
    assert found["micro"] < 4 and found["use_vllm"] is False and found["train_micro"] == 4, found


def test_the_roomier_alternative_caps_the_phase_tightest_against_the_choices_own_line():
    # generate's rollout at 22200 of its 22311 is the tightest phase; against vLLM's 23540 the update (22100) was
    terms = _terms(lambda micro, vllm: 0, base_line=VLLM)
    choice = SimpleNamespace(peak_mib=lambda: {"rollout": 22_200, "actor_update": 22_100},
                             values={"use_vllm": False})
    assert roomier.tightest_phase(choice, terms.capacity_of) == "rollout"
    vllm = SimpleNamespace(peak_mib=choice.peak_mib, values={"use_vllm": True})
    assert roomier.tightest_phase(vllm, terms.capacity_of) == "actor_update"
