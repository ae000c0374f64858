"""Each limit of rlbatch_solver/safe_input.py, one at a time: the input just inside it is read, the input beyond
it is an InputError naming the field, with a fix (docs/inputs.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clirun import run
from rlbatch_solver import safe_input
from rlbatch_solver.errors import InputError
from rlbatch_solver.launch_script import parse_launch_script

ENTRY = "python3 -m verl.trainer.main_ppo data.train_batch_size=64\n"


def _refused(call, *args, field: str = "config", words: str = "") -> InputError:
    with pytest.raises(InputError) as err:
        call(*args)
    assert err.value.field == field and err.value.fix, err.value
    assert words in str(err.value), err.value
    return err.value


def test_only_regular_files_are_read_and_a_fifo_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # nothing writes it: opening it for reading would block
    for path in (fifo, "/dev/zero", "/dev/null", tmp_path):
        _refused(safe_input.read_text, path, "model", field="model", words="not")
    _refused(safe_input.read_text, tmp_path / "missing.yaml", "model", field="model", words="does not exist")
    _refused(safe_input.read_text, "x" * 5000, "model", field="model", words="cannot read")


def test_size_limit_and_text(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\n" * 20)
    assert safe_input.read_text(path, "config", limit=100) == "a: 1\n" * 20
    _refused(safe_input.read_text, path, "config", 99, words="larger than 99 bytes")
    path.write_bytes(b"caf\xe9: 1\n")
    _refused(safe_input.read_text, path, "config", words="not UTF-8")
    assert safe_input.read_text(path, "log", lenient=True) == "caf\ufffd: 1\n"
    path.write_bytes(b"a: 1\x00\x00\n")
    _refused(safe_input.read_text, path, "config", words="NUL")
    assert safe_input.read_text(path, "log", lenient=True) == "a: 1\n"  # a log padded by a crash


def test_yaml_depth_limit() -> None:
    inside = "[" * safe_input.MAX_DEPTH + "]" * safe_input.MAX_DEPTH
    assert safe_input.load_yaml(inside, "config") is not None
    deeper = "[" + inside + "]"
    _refused(safe_input.load_yaml, deeper, "config", words=f"deeper than {safe_input.MAX_DEPTH}")
    block = "".join(" " * i + "a:\n" for i in range(200))
    _refused(safe_input.load_yaml, block, "config", words="deeper")
    _refused(safe_input.load_yaml, "[" * 100_000, "config", words="deeper")


def test_yaml_alias_limits_in_values_and_keys() -> None:
    assert safe_input.load_yaml("a: &x [1, 2]\nb: *x\nc: *x\n", "config") == {"a": [1, 2], "b": [1, 2], "c": [1, 2]}
    many = "x: &x 1\nl: [" + ", ".join(["*x"] * (safe_input.MAX_ALIASES + 1)) + "]\n"
    _refused(safe_input.load_yaml, many, "config", words="aliases")
    laughs = "l0: &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    _refused(safe_input.load_yaml, laughs, "config", words="values")
    keys = "".join(f"k{j}: &k{j} key{j}\n" for j in range(9)) + "l0: &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} {{" + ", ".join(f"*k{j} : *l{i - 1}" for j in range(9)) + "}\n" for i in range(1, 9))
    _refused(safe_input.load_yaml, keys, "config", words="values")
    _refused(safe_input.load_yaml, "a: &a [*a]\n", "config", words="loop")


def test_yaml_errors_name_the_field() -> None:
    _refused(safe_input.load_yaml, "a: [1\n", "gpu-file", field="gpu-file", words="not valid YAML")
    _refused(safe_input.load_yaml, "a: " + "9" * 5000, "config", words="could not be read")
    _refused(safe_input.load_yaml, "a: !!python/object/apply:os.system ['true']", "config", words="not valid YAML")


def test_json_depth_limit() -> None:
    assert safe_input.load_json('{"a": [1, {"b": 2}]}', "model") == {"a": [1, {"b": 2}]}
    _refused(safe_input.load_json, "[" * (safe_input.MAX_DEPTH + 1) + "]" * (safe_input.MAX_DEPTH + 1), "model",
             field="model", words="deeper")
    _refused(safe_input.load_json, "[" * 100_000 + "]" * 100_000, "model", field="model", words="deeper")
    assert safe_input.parse_json_line("[" * 100_000) is None


def test_script_lines_and_expansion_are_bounded() -> None:
    parse_launch_script("A=" + "x" * 1000 + "\n" + ENTRY)
    _refused(parse_launch_script, "A=" + "x" * (safe_input.MAX_SCRIPT_LINE + 1) + "\n" + ENTRY, field="script",
             words="longer than")
    doubling = "A0=xxxxxxxxxxxxxxxx\n" + "".join(f"A{i}=$A{i - 1}$A{i - 1}$A{i - 1}$A{i - 1}\n" for i in range(1, 30))
    _refused(parse_launch_script, doubling + ENTRY, field="script", words="expanded")
    wide = "A=" + "x" * 60_000 + "\n" + "".join(f"B{i}=$A\n" for i in range(40))  # each line inside, all beyond
    _refused(parse_launch_script, wide + ENTRY, field="script", words="come to more than")


def test_script_arithmetic_stays_64_bit() -> None:
    script = "A=999999999999\n" + "A=$((A*A*A*A))\n" * 5 + "python3 -m verl.trainer.main_ppo data.train_batch_size=$((A))\n"
    found = parse_launch_script(script)
    assert "data.train_batch_size=$((A))" in found.args  # left as written: no number of 200 digits


def test_output_file_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "out.sh"
    os.mkfifo(fifo)
    _refused(safe_input.output_file, fifo, "write", "a new file", field="write", words="not a regular file")
    _refused(safe_input.output_file, tmp_path, "write", "a new file", field="write", words="directory")
    assert safe_input.output_file(tmp_path / "new.sh", "write", "a new file") == tmp_path / "new.sh"


@pytest.mark.parametrize("args,field", [
    (["check", "--gpus", "4", "--config", "@deep"], "--config"),
    (["enumerate", "--scenario", "@laughs"], "scenario"),
    (["check", "--gpus", "4", "--gpu", "h100", "--model", "/dev/zero", "--", "data.train_batch_size=64"], "model"),
    (["sweep", "--summary", "/dev/urandom"], "summary"),
    (["catalog", "gpus", "--extra", "@deep"], "gpu-file"),
    (["enumerate", "--show", "1" + "0" * 80], "show"),
    (["recommend", "--time-limit", "nan"], "time-limit"),
])
def test_cli_refusals_exit_2_naming_the_option(tmp_path: Path, args: list[str], field: str) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    laughs = tmp_path / "laughs.yaml"
    laughs.write_text("l0: &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)))
    files = {"@deep": str(deep), "@laughs": str(laughs)}
    result = run(*[files.get(a, a) for a in args])
    assert result.returncode == 2 and f"error: {field}:" in result.stderr and "Fix:" in result.stderr, result.stderr


def test_the_packages_own_yaml_files_read_as_the_guarded_loader_reads_them():
    # the catalog's cards and GPUs and the cost model's tables are parsed by libyaml (load_package_yaml): the same values
    from pathlib import Path

    from rlbatch_solver.catalog.models import cards_dir
    from rlbatch_solver.safe_input import load_package_yaml, load_yaml

    package = Path(__file__).resolve().parents[1] / "rlbatch_solver"
    files = sorted({*package.rglob("*.yaml"), *Path(cards_dir()).glob("*.yaml")})
    assert len(files) > 30
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert load_package_yaml(text) == load_yaml(text, "file"), f
