"""``explain`` for out-of-memory messages (commands/explain_oom.py, frameworks/oom_text.py): real messages with their
sources (tests/data/oom_messages.yaml) get their kind, numbers and phase; with the README's example config the four
messages users paste most get our prediction beside them and a fix that ``check`` calls fitting."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.commands.explain_oom import infer_gpu, read_oom
from rlbatch_solver.frameworks.oom_text import CUDA_OOM, KV_NONE, KV_SHORT, LIBRARY_OOM, RAY_NODE, parse_oom

MESSAGES = yaml.safe_load((Path(__file__).parent / "data" / "oom_messages.yaml").read_text())
KINDS = {"cuda_oom": CUDA_OOM, "vllm_no_kv_blocks": KV_NONE, "vllm_max_len_gt_kv": KV_SHORT,
         "vllm_util_gt_free": "engine_util_above_free", "sglang_not_enough": "sglang_not_enough_memory",
         "ray_node_oom": RAY_NODE, "host_killed": "host_killed", "nccl_oom": LIBRARY_OOM,
         "cublas_alloc_failed": LIBRARY_OOM}

# the README's "Will it OOM?" example
README_CONFIG = ["data.train_batch_size=64", "data.max_prompt_length=880", "data.max_response_length=1280",
                 "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
                 "actor_rollout_ref.rollout.gpu_memory_utilization=0.35", "algorithm.adv_estimator=grpo"]
# the four messages of the "explain for the errors users paste most" issue
CUDA = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total capacity of 79.11 GiB "
        "of which 3.21 GiB is free. Including non-PyTorch memory, this process has 75.89 GiB memory in use.")
NO_KV = ("ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization when initializing "
         "the engine.")
KV_LEN = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored "
          "in KV cache (20464). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing "
          "the engine.")
RAY = ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. Memory on the node "
       "(IP: 10.0.0.1, ID: 1a2b) where the task (actor ID: 3c4d) was running was 240.51GB / 251.53GB (0.956245), "
       "which exceeds the memory usage threshold of 0.95.")
PHASE_OF = {CUDA: None, NO_KV: "rollout", KV_LEN: "rollout", RAY: "host"}


@pytest.mark.parametrize("rec", MESSAGES, ids=[m["name"] for m in MESSAGES])
def test_a_real_message_is_read_with_its_kind_and_phase(rec):
    assert rec["source"].startswith("https://")
    text = rec["text"] + ("\n" + rec["title"] if rec.get("title") else "")  # a thread whose title says the error
    found = read_oom(text, None if rec["framework"] == "any" else rec["framework"])
    if rec["kind"] not in KINDS:
        assert found is None or found[0].kind in KINDS.values()
        return
    assert found is not None, rec["name"]
    msg, _ = found
    assert msg.kind == KINDS[rec["kind"]], (rec["name"], msg.kind)
    want = {"engine_init": "rollout", "optimizer_step": "actor_update", "values": "critic_update"}.get(
        rec["phase"], rec["phase"])
    if msg.kind in (RAY_NODE, "host_killed"):
        want = "host"  # a host kill is the node's RAM, whichever phase the node was in
    if want not in ("unknown", "checkpoint") and rec.get("phase_in_text", True):
        assert msg.phase == want, (rec["name"], msg.phase, msg.frame)


def test_every_framework_and_phase_has_a_real_message():
    seen = {(m["framework"], m["phase"]) for m in MESSAGES}
    for fw in ("verl", "openrlhf", "swift", "trl"):
        assert any(f == fw for f, _ in seen), fw
    phases = {p for _, p in seen}
    assert {"rollout", "old_log_prob", "actor_update", "host"} <= phases | {"engine_init"}, phases


def test_the_cuda_message_numbers_in_both_torch_wordings():
    new = parse_oom(CUDA)
    assert new.numbers == pytest.approx({"tried_gib": 9.27, "capacity_gib": 79.11, "free_gib": 3.21,
                                         "in_use_gib": 75.89})
    assert new.needed_gib == pytest.approx(85.16)
    old = parse_oom("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity; "
                    "74.31 GiB already allocated; 1.12 GiB free; 76.02 GiB reserved in total by PyTorch)")
    assert old.kind == CUDA_OOM and old.numbers["capacity_gib"] == pytest.approx(79.35)
    assert old.needed_gib == pytest.approx(74.31 + (76.02 - 74.31) + 2.0)


def test_a_full_gpus_message_in_bytes_a_rocm_message_and_torch_2_1s_spelling_keep_their_numbers():
    # torch prints a size of at most 1 KiB in bytes ("of which 0 bytes is free": the GPU is full, the commonest case),
    # ROCm builds say "HIP out of memory", torch 2.1 printed "total capacty"; each wording seen in users' pastes
    full = parse_oom("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                     "capacity of 79.11 GiB of which 0 bytes is free. Including non-PyTorch memory, this process has "
                     "79.10 GiB memory in use. Of the allocated memory 77.50 GiB is allocated by PyTorch, and 1.02 GiB "
                     "is reserved by PyTorch but unallocated.")
    assert full.numbers == pytest.approx({"tried_gib": 20 / 1024, "capacity_gib": 79.11, "free_gib": 0.0,
                                          "in_use_gib": 79.10, "allocated_gib": 77.50,
                                          "reserved_unallocated_gib": 1.02})
    rocm = parse_oom("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 978.00 MiB. GPU 0 has a total "
                     "capacity of 191.98 GiB of which 630.00 MiB is free. Of the allocated memory 0 bytes is allocated "
                     "by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.")
    assert rocm.kind == CUDA_OOM and rocm.numbers["capacity_gib"] == pytest.approx(191.98)
    assert rocm.numbers["allocated_gib"] == 0.0 and infer_gpu(rocm)[0] == "mi300x"
    typo = parse_oom("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 314.00 MiB. GPU 0 has a "
                     "total capacty of 39.39 GiB of which 0 bytes is free.")
    assert typo.numbers["capacity_gib"] == pytest.approx(39.39) and infer_gpu(typo)[0] == "a100-40gb"


def test_the_capacity_names_the_gpu_as_an_inference():
    for total, want in ((79.11, {"h100", "a100-80gb", "a800", "h800", "h100-pcie"}), (95.0, {"h20"}),
                        (23.65, {"rtx4090", "rtx3090"}), (39.39, {"a100-40gb"})):
        gpu, why = infer_gpu(parse_oom(CUDA.replace("79.11", str(total))))
        assert gpu in want and "inferred" in why, (total, gpu)


@pytest.mark.parametrize("message", [CUDA, NO_KV, KV_LEN, RAY], ids=["cuda", "no_kv", "kv_len", "ray"])
def test_the_four_messages_with_the_readme_config_get_phase_numbers_prediction_and_a_fitting_fix(message):
    traceback = 'File "verl/workers/fsdp_workers.py", line 610, in update_actor\n' if message is CUDA else ""
    r = rb.explain(traceback + message, config=README_CONFIG, gpus=4, model="qwen2.5-1.5b", gpu="rtx4090")
    exp = r.oom
    assert r.matched and exp is not None
    assert exp.phase == (PHASE_OF[message] or "actor_update")
    assert exp.lines and exp.predicted_oom is not None
    if message is not RAY:
        assert exp.message.numbers or message is NO_KV
        assert any("we predict" in line for line in exp.lines)
        # whatever it proposes (or none: the config already fits by our model), check calls the result fitting
        changed = {a.split("=")[0]: a for a in (exp.fix.native_after if exp.fix is not None else [])}
        final = [changed.pop(a.split("=")[0], a) for a in README_CONFIG] + list(changed.values())
        checked = rb.check(final, framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="rtx4090")
        assert checked.memory.fits
    else:
        assert exp.message.numbers["node_total_gib"] == pytest.approx(251.53)
        assert any("we estimate" in line for line in exp.lines)


def test_a_miss_is_said_plainly_and_the_fix_holds_what_the_run_needed():
    """The CUDA message shows 85 GiB held in the actor update where we predict far less: a miss of ours, said so;
    the fix is searched with the update priced that high, and what it proposes fits by plain check too."""
    msg = 'File "verl/workers/fsdp_workers.py", in update_actor\n' + CUDA
    cfg = ["data.train_batch_size=256", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=64",
           "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
           "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8", "data.max_prompt_length=1024",
           "data.max_response_length=2048", "algorithm.adv_estimator=grpo"]
    exp = rb.explain(msg, config=cfg, gpus=8, model="qwen2.5-7b").oom
    assert exp.gpu == "h100" and "inferred" in exp.gpu_from
    assert exp.predicted_oom is False and any("a miss of ours" in line for line in exp.lines)
    # 85.16 GiB needed is 54.4 over our 30.7: no micro batch holds that much more, since the embedding's and
    # lm_head's gradients reduced at the backward's end (6 B each beside the states) do not shrink with it. A run that
    # needed 80.89 GiB (5 GiB asked beside the same 75.89) is fixed by a smaller micro batch, which check calls fitting
    smaller = msg.replace("Tried to allocate 9.27 GiB", "Tried to allocate 5.00 GiB")
    exp = rb.explain(smaller, config=cfg, gpus=8, model="qwen2.5-7b").oom
    assert exp.predicted_oom is False and any("a miss of ours" in line for line in exp.lines)
    assert exp.offset_gib > 0 and exp.fix is not None and exp.fix.changes and exp.fixed_fits


def test_without_a_config_the_advice_is_the_frameworks_own_keys_and_the_cli_exits_0():
    out = run("explain", 'File "trl/trainer/grpo_trainer.py", in compute_loss\n' + CUDA)
    assert out.returncode == 0
    assert "phase: actor update" in out.stdout and "--per_device_train_batch_size" in out.stdout
    assert "inferred from the message's 79.11 GiB total" in out.stdout
    out = run("explain", KV_LEN, "--framework", "verl")
    assert "max_model_len" in out.stdout and "rollout" in out.stdout
    js = run("explain", RAY, "--json")
    import json

    d = json.loads(js.stdout)["out_of_memory"]
    assert d["kind"] == RAY_NODE and d["phase"] == "host" and d["numbers"]["node_total_gib"] == pytest.approx(251.53)


def test_the_most_specific_frame_names_the_phase_not_the_innermost():
    """A traceback shows the outer frames too: verl's compute_ref_log_prob runs the actor's compute_log_prob, and
    TRL's compute_loss runs _get_per_token_logps; the phase is the reference pass and the update, not the old
    log-prob pass the innermost frame would name."""
    ref = ('File "verl/workers/fsdp_workers.py", in compute_ref_log_prob\n'
           '    output = self.ref_policy.compute_log_prob(data=data)\n'
           'File "verl/workers/actor/dp_actor.py", in compute_log_prob\n' + CUDA)
    loss = ('File "trl/trainer/grpo_trainer.py", in compute_loss\n'
            'File "trl/trainer/grpo_trainer.py", in _get_per_token_logps\n' + CUDA)
    assert read_oom(ref)[0].phase == "ref"
    assert read_oom(loss)[0].phase == "actor_update"


ONE_4090_SCRIPT = """python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
    data.train_batch_size=32 data.max_prompt_length=512 data.max_response_length=1024 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct actor_rollout_ref.model.use_remove_padding=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.model.enable_gradient_checkpointing=True \\
    actor_rollout_ref.actor.fsdp_config.param_offload=True actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.gpu_memory_utilization=0.5 actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 actor_rollout_ref.ref.fsdp_config.param_offload=True \\
    trainer.n_gpus_per_node=1 trainer.nnodes=1
