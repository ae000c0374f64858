"""recommend with --host-mem: the node's RAM is a constraint (commands/host_fit.py), not a line printed beside an
answer that runs the node out of memory."""

import json

from clirun import run

from rlbatch_solver.commands.check import host_check
from rlbatch_solver.commands.host_fit import host_keys
from rlbatch_solver.commands.recommend import prepare, recommend
from rlbatch_solver.scenario import Scenario

# issue 25: ZeRO-2 loads a whole copy of the 7B model per rank at start-up (8 x 14 GiB) beside 8 worker processes
SWIFT_7B = ["recommend", "--framework", "swift", "--gpu", "a100-80gb", "--gpus", "8", "--model", "qwen2.5-7b",
            "--response-len", "8192"]


def _scenario(host_mem_gib):
    return Scenario(framework="swift", gpu="a100-80gb", gpus=8, model="qwen2.5-7b", response_length=8192,
                    host_mem_gib=host_mem_gib)


def _host(report, choice, ram):
    spec = prepare(report.scenario).spec
    return host_check(spec, choice.values, report.gpu.name, ram)


def test_issue_25_recommend_picks_a_config_whose_host_estimate_fits_64_gib():
    unconstrained = recommend(_scenario(None), top=3)
    # the answer without the RAM given does not fit a 64 GiB node (what recommend printed, exit 0, before)
    assert _host(unconstrained, unconstrained.best, 64).fits is False
    report = recommend(_scenario(64), top=3)
    assert report.choices and report.host.fits and report.host.ram_from == "given"
    assert all(_host(report, c, 64).fits for c in report.choices)  # alternatives too
    assert report.host.peak_gib < unconstrained.host.peak_gib
    p = run(*SWIFT_7B, "--host-mem", "64")
    assert p.returncode == 0 and "OUT OF MEMORY" not in p.stdout and "--deepspeed zero3" in p.stdout, p.stdout


def test_no_config_fits_the_node_exits_1_with_the_estimate_terms_and_what_would_help():
    p = run(*SWIFT_7B, "--host-mem", "24")
    assert p.returncode == 1, p.stdout
    out = p.stdout
    assert "No valid config fits the node's RAM (24 GiB given, 23 usable" in out, out
    # the header says the RAM excluded them, not that no config of the space is valid (the rules and GPUs hold)
    assert "proven infeasible" not in out and ("valid configs exist, but none fits the node's RAM (the least of those "
                                               "excluded needs 32.1 GiB, 22.8 usable)") in out, out
    assert "GPU worker processes (torch, CUDA, NCCL, engine libraries): 32.0 GiB" in out, out
    assert "a node with at least 34 GiB of RAM (--host-mem)" in out and "fewer GPU ranks per node (one worker process each: 32.0 GiB here)" in out, out
    assert "Best config" not in out
    data = json.loads(run(*SWIFT_7B, "--host-mem", "24", "--json").stdout)
    assert not data["choices"] and data["host_memory_unfit"]["fits"] is False
    assert data["host_memory_unfit"]["peak_gib"] > data["host_memory_unfit"]["limit_gib"] == 0.95 * 24


def test_ample_host_ram_leaves_the_answer_unchanged():
    free, ample = recommend(_scenario(None), top=5), recommend(_scenario(2048), top=5)
    assert [c.native for c in ample.choices] == [c.native for c in free.choices]
    assert [c.objective for c in ample.choices] == [c.objective for c in free.choices]
    assert ample.host.fits and ample.host_unfit is None


def test_host_keys_are_the_choices_the_host_estimate_reads():
    report = recommend(_scenario(None), top=1)
    prep = prepare(report.scenario)
    keys = host_keys(prep.spec, prep.space.domains, report.best.values, report.gpu.name, 64)
    # the ZeRO stage moves the start-up copy, offload and sleep level the steady state; the engine's GPU memory share
    # and the micro batch move nothing on the host
    assert {"ds_stage", "ds_offload", "sleep_level"} <= set(keys), keys
    assert "gmu_permille" not in keys and "per_device_train_batch_size" not in keys, keys


