"""Unsloth GRPO (``--framework unsloth``, frameworks/trl/unsloth.py): TRL's GRPOConfig rules at Unsloth's pinned TRL,
Unsloth's keys, and its memory held to Unsloth's published figures.

* the published VRAM table (unsloth.ai/blog/grpo, "Long-context GRPO", Feb 20 2025; the same table in Unsloth's
  r/LocalLLaMA post): Llama 3.1 8B, 20K context, 8 generations per prompt, term by term, within 15%: training
  memory 42 GB, inference (a second copy of the weights for vLLM) 0 GB, the KV cache of a 20K sequence 2.5 GB; the
  chunked GRPO loss, 9.8 GB at that release, is smaller still at the release we follow (its chunk is capped at 2 GiB,
  unsloth_zoo/fused_losses/chunked_logprob.py chunked_logprob_rows); the TRL + FA2 column by TRL 0.19.1's own cost
  terms: the vLLM copy (16 GB), the KV cache (2.5 GB) and the loss's fp32 logits (78.3 GB, the one copy the table
  counts) within 15%, training never below the table's (it counts 20 B per hidden unit per token per layer, a LoRA
  layer saves 45); on TRL 1.16 the fused lm head leaves no logits term;
* Unsloth's Qwen3 (4B) GRPO notebook checks valid and fits the Tesla T4 it runs on;
* Unsloth's rules: its defaults, its batch rewrite, its mini-batch check, removed TRL fields accepted; checker and
  CP-SAT agree on a small space;
* bad keys are input errors (exit 2); check on a pasted config stays under 1.5 s.
"""

import time

import pytest

from bruteforce import assert_enumerate_equals_checker
from clirun import run

from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel import constants as C
from rlbatch_solver.costmodel import memory as M
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.costmodel.tables import full_reports
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.trl.unsloth import standby_utilization
from rlbatch_solver.frameworks.trl.unsloth_rules import RULESET

FW = get_framework("unsloth")
GIB = 1024**3
CONTEXT, GENERATIONS, PROMPT = 20 * 1024, 8, 512  # the blog's "20K context" (its 78.3 GB is 2*2*8*20480*128256 B)
# Llama3.1_(8B)-GRPO.ipynb, the notebook the blog links: QLoRA 4-bit, vLLM, rank 32, Unsloth's checkpointing
BLOG_UNSLOTH = {
    "from_pretrained.max_seq_length": CONTEXT, "from_pretrained.load_in_4bit": True,
    "from_pretrained.fast_inference": True, "from_pretrained.max_lora_rank": 32, "get_peft_model.r": 32,
    "get_peft_model.use_gradient_checkpointing": "unsloth", "grpo_config.per_device_train_batch_size": GENERATIONS,
    "grpo_config.gradient_accumulation_steps": 1, "grpo_config.num_generations": GENERATIONS,
    "grpo_config.max_completion_length": CONTEXT - PROMPT,
}
# the same run on TRL with FlashAttention-2 and no checkpointing, as the table's right column prices it: LoRA over
# a bf16 model, vLLM colocated with its own copy of the weights
# (TRL 0.19.1: the oldest release we follow that colocates vLLM and, like the TRL of the blog, computes the log-probs
# from the whole logits tensor; 1.16's fused lm head came later)
TRL_RELEASE = "trl==0.19.1"
BLOG_TRL = ["--use_peft", "--lora_r", "32", "--use_vllm", "--vllm_mode", "colocate", "--torch_dtype", "bfloat16",
            "--per_device_train_batch_size", str(GENERATIONS), "--gradient_accumulation_steps", "1",
            "--num_generations", str(GENERATIONS), "--max_prompt_length", str(PROMPT),
            "--max_completion_length", str(CONTEXT - PROMPT), "--gradient_checkpointing", "false"]
PUBLISHED = {  # GB as the blog counts them (GiB: 78.3 = 2*2*8*20480*128256 / 2**30)
    "unsloth": {"training": 42.0, "grpo": 9.8, "inference": 0.0, "kv": 2.5},
    "trl": {"training": 414.0, "grpo": 78.3, "inference": 16.0, "kv": 2.5},
}


def _terms(fw, values) -> dict[str, float]:
    """The blog's four terms from our cost model (GiB): training (weights and activations in the update), the GRPO
    loss's logits, vLLM's own copy of the weights at rollout, and the KV cache one 20K sequence needs."""
    model = load_model("llama3.1-8b")
    mem, _ = full_reports(fw.cost_spec(model, load_gpu("h100")), values)
    update, rollout = mem[Phase.ACTOR_UPDATE].phases[Phase.ACTOR_UPDATE], mem[Phase.ROLLOUT].phases[Phase.ROLLOUT]
    activations = update.get(M.T_ACT_CKPT, update.get(M.T_ACT, 0.0))
    return {"training": (update[M.T_PARAMS] + activations) / GIB, "grpo": update[M.T_LOGITS] / GIB,
            "inference": rollout["vLLM weights (bf16, /TP)"] / GIB,
            "kv": model.kv_bytes_per_token(1, 2) * CONTEXT / GIB}


def _values(fw, flat):
    return fw.to_values(flat, gpus=1, model=load_model("llama3.1-8b"))


def test_unsloth_column_of_the_published_vram_table():
    ours, published = _terms(FW, _values(FW, BLOG_UNSLOTH)), PUBLISHED["unsloth"]
    for term in ("training", "kv"):
        assert ours[term] == pytest.approx(published[term], rel=0.15), (term, ours, published)
    assert ours["inference"] == published["inference"] == 0.0  # vLLM reads the trainer's weights
    # the loss at the release we follow: one chunk of at most 2 GiB of fp32 logits and their gradient (8 B each)
    chunk = M.unsloth_chunk_rows((CONTEXT - PROMPT) * GENERATIONS, 128256) * 128256 * 8 / GIB
    assert ours["grpo"] == pytest.approx(chunk) and chunk <= 2.0 < published["grpo"]


def test_trl_column_of_the_published_vram_table():
    """The TRL + FA2 column as the blog states it (LoRA over bf16 Llama 3.1 8B, FlashAttention-2, no checkpointing, vLLM
    colocated, 8 generations in one micro batch, the log-probs from the whole logits tensor), priced by TRL's own terms
    at 0.19.1, term by term (docs/cost-model.md 9.4a)."""
    trl = get_framework(TRL_RELEASE)
    values = _values(trl, trl.parse(BLOG_TRL)[0])
    ours, published = _terms(trl, values), PUBLISHED["trl"]
    for term in ("inference", "kv"):
        assert ours[term] == pytest.approx(published[term], rel=0.15), (term, ours, published)
    # the GRPO loss: the blog counts one 4-byte copy of the logits, which is the fp32 tensor TRL's forward hands the
    # loss (accelerate's convert_outputs_to_fp32 under bf16 autocast; GRPOTrainer._get_per_token_logps keeps the
    # logits_to_keep completion positions): 8 x 19,968 x 128,256 x 4 B = 76.3 GiB, within 3% of 78.3. The update holds
    # three more fp32 tensors of that size in the backward (selective_log_softmax's gather gradient, the per-row
    # logsumexp gradients and their stacked copy; 15.8 B per logit measured), which the table leaves out.
    plan = trl.cost_spec(load_model("llama3.1-8b"), load_gpu("h100")).plan(values, Phase.ACTOR_UPDATE)
    fp32_logits = M.logits_tensor_bytes(GENERATIONS * (CONTEXT - PROMPT), 128256, C.FP32) / GIB
    assert fp32_logits == pytest.approx(published["grpo"], rel=0.15)
    assert ours["grpo"] == pytest.approx(fp32_logits * C.LOGIT_BYTES[plan.logits_impl][2] / C.FP32)
    assert C.LOGIT_BYTES[plan.logits_impl][2] == 4 * C.FP32
    # training: the bf16 weights (15 GiB) and every activation a LoRA layer saves without checkpointing, 45 x hidden
    # per token per layer as measured (benchmarks/saved_activations.py); the table's 414 is 16 GB of weights and 20 x
    # hidden, the count of no layer's code. Ours is 2.25 times the table's activations and never below it.
    model = load_model("llama3.1-8b")
    positions = GENERATIONS * CONTEXT * model.num_hidden_layers * model.hidden_size
    table_bytes = (published["training"] - published["inference"]) * GIB / positions
    assert table_bytes == pytest.approx(20, rel=0.01)
    ours_bytes = (ours["training"] * GIB - model.total_params() * 2) / positions
    assert ours_bytes == pytest.approx(45, rel=0.01) and ours["training"] >= published["training"] * 0.85
    # the table's run keeps every activation (its 372 GB saved by offloaded checkpoints): with TRL's own checkpointing
    # the training term is 59 GiB, far under the table's 414
    ckpt = [*BLOG_TRL[:-2], "--gradient_checkpointing", "true"]
    assert _terms(trl, _values(trl, trl.parse(ckpt)[0]))["training"] == pytest.approx(58.7, rel=0.01)


