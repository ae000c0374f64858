"""Property tests on random scenarios: every config the solver returns passes the checker."""

from hypothesis import HealthCheck, given, settings, strategies as st

import rlbatch_solver as rb
from rlbatch_solver.frameworks import get_framework

MODELS = ["qwen2.5-0.5b", "qwen2.5-7b", "llama3.1-8b", "qwen3-8b", "gemma2-9b"]
ALGOS = ["ppo", "grpo", "dapo", "gspo", "adpo", "rloo", "reinforce++"]

scenarios = st.builds(
    lambda gpn, nnodes, model, algo, n, p, r, dyn: rb.Scenario(
        framework="verl", gpus_per_node=gpn, nnodes=nnodes, model=model, algorithm=algo, n=n,
        prompt_length=p, response_length=r,
        search={"data.train_batch_size": [8, 16, 24, 48, 64], "actor_rollout_ref.actor.ppo_mini_batch_size": [4, 8, 16],
                "actor_rollout_ref.actor.use_dynamic_bsz": dyn},
    ),
    st.sampled_from([1, 2, 3, 4, 6, 8]), st.sampled_from([1, 2]), st.sampled_from(MODELS), st.sampled_from(ALGOS),
    st.integers(1, 9), st.sampled_from([256, 512, 1000]), st.sampled_from([128, 1024, 3000]),
    st.sampled_from([[False], [False, True]]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios)
def test_every_enumerated_config_passes_the_checker(sc):
    res = rb.enumerate(sc, limit=300, time_limit_s=30)
    fw = get_framework("verl")
    for sol, native in zip(res.solutions, res.native):
        # solver-independent: the plain checker on the values...
        assert fw.ruleset.check(sol).valid
        # ...and the exported overrides read back through the importer
        back = rb.check(native, model=sc.model)
        assert back.valid, (native, [v.message for v in back.violations])
    if res.complete:
        assert res.count <= res.raw_size