"""


def test_full_fine_tuning_that_fits_no_24gb_gpu_is_offered_lora(tmp_path):
    """Qwen2.5-1.5B fully fine-tuned on one RTX 4090 (offload on): the actor update's states alone exceed the GPU.
    The answer said a repair may exist and, in the next line, that the rules cannot all hold; named as held fixed keys
    the script never set (use_torch_compile=True, partial_rollout=True, rollout.nnodes=0); and never offered LoRA,
    the usual way to train 1.5B on one 24 GB GPU."""
    script = tmp_path / "run.sh"
    script.write_text(ONE_4090_SCRIPT)
    res = run("explain", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 0 has a total "
              "capacity of 23.65 GiB of which 2.02 GiB is free.", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090",
              "--time-limit", "5", script)
    out = res.stdout
    assert "LoRA instead of full fine-tuning" in out and "actor_rollout_ref.model.lora_rank=32" in out
    held = next(line for line in out.splitlines() if "held fixed" in line)
    for unset in ("use_torch_compile", "partial_rollout", "rollout.nnodes", "entropy_checkpointing"):
        assert unset not in held
    assert "trainer.n_gpus_per_node=1" in held and "data.max_response_length=1024" in held
    assert not ("one may exist" in out and "cannot all hold" in out)
    assert "the fix below is the nearest config that fits" not in out


def test_an_oom_in_a_phase_we_called_tight_is_no_miss_and_its_fix_moves_that_phases_memory():
    """verl's own 0.2 GRPO example on A100 80GB: check calls the actor update TIGHT (70.5 of 75.0 GiB, within the
    memory model's observed error). A CUDA OOM pasted with it is one we warned of, not "a miss of ours". The run did go
    out of memory, so it needed more than the 75.0 GiB (by the 2.50 GiB it asked for): the fix is priced that high and
    moves the actor update's memory (use_remove_padding=True), not only the rule repair the config also needs
    (critic.ppo_micro_batch_size_per_gpu=1 alone was the answer, the OOM left as it was)."""
    out = run("explain", "--gpu", "a100-80gb", "--model", "qwen2.5-7b",
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of "
              "79.15 GiB of which 1.20 GiB is free.", "tests/data/scripts/verl/run_qwen2-7b.sh")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "a miss of ours" not in out.stdout
    assert "we predicted this phase tight" in out.stdout
    assert "it needed the 75.0 GiB usable and the 2.50 GiB it asked for" in out.stdout
    paste = next(line for line in out.stdout.splitlines() if "paste over yours:" in line)
    assert "actor_rollout_ref.model.use_remove_padding=True" in paste, out.stdout


@pytest.mark.parametrize("message", [
    "TENCENT64:47604:53083 [0] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
])
def test_nccls_and_cublass_out_of_memory_are_explained_as_a_full_gpu_without_sizes(message):
    """NCCL's and cuBLAS's own allocations fail once torch's caching allocator holds the whole GPU (Megatron-LM
    #1509): a GPU out-of-memory, said as one outside torch's allocator, with no capacity or sizes read."""
    msg = parse_oom(message)
    assert msg is not None and msg.kind == LIBRARY_OOM and msg.numbers == {} and msg.gpu_memory
    out = run("explain", message)
    assert out.returncode == 0 and "No known message matched" not in out.stdout
    assert "out of memory" in out.stdout and "caching allocator)" not in out.stdout
    assert "numbers in the message" not in out.stdout and "inferred from the message" not in out.stdout