def test_trl_1_16_drops_the_logits_term_of_the_published_table():
    """The same run on TRL 1.16 (no max_prompt_length, a field 1.16 removed; vLLM's model length holds prompt and
    completion): GRPOTrainer's fused lm head (add_fused_lm_head, kernels/chunked_logprob.py) never builds the logits,
    so the table's 78.3 GB loss term is one 256 MiB tile; the other three terms are 0.19.1's."""
    cut = BLOG_TRL.index("--max_prompt_length")
    args = [*BLOG_TRL[:cut], *BLOG_TRL[cut + 2:], "--vllm_max_model_length", str(CONTEXT)]
    ours, old = (_terms(fw, _values(fw, fw.parse(a)[0])) for fw, a in ((get_framework("trl"), args),
                                                                        (get_framework(TRL_RELEASE), BLOG_TRL)))
    assert ours["grpo"] * GIB == C.FUSED_LM_HEAD_TILE_BYTES
    for term in ("training", "inference", "kv"):
        assert ours[term] == pytest.approx(old[term]), term
    assert ours["inference"] == pytest.approx(PUBLISHED["trl"]["inference"], rel=0.15)


def test_each_unsloth_saving_is_its_own_switch():
    """4-bit base, shared weights, offloaded checkpoints: each one lowers its own term and nothing else (the whole
    micro batch in one pass: with unsloth_grpo_mini_batch set no pass is cut to fit)."""
    whole = {**BLOG_UNSLOTH, "grpo_config.unsloth_grpo_mini_batch": GENERATIONS}
    base = _terms(FW, _values(FW, whole))
    bf16 = _terms(FW, _values(FW, {**whole, "from_pretrained.load_in_4bit": False}))
    plain = _terms(FW, _values(FW, {**whole, "get_peft_model.use_gradient_checkpointing": True}))
    model = load_model("llama3.1-8b")
    # NF4 decoder weights, bf16 embeddings: 8.03B params in about 5.4 GiB instead of 15
    assert bf16["training"] - base["training"] == pytest.approx(
        (model.total_params() * 2 - _quantized(model)) / GIB, rel=1e-6)
    # plain checkpointing keeps every layer's input on the GPU: 32 layers of [8 x 20480, 4096] bf16 = 40 GiB
    assert plain["training"] - base["training"] == pytest.approx(
        (model.num_hidden_layers - 1) * GENERATIONS * CONTEXT * model.hidden_size * 2 / GIB, rel=0.02)
    assert base["grpo"] == plain["grpo"] == bf16["grpo"]


def _quantized(model) -> float:
    dense = model.embedding_params() + model.lm_head_params()
    from rlbatch_solver.costmodel.constants import NF4_BYTES
    return NF4_BYTES * (model.total_params() - dense) + 2 * dense


def test_offloaded_checkpoints_are_in_host_ram():
    """The checkpoints Unsloth moves off the GPU land in the node's RAM: 31 of the 32 layers' [8 x 20480, 4096] bf16
    inputs (39 GiB) for the table's run; a 32 GiB machine runs out."""
    flat = {f"--{k.split('.')[-1]}": v for k, v in BLOG_UNSLOTH.items()}
    args = [a for k, v in flat.items() for a in (k, str(v).lower() if isinstance(v, bool) else str(v))]
    out = run("check", "--framework", "unsloth", "--model", "llama3.1-8b", "--gpu", "h100", "--host-mem", "32",
              "--json", "--", *args)
    host = __import__("json").loads(out.stdout)["host_memory"]
    assert host["terms_gib"]["activation checkpoints offloaded to the CPU (Unsloth)"] == pytest.approx(
        31 * GENERATIONS * (CONTEXT - PROMPT + PROMPT) * 4096 * 2 / GIB, rel=0.01)
    assert host["fits"] is False


# Unsloth's GRPO tutorial (docs.unsloth.ai "Tutorial: Train your own Reasoning model with GRPO", the Qwen2.5 GRPO
# notebook): QLoRA rank 64, max_seq_length 1024, vLLM at half the GPU, 8 generations of 200 tokens for 256-token prompts
FIVE_GB_CLAIM = ["--fast_inference", "true", "--load_in_4bit", "true", "--max_seq_length", "1024", "--r", "64",
                 "--gpu_memory_utilization", "0.5", "--per_device_train_batch_size", "1",
                 "--gradient_accumulation_steps", "1", "--num_generations", "8", "--max_prompt_length", "256",
                 "--max_completion_length", "200"]


def test_grpo_on_5_gb_for_qwen2_5_1_5b(tmp_path):
    """"You can now train your own reasoning model with just 5GB VRAM for Qwen2.5 (1.5B)" (unsloth.ai/blog/grpo): on a
    5 GB GPU (a GPU file of ours) every phase fits, the largest at about 3.6 GiB."""
    gpu_file = tmp_path / "gpus.yaml"
    gpu_file.write_text("gpus:\n  - name: gpu-5gb\n    display_name: a 5 GB GPU\n    memory_mib: 5120\n"
                        "    bf16_tflops: 65\n    hbm_bandwidth_gbps: 320\n    intra_node: pcie\n"
                        "    intra_node_bandwidth_gbps: 16\n    host_link_bandwidth_gbps: 16\n    hopper_fp8: false\n"
                        "    source: \"datasheet: the blog's 5 GB\"\n")
    out = run("check", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "gpu-5gb", "--gpu-file", gpu_file,
              "--json", "--", *FIVE_GB_CLAIM)
    memory = __import__("json").loads(out.stdout)["memory"]
    assert memory["fits"] and memory["verdict"] == "yes", memory["phases"]
    peak = max(p["peak_mib"] for p in memory["phases"].values())
    assert peak <= 5e9 / 2**20 and peak > 0.6 * 5e9 / 2**20


def test_the_qwen3_4b_notebook_is_valid_and_fits_its_t4():
    out = run("check", "--framework", "unsloth", "--config", "docs/examples/unsloth-qwen3-4b-grpo.yaml",
              "--model", "qwen3-4b", "--gpu", "t4")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "VALID" in out.stdout and "will it OOM? fits" in out.stdout
    # the notebook's per_device_train_batch_size 1 with 4 generations: Unsloth makes it 4, and says so
    assert "Unsloth changes per_device_train_batch_size 1 to num_generations = 4" in out.stdout


def test_standby_sets_the_memory_share_by_gpu_size():
    """unsloth_zoo/vllm_utils.py load_vllm (vLLM >= 0.11): tiers of a tenth of the GPU's GiB, times 0.95."""
    assert standby_utilization(load_gpu("t4").memory_bytes) == pytest.approx(0.8 * 0.95)
    assert standby_utilization(load_gpu("rtx4090").memory_bytes) == pytest.approx(0.825 * 0.95)
    assert standby_utilization(load_gpu("h100").memory_bytes) == pytest.approx(0.925 * 0.95)


def test_unsloths_defaults_and_keys():
    v = FW.to_values({"num_generations": 8}, gpus=None, model=None)
    # UnslothGRPOConfig's replacements: 4 x 2 per device; one GPU when none is named (a script or a notebook)
    assert (v["per_device_train_batch_size"], v["gradient_accumulation_steps"], v["gpus_per_node"]) == (4, 2, 1)
    assert v["load_bits"] == 4 and v["ckpt_offload"] and v["lora_rank"] == 16 and not v["use_vllm"]
    v = FW.to_values({"fast_inference": True, "load_in_16bit": True, "use_gradient_checkpointing": False,
                      "UNSLOTH_VLLM_STANDBY": "1"}, gpus=None, model=None)
    assert v["use_vllm"] and v["load_bits"] == 16 and not v["grad_ckpt"] and v["sleep_level"] == 2
    assert v["gmu_permille"] == 500  # from_pretrained's gpu_memory_utilization default


