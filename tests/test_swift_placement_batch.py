"""ms-swift's ``recommend --placement auto`` with --per_device_train_batch_size and --gradient_accumulation_steps both
set: the split layout trains on fewer GPUs than the job's, so the same two flags made fewer completions per optimizer
step (48 against the colocated 64 on 8 H100, 6 training ranks); now it keeps the job's 64 with factors of its own."""

from __future__ import annotations

from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.scenario import Scenario


def test_every_layout_trains_the_users_completions_per_optimizer_step():
    sc = Scenario(framework="swift", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=512,
                  response_length=1024, placement="auto",
                  fixed={"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2})
    report = recommend(sc, time_limit_s=60)
    options = [o for o in report.placement.options if o.best is not None]
    assert {o.placement for o in options} == {"colocate", "split"}
    for o in options:
        v = o.best.values
        assert v["per_device_train_batch_size"] * v["gpus_per_node"] * v["nnodes"] \
            * v["gradient_accumulation_steps"] == 64, o.label
        assert o.best.samples == 64
    colocated = next(o for o in options if o.placement == "colocate").best.values
    assert (colocated["per_device_train_batch_size"], colocated["gradient_accumulation_steps"]) == (4, 2)
