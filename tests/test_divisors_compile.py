"""Every release's rules compile to CP-SAT wherever a divisor could reach 0.

The compiler refuses a division or modulo whose divisor's bounds reach 0 (``CompileError: divisor ... may be 0``), and
``fix``/``recommend`` stopped with that traceback where a search spanned such a value: slime's global batch, which
floors to 0 on a branch of its definition, and OpenRLHF's vLLM engine count, which may be 0 (no vLLM). Each
framework's rules, at every release it follows, are compiled here over domains that reach 0 wherever a config can:
each whole number the framework reads as 0 from its flag or searches or repairs at 0, each derived quantity through
its bounds (a floor division may give 0), and each setting that may be left unset. Compile only: no solve.
"""

from __future__ import annotations

import pytest

from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks.registry import FRAMEWORKS, get_framework
from rlbatch_solver.scenario import Scenario
from rlbatch_solver.solver.compile import CompileError
from rlbatch_solver.solver.model import build_model

# small values keep every rule's table tiny; 4 // 2 and 1 // 4 make the floors of derived quantities reach 0 and 1
VALUES = [1, 2, 4]


def _releases():
    for name in FRAMEWORKS:
        fw = get_framework(name)
        if fw.releases is None:
            yield name, fw.version
        else:
            yield from ((name, v) for v in fw.versions)


def _framework(name, version):
    fw = get_framework(name)
    return fw if fw.releases is None or version == fw.version else type(fw).for_version(version)


def _reads_zero(fw, name, spec) -> bool:
    """The framework takes 0 for this variable from its flag (rather than refusing the config)."""
    try:
        return fw.to_values({spec.key: 0}, gpus=8, model=None).get(name) == 0
    except InputError:
        return False


def _searched_zero(fw) -> set[str]:
    """The variables the framework's own search space (with its knobs) holds 0 for: 8 H100s, a 7B model, GRPO (PPO
    where the release has no GRPO)."""
    for algorithm in ("grpo", "ppo"):
        sc = Scenario(framework=fw.name, gpu="h100", gpus=8, model="qwen2.5-7b", algorithm=algorithm)
        try:
            space = fw.space(sc, load_model("qwen2.5-7b"), with_knobs=True)
        except InputError:
            continue
        return {k for k, vals in space.domains.items() if any(v == 0 and v is not False for v in vals)}
    raise AssertionError(f"{fw.name} {fw.version}: no search space for GRPO or PPO")


def _repaired_zero(fw) -> set[str]:
    """The variables ``fix`` may set to 0: its closed choices and memory knobs (its other candidates are >= 1)."""
    policy = fw.repair_policy()
    options = {**dict(policy.choices), **dict(policy.cost_knobs)}
    return {k for k, vals in options.items() if any(v == 0 and v is not False for v in vals)}


def zero_domains(fw) -> dict:
    out = {}
    searched = _searched_zero(fw) | _repaired_zero(fw)
    for name, spec in fw.ruleset.variables.items():
        if spec.kind == "bool":
            out[name] = [False, True]
            continue
        zero = name in searched or _reads_zero(fw, name, spec)
        out[name] = ([0] if zero else []) + VALUES + ([None] if spec.optional else [])
    return out


@pytest.mark.parametrize("name,version", list(_releases()))
def test_every_rule_compiles_where_its_divisor_may_reach_zero(name, version):
    fw = _framework(name, version)
    domains = zero_domains(fw)
    broken = []
    for rule in fw.ruleset.rules:
        try:
            build_model(fw.ruleset, domains, enforce=False, rule_filter=[rule.id])
        except CompileError as exc:
            broken.append(f"{rule.id}: {exc}")
    assert not broken, f"{name} {version}: " + "; ".join(broken)


def test_the_domains_reach_zero_where_a_framework_reads_it():
    # OpenRLHF reads --vllm_num_engines 0 as "no vLLM": the domain must hold 0 there, or the test checks nothing
    fw = get_framework("openrlhf")
    assert 0 in zero_domains(fw)["vllm_num_engines"]
    assert 0 not in zero_domains(fw)["actor_nnodes"]