def test_the_batch_rewrite_and_the_mini_batch_check():
    v = FW.to_values({"per_device_train_batch_size": 3, "gradient_accumulation_steps": 1, "num_generations": 8},
                     gpus=2, model=None)
    assert v["per_device_train_batch_size"] == 8 and FW.ruleset.check(v).valid
    # with steps_per_generation set Unsloth leaves the batch alone, and TRL's check stands
    v = FW.to_values({"per_device_train_batch_size": 3, "steps_per_generation": 1, "num_generations": 8}, gpus=2,
                     model=None)
    broken = {x.rule for x in FW.ruleset.check(v).errors}
    assert broken == {"trl.config.gen_divisible_by_num_generations"}
    v = FW.to_values({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "num_generations": 8,
                      "unsloth_grpo_mini_batch": 16}, gpus=1, model=None)
    errors = FW.ruleset.check(v).errors
    assert [x.rule for x in errors] == ["unsloth.config.grpo_mini_batch_within_generation_batch"]
    assert "unsloth_grpo_mini_batch = 16 is larger than the generation batch = 8" in errors[0].message


def test_removed_trl_fields_are_dropped_not_fatal():
    v = FW.to_values({"max_prompt_length": 256, "num_generations": 8}, gpus=1, model=None)
    assert FW.ruleset.check(v).valid
    assert "trl.config.removed_fields" not in {r.id for r in RULESET.rules}


def test_checker_and_solver_agree():
    defaults = FW.to_values({}, gpus=1, model=load_model("llama3.1-8b"))
    base = {name: [defaults[name]] for name in RULESET.variables}
    space = {"per_device_train_batch_size": [1, 2, 3, 4], "gradient_accumulation_steps": [1, 2],
             "num_generations": [2, 3, 4], "gpus_per_node": [1, 2], "unsloth_grpo_mini_batch": [None, 4, 8]}
    assert_enumerate_equals_checker(RULESET, {**base, **space})


@pytest.mark.parametrize("key, value, field", [
    ("use_gradient_checkpointing", "offload", "use_gradient_checkpointing"),
    ("r", 0, "r"),
    ("gpu_memory_utilization", 1.5, "gpu_memory_utilization"),
])
def test_bad_keys_are_input_errors(key, value, field):
    with pytest.raises(InputError) as err:
        FW.to_values({key: value, "fast_inference": True}, gpus=1, model=None)
    assert err.value.field == field


def test_check_on_a_pasted_config_is_fast():
    start = time.perf_counter()
    out = run("check", "--framework", "unsloth", "--model", "llama3.1-8b", "--gpu", "rtx4090", "--",
              "--fast_inference", "true", "--load_in_4bit", "true", "--max_seq_length", "4096", "--r", "32",
              "--num_generations", "8", "--max_completion_length", "3584", "UNSLOTH_VLLM_STANDBY=1")
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert time.perf_counter() - start < 1.5


def test_standby_is_read_from_pasted_text_and_from_a_launch_script(tmp_path):
    flat, ignored = FW.parse(["export", "UNSLOTH_VLLM_STANDBY=1", "--fast_inference", "true"])
    assert flat["UNSLOTH_VLLM_STANDBY"] == "1" and not ignored
    script = tmp_path / "run.sh"
    script.write_text("export UNSLOTH_VLLM_STANDBY=1\npython unsloth_grpo.py --fast_inference true --load_in_4bit true "
                      "--max_seq_length 4096 --max_completion_length 3584 --num_generations 8\n")
    out = run("check", "--framework", "unsloth", script, "--model", "llama3.1-8b", "--gpu", "rtx4090", "--json")
    data = __import__("json").loads(out.stdout)
    assert "UNSLOTH_VLLM_STANDBY=1: the vLLM engine releases its KV cache" in " ".join(data["notes"])
    # the script's --load_in_4bit true is read (an 8B base in 4 bits, about 5 GiB; 15 in 16 bits)
    assert data["memory"]["phases"]["rollout"]["terms_mib"]["actor params+optimizer (resident)"] < 8 * 1024


def _small(framework="unsloth"):
    from rlbatch_solver.api import prepare
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework=framework, gpu="rtx4090", gpus=1, model="qwen3-4b", algorithm="grpo", n=4,
                  prompt_length=256, response_length=1024,
                  fixed={"fast_inference": True, "load_in_4bit": True, "UNSLOTH_VLLM_STANDBY": "0"},
                  search={"per_device_train_batch_size": [1, 2, 4, 8], "gradient_accumulation_steps": [1, 2]})
    return prepare(sc)


def test_tables_equal_the_full_cost_model():
    """The solver's per-phase tables (Unsloth's plan switches among their inputs) are the full cost model's."""
    from bruteforce import assert_tables_match_cost_model

    _, _, _, space, spec, terms, ruleset = _small()
    assert space.domains["load_bits"] == [4] and space.domains["vllm_shared"] == [True]
    assert_tables_match_cost_model(space, spec, ruleset, configs=20, seed=3, label="unsloth", terms=terms)


def test_cpsat_optimum_equals_exhaustive_evaluation():
    from bruteforce import assert_optimum_is_exhaustive

    _, _, _, space, _, terms, ruleset = _small()
    assert_optimum_is_exhaustive(ruleset, space, terms.time_us_per_sample)


def test_recommend_keeps_the_share_and_standby_the_user_set():
    out = run("recommend", "--framework", "unsloth", "--model", "qwen3-4b", "--gpu", "rtx4090", "--gpus", "1",
              "--set", "fast_inference=true", "--set", "gpu_memory_utilization=0.6", "--set", "UNSLOTH_VLLM_STANDBY=1",
              "--json")
    words = __import__("json").loads(out.stdout)["command"]
    assert words[0] == "UNSLOTH_VLLM_STANDBY=1 python unsloth_grpo.py"
    assert words.count("--gpu_memory_utilization 0.6") == 1 and words.count("--fast_inference true") == 1


def test_recommend_prices_the_fast_inference_engine_it_prints():
    # the answer prints --fast_inference true (vLLM on the model's own weights) but was priced as GRPOConfig's own
    # vLLM engine with a copy of the weights: Qwen3-8B QLoRA on one 24 GB GPU was "No valid config fits" (rollout
    # 25.0 GiB), though the config it would print fits
    out = run("recommend", "--framework", "unsloth", "--model", "qwen3-8b", "--gpu", "rtx4090", "--gpus", "1", "--json")
    assert out.returncode == 0, out.stdout[-2000:]
    data = __import__("json").loads(out.stdout)
    assert "--fast_inference true" in data["command"]
    printed = run("check", "--framework", "unsloth", "--model", "qwen3-8b", "--gpu", "rtx4090", "--json", "--",
                  *" ".join(data["command"][1:]).split())
    checked = __import__("json").loads(printed.stdout)["memory"]
    assert checked["fits"], checked
    for phase, mem in data["choices"][0]["memory_gib"].items():  # the same peaks as check of the printed command
        assert abs(checked["phases"][phase]["peak_mib"] / 1024 - mem["peak"]) < 0.05, phase


def test_both_engines_searched_price_each_as_its_printed_command():
    """--search use_vllm=true,false: the fast_inference configs were priced as TRL's own engine with a copy of the
    weights (tight, a faster step than the vLLM-only search priced the same command), and the generate arm was held
    to check's 512-token prompt of a TRL command, which max_seq_length (Unsloth's prompt carrier) did not allow, so
    it never answered; the note said TRL's."""
    import rlbatch_solver as rb
    from rlbatch_solver.scenario import Scenario

    base = dict(framework="unsloth", gpu="rtx4090", gpus=1, model="qwen2.5-7b", algorithm="grpo")
    vllm = rb.recommend(Scenario(**base), top=1, time_limit_s=20).best
    both = rb.recommend(Scenario(**base, search={"use_vllm": ["true", "false"]}), top=5, time_limit_s=20)
    assert not any("prompt 512" in n for n in [*both.key_notes, *both.space.notes])
    engines = {c.values["use_vllm"]: c for c in [*both.choices, *both.left_out]}
    assert set(engines) == {True, False}
    same = [c for c in [*both.choices, *both.left_out] if c.native == vllm.native]
    assert same and same[0].step_time_s == pytest.approx(vllm.step_time_s)


# Unsloth's docs on one 80 GB H100, with Standby: "Qwen3-32B LoRA 16-bit can attain 6,144 context lengths", "Llama-3.1-8B
# QLoRA 4bit can attain 47,500 lengths" (docs.unsloth.ai, "Memory Efficient RL"), "Qwen3-8B GRPO reaches 110K context on
# an 80GB VRAM H100 via vLLM and QLoRA" ("Reinforcement Learning GRPO with 7x Longer Context"; its runs: batch 4,
# gradient accumulation 2). The memory of each fits: the log-prob and loss passes cut their rows to fit
# (autotune_batch_and_chunks), Standby frees the KV cache while the trainer runs.
@pytest.mark.parametrize("model, four_bit, context", [("qwen3-32b", False, 6144), ("llama3.1-8b", True, 47500),
                                                      ("qwen3-8b", True, 110000)])