def test_a_sweep_point_no_config_of_which_fits_the_node_says_host_ram():
    from rlbatch_solver.sweep.grid import Point
    from rlbatch_solver.sweep.runner import evaluate_point

    scenario = {"framework": "swift", "gpu": "a100-80gb", "gpus": 8, "model": "qwen2.5-7b", "response_length": 8192}
    row = evaluate_point(Point("0", {**scenario, "host_mem_gib": 24}, 10.0))
    assert row["status"] == "infeasible" and row["reason"].startswith("host RAM: the least any config excluded needs "
                                                                      "is 32 GiB per node"), row
    assert row["host_memory"]["fits"] is False and row["host_memory"]["ram_gib"] == 24
    ok = evaluate_point(Point("1", {**scenario, "host_mem_gib": 64}, 10.0))
    assert ok["status"] == "ok" and ok["host_memory"]["fits"] and "--deepspeed zero3" in ok["native"], ok


def test_zero3_offload_puts_a_loras_frozen_base_on_the_host_pinned():
    """ms-swift's zero3_offload (offload_param and offload_optimizer on the CPU, pinned) partitions every parameter,
    trained or not, onto the CPU: a 7B LoRA (ms-swift's default tuner) on 8 ranks holds its 14.2 GiB bf16 base there,
    each parameter's partition pinned (power-of-two blocks): ~27 GiB, where the estimate counted the adapter's states
    alone (0.5 GiB). Full fine-tuning: the buffers DeepSpeed allocates (tests/test_host_deepspeed_offload.py)."""
    import rlbatch_solver as rb

    base = ["NPROC_PER_NODE=8", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B",
            "--per_device_train_batch_size", "1", "--num_generations", "8", "--use_vllm", "true",
            "--vllm_mode", "colocate", "--vllm_tensor_parallel_size", "4", "--max_completion_length", "8192"]
    term = "actor states offloaded to the CPU"

    def offloaded(*extra):
        host = rb.check(base + list(extra), framework="swift", model="qwen2.5-7b", gpu="a100-80gb", host_mem_gib=64).host
        return host.steady.get(term, 0.0) / 2**30

    lora = offloaded("--deepspeed", "zero3_offload")
    params = 7.62e9  # Qwen2.5-7B
    assert 2 * params / 2**30 < lora < 2 * 2 * params / 2**30, lora  # bf16 base, at most doubled by pinning
    assert 25 < lora < 29, lora
    assert offloaded("--deepspeed", "zero3") == 0.0
    assert offloaded("--deepspeed", "zero2_offload") < 1.0  # the base stays on the GPU: the adapter's states only
    full = offloaded("--deepspeed", "zero3_offload", "--tuner_type", "full")
    # per rank (0.95e9 elements): fp32 master and moments 12 B, the bf16 gradient partitions (1.9 GB -> 2 GiB
    # pinned), one sub-group's fp32 gradients (3.8 GB -> 4 GiB), the bf16 flat parameter buffer (2 GiB) and zero.Init's
    # per-parameter pinned partitions (~1.9 x 1.9 GB): ~22 GiB a rank, 176 on the node, not the estimator's
    # 18 x 1.5 (191 GiB)
    n = params / 8
    assert 8 * (12 * n + 8 * 2**30 + 2 * n * 1.7) / 2**30 < full < 8 * (12 * n + 8 * 2**30 + 2 * n * 2) / 2**30, full
    assert full < 0.95 * 18 * 1.5 * params / 2**30


OFFLOADED_VERL = ["data.train_batch_size=256", "actor_rollout_ref.rollout.n=8",
                  "actor_rollout_ref.actor.ppo_mini_batch_size=64", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                  "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
                  "actor_rollout_ref.actor.fsdp_config.param_offload=True",
                  "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True", "algorithm.adv_estimator=grpo"]


