"""What we print for pasting must be what the user's shell passes on: a value with brackets, quotes or spaces
(verl's ``data.val_files="['a', 'b']"``, ``trainer.logger=['console','wandb']``) survives reading a launch script,
the search, and printing, and the shell words we print parse back to the same config.

The case that found these: verl's fully_async ReTool example (tests/data/scripts/verl/fully_async_dapo_7b_retool.sh),
where ``recommend --from`` printed ``trainer.logger=`` (the terminal's markup ate ``[console,tensorboard]``), cut
``data.val_files`` at its space, and left ``$dapo_math_17k`` unexpanded inside ``"['$dapo_math_17k']"``."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import yaml
from rich.console import Console

from rlbatch_solver import api
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.overrides import split_tokens
from rlbatch_solver.frameworks.verl.fsdp import overrides_to_yaml
from rlbatch_solver.launch_script import parse_launch_script, read_launch_script
from rlbatch_solver.render import print_args, shell_word

SCRIPT = Path(__file__).resolve().parent / "data" / "scripts" / "verl" / "fully_async_dapo_7b_retool.sh"


def test_single_quotes_inside_double_quotes_do_not_stop_expansion():
    s = parse_launch_script('D=/data\nF="[\'$D/a\', \'$D/b\']"\nG=\'$D\'\n'
                            'python3 -m verl.trainer.main_ppo data.train_files="$F" x.y=$G x.z="it\'s $D"\n')
    assert "data.train_files=['/data/a', '/data/b']" in s.args
    assert "x.y=$D" in s.args  # single-quoted outside double quotes: as written, as bash does
    assert "x.z=it's /data" in s.args
    # an escaped double quote does not end the string: the # after it is no comment
    s = parse_launch_script('python3 -m verl.trainer.main_ppo x.m="a \\" # b" # comment\n')
    assert 'x.m=a " # b' in s.args


def test_the_retool_script_reads_as_bash_would():
    s = read_launch_script(SCRIPT)
    assert "data.train_files=['$PWD/dataset/BytedTsinghua-SIA/DAPO-Math-17k']" in s.args
    assert "data.val_files=['$PWD/dataset/yentinglin/aime_2025', '$PWD/dataset/Maxwell-Jia/AIME_2024']" in s.args
    assert "trainer.logger=[console,tensorboard]" in s.args


def test_split_tokens_keeps_bracketed_and_quoted_values_whole():
    assert split_tokens(["data.val_files=['a', 'b']", "x=1 y=2", "t.logger=[console, wandb] z=3"]) == [
        "data.val_files=['a', 'b']", "x=1", "y=2", "t.logger=[console, wandb]", "z=3"]
    assert split_tokens(['m.p="a b" k=1']) == ['m.p="a b"', "k=1"]
    assert split_tokens(["p=it's q=1"]) == ["p=it's", "q=1"]  # an unbalanced quote: plain whitespace


def test_shell_word_quotes_only_what_the_shell_would_change():
    assert shell_word("data.train_batch_size=64") == "data.train_batch_size=64"
    assert shell_word("trainer.logger=[console,wandb]") == '"trainer.logger=[console,wandb]"'
    assert shell_word("data.val_files=['a', 'b']") == "\"data.val_files=['a', 'b']\""
    assert shell_word('x="a b"') == "'x=\"a b\"'"
    assert shell_word("--vllm_mode server") == "--vllm_mode server"
    assert shell_word("--system You are a helper") == '--system "You are a helper"'
    assert shell_word("k=$HOME/x") == '"k=$HOME/x"'  # a variable the script left unset expands as it did there
    for arg in ("trainer.logger=[console,wandb]", "data.val_files=['a', 'b']", 'x="a b"', "k=$HOME/x"):
        assert shlex.split(shell_word(arg)) == [arg]  # one word, unchanged (shlex does not expand $)


def test_printed_arguments_are_not_eaten_by_terminal_markup():
    out = io.StringIO()
    print_args(Console(file=out, width=40), ["trainer.logger=[console,tensorboard]", "data.val_files=['a', 'b']"])
    text = out.getvalue()
    assert "[console,tensorboard]" in text and "['a', 'b']" in text
    assert shlex.split(text.replace("\\\n", " ")) == ["trainer.logger=[console,tensorboard]",
                                                      "data.val_files=['a', 'b']"]


def test_yaml_export_holds_lists_as_lists():
    doc = yaml.safe_load(overrides_to_yaml(["trainer.logger=[console,tensorboard]", "data.val_files=['a', 'b']",
                                            "+model.override_config.max_position_embeddings=32768"]))
    assert doc["trainer"]["logger"] == ["console", "tensorboard"]
    assert doc["data"]["val_files"] == ["a", "b"]
    assert doc["model"]["override_config"]["max_position_embeddings"] == 32768


def test_recommend_from_prints_a_config_that_reads_back_the_same():
    s = read_launch_script(SCRIPT)
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    report = api.recommend_from(s.framework, flat, gpu="h20", model="qwen2.5-7b", gpus=s.gpus, top=5)
    out = io.StringIO()
    print_args(Console(file=out, width=60), report.best.native)
    words = shlex.split(out.getvalue().replace("\\\n", " "))
    again, _ = fw.parse(words)
    for key in ("data.train_files", "data.val_files", "trainer.logger", "actor_rollout_ref.rollout.multi_turn.enable"):
        assert again[key] == flat[key], key
    # alternatives that print the same config (micro batch sizes unused under dynamic batching) are shown once
    natives = [tuple(c.native) for c in report.choices]
    assert len(natives) == len(set(natives))


def test_an_argument_with_spaces_stays_one_for_flag_frameworks():
    """ms-swift and OpenRLHF take ``--flag value``: a value the shell passed as one argument keeps its spaces."""
    flat, ignored = get_framework("swift").parse(["--system", "You are a helpful assistant.", "--num_generations", "8"])
    assert flat["system"] == "You are a helpful assistant." and flat["num_generations"] == 8 and not ignored
    flat, ignored = get_framework("openrlhf").parse(["--input_template", "User: {} Assistant:"])
    assert flat["input_template"] == "User: {} Assistant:" and not ignored
    # a pasted blob still splits: at a second argument or a line break
    assert split_tokens(["--a 1 --b 2", "x=1 y=2", "line1\nline2"]) == ["--a", "1", "--b", "2", "x=1", "y=2",
                                                                        "line1", "line2"]
    assert shell_word("--system You are a helpful assistant.") == '--system "You are a helpful assistant."'