def test_unsloths_long_context_claims_fit_one_h100(model, four_bit, context):
    out = run("check", "--framework", "unsloth", "--model", model, "--gpu", "h100", "--json", "--",
              "UNSLOTH_VLLM_STANDBY=1", "--fast_inference", "true", "--load_in_4bit", str(four_bit).lower(),
              "--gpu_memory_utilization", "0.95", "--max_lora_rank", "32", "--r", "32",
              "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
              "--max_seq_length", str(context), "--max_completion_length", str(context - 512))
    memory = __import__("json").loads(out.stdout)["memory"]
    assert memory["fits"], {p: v["peak_mib"] for p, v in memory["phases"].items()}


def test_the_autotuned_passes_shrink_only_what_does_not_fit():
    """Qwen3-8B at 4K context: the micro batch of 4 runs whole; at 110K the log-prob pass runs 3 rows at a time and
    the loss 2 (the update also holds the adapter's gradients and optimizer states, on every projection: Unsloth's
    default target_modules), the most that fit."""
    from rlbatch_solver.frameworks.trl.unsloth import autotuned

    model, gpu = load_model("qwen3-8b"), load_gpu("h100")
    spec = FW.cost_spec(model, gpu)
    for context, (rows, update_rows) in ((4096, (4, 4)), (110000, (3, 2))):
        v = FW.to_values({"fast_inference": True, "max_seq_length": context, "max_completion_length": context - 512,
                          "UNSLOTH_VLLM_STANDBY": "1", "per_device_train_batch_size": 4,
                          "gradient_accumulation_steps": 2}, gpus=1, model=model)
        old, update = spec.plan(v, Phase.OLD_LOG_PROB), spec.plan(v, Phase.ACTOR_UPDATE)
        assert (old.logprob_micro, update.train_micro) == (rows, update_rows)
        assert autotuned(update, Phase.ACTOR_UPDATE) == update  # what fits is left as it is
        assert M.estimate_memory(update.replace(train_micro=update_rows + 1)).peak(Phase.ACTOR_UPDATE) > \
            M.estimate_memory(update).usable_for(Phase.ACTOR_UPDATE) or update_rows == 4