def test_fix_with_host_mem_searches_for_a_repair_that_fits_the_node():
    """fix printed the host excess (121 GiB of a 100 GiB node, the actor's offloaded states) and 'fix repairs the
    GPUs' memory, not the node's RAM'. With --host-mem it now repairs the RAM too, as recommend does: the offloaded
    params come back to the GPU (93 GiB), not proven nearest (configs that do not fit were excluded)."""
    import rlbatch_solver as rb

    r = rb.fix(OFFLOADED_VERL, framework="verl", gpus=8, model="qwen2.5-7b", gpu="h100", host_mem_gib=100)
    assert r.native_after == ["actor_rollout_ref.actor.fsdp_config.param_offload=False"], r.native_after
    assert r.host.fits and r.host.peak_gib < r.host.limit_gib and r.host_unfit is None
    assert not r.proven and any(v.rule == "verl.memory.host" for v in r.before_violations)
    assert r.satisfies == {"actor_rollout_ref.actor.fsdp_config.param_offload": ["verl.memory.host"]}
    assert any("this repair fits the node" in n for n in r.notes)
    # the answer checks as fitting the node
    fixed = [a for a in OFFLOADED_VERL if "param_offload" not in a] + r.native_after
    assert rb.check(fixed, framework="verl", gpus=8, model="qwen2.5-7b", gpu="h100", host_mem_gib=100).host.fits


def test_fix_says_no_repair_fits_a_node_too_small_for_any_and_exits_1():
    # 64 GiB: every config needs at least 64.4 (8 worker processes, rank 0's fp32 copy at start-up, the Ray driver)
    args = ["fix", "--framework", "verl", "--gpus", "8", "--model", "qwen2.5-7b", "--gpu", "h100", "--host-mem", "64",
            "--", *OFFLOADED_VERL]
    p = run(*args)
    assert p.returncode == 1, p.stdout
    out = " ".join(p.stdout.split())
    assert ("no repair within the values fix may change fits the node's RAM: the least of those excluded needs 64.4 "
            "GiB at start-up") in out and "a node with at least 68 GiB of RAM (--host-mem)" in out, out
    data = json.loads(run(*args[:1], "--json", *args[1:]).stdout)
    assert data["host_memory_unfit"]["peak_gib"] == 64.37 and data["host_memory"]["fits"] is False


def test_an_answer_on_fewer_gpus_than_named_is_judged_against_the_named_nodes_ram():
    # --objective gpus on 8x A100 answers 1 GPU for OpenRLHF 7B: the user's node still has the RAM of 8 GPUs' node
    # (it was assumed for the 1 GPU the answer uses, 144 GiB, and the answer printed a host out-of-memory line)
    report = recommend(Scenario(framework="openrlhf", gpu="a100-80gb", gpus=8, model="qwen2.5-7b",
                                objective="gpus"), top=1)
    assert report.choices and report.host.ram_from.endswith("x 8, the RAM of AWS p4de (1152 GiB for 8)"), \
        report.host.ram_from
    assert report.host.fits
    spec = prepare(report.scenario).spec
    assert host_check(spec, report.best.values, report.gpu.name, None).ram_gib < report.host.ram_gib


FRAMEWORK_NAMES = {"verl": "verl", "openrlhf": "OpenRLHF", "easyr1": "EasyR1", "swift": "ms-swift", "trl": "TRL",
                   "unsloth": "Unsloth"}


def test_the_host_terms_printed_for_a_framework_name_no_other_framework():
    """A term's name says where the bytes come from in the framework it is printed for: ms-swift's sleeping vLLM
    engine is 'vLLM sleep level 1', not verl 0.1-0.2's copy; verl's Ray driver is its TaskRunner, not OpenRLHF's or
    EasyR1's trainer loop."""
    for framework in ("swift", "verl", "easyr1"):
        proc = run("recommend", "--framework", framework, "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b",
                   "--json")
        assert proc.returncode == 0, proc.stderr
        terms = " | ".join(json.loads(proc.stdout)["host_memory"]["terms_gib"])
        others = [name for fw, name in FRAMEWORK_NAMES.items() if fw != framework and name in terms]
        assert not others, f"{framework}: {terms}"
        if framework == "swift":
            assert "vLLM sleep level 1" in terms
        if framework == "verl":
            assert "verl's TaskRunner" in terms