def test_an_oom_in_a_named_phase_is_fixed_by_that_phases_micro_batch_not_by_shrinking_every_phase():
    """verl's one-step-off GRPO example (Qwen3-0.6B, 2+6 GPUs) with an out-of-memory the traceback places in the actor
    update. The message's excess was priced in every training phase, so the fix lowered the reference pass's micro batch
    too (ref.log_prob_micro_batch_size_per_gpu 64 -> 16) beside the actor's (other configs got ulysses 1 -> 4, the one
    key that shrinks every phase). The excess is the actor update's: lowering its own micro batch is the repair."""
    out = run("explain", 'File "verl/workers/fsdp_workers.py", line 610, in update_actor\n' + CUDA,
              "tests/data/scripts/verl/one_step_off_grpo_0.6b_gsm8k_fsdp2_2_6.sh", "--model", "qwen3-0.6b",
              "--time-limit", "10").stdout
    assert "phase: actor update" in out and "searched with the actor update" in out, out
    paste = next(line for line in out.splitlines() if "paste over yours:" in line).split(":", 1)[1].split()
    assert [a.split("=")[0] for a in paste] == ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"], out
    assert "check on the changed config: fits" in out


def test_a_phase_offset_moves_that_phase_only():
    from rlbatch_solver.costmodel.efficiency import Efficiency

    one = Efficiency(phase_memory_offsets=(("actor_update", 5 * 2**30),))
    assert Efficiency.from_mapping(one.as_dict()) == Efficiency()  # a profile holds the numbers only
    base = rb.check(README_CONFIG, framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="h100").memory.peaks
    moved = rb.check(README_CONFIG, framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="h100",
                     calibration=one).memory.peaks
    assert moved["actor_update"] - base["actor_update"] == pytest.approx(5 * 1024, abs=1)
    assert all(moved[p] == base[p] for p in base if p != "actor_update")