def test_the_autotuned_rows_are_found_in_few_estimates_for_a_huge_batch(monkeypatch):
    """A per-device batch of a billion rows: the most rows that fit are bisected (the check ran a billion estimates,
    one row fewer at a time, and did not end); the answer is the row count a scan finds."""
    from rlbatch_solver.frameworks.trl import unsloth

    model, gpu = load_model("qwen3-8b"), load_gpu("h100")
    v = FW.to_values({"fast_inference": True, "max_seq_length": 110000, "max_completion_length": 109488,
                      "UNSLOTH_VLLM_STANDBY": "1", "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2},
                     gpus=1, model=model)
    update = FW.cost_spec(model, gpu).plan(v, Phase.ACTOR_UPDATE)
    calls = []
    real = unsloth.estimate_memory
    monkeypatch.setattr(unsloth, "estimate_memory", lambda plan: calls.append(1) or real(plan))
    huge = unsloth.autotuned(update.replace(train_micro=999_999_999), Phase.ACTOR_UPDATE)
    assert huge.train_micro == update.train_micro == 2 and len(calls) <= 32


def test_a_key_no_config_has_is_named_as_ignored():
    notes = " ".join(FW.config_notes({"per_device_train_batchsize": 4, "unsloth_num_chunks": 4, "lora_alpha": 64}))
    assert "has: per_device_train_batchsize" in notes
    assert "unsloth_num_chunks" not in notes and "lora_alpha" not in notes


def test_the_defaults_a_config_did_not_write_are_said_once_and_a_written_value_is_not_restated():
    """from_pretrained's 4-bit base and checkpointing to host RAM: one note, with how to get a 16-bit base (as
    ms-swift's default LoRA tuner says how to train in full); a config that writes them chose them, and check or
    recommend does not read its own values back to it (each was a note of its own on every answer)."""
    base = {"per_device_train_batch_size": 8, "num_generations": 8}
    said = [n for n in FW.config_notes(base) if "load_in_4bit" in n or "host RAM" in n]
    assert len(said) == 1 and "--set load_in_4bit=false" in said[0] and "host RAM" in said[0], said
    written = FW.config_notes({**base, "load_in_4bit": "true", "use_gradient_checkpointing": "unsloth",
                               "fast_inference": "false"})
    assert not [n for n in written if "default" in n or "host RAM" in n], written
    proc = run("recommend", "-f", "unsloth", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b")
    assert proc.returncode == 0 and proc.stdout.count("\nnote: ") == 1, proc.stdout


# ------------------------------------------------------------------------- max_seq_length vs prompt + completion
SEQ_RULE = "unsloth.model.max_seq_length_fits_prompt_and_completion"


def test_max_seq_length_under_prompt_plus_completion_is_refused_with_its_numbers():
    """from_pretrained's max_seq_length bounds every sequence (vLLM's max_model_len under fast_inference, and the
    forward cuts longer ones): a 256-token prompt and 1024-token completions do not fit 1024."""
    broken = FW.ruleset.check(FW.to_values({"fast_inference": True, "max_seq_length": 1024, "max_prompt_length": 256,
                                            "max_completion_length": 1024}, gpus=1, model=None))
    [v] = [v for v in broken.errors if v.rule == SEQ_RULE]
    assert "max_seq_length = 1024" in v.message and "256 + 1024" in v.message, v.message
    # without a prompt length the least a prompt has is a token: completions as long as max_seq_length do not fit
    alone = FW.ruleset.check(FW.to_values({"max_seq_length": 512, "max_completion_length": 512}, gpus=1, model=None))
    assert SEQ_RULE in {v.rule for v in alone.errors}
    # Unsloth's GRPO notebook: 256 + 200 within 1024; from_pretrained's 2048 holds TRL's 512-token default
    assert FW.ruleset.check(FW.to_values(FW.parse(FIVE_GB_CLAIM)[0], gpus=1, model=None)).valid
    assert FW.ruleset.check(FW.to_values({}, gpus=1, model=None)).valid


def test_checker_and_solver_agree_on_the_lengths():
    defaults = FW.to_values({}, gpus=1, model=load_model("llama3.1-8b"))
    base = {name: [defaults[name]] for name in RULESET.variables}
    space = {"max_seq_length": [512, 1024, 2048], "max_prompt_length": [None, 256, 1024],
             "max_completion_length": [256, 1024], "per_device_train_batch_size": [4, 8]}
    assert_enumerate_equals_checker(RULESET, {**base, **space})


def _recommended_command(prompt: int, response: int) -> str:
    """The command recommend prints for Qwen2.5-1.5B with Unsloth on one RTX 4090, at these lengths."""
    out = run("recommend", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--gpus", "1",
              "--prompt-len", str(prompt), "--response-len", str(response), "--json")
    assert out.returncode == 0, out.stdout[-2000:]
    return __import__("json").loads(out.stdout)["command"]


def test_recommend_prints_a_max_seq_length_that_holds_prompt_and_completion():
    # from_pretrained's default 2048 under a 512-token prompt and 4096-token completions: the printed command cut
    # every completion at 1536 tokens
    command = _recommended_command(512, 4096)
    assert "--max_seq_length 4608" in command and "--max_completion_length 4096" in command, command
    # the user's own max_seq_length stays as given, and one too short is no config
    short = run("recommend", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--gpus", "1",
                "--prompt-len", "512", "--response-len", "4096", "--set", "max_seq_length=2048")
    assert short.returncode == 1 and SEQ_RULE in short.stdout, short.stdout[-2000:]


@pytest.mark.parametrize("text, numbers", [
    ("Unsloth: Input IDs of shape torch.Size([8, 4608]) with length 4608 > the model's max sequence length of 2048.",
     {"length": "4608", "max_seq_length": "2048"}),
    ("ValueError: The decoder prompt (length 2300) is longer than the maximum model length of 2048.",
     {"prompt": "2300", "max_seq_length": "2048"}),
])
def test_explain_names_the_lengths_rule_for_unsloths_and_vllms_messages(text, numbers):
    out = run("explain", "--framework", "unsloth", text, "--json")
    data = __import__("json").loads(out.stdout)
    assert SEQ_RULE in [r["rule"] for r in data["rules"]], data
    assert {k: str(v) for k, v in data["numbers"].items()} == numbers, data


def test_fix_raises_max_seq_length_to_hold_prompt_and_completion():
    out = run("fix", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--json", "--",
              "--fast_inference", "true", "--max_seq_length", "1024", "--max_prompt_length", "256",
              "--max_completion_length", "1024")
    data = __import__("json").loads(out.stdout)
    assert [(c["key"], c["old"], c["new"]) for c in data["changes"]] == [("max_seq_length", 1024, 1280)], data["changes"]


def test_fix_gives_max_seq_length_a_round_value_that_holds_prompt_and_completion():
    """A 300-token prompt and 1000-token completions need 1300: fix printed --max_seq_length 1300 (the exact need,
    else 2048); an engineer writes 1536, the least multiple of 256 that holds them (Unsloth sizes vLLM's token budget
    in 256s; any count is accepted)."""
    out = run("fix", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--json", "--",
              "--fast_inference", "true", "--max_seq_length", "1024", "--max_prompt_length", "300",
              "--max_completion_length", "1000")
    data = __import__("json").loads(out.stdout)
    assert [(c["key"], c["old"], c["new"]) for c in data["changes"]] == [("max_seq_length", 1024, 1536)], data["changes"]
    from rlbatch_solver.frameworks.trl.unsloth import seq_length_options

    assert seq_length_options(1300) == (1536, 2048) and seq_length_options(1280) == (1280, 2048)
    assert seq_length_options(2160) == (2304, 3072, 4096)
    for need in range(2, 9000, 37):
        options = seq_length_options(need)
        assert all(o >= need for o in options) and options[0] % 256 == 0 and options[0] - need < 256


def test_recommend_rounds_max_seq_length_up_to_a_multiple_of_256():
    command = _recommended_command(880, 1280)
    assert "--max_seq_length 2304" in command and "--max_completion_length 1280" in command, command


# ------------------------------------------------------------------------------------------------ load_in_fp8
def _fp8_case_weights(name: str) -> tuple[float, int]:
    """The trained model's weights (GiB) check prices for a memory-corpus record, in its update phase, and its LoRA
    adapter's parameter count."""
    from memory_corpus import cases
    import rlbatch_solver as rb

    [case] = [c for c in cases() if c.name == name]
    r = rb.check(case.args, framework=case.framework, gpus=case.gpus, model=case.model, gpu=case.gpu)
    plan = FW.cost_spec(load_model(case.model), load_gpu(case.gpu)).plan(r.values, Phase.ACTOR_UPDATE)
    return r.memory.phases[Phase.ACTOR_UPDATE]["params (sharded)"] / 1024, plan.lora_params


def test_an_fp8_base_is_priced_at_one_byte_per_linear_weight():
    """Unsloth's Qwen3-8B FP8 GRPO notebook on one L4 (tests/data/memory_corpus/unsloth.yaml): vLLM's log 'Actual
    usage is 8.96 GiB for weight' for unsloth/Qwen3-8B-FP8 (FP8 linears, bf16 embeddings and lm_head), the weights
    vLLM and the trainer share. Priced as 16-bit (load_in_fp8 unread) they were 15.3 GiB; all of it FP8, 7.6 GiB."""
    weights, adapter = _fp8_case_weights("unsloth_nb_qwen3_8b_fp8_grpo_standby_1xl4")
    assert weights == pytest.approx(8.96, rel=0.03)
    model = load_model("qwen3-8b")
    dense = model.embedding_params() + model.lm_head_params()
    # the linears at FP8, the embeddings and lm_head at 2 bytes, the adapter at 4 (Unsloth trains LoRA in fp32:
    # unsloth_zoo prepare_model_for_training, float32_mixed_precision) (the report rounds to MiB)
    assert weights == pytest.approx(((model.total_params() - dense) * C.FP8_BYTES + dense * C.BF16
                                     + adapter * C.FP32) / GIB, abs=1 / 1024)
    whole = {**BLOG_UNSLOTH, "grpo_config.unsloth_grpo_mini_batch": GENERATIONS, "from_pretrained.load_in_4bit": False}
    fp8 = _terms(FW, _values(FW, {**whole, "from_pretrained.load_in_fp8": True}))
    bf16 = _terms(FW, _values(FW, whole))
    llama = load_model("llama3.1-8b")
    linear = llama.total_params() - llama.embedding_params() - llama.lm_head_params()
    # one byte less per linear weight, nothing else: the embeddings and lm_head stay 16-bit
    assert bf16["training"] - fp8["training"] == pytest.approx(linear * (2 - C.FP8_BYTES) / GIB, rel=1e-6)
    assert fp8["inference"] == 0.0 and fp8["grpo"] == bf16["grpo"]


@pytest.mark.parametrize("flags, bits, fp8", [
    ({"load_in_fp8": True, "load_in_4bit": False}, 16, True),
    ({"load_in_fp8": "block", "load_in_4bit": False}, 16, True),
    # beside load_in_4bit (True by default) Unsloth raises 'not a combination!' whatever the model; with it off, unless
    # its mapper names a pre-quantized '-FP8' repo and drops load_in_fp8 (loader.py _precision_flags_conflict): read as
    # the 16-bit or 8-bit load, with a note saying so
    ({"load_in_fp8": True, "load_in_16bit": True}, 16, False),
    ({"load_in_fp8": True, "load_in_16bit": True, "load_in_4bit": False}, 16, False),
    ({"load_in_fp8": True, "load_in_8bit": True}, 8, False),
    ({"load_in_fp8": True, "full_finetuning": True}, 16, False),
])
def test_load_in_fp8_beside_the_other_precision_flags(flags, bits, fp8):
    v = FW.to_values({**flags, "fast_inference": True}, gpus=1, model=None)
    assert (v["load_bits"], v["load_fp8"]) == (bits, fp8)
    notes = " ".join(FW.config_notes(flags))
    assert ("priced at 1 byte per weight" in notes) == fp8
    full = bool(flags.get("full_finetuning"))
    assert ("load_in_fp8 is not what loads the base here" in notes) == (not fp8 and not full)
    four = flags.get("load_in_4bit", True)
    assert ("not a combination!' (loader.py _precision_flags_conflict) whatever the model" in notes) == (
        not fp8 and not full and four), notes
    assert ("unless it maps the model" in notes) == (not fp8 and not full and not four), notes
    # full finetuning: Unsloth turns the quantized loads off with 4-bit on (its default), FP8 included, not its
    # 'not a combination' error (loader.py FastModel.from_pretrained)
    assert ("trains every weight in 16 bits" in notes and "not a combination" not in notes) == full
    # check without --gpu/--model prices nothing: the notes say how the config is read, not a price
    unpriced = " ".join(FW.config_notes(flags, priced=False))
    assert "priced" not in unpriced and ("read at 1 byte per weight" in unpriced) == fp8, unpriced


@pytest.mark.parametrize("name,base,bits", [
    ("unsloth/Qwen3-8B-FP8", "unsloth/Qwen3-8B", "fp8"), ("unsloth/Qwen3-8B-FP8-Dynamic", "unsloth/Qwen3-8B", "fp8"),
    ("unsloth/Qwen3-8B-FP8-Block", "unsloth/Qwen3-8B", "fp8"), ("unsloth/Qwen3-8B-bnb-4bit", "unsloth/Qwen3-8B", 4),
    ("unsloth/Qwen3-8B-unsloth-bnb-4bit", "unsloth/Qwen3-8B", 4), ("unsloth/Qwen3-8B", "unsloth/Qwen3-8B", None),
    ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B", None),
    ("someorg-fp8/Qwen3-8B", "someorg-fp8/Qwen3-8B", None)])  # the mark in the organisation's name is not the repo's
def test_a_pre_quantized_repo_is_looked_up_as_the_model_it_stores(name, base, bits):
    """Unsloth looks a pre-quantized repo up in the catalog as the 16-bit model it stores (the ends prequantized()
    reads: unsloth/models/mapper.py's names); other frameworks look names up as they are."""
    from rlbatch_solver.frameworks.trl.unsloth import quantized_repo

    assert quantized_repo(name) == (base, bits)
    assert FW.catalog_model_name(name) == base
    assert get_framework("trl").catalog_model_name(name) == name


def test_a_bf16_repo_is_looked_up_as_its_model_and_not_called_pre_quantized():
    """unsloth/Qwen3-8B-bf16 is Qwen3-8B in 16 bits: the catalog finds qwen3-8b, the price is a 16-bit load (not a
    pre-quantized one), and check's note on the model says the repo stores it without calling it pre-quantized."""
    from rlbatch_solver.frameworks.trl.unsloth import quantized_repo

    assert FW.catalog_model_name("unsloth/Qwen3-8B-bf16") == "unsloth/Qwen3-8B"
    assert quantized_repo("unsloth/Qwen3-8B-bf16") == ("unsloth/Qwen3-8B-bf16", None)
    assert get_framework("trl").catalog_model_name("unsloth/Qwen3-8B-bf16") == "unsloth/Qwen3-8B-bf16"
    v = FW.to_values({"model_name": "unsloth/Qwen3-8B-bf16"}, gpus=1, model=None)
    assert v["load_bits"] == 16 and not v["prequantized"]
    out = run("check", "--framework", "unsloth", "--", "--model_name", "unsloth/Qwen3-8B-bf16", "--fast_inference",
              "true")
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "catalog card qwen3-8b, the model the repo unsloth/Qwen3-8B-bf16 stores" in said, said
    assert "pre-quantized repo unsloth/Qwen3-8B-bf16" not in said and "not in the catalog" not in said


@pytest.mark.parametrize("flags, said", [
    ({}, "load_in_4bit (True by default)"), ({"load_in_4bit": True}, "load_in_4bit off"),
    ({"load_in_4bit": False, "load_in_8bit": True}, "load_in_8bit off"),
    ({"load_in_4bit": False, "load_in_fp8": True}, "load_in_fp8 off"),
    # nothing quantized asked, or 16 bits asked: Unsloth prints nothing, nor do we
    ({"load_in_4bit": False}, None), ({"load_in_4bit": False, "load_in_16bit": True}, None),
    # full finetuning trains in 16 bits whatever the name
    ({"full_finetuning": True, "load_in_4bit": False}, None),
])
def test_a_bf16_repo_says_why_it_is_priced_16_bit(flags, said):
    """Unsloth 2026.10.9 loader.py: a '-bf16' hub repo loads in 16 bits and prints that 4bit/8bit/fp8 loading is
    disabled; the answer's weights went from 4-bit to 16-bit with no word on why."""
    flat = {**flags, "model_name": "unsloth/Qwen3-8B-bf16", "fast_inference": True}
    priced = [n for n in FW.config_notes(flat) if "'-bf16' repo" in n]
    unpriced = [n for n in FW.config_notes(flat, priced=False) if "'-bf16' repo" in n]
    if said is None:
        assert priced == unpriced == [], priced
        return
    assert len(priced) == 1 and said in priced[0] and "are priced at 2 bytes" in priced[0], priced
    assert len(unpriced) == 1 and "would be priced at 2 bytes" in unpriced[0], unpriced
    # another name's same flags: no such note
    assert not [n for n in FW.config_notes({**flat, "model_name": "unsloth/Qwen3-8B"}) if "'-bf16' repo" in n]


def test_a_bf16_repo_under_load_in_8bit_is_priced_16_bit_and_checked_as_8_bit():
    """FastLanguageModel hands load_in_8bit to FastModel.from_pretrained, which checks the flags first (8-bit beside
    the default 4-bit stops it) and then loads a '-bf16' repo in 16 bits (loader.py 2026.10.9): the rule reads the
    flags as given, the price the 16-bit load."""
    flat = {"model_name": "unsloth/Qwen3-8B-bf16", "load_in_8bit": True, "load_in_4bit": False, "fast_inference": True}
    v = FW.to_values(flat, gpus=1, model=None)
    assert v["load_in_8bit"] and not v["load_in_16bit"] and v["load_bits"] == 16
    assert v["load_bits"] != FW.to_values({**flat, "model_name": "unsloth/Qwen3-8B"}, gpus=1, model=None)["load_bits"]
    both = FW.to_values({**flat, "load_in_4bit": True}, gpus=1, model=None)
    assert PRECISION_RULE in {e.rule for e in FW.ruleset.check(both).errors}
    gib = {n: _terms(FW, _values(FW, {**flat, "model_name": n}))["training"]
           for n in ("unsloth/Qwen3-8B-bf16", "unsloth/Qwen3-8B")}
    # the 16-bit decoder weights cost a byte more each than 8-bit ones
    assert gib["unsloth/Qwen3-8B-bf16"] > gib["unsloth/Qwen3-8B"] + 5, gib


@pytest.mark.parametrize("name,stored", [("unsloth/Qwen3-8B-FP8", True), ("unsloth/Qwen3-8B", False)])
def test_the_fp8_note_asks_for_an_h100_only_where_the_base_is_quantized_while_loading(name, stored):
    """A pre-quantized '-FP8' repo loads as it is (loader_utils.py _fp8_load_as_is: an already quantized config
    skips the offline FP8 path and its H100 check); a 16-bit repo is quantized while loading, which needs one."""
    notes = " ".join(FW.config_notes({"model_name": name, "load_in_fp8": True, "load_in_4bit": False}))
    assert ("needs a GPU of compute capability 9.0" in notes) != stored, notes
    assert (f"{name} stores them so" in notes) == stored, notes


def test_load_in_fp8_with_the_default_load_in_4bit_is_noted_with_unsloths_error():
    """Unsloth refuses load_in_fp8 beside load_in_4bit (its default True) unless the model maps to a pre-quantized
    '-FP8' repo (loader.py drops load_in_fp8 then): a note, since the config does not say which; priced as FP8."""
    notes = " ".join(FW.config_notes({"load_in_fp8": True}))
    assert "Can only load in 4bit or 8bit or 16bit, not a combination!" in notes and "load_in_4bit = False" in notes
    assert FW.to_values({"load_in_fp8": True}, gpus=1, model=None)["load_fp8"]
    assert "not a combination" not in " ".join(FW.config_notes({"load_in_fp8": True, "load_in_4bit": False}))
    with pytest.raises(InputError) as err:
        FW.to_values({"load_in_fp8": "row"}, gpus=1, model=None)
    assert err.value.field == "load_in_fp8"


def test_recommend_prices_and_prints_the_fp8_base_the_user_set():
    """recommend --set load_in_fp8=true searches at FP8 weights (Qwen3-8B on an L4: its best peak under the 16-bit
    one) and prints the key back, beside load_in_4bit false."""
    import re

    def best(*sets):
        out = run("recommend", "--framework", "unsloth", "--model", "qwen3-8b", "--gpu", "l4", "--gpus", "1",
                  *[a for s in sets for a in ("--set", s)])
        assert out.returncode == 0, out.stdout + out.stderr
        return float(re.search(r"peak ([\d.]+) of", out.stdout).group(1)), out.stdout

    bf16, _ = best("load_in_4bit=false")
    fp8, text = best("load_in_4bit=false", "load_in_fp8=true")
    assert fp8 < bf16 and "--load_in_fp8 true" in text and "--load_in_4bit false" in text
    # at one config the FP8 base saves about half of the 16-bit weights (8.2 GB of Qwen3-8B's 16.4); recommend's two
    # answers may differ in batch too (the 16-bit one keeps the error band's headroom)
    import rlbatch_solver as rb

    peak = {fp8_on: rb.check(["--load_in_4bit", "false", "--load_in_fp8", str(fp8_on).lower()], framework="unsloth",
                             gpus=1, model="qwen3-8b", gpu="l4").memory.peaks["actor_update"] / 1024
            for fp8_on in (False, True)}
    assert peak[True] < peak[False] - 6


@pytest.mark.parametrize("name,fp8,stored", [
    ("unsloth/Qwen3-8B", False, False), ("unsloth/Qwen3-8B-unsloth-bnb-4bit", False, True),
    ("unsloth/Qwen3-8B-unsloth-bnb-4bit", True, False), ("unsloth/Qwen3-8B-FP8", True, True),
    ("unsloth/Qwen3-8B-FP8", False, False)])
@pytest.mark.parametrize("given", [True, False])
def test_a_pre_quantized_repo_loads_its_stored_bytes_at_start_up(name, fp8, stored, given):
    """A model_name Unsloth's naming marks as stored quantized the way the script loads it (-bnb-4bit under
    load_in_4bit, -FP8 under load_in_fp8: loader_utils.py __get_model_name keeps it) is read into host RAM at its
    stored bytes: NF4 or FP8 linears, 16-bit embeddings and lm_head; a 16-bit name, or one stored another way, at 2 B
    per weight. Without --model the repo's name finds the catalog card of the model it stores (qwen3-8b), priced
    the same."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.constants import FP8_BYTES, NF4_BYTES
    from rlbatch_solver.costmodel.memory import model_consts, quantized_model_bytes

    model = ["--model", "qwen3-8b"] if given else []
    out = run("check", "--framework", "unsloth", *model, "--gpu", "h100", "--host-mem", "64", "--json",
              "--", "--model_name", name, "--load_in_4bit", str(not fp8).lower(), "--load_in_fp8", str(fp8).lower(),
              "--fast_inference", "true")
    assert given or f"model from the arguments: {name} (catalog card qwen3-8b" in out.stderr, out.stderr
    load = __import__("json").loads(out.stdout)["host_memory"]["terms_gib"]["checkpoint loaded on the CPU at start-up"]
    mc = model_consts(load_model("qwen3-8b"))
    want = quantized_model_bytes(mc, FP8_BYTES if fp8 else NF4_BYTES, 2) if stored else 2 * mc.params
    assert load == pytest.approx(want / GIB, rel=1e-3)


# ------------------------------------------------------------------------- one precision (from_pretrained's flags)
PRECISION_RULE = "unsloth.load.one_precision"


@pytest.mark.parametrize("flags, broken", [
    # Unsloth 2026.10.9 loader.py _precision_flags_conflict: load_in_4bit (True by default) counts beside the others
    ({}, False), ({"load_in_4bit": True}, False), ({"load_in_16bit": True, "load_in_4bit": False}, False),
    ({"load_in_8bit": True, "load_in_4bit": False}, False), ({"load_in_4bit": False}, False),
    ({"load_in_16bit": True}, True), ({"load_in_8bit": True}, True), ({"load_in_16bit": True, "load_in_8bit": True,
                                                                      "load_in_4bit": False}, True),
    # a pre-quantized -bnb-4bit name changes no flag: 16-bit beside the default 4-bit still stops the load
    ({"load_in_16bit": True, "model_name": "unsloth/Qwen3-8B-bnb-4bit"}, True),
    # a -bf16 repo loads 16-bit, the other flags off, before FastLanguageModel's check
    ({"load_in_16bit": True, "model_name": "unsloth/Qwen3-8B-bf16"}, False),
    # full finetuning beside 4-bit or 8-bit turns every load off (FastModel.from_pretrained: a warning, not an error)
    ({"full_finetuning": True, "load_in_16bit": True}, False), ({"full_finetuning": True, "load_in_8bit": True}, False),
    ({"full_finetuning": True, "load_in_16bit": True, "load_in_4bit": False}, False),
    # load_in_fp8 counts where FastModel checks the flags before any mapper (load_in_8bit, full_finetuning)...
    ({"load_in_fp8": True, "load_in_8bit": True, "load_in_4bit": False}, True),
    ({"load_in_fp8": True, "load_in_16bit": True, "load_in_4bit": False, "full_finetuning": True}, True),
    # ...not under FastLanguageModel, whose mapper may drop it (a note says so)
    ({"load_in_fp8": True, "load_in_16bit": True, "load_in_4bit": False}, False),
    ({"load_in_fp8": True, "load_in_4bit": False}, False),
])
def test_more_than_one_load_is_refused_as_unsloth_refuses_it(flags, broken):
    result = FW.ruleset.check(FW.to_values({**flags, "fast_inference": True}, gpus=1, model=None))
    assert (PRECISION_RULE in {v.rule for v in result.errors}) == broken, result.errors


def test_check_refuses_load_in_16bit_beside_the_default_load_in_4bit_and_fix_turns_it_off():
    """A script setting load_in_16bit=True and leaving load_in_4bit at its default stops in from_pretrained: check
    priced it as a 16-bit load and said VALID."""
    out = run("check", "--framework", "unsloth", "--", "--load_in_16bit", "true", "--fast_inference", "true")
    assert out.returncode == 1 and PRECISION_RULE in out.stdout, out.stdout
    assert "load_in_4bit = True" in out.stdout and "load_in_16bit = True" in out.stdout
    assert "not a combination!" in out.stdout and "loader.py:_precision_flags_conflict" in out.stdout
    fixed = run("fix", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "h100", "--json", "--",
                "--load_in_16bit", "true", "--fast_inference", "true")
    data = __import__("json").loads(fixed.stdout)
    assert [(c["key"], c["old"], c["new"]) for c in data["changes"]] == [("load_in_4bit", True, False)], data
    # the answer runs: the 16-bit load, as the config named it, and valid
    answer = run("check", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "h100", "--",
                 "--load_in_16bit", "true", "--fast_inference", "true", "--load_in_4bit", "false")
    assert answer.returncode == 0 and "VALID" in answer.stdout, answer.stdout
    v = FW.to_values({"load_in_16bit": True, "load_in_4bit": False}, gpus=1, model=None)
    assert v["load_bits"] == 16


def test_recommend_keeps_the_load_flags_the_user_set_and_refuses_a_combination():
    out = run("recommend", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--gpus", "1",
              "--set", "load_in_4bit=false", "--set", "load_in_16bit=true", "--json")
    assert out.returncode == 0, out.stdout[-2000:]
    command = __import__("json").loads(out.stdout)["command"]
    assert "--load_in_4bit false" in command and "--load_in_16bit true" in command, command
    both = run("recommend", "--framework", "unsloth", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--gpus", "1",
               "--set", "load_in_16bit=true")
    assert both.returncode == 1 and PRECISION_RULE in both.stdout, both.stdout[-2000:]


def test_checker_and_solver_agree_on_the_load_flags():
    defaults = FW.to_values({}, gpus=1, model=load_model("llama3.1-8b"))
    base = {name: [defaults[name]] for name in RULESET.variables}
    space = {name: [False, True] for name in ("load_in_4bit", "load_in_8bit", "load_in_16bit", "load_in_fp8",
                                              "full_finetuning")}
    assert_enumerate_equals_checker(RULESET, {**base, **space, "per_device_train_batch_size": [4, 8]})


def test_explain_names_the_precision_rule_for_unsloths_message():
    out = run("explain", "--framework", "unsloth", "RuntimeError: Unsloth: Can only load in 4bit or 8bit or 16bit, "
              "not a combination!\nAlso, we by default set `load_in_4bit = True`.", "--json")
    data = __import__("json").loads(out.stdout)
    assert [r["rule"] for r in data["rules"]][:1] == [PRECISION_RULE], data


@pytest.mark.parametrize("framework, share, standby", [
    ("trl", "vllm_gpu_memory_utilization", "vllm_enable_sleep_mode"),
    ("unsloth", "gpu_memory_utilization", "UNSLOTH_VLLM_STANDBY")])
def test_recommend_from_frees_the_share_and_standby_under_the_frameworks_own_keys(framework, share, standby):
    """recommend --from chooses the memory switches (TRL: searchable, ``free_keys``), each read under the framework's
    own keys (``Framework.cost_input_keys``): Unsloth's from_pretrained gpu_memory_utilization and its standby
    variable were looked for under GRPOConfig's names, so an Unsloth config that set them kept them out of the
    search that a TRL config's own are in; a share given with --set stays as set (the test above)."""
    from rlbatch_solver.commands.recommend import scenario_from_config
    from rlbatch_solver.frameworks.trl.framework import KNOB_SEARCH

    fw = get_framework(framework)
    flat = {"use_vllm": True, "vllm_mode": "colocate", share: 0.5, standby: True, "per_device_train_batch_size": 4,
            "num_generations": 4, "max_completion_length": 256}
    if framework == "unsloth":
        flat = {**{k: v for k, v in flat.items() if k not in ("use_vllm", "vllm_mode")}, "fast_inference": True}
    scenario, _, free = scenario_from_config(framework, flat, gpu="rtx4090", model="qwen3-4b", gpus=1)
    assert {"gmu_permille", "sleep_level"} <= free
    assert share not in scenario.fixed and standby not in scenario.fixed
    space = fw.space(scenario, load_model("qwen3-4b"), with_knobs=True)
    assert space.domains["gmu_permille"] == KNOB_SEARCH["gmu_permille"]
    assert space.domains["sleep_level"] == KNOB_SEARCH["sleep_level"]
    assert {share, standby} <= fw.free_keys({})


@pytest.mark.parametrize("targets,qv", [(None, False), ('["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", '
                                                       '"up_proj", "down_proj"]', False),
                                        ("all-linear", False), ('["q_proj", "v_proj"]', True)])
def test_lora_targets_are_unsloths_default_every_projection(targets, qv):
    """get_peft_model's default target_modules are the seven projections of a decoder layer (unsloth/models/llama.py
    FastLlamaModel.get_peft_model, 2025.9.6 and 2025.11.1), not peft's q and v that TRL's ModelConfig falls back to
    without --lora_target_modules: a config that names none trains (and is priced with) every linear layer; one
    that names q_proj and v_proj alone is priced as that."""
    flat = {"from_pretrained.load_in_4bit": False, "from_pretrained.fast_inference": True, "get_peft_model.r": 32,
            "grpo_config.num_generations": 4, "grpo_config.per_device_train_batch_size": 4}
    if targets is not None:
        flat["get_peft_model.target_modules"] = targets
    values = _values(FW, flat)
    assert values["lora_qv"] is qv
    model = load_model("llama3.1-8b")
    plan = FW.cost_spec(model, load_gpu("t4")).plan(values, Phase.ACTOR_UPDATE)
    assert plan.lora_params == model.lora_params(32, "q_v" if qv else "all-linear")


# -- the Unsloth releases we price (frameworks/trl/unsloth_versions.py) ------------------------------------------
OLD = get_framework("unsloth==2025.9.6")


def test_each_release_rewrites_the_batch_under_its_own_condition():
    """unsloth/models/rl.py check_num_generations: 2025.9.6 (to 2025.11.3) raises a per-device batch that is not a
    multiple of num_generations; 2026.10.9 (from 2025.11.4) only where the generation batch is not one."""
    flat = {"per_device_train_batch_size": 3, "gradient_accumulation_steps": 2, "num_generations": 2}
    assert FW.to_values(flat, gpus=1, model=None)["per_device_train_batch_size"] == 3  # 2*1*3 is a multiple of 2
    assert OLD.to_values(flat, gpus=1, model=None)["per_device_train_batch_size"] == 2  # 3 is not
    one = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 2, "num_generations": 2,
           "steps_per_generation": 2}
    assert FW.to_values(one, gpus=1, model=None)["per_device_train_batch_size"] == 1  # steps_per_generation set
    assert OLD.to_values(one, gpus=1, model=None)["per_device_train_batch_size"] == 2  # 2025.9 reads neither
    notes = OLD.config_notes(one)
    assert any("changes per_device_train_batch_size 1 to num_generations = 2" in n and "2025.9.6" in n for n in notes)
    assert any(n.startswith("Unsloth 2025.9.6: its memory is priced with its own batch rewrite") for n in notes)


def test_a_config_is_priced_as_the_newest_release_and_the_answer_names_it():
    """Nothing in a config dates its Unsloth release: the newest, said; a named 2025.9 patch is 2025.9.6's pack."""
    fw, note = FW.for_config({"num_generations": 2})
    assert fw is FW and "priced as Unsloth 2026.10.9 runs it" in note and "unsloth==VERSION (2025.9.6)" in note
    assert OLD.for_config({"num_generations": 2}) == (OLD, None)
    named = get_framework("unsloth==2025.9.2")
    assert named.version == "2025.9.6" and "the 2025.9.x release we follow" in named.version_note
    with pytest.raises(InputError):
        get_framework("unsloth==2025.11.3")  # the batch rewrite of 2025.9, the Standby share of 2026: neither pack


def test_2025_9_holds_one_sequences_16_bit_logits_and_the_old_policys_in_the_loss():
    """unsloth_zoo 2025.9.7 grpo_accumulated_loss (n_chunks = bsz) / UnslothEfficientGRPO.compute_loss: a
    sequence's completion logits and their gradient in 16 bits, the old policy's logits beside them where the old
    log-prob pass ran; the forward-only passes return hidden states (no logits)."""
    model, gpu = load_model("qwen3-4b"), load_gpu("t4")
    flat = {"max_seq_length": 2048, "load_in_4bit": False, "fast_inference": True, "max_lora_rank": 32, "r": 32,
            "gpu_memory_utilization": 0.8, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 2,
            "num_generations": 2, "max_prompt_length": 202, "max_completion_length": 1846}
    spec = OLD.cost_spec(model, gpu)
    values = OLD.to_values(flat, gpus=1, model=model)
    plan = spec.plan(values, Phase.ACTOR_UPDATE)
    assert plan.logits_impl == "unsloth-sequence"
    copies = 1 + int(plan.loss_old_logits) + int(plan.need_ref)
    assert plan.loss_old_logits == (Phase.OLD_LOG_PROB in spec.phases_run(values))
    mem, _ = full_reports(spec, values)
    logits = mem[Phase.ACTOR_UPDATE].phases[Phase.ACTOR_UPDATE][M.T_LOGITS]
    assert logits == pytest.approx(1846 * model.vocab_size * (2 * C.BF16 + (copies - 1) * C.BF16))
    assert M._logits_forward(plan, M.model_consts(model), 4096.0, entropy=False) == 0.0


def test_2025_9_standby_raises_the_share_to_at_least_0_9():
    """unsloth_zoo 2025.9.7 vllm_utils.py load_vllm: Standby keeps a share of 0.9 or more, raising a smaller one; vLLM
    gets that share of the memory free when it loads (approximate_vllm_memory_usage: util x free / total)."""
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.frameworks.trl.unsloth import engine_share_of_free

    model, gpu = load_model("qwen3-4b"), load_gpu("t4")
    free = (gpu.memory_bytes - C.MARGIN_FIXED_BYTES) / gpu.memory_bytes
    assert engine_share_of_free(0.9, gpu.memory_bytes) == pytest.approx(0.9 * free)
    for asked, share in ((0.7, 0.9), (0.95, 0.95)):
        flat = {"fast_inference": True, "load_in_4bit": False, "gpu_memory_utilization": asked, "num_generations": 2,
                "UNSLOTH_VLLM_STANDBY": "1"}
        for fw, expect in ((OLD, share), (FW, standby_utilization(gpu.memory_bytes))):
            values = fw.to_values(flat, gpus=1, model=model)
            plan = fw.cost_spec(model, gpu).plan(values, Phase.ROLLOUT)
            assert plan.gpu_memory_utilization == pytest.approx(expect * free)


def test_the_t4_rows_of_unsloths_standby_table_priced_as_2025_9_runs_them():
    """Unsloth's docs' Standby experiments (memory-efficient-rl, Qwen3-4B on one T4, the 2025.9 release): the
    no-Standby rows at 0.9 and 0.8 do not train, the one at 0.7 does; the Standby rows train, using what the table
    reports (14.5, 13.8 and 13 GiB for 0.95, 0.9 and 0.7, raised to 0.9). That is the GPU's whole use, the CUDA
    context included, which the model keeps in the fixed margin and vLLM's budget leaves out (Unsloth gives it a share
    of the free memory): the priced peak is under it, by less than that margin."""
    from rlbatch_solver.costmodel import constants as C

    import memory_corpus as mc

    rows = {c.name.removeprefix("unsloth_docs_standby_qwen3_4b_grpo_").removesuffix("_1xt4"): c
            for c in mc.cases() if c.name.startswith("unsloth_docs_standby_")}
    assert set(rows) == {"standby_gmu095", "standby_gmu09", "standby_gmu07", "nostandby_gmu09", "nostandby_gmu08",
                         "nostandby_gmu07"}
    assert {c.framework for c in rows.values()} == {"unsloth==2025.9"}
    judged = {name: mc.judge(case) for name, case in rows.items()}
    for name in ("nostandby_gmu09", "nostandby_gmu08", "nostandby_gmu07"):
        assert judged[name].predicted_oom == (rows[name].outcome == "oom"), (name, judged[name].peak_gib)
        assert judged[name].worst_phase == Phase.ACTOR_UPDATE
    for name, reported in (("standby_gmu095", 14.5), ("standby_gmu09", 13.8)):
        assert judged[name].worst_phase == Phase.ROLLOUT and not judged[name].predicted_oom, name
        assert 0 <= reported - judged[name].peak_gib <= C.MARGIN_FIXED_BYTES / 2**30, (name, judged[name].peak_gib)


def test_2025_9s_tables_equal_the_full_cost_model():
    """The 2025.9 pack's update (its old-policy logits follow the old log-prob pass's gate) in the solver's tables."""
    from bruteforce import assert_tables_match_cost_model

    from rlbatch_solver.api import prepare
    from rlbatch_solver.scenario import Scenario

    # steps_per_generation over gradient_accumulation_steps runs the old log-prob pass (TRL's gate), whose logits
    # 2025.9's loss then holds
    sc = Scenario(framework="unsloth==2025.9.6", gpu="rtx4090", gpus=1, model="qwen3-4b", algorithm="grpo", n=4,
                  prompt_length=256, response_length=1024,
                  fixed={"fast_inference": True, "load_in_4bit": True, "UNSLOTH_VLLM_STANDBY": "0"},
                  search={"per_device_train_batch_size": [1, 2, 4], "gradient_accumulation_steps": [1, 2],
                          "steps_per_generation": [1, 2, 4]})
    _, _, _, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=24, seed=3, label="unsloth 2025.9.6", terms=terms)
