"""``enumerate --host-mem``: the node's RAM held to each listed config's host estimate, and the header says so.

Before, enumerate had no --host-mem (``No such option``) and a scenario's ``host_mem_gib`` was silently ignored:
the header of a listing with a GPU and a model never said whether the host RAM was checked, nor what it left out.
"""

from __future__ import annotations

import json

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.commands.check import host_check
from rlbatch_solver.scenario import Scenario

PINS = {"data.train_batch_size": 32, "actor_rollout_ref.actor.ppo_mini_batch_size": 16,
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size": 1}
OFFLOAD = {"actor_rollout_ref.actor.fsdp_config.param_offload": [False, True],
           "actor_rollout_ref.actor.fsdp_config.optimizer_offload": [False, True]}
SEED = dict(framework="verl", gpus_per_node=4, gpu="h100", model="qwen2.5-7b", algorithm="grpo", n=8,
            prompt_length=880, response_length=1280)


def _scenario(**kw) -> Scenario:
    sc = Scenario(**{**SEED, "fixed": dict(PINS), "search": dict(OFFLOAD), **kw})
    sc.validate()
    return sc


def _spec():
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.commands.common import model_card
    from rlbatch_solver.frameworks import get_framework

    return get_framework("verl").cost_spec(model_card("qwen2.5-7b"), load_gpu("h100"))


def test_the_listing_is_exactly_the_configs_whose_host_estimate_fits_the_ram():
    """Brute force on a small space: the configs listed with the RAM are those of the listing without it whose host
    estimate fits; the others are counted, and the least of them is reported."""
    everything = rb.enumerate(_scenario(), time_limit_s=60)
    assert everything.complete and everything.host_mem_gib is None and 0 < everything.count <= 4000
    spec = _spec()
    hosts = [host_check(spec, s, "h100", 100) for s in everything.solutions]
    fitting = [n for n, h in zip(everything.native, hosts) if h.fits]
    assert 0 < len(fitting) < everything.count  # the offloads that fit the GPUs do not all fit 100 GiB
    held = rb.enumerate(_scenario(host_mem_gib=100), time_limit_s=60)
    assert held.host_mem_gib == 100 and held.complete
    assert sorted(map(tuple, held.native)) == sorted(map(tuple, fitting))
    assert held.host_excluded == everything.count - len(fitting)
    assert held.host_least.peak_gib == min(h.peak_gib for h in hosts if not h.fits)


def test_the_header_says_the_ram_was_checked_and_what_it_left_out():
    args = ["enumerate", "--gpu", "h100", "--gpus", "4", "--model", "qwen2.5-7b", "--algo", "grpo", "--n", "8",
            "--prompt-len", "880", "--response-len", "1280", "--show", "2"]
    args += [f"--set={k}={v}" for k, v in PINS.items()]
    args += [f"--search={k}=False,True" for k in OFFLOAD]
    out = run(*args, "--host-mem", "100")
    assert out.returncode == 0, out.stdout + out.stderr
    head = " ".join(out.stdout.split())
    assert "378 valid configs that fit h100 (" in head and "and a node's 100 GiB of RAM for verl" in head
    assert ("host RAM checked against 100 GiB per node (95 usable): 126 valid config(s) that fit the GPUs left out, "
            "the least of them needs 119.3 GiB at steady state") in head
    line = json.loads(run(*args, "--host-mem", "100", "--json").stdout.splitlines()[-1])
    assert line["host_mem_gib"] == 100 and line["host_excluded"] > 0 and line["host_least_excluded"]["fits"] is False
    plain = " ".join(run(*args).stdout.split())
    assert "host RAM not checked: --host-mem GiB" in plain
    assert json.loads(run(*args, "--json").stdout.splitlines()[-1])["host_mem_gib"] is None


def test_a_ram_no_config_fits_says_so_and_what_would_help():
    out = run("enumerate", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--time-limit", "5",
              "--host-mem", "40")
    assert out.returncode == 1
    head = " ".join(out.stdout.split())
    assert head.startswith("0 valid configs that fit h100") and "what would help: a node with at least" in head


def test_host_mem_without_a_gpu_and_a_model_is_an_input_error():
    out = run("enumerate", "--gpus", "8", "--host-mem", "40")
    assert out.returncode == 2 and "host-mem" in out.stderr and "Traceback" not in out.stderr