def test_a_phase_the_traceback_names_that_the_config_skips_is_said_so():
    """TRL 0.22's GRPOTrainer computes the old log-probs only when gradient_accumulation_steps % generate_every != 0
    (trl/versions.py OLD_LOG_PROB_FROM): with the defaults the phase is not priced. A traceback in it was compared with
    our worst phase under "the phase is not named", though the traceback named it."""
    trace = ('  File "trl/trainer/grpo_trainer.py", line 1201, in _generate_and_score_completions\n'
             '    old_per_token_logps = self._get_per_token_logps(\n' + CUDA)
    out = " ".join(run("explain", trace, "--framework", "trl==0.22.2", "--gpus", "8", "--gpu", "h100", "--model",
                       "qwen2.5-7b", "--time-limit", "10", "--", "--per_device_train_batch_size", "8",
                       "--num_generations", "8").stdout.split())
    assert "phase: old log-prob pass" in out, out
    assert "the phase is not named" not in out, out
    assert "the old log-prob pass is not among the phases we price for this config" in out, out


def test_an_oom_fix_of_a_script_of_old_names_only_prints_all_its_arguments_in_place_of_the_users(tmp_path):
    """OpenRLHF's published hybrid-engine script (every flag a pre-0.10.2 name) out of memory on A100-40GB: the fix
    said 'paste over yours' of arguments that share no name with the user's, and 'and in yours: drop --bf16'; as fix
    says it, they are all of the arguments, one line in place of the user's, which checks back valid as printed."""
    import shlex

    script = Path(__file__).parent / "data" / "scripts" / "openrlhf" / "train_grpo_ray_hybrid_engine.sh"
    two = tmp_path / "two.sh"
    two.write_text(script.read_text().replace("--n_samples_per_prompt 1 ", "--n_samples_per_prompt 2 "))
    res = run("explain", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total "
              "capacity of 39.39 GiB of which 2.02 GiB is free.", "--model", "llama3.1-8b", "--gpu", "a100-40gb",
              "--time-limit", "10", two)
    lines = res.stdout.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("  in place of all your arguments")), None)
    assert at is not None, res.stdout
    assert "paste over yours" not in res.stdout and "and in yours" not in res.stdout, res.stdout
    assert "`rlbatch fix --write FILE` writes your script so" in lines[at]
    # the renames are one change, as fix says them, not a line each
    assert sum(line.startswith("  rename --ref_num_nodes -> --ref.num_nodes") for line in lines) == 1, res.stdout
    assert not any(line.startswith("  --ref_num_nodes ") for line in lines), res.stdout
    args = shlex.split(lines[at + 1])
    assert "--bf16" not in args and "--rollout.n_samples_per_prompt" in args, args
    checked = run("check", "--framework", "openrlhf", "--gpu", "a100-40gb", "--model", "llama3.1-8b", "--", *args)
    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize("args, moved", [
    (("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
      "of which 1.2 GiB is free.", "--", "tests/data/scripts/verl/run_qwen3_8b_fsdp.sh"),
     ["actor_rollout_ref.actor.ppo_mini_batch_size"]),
    (('File "verl/workers/fsdp_workers.py", line 610, in update_actor\n' + CUDA,
      "tests/data/scripts/verl/one_step_off_grpo_0.6b_gsm8k_fsdp2_2_6.sh", "--model", "qwen3-0.6b", "--time-limit", "10"),
     []),
], ids=["mini_batch_moved", "micro_batch_only"])
def test_the_oom_fix_header_says_it_keeps_the_batch_only_where_it_moves_no_key_that_shapes_learning(args, moved):
    """verl's run_qwen3_8b_fsdp.sh read through every DEVICE branch (the last one's values: train and mini batch 16)
    and an 80 GB message: the nearest fitting change moved actor.ppo_mini_batch_size 16 -> 1 (sixteen updates a step
    where there was one) under a header saying "your algorithm's batch sizes kept". The header now names each changed
    key that decides what an update trains on (Framework.shapes_learning), and says "kept" only where none moved (the
    one-step-off example's actor-update OOM, fixed by the actor's micro batch alone)."""
    from rlbatch_solver.frameworks import get_framework

    res = run("explain", *args)
    lines = res.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("nearest change that fits"))
    changed = [line.split("=", 1)[0].strip() for line in lines[head + 1:] if " -> " in line]
    fw = get_framework("verl")
    learning = {fw.native_key(name) for name in fw.shapes_learning}
    assert changed and [key for key in changed if key in learning] == moved, res.stdout
    if moved:
        assert lines[head].startswith(f"nearest change that fits (it moves {', '.join(moved)}, which decide"), lines[head]
    else:
        assert lines[head] == "nearest change that fits (your algorithm's batch sizes kept):", lines[head]
