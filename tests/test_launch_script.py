"""Launch scripts read whole: the shell parts that matter (rlbatch_solver/launch_script.py), and the
frameworks' own example scripts (tests/data/scripts/<framework>/, each with its source) through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlbatch_solver.cli import app
from rlbatch_solver.errors import InputError
from rlbatch_solver.launch_script import is_launch_script, parse_launch_script
from doc_sections import marked

SCRIPTS = Path(__file__).resolve().parent / "data" / "scripts"


def test_continuations_comments_and_variables():
    s = parse_launch_script(
        "#!/bin/bash\n"
        "set -x\n"
        "BS=64  # prompts per step\n"
        "export MICRO=${MICRO:-8}\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    data.train_batch_size=$BS \\\n"
        "    # a commented-out argument inside the command\n"
        "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${MICRO} \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size=$((BS/2)) \\\n"
        "    '+trainer.tag=$BS' \\\n"
        "    trainer.default_local_dir=$DATA/ckpt \\\n"
        "    data.train_files=$DATA/train.parquet $@\n")
    assert s.framework == "verl"
    assert "data.train_batch_size=64" in s.args
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8" in s.args
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=32" in s.args
    assert "+trainer.tag=$BS" in s.args  # single quotes: not expanded, as the shell does
    # a path on a variable the script does not set is kept as written (the shell completes it at launch; no rule
    # reads a folder), as the training data's is (its name chooses the length profile; no number is read from it)
    assert "trainer.default_local_dir=$DATA/ckpt" in s.args and not any("$DATA" in n for n in s.notes)
    assert "data.train_files=$DATA/train.parquet" in s.args
    assert "$@" not in s.args


def test_a_positional_parameter_reads_as_its_default():
    """verl v0.3.0.post1 examples/grpo_trainer/run_qwen2_5_vl-7b.sh: ``ENGINE=${1:-vllm}``, run with no arguments."""
    s = parse_launch_script("ENGINE=${1:-vllm}\npython3 -m verl.trainer.main_ppo \\\n"
                            "    actor_rollout_ref.rollout.name=$ENGINE data.train_batch_size=${2} $@\n")
    assert "actor_rollout_ref.rollout.name=vllm" in s.args
    assert not any(a.startswith("data.train_batch_size") for a in s.args)
    assert any("$2" in n or "${2}" in n or "'2'" in n or " 2 " in n for n in s.notes), s.notes


def test_an_if_whose_condition_the_script_settles_reads_only_its_taken_branch():
    """verl's run_qwen2-7b_math_megatron.sh sets rollout_mode="sync" and exports VLLM_USE_V1=1 and
    return_raw_chat=True only `if [ "$rollout_mode" = "async" ]`: the branch not taken was read as run (the printed
    command started with VLLM_USE_V1=1 and said data.return_raw_chat=True). A condition the script's own variables
    decide reads the taken branch (elif and else too); one that depends on anything else is read as before."""
    s = parse_launch_script(
        'mode="sync"\n'
        'if [ "$mode" = "async" ]; then\n'
        '    export VLLM_USE_V1=1\n'
        '    raw="True"\n'
        'elif [[ $mode == sync ]]; then\n'
        '    n=4\n'
        'else\n'
        '    n=2\n'
        'fi\n'
        'if [ "$UNSET" != "x" ]; then\n'
        '    bs=64\n'
        'fi\n'
        "python3 -m verl.trainer.main_ppo data.return_raw_chat=$raw actor_rollout_ref.rollout.n=$n "
        "data.train_batch_size=$bs\n")
    assert "actor_rollout_ref.rollout.n=4" in s.args
    assert not any(a.startswith("data.return_raw_chat") or a.startswith("VLLM_USE_V1") for a in s.args), s.args
    assert "data.train_batch_size=64" in s.args  # $UNSET: not decided by the script, read as before
    script = (SCRIPTS / "verl-megatron" / "run_qwen2-7b_math_megatron.sh").read_text()
    read = parse_launch_script(script)
    assert not any(a.startswith("VLLM_USE_V1") or a.startswith("data.return_raw_chat=True") for a in read.args)


def test_env_prefix_and_launchers_give_the_gpu_count():
    s = parse_launch_script("CUDA_VISIBLE_DEVICES=0,1,2,3 ray job submit --address=http://x:8265 -- "
                            "python3 -m openrlhf.cli.train_ppo_ray --actor.num_gpus_per_node 4\n")
    assert (s.framework, s.gpus) == ("openrlhf", 4)
    s = parse_launch_script("deepspeed --num_gpus 8 --num_nodes 2 --module openrlhf.cli.train_ppo_ray "
                            "--train.batch_size 128\n")
    assert (s.framework, s.gpus, s.args) == ("openrlhf", 16, ["--train.batch_size", "128"])
    s = parse_launch_script("NNODES=2 NPROC_PER_NODE=8 megatron rlhf --rlhf_type grpo --micro_batch_size 2\n")
    assert s.framework == "swift-megatron" and s.args[:2] == ["NPROC_PER_NODE=8", "NNODES=2"]
    assert s.gpus is None  # ms-swift's own parser counts NPROC_PER_NODE * NNODES
    s = parse_launch_script("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
                            "data.train_batch_size=32\n")
    assert s.framework == "verl-megatron"


def test_dataset_suffix_hash_is_not_a_comment_and_last_run_is_read():
    s = parse_launch_script("swift rlhf --dataset AI-MO/NuminaMath-TIR#10000 --num_generations 8\n"
                            "NPROC_PER_NODE=2 swift rlhf --num_generations 4 # the second run\n")
    assert s.args == ["NPROC_PER_NODE=2", "--num_generations", "4"]
    assert any("2 runs" in n for n in s.notes)


def test_no_entry_point_is_input_error():
    with pytest.raises(InputError) as e:
        parse_launch_script("echo hello\npython train.py --lr 1\n")
    assert e.value.field == "script" and "verl.trainer.main_ppo" in str(e.value)


def test_arithmetic_is_limited_to_integers():
    s = parse_launch_script("N=4\npython3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$((N*2)) "
                            "data.train_batch_size=$((9**9**9))\n")
    assert "trainer.n_gpus_per_node=8" in s.args
    assert "data.train_batch_size=$((9**9**9))" in s.args  # powers are not evaluated: left for the parser


# the frameworks' example scripts: framework, GPU count the launcher gives, and two values the parser must see
EXPECTED = {
    "verl/run_qwen2-7b.sh": ("verl", None, ["data.train_batch_size=1024", "actor_rollout_ref.rollout.n=5"]),
    # verl 0.9's examples pass their arguments as bash arrays, DATA=( ... ) ... "${DATA[@]}": each element one word
    # (a quoted "['$a', '$b']" list with its space included), the model read from MODEL=( ... )
    "verl/run_qwen3_30b_a3b_fsdp.sh": (
        "verl", None, ["data.train_files=['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']",
                       "actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B",
                       "actor_rollout_ref.model.use_remove_padding=True",
                       "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True",
                       "trainer.n_gpus_per_node=8"]),
    # verl 0.9 selects Megatron by model_engine=megatron (ppo_trainer.yaml's defaults list), no strategy key
    "verl-megatron/ppo_run_qwen3_8b_megatron.sh": (
        "verl-megatron", None, ["model_engine=megatron", "critic.megatron.pipeline_model_parallel_size=2",
                                "critic.model.path=Qwen/Qwen3-8B", "algorithm.adv_estimator=gae"]),
    # case "${DEVICE}" in gpu) ... npu) ... esac, DEVICE from $(python3 -c 'import torch_npu' ...): every arm read,
    # said in a note; the nested case "${MACHINE}" (MACHINE empty: its *) arm) settled
    "verl/run_qwen3_8b_fsdp.sh": ("verl", None, ["actor_rollout_ref.model.path=Qwen/Qwen3-8B", "trainer.n_gpus_per_node=8"]),
    # engine_kwargs.sglang.attention_backend written without "+": 0.4-0.5's key (dated so), refused by 0.9.1
    "verl/run_gpt_oss_20b_fsdp.sh": ("verl", None, ["actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=triton",
                                                    "actor_rollout_ref.rollout.name=sglang"]),
    # if [ "${DEVICE}" = npu ] ... elif [ -n "${ROLLOUT_DP}" ] (ROLLOUT_DP set empty): the elif never runs
    "verl-megatron/run_qwen3_235b_a22b_megatron.sh": (
        "verl-megatron", None, ["actor_rollout_ref.rollout.expert_parallel_size=64", "trainer.nnodes=8"]),
    # verl's fully_async recipe (docs/async.md): its own entry point and keys, pools of whole nodes or split nodes
    **{f"verl/fully_async_dapo_7b_math_fsdp2_{split}.sh": (
        "verl", None, ["data.train_batch_size=0", f"rollout.nnodes={nodes}", "async_training.require_batches=4",
                       "actor_rollout_ref.hybrid_engine=False"])
       for split, nodes in (("4_4", 1), ("8_8", 1), ("16_16", 2), ("32_32", 4), ("64_64", 8), ("4_12", 2))},
    # its multi-turn tool-calling example (ReTool): one node, 4 trainer + 4 rollout GPUs
    "verl/fully_async_dapo_7b_retool.sh": (
        "verl", None, ["rollout.n_gpus_per_node=4", "trainer.n_gpus_per_node=4",
                       "actor_rollout_ref.rollout.multi_turn.enable=True", "async_training.partial_rollout=True"]),
    # verl's one_step_off recipe: top-level rollout pool keys, the usual data.train_batch_size
    **{f"verl/one_step_off_{name}.sh": ("verl", None, present) for name, present in (
        ("dapo_7b_math_fsdp2_4_12", ["rollout.n_gpus_per_node=2", "trainer.n_gpus_per_node=6",
                                     "data.train_batch_size=512"]),
        ("dapo_7b_math_fsdp2_64_64", ["rollout.nnodes=8", "trainer.nnodes=8"]),
        ("grpo_0.6b_gsm8k_fsdp2_2_6", ["rollout.n_gpus_per_node=2", "trainer.n_gpus_per_node=6"]),
        ("grpo_3b_gsm8k_fsdp2_2_6", ["data.train_batch_size=1152", "actor_rollout_ref.actor.ppo_mini_batch_size=192"]),
        ("dapo_7b_math_fsdp2_colocate", ["data.train_batch_size=512", "trainer.n_gpus_per_node=8"]))},
    "verl-megatron/one_step_off_dapo_7b_math_megatron_colocate.sh": (
        "verl-megatron", None, ["data.train_batch_size=512", "actor_rollout_ref.rollout.n=16"]),
    "verl-megatron/one_step_off_dapo_7b_math_megatron_4_12.sh": (
        "verl-megatron", None, ["rollout.n_gpus_per_node=2", "actor_rollout_ref.hybrid_engine=False"]),
    "verl-megatron/fully_async_grpo_30b_a3b_base_math_megatron_96_32.sh": (
        "verl-megatron", None, ["rollout.nnodes=12", "trainer.nnodes=4", "async_training.staleness_threshold=0.5"]),
    "verl-megatron/run_qwen2-7b_math_megatron.sh": (
        "verl-megatron", None, ["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"]),
    "swift/gspo.sh": ("swift", None, ["NPROC_PER_NODE=8", "--gradient_accumulation_steps"]),
    "swift/vllm_72b_4gpu.sh": ("swift", None, ["NPROC_PER_NODE=4", "--vllm_tensor_parallel_size"]),
    "swift/external_grpo_7b.sh": ("swift", None, ["NPROC_PER_NODE=6", "--vllm_server_host"]),
    "swift/internal_chord.sh": ("swift", None, ["NPROC_PER_NODE=8", "--chord_sft_per_device_train_batch_size"]),
    "swift/internal_moe_full.sh": ("swift", None, ["NPROC_PER_NODE=8", "zero3_offload"]),
    "swift/internal_moe_lora.sh": ("swift", None, ["NPROC_PER_NODE=8", "lora"]),
    "swift/external_moe_full.sh": ("swift", None, ["NPROC_PER_NODE=7", "server"]),
    "swift/external_moe_lora.sh": ("swift", None, ["NPROC_PER_NODE=7", "lora"]),
    # no NPROC_PER_NODE: ms-swift starts one process (swift/cli/main.py use_torchrun), said in a note
    "swift/internal_transformers_1gpu.sh": ("swift", None, ["NPROC_PER_NODE=1", "--per_device_train_batch_size"]),
    # no NPROC_PER_NODE but two visible GPUs: one process, and 3.2-3.4's vLLM on the GPU past it (read from them)
    "swift/internal_lora_vllm.sh": ("swift", None, ["NPROC_PER_NODE=1", "CUDA_VISIBLE_DEVICES=0,1"]),
    # two commands (the rollout server's and the trainer's): the last, the trainer's, is read
    "swift/multi_node_qwen2_5_32b_full.sh": ("swift", None, ["NPROC_PER_NODE=8", "zero3"]),
    "swift-megatron/dense_colocate.sh": ("swift-megatron", None, ["NPROC_PER_NODE=8", "--steps_per_generation"]),
    "swift-megatron/moe_colocate_full.sh": ("swift-megatron", None, ["--expert_model_parallel_size",
                                                                     "--global_batch_size"]),
    # a SYSTEM_PROMPT="..." written over four lines, then --system "$SYSTEM_PROMPT": the script sets it
    "swift/qlora.sh": ("swift", None, ["NPROC_PER_NODE=4", "--quant_bits", "--system"]),
    # OpenRLHF 0.11.0's: --algo.advantage.is_correction_enable, which 0.11.2 replaced (is_correction_level, ...)
    "openrlhf/train_dapo_ray_hybrid_engine.sh": ("openrlhf", None, ["--algo.advantage.is_correction_enable",
                                                                    "--rollout.n_samples_per_prompt"]),
    # TRL's VLM GRPO example script (TrlParser with GRPOConfig, as grpo.py): accelerate's words kept, as TRL reads them
    "trl/grpo_vlm_smolvlm.sh": ("trl", None, ["--config_file", "examples/scripts/grpo_vlm.py", "--num_generations"]),
    "openrlhf/train_ppo_llama_ray.sh": ("openrlhf", None, ["--critic_num_gpus_per_node", "--colocate_actor_ref"]),
    "openrlhf/train_grpo_ray_hybrid_engine.sh": ("openrlhf", None, ["--colocate_all_models", "--vllm_enable_sleep"]),
    # ${A:-$B} defaults, $(((a + b))) arithmetic, values built from other variables
    "verl-megatron/run_qwen3moe-30b_megatron_96gb.sh": (
        "verl-megatron", None, ["actor_rollout_ref.actor.ppo_max_token_len_per_gpu=10240",
                                "actor_rollout_ref.actor.megatron.expert_model_parallel_size=8",
                                "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
                                "actor_rollout_ref.actor.megatron.param_offload=True"]),
    # $((1204 * 8)) and $(((a + b) * 10 / 10)); ${TP:-4}; the node count from ${NNODES:-4}
    "verl-megatron/run_qwen3-235b_megatron_96gb.sh": (
        "verl-megatron", None, ["data.max_response_length=9632", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=11680",
                              "actor_rollout_ref.actor.megatron.expert_model_parallel_size=4",
                              "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=1.",
                              "trainer.nnodes=4"]),
}


def test_a_default_may_hold_another_variable():
    """${A:-"${HOME}/verl"}: the default's own ${HOME} (verl's fully_async scripts)."""
    s = parse_launch_script('RAY_DATA_HOME=${RAY_DATA_HOME:-"${HOME}/verl"}\n'
                            'MODEL=${MODEL:-"${RAY_DATA_HOME}/models/Qwen2.5-Math-7B"}\nHOME=/h\n'
                            'python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL\n')
    assert "actor_rollout_ref.model.path=${HOME}/verl/models/Qwen2.5-Math-7B" in s.args or any(
        "left out" in n for n in s.notes)
    s = parse_launch_script('export HOME=/h\nD=${D:-"${HOME}/verl"}\npython3 -m verl.trainer.main_ppo x.path=$D/m\n')
    assert "x.path=/h/verl/m" in s.args


def test_a_quoted_array_gives_each_element_as_one_word():
    """"${ARR[@]}" is one word per element (spaces and all), ${ARR[@]} too where no element has a space; NAME+=( ... )
    appends; an element's unset variable is said as where it is written directly (verl 0.9's examples)."""
    s = parse_launch_script('D=/d\nA=(\n  a.x=1\n  b.files="[\'$D/t\', \'$D/u\']"  # comment\n)\nA+=(c.y=2)\n'
                            'B=(data.train_batch_size=$UNSET)\npython3 -m verl.trainer.main_ppo "${A[@]}" ${B[@]} e.w=3\n')
    assert s.args[:3] == ["a.x=1", "b.files=['/d/t', '/d/u']", "c.y=2"]
    assert s.args[-1] == "e.w=3"
    assert any("$UNSET" in n and "data.train_batch_size" in n for n in s.notes)
    assert not any(a.startswith("data.train_batch_size") for a in s.args)
    model = parse_launch_script('M=(\n  actor_rollout_ref.model.path="Qwen/Qwen3-8B"\n  x.y=1\n)\n'
                                'python3 -m verl.trainer.main_ppo "${M[@]}"\n')
    assert model.model == "Qwen/Qwen3-8B"


def test_a_quoted_value_over_several_lines_is_one_argument():
    """A variable quoted over several lines is set (ms-swift's internal/qlora.sh SYSTEM_PROMPT); its line breaks read
    as spaces; a stray quote in a comment does not swallow the script."""
    s = parse_launch_script((SCRIPTS / "swift" / "qlora.sh").read_text())
    system = s.args[s.args.index("--system") + 1]
    assert system.startswith("You are a helpful math assistant.") and system.endswith("#### 42") and "\n" not in system
    assert not any("SYSTEM_PROMPT" in n for n in s.notes)
    s = parse_launch_script("# don't\nB=4\npython3 -m verl.trainer.main_ppo data.train_batch_size=$B\n")
    assert s.args == ["data.train_batch_size=4"]


def test_pipes_and_redirections_are_not_the_commands_words():
    """``... 2>&1 | tee log`` (verl 0.9's run_qwen3_5_27b_fsdp.sh), ``> out.log``, ``&``: bash's, not the run's."""
    s = parse_launch_script("python3 -m verl.trainer.main_ppo a.b=1 2>&1 | tee logs/x-${start}.log\n")
    assert s.args == ["a.b=1"] and not s.notes
    s = parse_launch_script("nohup python3 -m verl.trainer.main_ppo a.b=1 > out.log 2>/dev/null &\n")
    assert s.args == ["a.b=1"]


def test_a_quoted_value_that_starts_with_an_operator_is_a_value():
    """A quoted ``<``, ``>``, ``|``, ``;`` or ``&`` is an ordinary character (a chat template, a stop string): only an
    unquoted one is a redirection or ends the command."""
    s = parse_launch_script('python3 -m openrlhf.cli.train_ppo_ray --input_template "<|user|>{}" '
                            "--stop_strings '</answer>' --separator \"|\" --cmd 'a && b' --micro_train_batch_size 2 "
                            "> log.txt 2>&1 | tee x\n")
    assert s.args[s.args.index("--input_template") + 1] == "<|user|>{}"
    assert s.args[s.args.index("--stop_strings") + 1] == "</answer>"
    assert s.args[s.args.index("--separator") + 1] == "|"
    assert s.args[s.args.index("--cmd") + 1] == "a && b"
    assert s.args[-2:] == ["--micro_train_batch_size", "2"]


def test_a_dotted_flag_a_later_release_removed_is_said_so():
    """OpenRLHF 0.11.0's example sets --algo.advantage.is_correction_enable, which 0.11.2 removed (its train_ppo_ray.py
    has --algo.advantage.is_correction_level/_mode/_gating): the why names it first, the upgrade line says which
    release removed it and what it has instead, not 0.10.2's renaming of undotted flags."""
    result = CliRunner().invoke(app, ["check", str(SCRIPTS / "openrlhf" / "train_dapo_ray_hybrid_engine.sh")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "its flags (algo.advantage.is_correction_enable," in out
    assert ("--algo.advantage.is_correction_enable is not a flag there (0.11.2 removed it; it has "
            "--algo.advantage.is_correction_gating, --algo.advantage.is_correction_level") in out
    assert "0.10.2 renamed" not in out


def test_a_case_block_reads_the_arm_the_scripts_variables_choose():
    """``case WORD in pat | pat) ... ;; *) ... ;; esac`` as bash runs it where the script's own variables settle WORD
    (arms on one line or several, nested blocks); where they do not, every arm is read and a note says how to choose."""
    s = parse_launch_script('D=gpu\nM=\ncase "$D" in\n  gpu | x) A=1 ;;\n  npu)\n    A=2\n    ;;\n  *) A=3 ;;\nesac\n'
                            'case "${M}" in\n  gb200) B=4 ;;\n  *)\n    B=8\n    ;;\nesac\n'
                            'python3 -m verl.trainer.main_ppo a.b=$A c.d=$B\n')
    assert s.args == ["a.b=1", "c.d=8"] and not s.notes
    s = parse_launch_script('D=$(probe)\ncase "$D" in\n  gpu) A=1 ;;\n  npu) A=2 ;;\nesac\n'
                            'python3 -m verl.trainer.main_ppo a.b=$A\n')
    assert s.args == ["a.b=2"] and any(n.startswith("case $D:") and "(D=...)" in n for n in s.notes)


def test_a_variable_given_after_the_scripts_path_is_its_environment():
    """``rlbatch check run_qwen3_8b_fsdp.sh DEVICE=gpu``: read as ``DEVICE=gpu bash run_qwen3_8b_fsdp.sh`` (verl 0.9's
    example otherwise picks its device by importing torch_npu): its GPU branch only (2048-token responses, no
    sequence parallel), where reading every branch kept the NPU one's (32768, Ulysses 4)."""
    from rlbatch_solver.launch_script import script_and_rest

    path = SCRIPTS / "verl" / "run_qwen3_8b_fsdp.sh"
    s, rest = script_and_rest(path, ["DEVICE=gpu", "trainer.total_epochs=1"])
    assert rest == ["trainer.total_epochs=1"]
    assert "data.max_response_length=2048" in s.args and not any("ulysses" in a for a in s.args)
    assert "read as run with DEVICE=gpu (given after the script's path)" in s.notes
    every = parse_launch_script(path.read_text())
    assert "data.max_response_length=32768" in every.args and any(n.startswith("case ${DEVICE}:") for n in every.notes)
    result = CliRunner().invoke(app, ["check", str(path), "DEVICE=gpu"])
    assert result.exit_code == 0 and "DEVICE=gpu" in result.output, result.output


# an excerpt of SkyRL's examples/train/gsm8k/run_gsm8k.sh (github.com/NovaSky-AI/SkyRL @
# a9564572eb8e91076be43c1bd5e4615e3de17265, Aug 2026: the unified skyrl package's layout), the keys the rules read
SKYRL_UNIFIED_EXCERPT = """: "${NUM_GPUS:=4}"
: "${INFERENCE_BACKEND:=vllm}"
uv run --isolated --extra fsdp -m skyrl.train.entrypoints.main_base \\
  trainer.policy.model.path="Qwen/Qwen2.5-1.5B-Instruct" \\
  trainer.placement.colocate_all=true \\
  trainer.strategy=fsdp \\
  trainer.placement.policy_num_gpus_per_node=$NUM_GPUS \\
  trainer.placement.critic_num_gpus_per_node=$NUM_GPUS \\
  trainer.placement.ref_num_gpus_per_node=$NUM_GPUS \\
  generator.inference_engine.num_engines=$NUM_GPUS \\
  generator.inference_engine.tensor_parallel_size=1 \\
  trainer.train_batch_size=1024 \\
  trainer.policy_mini_batch_size=256 \\
  trainer.micro_forward_batch_size_per_gpu=64 \\
  trainer.micro_train_batch_size_per_gpu=64 \\
  trainer.algorithm.use_kl_loss=true \\
  generator.inference_engine.backend=$INFERENCE_BACKEND \\
  generator.batched=true \\
  generator.n_samples_per_prompt=5 \\
  generator.inference_engine.gpu_memory_utilization=0.8 \\
  $@
"""


def test_a_script_of_skyrls_unified_package_is_read_in_the_names_we_follow(tmp_path):
    """SkyRL's unified skyrl package (-m skyrl.train.entrypoints.main_base) moved the engine's keys under
    generator.inference_engine (skyrl 0.4.0 skyrl/train/config/config.py InferenceEngineConfig) and changed defaults
    (engine TP 1, was 4; each role's GPUs per node 1, was 4; enforce_eager off): it was refused (exit 2). Its keys
    are read as skyrl-train 0.3.1's, its defaults written in where the script sets none, a note says so; a broken
    engine layout is found under its own key, and fix --write puts the repair back in the unified names."""
    s = parse_launch_script(SKYRL_UNIFIED_EXCERPT)
    assert s.framework == "skyrl" and s.layout is not None
    for arg in ("generator.num_inference_engines=4", "generator.inference_engine_tensor_parallel_size=1",
                "generator.backend=vllm", "generator.gpu_memory_utilization=0.8", "trainer.strategy=fsdp2",
                "generator.enforce_eager=false"):
        assert arg in s.args, arg
    assert not any(a.startswith("generator.inference_engine.") for a in s.args)
    assert any("SkyRL's unified skyrl package" in n and "skyrl-train 0.3.1 rules" in n for n in s.notes)
    script = tmp_path / "run_gsm8k.sh"
    script.write_text(SKYRL_UNIFIED_EXCERPT)
    result = CliRunner().invoke(app, ["check", str(script)])
    assert result.exit_code == 0 and "VALID" in result.output, result.output
    # colocated: engines x TP must be the policy's GPUs (4): TP 3 breaks it, and fix writes it back as it is spelled
    script.write_text(SKYRL_UNIFIED_EXCERPT.replace("tensor_parallel_size=1", "tensor_parallel_size=3"))
    assert CliRunner().invoke(app, ["check", str(script)]).exit_code == 1
    out = tmp_path / "fixed.sh"
    result = CliRunner().invoke(app, ["fix", str(script), "--write", str(out)])
    assert result.exit_code == 0, result.output
    assert "  generator.inference_engine.tensor_parallel_size=1 \\" in out.read_text().split("\n")
    assert "inference_engine_tensor_parallel_size" not in out.read_text()
    with pytest.raises(InputError) as err:  # another entry point of the package: its config is not read
        parse_launch_script("uv run -m examples.train.algorithms.custom_advantage_estimator.main_custom_adv_est generator.n_samples_per_prompt=16\n")
    assert "main_base" in str(err.value)
    with pytest.raises(InputError) as err:  # another project's examples.train module: the usual refusal
        parse_launch_script("python -m examples.train.mine a=1\n")
    assert "starts none of the entry points we know" in str(err.value)


def test_a_key_under_a_part_of_the_users_own_is_said_to_need_a_plus():
    """verl v0.9.0's run_gpt_oss_20b_fsdp.sh sets actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend
    with no "+": 0.9.1's config has engine_kwargs.sglang: {}, which the struct config extends only with a leading +
    (every other override of it in that release's scripts has one). check's upgrade line, and check and fix under
    verl==0.9.1, say to write it with +, not to rename or remove it."""
    path = str(SCRIPTS / "verl" / "run_gpt_oss_20b_fsdp.sh")
    plus = "write +actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=..."
    result = CliRunner().invoke(app, ["check", path])
    assert result.exit_code == 0 and "upgrade: on verl 0.9.1 this config fails" in result.output, result.output
    assert plus in " ".join(result.output.split())
    for command in ("check", "fix"):
        result = CliRunner().invoke(app, [command, "--framework", "verl==0.9.1", path])
        out = " ".join(result.output.split())
        assert plus in out and "rename or remove it by hand" not in out, result.output


def test_a_variable_set_from_a_commands_output_is_set_and_not_read():
    """``T=run_$(date +%Y%m%d_%H%M)`` (verl 0.9's EXPERIMENT_NAME) is an assignment, one word whatever the command's
    spaces; where used, a value that is a command's output whole (``$(nvidia-smi -L | wc -l)``) is known only when the
    script runs: the key's default, said so (not "the script does not set it"); one with text around the command,
    of a key no rule reads, is kept as written, as the shell would run it; ``$((...))`` is still arithmetic."""
    s = parse_launch_script("N=$(nvidia-smi -L | wc -l)\nT=run_$(date +%Y%m%d_%H%M)\n"
                            "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$N trainer.experiment_name=$T "
                            "a.b=$((2*3)) c.d=\"$(echo x y)\"\n")
    assert s.args == ["trainer.experiment_name=run_$(date +%Y%m%d_%H%M)", "a.b=6", "c.d=$(echo x y)"]
    assert all("from a command's output" in n and "does not set" not in n for n in s.notes) and len(s.notes) == 1
    s = parse_launch_script((SCRIPTS / "verl" / "run_qwen3_8b_fsdp.sh").read_text())
    assert not any("EXPERIMENT_NAME" in n and "does not set" in n for n in s.notes)


def test_an_empty_or_set_test_and_a_branch_whose_own_condition_is_false():
    """``[ -n "$A" ]`` / ``[ -z "$A" ]`` of a variable the script sets are settled; after a condition that cannot be
    told, a branch whose own condition is false still never runs (verl 0.9's run_qwen3_235b_a22b_megatron.sh:
    ``elif [ -n "${ROLLOUT_DP}" ]`` with ROLLOUT_DP set empty, which wrote data_parallel_size= and stopped the check
    with an input error)."""
    s = parse_launch_script('A=\nB=x\nif [ -n "$A" ]; then\n  X=1\nelif [ -z "$B" ]; then\n  X=2\nelse\n  X=3\nfi\n'
                            'python3 -m verl.trainer.main_ppo a.b=$X\n')
    assert s.args == ["a.b=3"]
    s = parse_launch_script('A=\nif [ "$(probe)" = npu ]; then\n  X=1\nelif [ -n "${A}" ]; then\n  X=2\nfi\n'
                            'python3 -m verl.trainer.main_ppo a.b=$X\n')
    assert s.args == ["a.b=1"]
    path = SCRIPTS / "verl-megatron" / "run_qwen3_235b_a22b_megatron.sh"
    s = parse_launch_script(path.read_text())
    assert "actor_rollout_ref.rollout.data_parallel_size=" not in s.args
    result = CliRunner().invoke(app, ["check", str(path), "DEVICE=gpu"])
    assert result.exit_code == 1 and "verl.rollout.ep_equals_tp_dp" in result.output, result.output


def test_every_recorded_script_is_expected_and_cites_its_source():
    found = {str(p.relative_to(SCRIPTS)) for p in SCRIPTS.glob("*/*.sh")}
    assert set(__import__("published").script_hardware()) <= found
    assert found == set(EXPECTED)
    for rel in found:
        first = (SCRIPTS / rel).read_text().splitlines()[0]
        assert first.startswith("# source: github.com/") and " @ " in first, rel


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_example_script_is_read_and_checked(rel):
    framework, gpus, present = EXPECTED[rel]
    path = SCRIPTS / rel
    assert is_launch_script(str(path))
    s = parse_launch_script(path.read_text())
    assert (s.framework, s.gpus) == (framework, gpus)
    for token in present:
        assert token in s.args, token
    assert rel.split("/")[0] == framework
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"read {path}: {framework}" in result.output
    assert ("VALID" in result.output) or ("INVALID" in result.output)


def test_fix_reads_a_script_and_repairs_it(tmp_path):
    broken = (SCRIPTS / "verl" / "run_qwen2-7b.sh").read_text().replace(
        "actor_rollout_ref.actor.ppo_micro_batch_size=128", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24")
    script = tmp_path / "run.sh"
    script.write_text(broken)
    result = CliRunner().invoke(app, ["fix", str(script), "--time-limit", "10"])
    assert result.exit_code == 0, result.output
    assert "verl.step.mini_divisible_by_micro" in result.output and "Nearest valid config" in result.output
    assert "proven nearest" in result.output and f"read {script}: verl" in result.output


def test_fix_writes_a_key_where_the_scripts_array_sets_it_and_each_override_as_one_word(tmp_path):
    """verl 0.9's Megatron PPO example (its keys in ACTOR=( ... ), ROLLOUT=( ... )) on H100 needs the full recompute,
    three overrides: printed and written as three words (one quoted word would be one Hydra argument, a value with
    spaces); a key an array sets is changed in the array (one added after the entry point would come before it in
    the arguments and lose); the command is found by verl's entry point (verl-megatron has none of its own)."""
    script = SCRIPTS / "verl-megatron" / "ppo_run_qwen3_8b_megatron.sh"
    out = tmp_path / "fixed.sh"
    result = CliRunner().invoke(app, ["fix", "--gpu", "h100", "--time-limit", "10", str(script), "--write", str(out)])
    assert result.exit_code == 0, result.output
    recompute = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_"
    assert f"{recompute}granularity=full {recompute}method=uniform" in result.output
    assert f'"{recompute}granularity=full' not in result.output
    written = out.read_text()
    before = script.read_text()
    assert written != before and "0 key(s) changed" not in result.output
    check = CliRunner().invoke(app, ["check", "--gpu", "h100", str(out)])
    assert check.exit_code == 0, check.output
    keys = [a.partition("=")[0] for a in parse_launch_script(written).args]
    assert len(keys) == len(set(keys))  # each key once: changed where the script set it, not added beside it
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=${rollout_gpu_mem_util}" in before
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=${rollout_gpu_mem_util}" not in written


def test_script_and_framework_flag_that_disagree_exit_2():
    path = SCRIPTS / "swift" / "gspo.sh"
    result = CliRunner().invoke(app, ["check", "--framework", "openrlhf", str(path)])
    assert result.exit_code == 2 and "framework:" in result.output


def test_script_model_gives_the_memory_check():
    result = CliRunner().invoke(app, ["check", "--gpu", "h100", str(SCRIPTS / "swift" / "gspo.sh")])
    assert result.exit_code == 0, result.output
    assert "catalog card qwen2.5-7b" in result.output and "predicted memory per GPU on h100" in result.output


def test_published_memory_table_is_in_sync_and_scripts_fit_as_recorded():
    """docs/cost-model.md section 10 is today's prediction; a script's `fits` in hardware.yaml is what the
    model predicts (a change of the model that flips one must update the record and the doc)."""
    import rlbatch_solver as rb
    from published import TABLE_BEGIN, TABLE_END, check_script, memory_points, memory_table, script_hardware

    doc = (SCRIPTS.parents[2] / "docs" / "cost-model.md").read_text()
    assert marked(doc, TABLE_BEGIN, TABLE_END) == memory_table()
    for rel, hw in script_hardware().items():
        r = check_script(rel, hw)
        recorded = {True: "yes", False: "no"}.get(hw["fits"], hw["fits"])
        assert r.memory is not None and r.memory.verdict() == recorded, (rel, r.memory.peaks)
        # a published working script is never predicted to OOM: at worst it reaches into the safety margin
        assert r.valid and r.memory.verdict() != "no", (rel, r.memory.peaks)
    for point in memory_points():  # the runs of the measured set ran as published: each fits, but for the
        # known misses a point records (`predicted_memory`, with the reason beside it and in docs/accuracy.md)
        r = rb.check(point["args"], framework=point["framework"], gpus=point.get("gpus"), model=point["model"],
                     gpu=point["gpu"])
        expected = point.get("predicted_memory", "yes")
        assert expected == "yes" or point.get("predicted_memory_why"), point["name"]
        assert r.memory.verdict() == expected, (point["name"], r.memory.peaks)


def test_a_value_on_a_variable_the_script_does_not_set_is_said_never_dropped_silently():
    """A command recommend printed, saved as a script: its ``$HOME`` paths are the shell's to expand at launch (kept
    as written, no note); a value the script leaves to the environment (``$BS``), and a word of its own (``$EXTRA``),
    cannot be read here: each is said, with what the check does instead."""
    s = parse_launch_script("python3 -m verl.trainer.main_ppo \\\n"
                            '    "data.val_files=$HOME/data/gsm8k/test.parquet" \\\n'
                            "    trainer.default_local_dir=${HOME}/ckpt trainer.project_name=$PROJECT \\\n"
                            "    data.train_batch_size=$BS $EXTRA\n")
    assert "data.val_files=$HOME/data/gsm8k/test.parquet" in s.args and "trainer.default_local_dir=${HOME}/ckpt" in s.args
    assert not any("HOME" in n for n in s.notes)
    said = {n.split(":")[0]: n for n in s.notes if "the shell expands" in n}
    assert set(said) == {"data.train_batch_size=$BS", "trainer.project_name=$PROJECT", "$EXTRA"}
    assert ("the value cannot be read here: checked with the framework's default for data.train_batch_size instead "
            "(set BS in the script, or pass data.train_batch_size after the script's path)") in said["data.train_batch_size=$BS"]
    assert said["$EXTRA"].endswith("the words it adds cannot be read here: checked without them")
    assert not any(a.startswith(("data.train_batch_size", "trainer.project_name")) or "$EXTRA" in a for a in s.args)
    # a flag framework's value and its flag go together
    o = parse_launch_script("python3 -m openrlhf.cli.train_ppo_ray --train.batch_size $TBS --ckpt.output_dir $HOME/c\n")
    assert "--ckpt.output_dir" in o.args and "$HOME/c" in o.args and "--train.batch_size" not in o.args
    assert any(n.startswith("--train.batch_size $TBS: the shell expands $TBS") for n in o.notes)


def test_a_saved_printed_command_checks_with_no_note_on_home(tmp_path):
    from clirun import run

    printed = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b").stdout
    lines = printed[printed.index("  python3 -m verl.trainer.main_ppo"):].splitlines()
    command = [line.strip() for line in lines[:next(i for i, x in enumerate(lines) if not x.rstrip().endswith("\\"))
                                             + 1]]
    script = tmp_path / "run.sh"
    script.write_text("\n".join(command) + "\n")
    res = run("check", str(script))
    assert res.returncode == 0, res.stdout
    assert "$HOME" not in res.stderr and "left out" not in res.stderr


def test_a_model_path_built_with_a_command_keeps_its_folder_name():
    """``MODEL_PATH=$(pwd)/models/Qwen2.5-7B-Instruct``: the folder names the model (matched by its name), so it is
    kept as written; a value that is a command's output whole (``$(cat m.txt)``, ``$(nproc)``) is known only when
    the script runs, and a key read as a number with a command's output in its value is left out, each said."""
    s = parse_launch_script("MODEL_PATH=$(pwd)/models/Qwen2.5-7B-Instruct\n"
                            "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH\n")
    assert s.model == "$(pwd)/models/Qwen2.5-7B-Instruct" and not s.notes
    s = parse_launch_script("MODEL_PATH=$(cat m.txt)\nBS=$(nproc)\nN=4$(nproc)\n"
                            "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH "
                            "data.train_batch_size=$BS actor_rollout_ref.rollout.n=$N a.b=1\n")
    assert s.model is None and s.args == ["a.b=1"]
    said = {n.split(":")[0]: n for n in s.notes}
    assert "memory is not checked (give MODEL_PATH=... after the script's path, or pass --model)" in \
        said["actor_rollout_ref.model.path=$MODEL_PATH"]
    assert not any("default for actor_rollout_ref.model.path" in n for n in s.notes)
    assert "checked with the framework's default for data.train_batch_size" in said["data.train_batch_size=$BS"]
    assert "its value holds a command's output" in said["actor_rollout_ref.rollout.n=4$(nproc)"]


def test_a_case_that_ends_on_its_last_arms_line_and_arms_that_go_on():
    """``*) NG=8 ;; esac`` closes the block (the command after it is read, the arm's value kept); a one-line
    ``case $M in a) X=1 ;; esac`` reads the arm its word chooses; ``;&`` runs the next arm's commands too, ``;;&``
    tests the next arms' patterns still."""
    run = "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$NG\n"
    for device, ng in (("npu", "16"), ("gpu", "8")):
        s = parse_launch_script(f'DEVICE={device}\ncase "$DEVICE" in\n  npu) NG=16 ;;\n  *) NG=8 ;; esac\n' + run)
        assert s.args == [f"trainer.n_gpus_per_node={ng}"] and not s.notes, s.notes
    s = parse_launch_script("M=a\ncase $M in a) NG=2 ;; b) NG=3 ;; esac\n" + run)
    assert s.args == ["trainer.n_gpus_per_node=2"] and not s.notes
    s = parse_launch_script("M=a\nNG=1\ncase $M in\n  a) X=4 ;&\n  b) NG=6 ;;\n  c) NG=7 ;;\nesac\n" + run)
    assert s.args == ["trainer.n_gpus_per_node=6"]
    s = parse_launch_script("M=ab\ncase $M in\n  a*) NG=4 ;;&\n  *b) NG=5 ;;\n  *) NG=9 ;;\nesac\n" + run)
    assert s.args == ["trainer.n_gpus_per_node=5"]


def test_an_elif_known_true_after_an_unknown_if_ends_the_block():
    """After an ``if`` the script's values do not settle, an ``elif`` they settle true runs unless the ``if`` did:
    no ``else`` or later ``elif`` runs, so its value is never the one read; that the branches were guessed is said."""
    s = parse_launch_script('MODE=grpo\nif [ "$X" = 1 ]; then\n  MB=2\nelif [ "$MODE" = grpo ]; then\n  MB=8\n'
                            'elif [ -n "$Y" ]; then\n  MB=5\nelse\n  MB=3\nfi\n'
                            "python3 -m verl.trainer.main_ppo "
                            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MB\n")
    assert s.args == ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"]
    assert any(n.startswith('if [ "$X" = 1 ]: the script\'s own values do not settle it') for n in s.notes), s.notes


def test_a_quote_left_open_reads_each_line_a_bounded_number_of_times(monkeypatch):
    """A quote left open (a stray one, or a long prompt) is carried from line to line, each line read once for it,
    not the growing join of its lines read again for each next line (quadratic: seconds for a 1 MB script). Counted
    in characters the quote scanners read, not timed."""
    import rlbatch_solver.launch_script as ls

    read = [0]
    for name in ("_quoted_spans", "_quote_after"):
        scan = getattr(ls, name, None)
        if scan is not None:
            def counted(line, *rest, _scan=scan):
                read[0] += len(line)
                return _scan(line, *rest)
            monkeypatch.setattr(ls, name, counted)
    text = "\n".join((['Y="' + "w" * 200] + ["z" * 200] * 62 + ["end"]) * 4) \
        + "\npython3 -m verl.trainer.main_ppo a.b=1\n"
    assert ls.parse_launch_script(text).args == ["a.b=1"]
    assert read[0] < 16 * len(text), read[0] / len(text)  # ~8 times its length; the join read again: ~107


def test_an_array_ends_at_its_closing_parenthesis():
    """A ``)`` of an element's ``$( ... )``, in quotes or in a comment does not end a bash array, and words before
    the closing ``)`` on its line are its last."""
    s = parse_launch_script('A=( x.path=$(pwd)/m\n  a.b=2\n)\nB=(\n  y.path=$(pwd)/n  # (the folder)\n  "c.d=)"\n'
                            '  c.e=2 )\npython3 -m verl.trainer.main_ppo "${A[@]}" "${B[@]}" f.g=3\n')
    assert s.args == ["x.path=$(pwd)/m", "a.b=2", "y.path=$(pwd)/n", "c.d=)", "c.e=2", "f.g=3"]


# an excerpt of verl v0.9.0's examples/grpo_trainer/run_qwen3_5_35b_megatron_lite.sh (github.com/verl-project/verl
# @ 483b8a009ba3a97563edee3a19887e4862b8094a, lines 129-133 and 164-183 of the file): its actor array picks the actor
# config group's option mlite_actor, which the Megatron-LM lite branch's verl_mlite package adds on Hydra's search path
MEGATRON_LITE_EXCERPT = """ACTOR=(
    actor@actor_rollout_ref.actor=mlite_actor
    actor_rollout_ref.actor.ppo_mini_batch_size=32
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
)
TRAINER=(
    critic.enable=False
    trainer.nnodes=1
    trainer.n_gpus_per_node=8
)
EXTRA=(
    hydra.searchpath=[pkg://verl_mlite.config]
)
python3 -m verl.trainer.main_ppo \\
    "${EXTRA[@]}" \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=32 \\
    actor_rollout_ref.rollout.n=5 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \\
    "${ACTOR[@]}" \\
    "${TRAINER[@]}" \\
    "$@"
"""


def test_a_config_group_override_is_read_as_hydra_picks_the_option(tmp_path):
    """Hydra's override of a defaults-list entry (``group@package=option``: verl 0.9.0's Megatron Lite examples write
    actor@actor_rollout_ref.actor=mlite_actor) is an override, not a malformed key=value (exit 2 before): an option
    we do not model is named, with the key, and the run's batch sizes are still checked; one we model
    (megatron_actor) picks its backend as model_engine=megatron does."""
    script = tmp_path / "lite.sh"
    script.write_text(MEGATRON_LITE_EXCERPT)
    result = CliRunner().invoke(app, ["check", str(script)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "VALID" in said and "lite.sh: verl VALID" in said
    assert ("actor@actor_rollout_ref.actor=mlite_actor: the actor config group's option mlite_actor is not modelled"
            in said)
    # the same run's batch sizes broken are still found
    script.write_text(MEGATRON_LITE_EXCERPT.replace("ppo_mini_batch_size=32", "ppo_mini_batch_size=64"))
    broken = CliRunner().invoke(app, ["check", str(script)])
    assert broken.exit_code == 1 and "INVALID" in broken.output
    # an option we model: the Megatron actor's, read as verl-megatron
    megatron = MEGATRON_LITE_EXCERPT.replace("=mlite_actor", "=megatron_actor")
    s = parse_launch_script(megatron)
    assert s.framework == "verl-megatron" and "actor@actor_rollout_ref.actor=megatron_actor" in s.args
    script.write_text(megatron)
    result = CliRunner().invoke(app, ["check", str(script)])
    assert result.exit_code == 0 and "not modelled" not in result.output, result.output
    # the group alone where the package is the group's own (critic=...) reads too; a group path (a/b) that no entry
    # of verl's defaults list is refused as Hydra refuses it ("No match in the defaults list"), and a key that is
    # neither a value's nor a group's still exits 2
    script.write_text(MEGATRON_LITE_EXCERPT.replace("critic.enable=False", "critic=ds_critic critic.enable=False"))
    said = " ".join(CliRunner().invoke(app, ["check", str(script)]).output.split())
    assert "critic=ds_critic: the critic config group's option ds_critic is not modelled" in said
    script.write_text(MEGATRON_LITE_EXCERPT.replace("actor@actor_rollout_ref", "actor_rollout_ref/actor@actor_rollout_ref"))
    refused = CliRunner().invoke(app, ["check", str(script)])
    assert refused.exit_code == 2 and "No match in the defaults list" in " ".join(refused.output.split())
    script.write_text(MEGATRON_LITE_EXCERPT.replace("actor@actor_rollout_ref.actor", "actor@@x"))
    assert CliRunner().invoke(app, ["check", str(script)]).exit_code == 2


def test_openrlhfs_example_model_is_a_catalog_card():
    """OpenRLHF's example scripts train OpenRLHF/Llama-3-8b-sft-mixture (a full fine-tune of Meta-Llama-3-8B): it was
    not in the catalog (no memory, head or context checks from the script alone); it is the llama3-8b card's alias,
    with Llama 3's 8K context, not Llama 3.1's 128K."""
    result = CliRunner().invoke(app, ["check", str(SCRIPTS / "openrlhf" / "train_ppo_llama_ray.sh")])
    assert result.exit_code == 0, result.output
    assert "model from the script: OpenRLHF/Llama-3-8b-sft-mixture (catalog card llama3-8b)" in result.output
    assert "not in the catalog" not in result.output


_VL_SWIFT = ("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-VL-3B-Instruct --train_type full --freeze_vit false "
             "--max_length 4096 --max_completion_length 1024 --deepspeed zero3 --per_device_train_batch_size 8 "
             "--gradient_accumulation_steps 1 --num_generations 8 --use_vllm true --vllm_mode colocate")
_VIT_ACTS = "vision tower activations (image patches of the micro batch)"


def _vit_mib(*args):
    import json

    from clirun import run

    res = run("check", "--gpu", "h100", "--json", *args)
    return json.loads(res.stdout)["memory"]["phases"]["actor_update"]["terms_mib"][_VIT_ACTS]


@pytest.mark.parametrize("form", ["export", "prefix", "pasted"])
def test_an_ms_swift_scripts_max_pixels_prices_its_images_as_the_bare_flag_does(tmp_path, form):
    """ms-swift's Qwen-VL processor reads MAX_PIXELS from the environment (swift/llm/model/model/qwen.py
    patch_qwen_vl_utils: get_env_args), and its multimodal examples set it by `export` or as a prefix of
    `swift rlhf`: either way the image budget is the script's (602112 pixels, 3072 patches an image), not
    qwen_vl_utils' default 16384 x 28 x 28, as when the same value is given as a bare token."""
    bare = _vit_mib("--framework", "swift", "--", "MAX_PIXELS=602112", "NPROC_PER_NODE=4",
                    *_VL_SWIFT.split()[2:])
    default = _vit_mib("--framework", "swift", "--", "NPROC_PER_NODE=4", *_VL_SWIFT.split()[2:])
    assert default > 4 * bare  # 16384 patches against 3072
    if form == "pasted":
        got = _vit_mib("--", "MAX_PIXELS=602112", "NPROC_PER_NODE=4", *_VL_SWIFT.split())
    else:
        script = tmp_path / "run_vl.sh"
        body = (f"export MAX_PIXELS=602112\nNPROC_PER_NODE=4 \\\n{_VL_SWIFT}\n" if form == "export"
                else f"MAX_PIXELS=602112 NPROC_PER_NODE=4 \\\n{_VL_SWIFT}\n")
        script.write_text(body)
        got = _vit_mib(str(script))
    assert got == bare


def test_recommend_from_an_ms_swift_vl_script_keeps_max_pixels_in_the_command_it_prints_and_prices(tmp_path):
    """The printed best config carries the script's MAX_PIXELS as the environment prefix (never as a --flag
    ms-swift would refuse), and a check of that printed command prices the memory recommend reported."""
    import json

    from clirun import run

    script = tmp_path / "run_vl.sh"
    script.write_text(f"export MAX_PIXELS=602112\nNPROC_PER_NODE=4 \\\n{_VL_SWIFT}\n")
    printed = run("recommend", "--from", str(script), "--gpu", "h100", "--gpus", "4").stdout
    lines = printed[printed.index("Best config"):].splitlines()[1:]
    command = [line.strip() for line in lines[:next(i for i, x in enumerate(lines) if not x.rstrip().endswith("\\"))
                                             + 1]]
    assert command[0].startswith("MAX_PIXELS=602112 ") and not any("--MAX_PIXELS" in c for c in command)
    best = json.loads(run("recommend", "--from", str(script), "--gpu", "h100", "--gpus", "4", "--json").stdout)
    update = best["choices"][0]["memory_gib"]["actor_update"]
    saved = tmp_path / "best.sh"
    saved.write_text("\n".join(command) + "\n")
    checked = json.loads(run("check", str(saved), "--gpu", "h100", "--json").stdout)["memory"]["phases"]
    assert checked["actor_update"]["peak_mib"] / 1024 == pytest.approx(update["peak"], abs=0.01)
    assert checked["actor_update"]["terms_mib"][_VIT_ACTS] / 1024 == pytest.approx(update["terms"][_VIT_ACTS],
                                                                                   abs=0.01)
    assert checked["actor_update"]["terms_mib"][_VIT_ACTS] == _vit_mib("--framework", "swift", "--",
                                                                       "MAX_PIXELS=602112", "NPROC_PER_NODE=4",
                                                                       *_VL_SWIFT.split()[2:])


def test_recommend_from_a_skyrl_unified_script_prints_the_unified_names_and_its_check_agrees(tmp_path):
    """SkyRL's unified package builds its config with strict key validation (skyrl/train/config/config.py
    from_cli_overrides -> from_dict_config): generator.num_inference_engines and the other skyrl-train 0.3.1 names are
    no field of it. recommend --from prints the best config in the unified names (the mapping --write uses:
    unified.from_skyrl_train), async_engine under generator.inference_engine; the printed arguments after the
    script's entry point check as the answer was priced."""
    import json

    from clirun import run
    from rlbatch_solver.frameworks.skyrl.unified import RENAMED

    script = tmp_path / "run_gsm8k.sh"
    script.write_text(SKYRL_UNIFIED_EXCERPT)
    printed = run("recommend", "--from", str(script), "--gpu", "h100", "--gpus", "4").stdout
    lines = printed[printed.index("Best config"):].splitlines()[1:]
    args = [line.strip().rstrip("\\").strip()
            for line in lines[:next(i for i, x in enumerate(lines) if not x.rstrip().endswith("\\")) + 1]]
    keys = {a.partition("=")[0] for a in args}
    assert keys and not keys & set(RENAMED.values()), keys & set(RENAMED.values())
    assert "generator.inference_engine.async_engine" in keys and "generator.inference_engine.num_engines" in keys
    assert "trainer.strategy=fsdp" in args
    best = json.loads(run("recommend", "--from", str(script), "--gpu", "h100", "--gpus", "4", "--json").stdout)
    saved = tmp_path / "best.sh"
    saved.write_text("uv run --isolated --extra fsdp -m skyrl.train.entrypoints.main_base \\\n  "
                     + " \\\n  ".join(args) + "\n")
    checked = json.loads(run("check", str(saved), "--gpu", "h100", "--gpus", "4", "--json").stdout)
    assert checked["valid"], checked["violations"]
    assert checked["memory"]["step_seconds"] == pytest.approx(best["choices"][0]["step_time_s"], rel=1e-3)


def test_openrlhf_launcher_without_ray_is_read_from_a_script(tmp_path):
    """OpenRLHF's non-Ray example form (`deepspeed --module openrlhf.cli.train_ppo`, 0.4.0-0.6.1): the script is
    OpenRLHF's, its world comes from deepspeed's --num_gpus, and the module's word reaches the framework's parse, so
    it is priced as one DeepSpeed world and judged by train_ppo.py's own checks (memory only here)."""
    import rlbatch_solver as rb
    from rlbatch_solver.launch_script import read_launch_script

    script = tmp_path / "train_ppo_llama.sh"
    script.write_text("deepspeed --num_gpus 4 --module openrlhf.cli.train_ppo \\\n"
                      "  --pretrain meta-llama/Meta-Llama-3-8B-Instruct --reward_pretrain OpenRLHF/Llama-3-8b-rm-mixture \\\n"
                      "  --micro_train_batch_size 1 --train_batch_size 4 --micro_rollout_batch_size 1 \\\n"
                      "  --rollout_batch_size 4 --prompt_max_len 1024 --generate_max_len 1024 --zero_stage 2 --bf16 \\\n"
                      "  --gradient_checkpointing --adam_offload --flash_attn\n")
    read = read_launch_script(script)
    assert read.framework == "openrlhf" and read.gpus == 4 and "openrlhf.cli.train_ppo" in read.args
    report = rb.check(read.args, framework="openrlhf==0.5.9", gpus=read.gpus, model="llama3-8b", gpu="a6000")
    assert report.values["one_world"]
    assert {v.rule for v in report.violations} == {f"openrlhf.memory.{p}" for p in (
        "rollout", "old_log_prob", "ref", "actor_update", "critic_update")}
    # recommend places train_ppo_ray's groups and engines: it says so, in one error, for this launcher
    result = CliRunner().invoke(app, ["recommend", "--framework", "openrlhf==0.5.9", "--gpu", "a6000", "--from",
                                      str(script)])
    assert result.exit_code == 2 and "openrlhf.cli.train_ppo (the launcher without Ray" in result.output


def test_gpus_beside_a_launchers_count_is_one_note_and_knows_an_unread_node_count(tmp_path):
    """--gpus beside the GPUs a launcher starts: one note (launch_script.gpus_note) for a script, a pasted command
    and a command given to the API as a list, worded for what was given ("change the script" / "change the
    command"). A multi-node torchrun line whose $NNODES the script does not set says its GPUs per node only: any
    whole number of nodes of them agrees (no note for --gpus 16 on 8 per node), another count is noted per node."""
    import rlbatch_solver as rb
    from rlbatch_solver.commands.script_args import read_script_args

    trl = "trl/scripts/grpo.py --model_name_or_path Qwen/Qwen2.5-7B --per_device_train_batch_size 4 --num_generations 8"
    script = tmp_path / "run.sh"
    script.write_text(f"torchrun --nnodes $NNODES --nproc_per_node 8 --node_rank $NODE_RANK {trl}\n")

    def gpus_notes(notes):
        return [n for n in notes if n.startswith("--gpus ")]

    assert gpus_notes(read_script_args(None, [str(script)], 16, None).notes) == []
    assert gpus_notes(read_script_args(None, [str(script)], 8, None).notes) == []
    assert gpus_notes(read_script_args(None, [str(script)], 12, None).notes) == [
        f"--gpus 12 is not a whole number of nodes of the 8 GPU(s) per node {script} starts (the launcher (8 per node "
        "x 1 node counted: its node count was not read)): checked with --gpus 12; pass a multiple of 8, or change the "
        "script, if that is what runs"]
    pasted = ["torchrun", "--nnodes", "2", "--nproc_per_node", "4", *trl.split()]
    assert gpus_notes(read_script_args(None, pasted, 4, None).notes) == [
        "--gpus 4 is not the 8 GPU(s) the pasted command starts (the launcher (4 per node x 2 node(s))): checked with "
        "--gpus 4; pass --gpus 8, or change the command, if that is what runs"]
    assert gpus_notes(read_script_args(None, pasted, 8, None).notes) == []
    # the same words given to the API as a list: the same note, once
    deepspeed = ["deepspeed", "--num_gpus", "2", "--module", "openrlhf.cli.train_ppo", "--pretrain",
                 "meta-llama/Meta-Llama-3-8B", "--reward_pretrain", "meta-llama/Meta-Llama-3-8B", "--zero_stage", "3"]
    listed = gpus_notes(rb.check(deepspeed, framework="openrlhf==0.5.9", gpus=4).notes)
    assert listed == ["--gpus 4 is not the 2 GPU(s) the command starts (the launcher (2 per node x 1 node(s))): "
                      "checked with --gpus 4; pass --gpus 2, or change the command, if that is what runs"], listed
    # a script read, then its arguments checked (as the CLI does): noted once, by the script's reading
    (tmp_path / "ds.sh").write_text(" ".join(deepspeed) + "\n")
    read = read_script_args("openrlhf==0.5.9", [str(tmp_path / "ds.sh")], 4, None)
    assert len(gpus_notes(read.notes)) == 1
    assert gpus_notes(rb.check(read.args, framework=read.framework, gpus=read.gpus).notes) == []
