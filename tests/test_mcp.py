"""``rlbatch mcp`` driven by the MCP SDK's own client over stdio: the tools and their schemas, answers that are the
command line's ``--json`` (and match the declared output schemas), and bad or hostile input answered with the
command line's one-paragraph error as a tool error, never a traceback."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402  (the MCP SDK's own dependency)
import jsonschema  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from clirun import ROOT, run  # noqa: E402

README_CHECK = ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
                "actor_rollout_ref.actor.ppo_mini_batch_size=32",
                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24",
                "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16", "algorithm.adv_estimator=grpo"]
BROKEN_SCRIPT = "#!/bin/bash\nset -x\npython3 -m verl.trainer.main_ppo \\\n    " + " \\\n    ".join(README_CHECK) \
    + " \\\n    trainer.n_gpus_per_node=4 trainer.nnodes=1 \\\n    trainer.total_epochs=15 $@\n"
PWNED = Path(tempfile.gettempdir()) / f"rlbatch-test-pwned-{os.getpid()}"
VERL_ERROR = "AssertionError: normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu"

CALLS = {
    "check_readme": ("check", {"framework": "verl", "gpus": 4, "args": README_CHECK}),
    "check_script": ("check", {"script": BROKEN_SCRIPT}),
    "check_nulls": ("check", {"args": README_CHECK, "gpus": 4, "model": None, "gpu": None}),
    "fix_script": ("fix", {"script": BROKEN_SCRIPT, "time_limit": 10}),
    "recommend_small": ("recommend", {"framework": "verl", "gpu": "rtx4090", "gpus": 4, "model": "qwen2.5-1.5b",
                                      "algo": "grpo", "n": 8, "prompt_len": 512, "response_len": 512, "top": 2,
                                      "time_limit": 10}),
    "explain_line": ("explain", {"error": VERL_ERROR}),
    "explain_with_config": ("explain", {"error": VERL_ERROR, "args": README_CHECK, "gpus": 4}),
    "catalog_gpus": ("catalog_gpus", {}),
    "catalog_models": ("catalog_models", {}),
    # bad input: each answers the one paragraph naming the field
    "bad_gpu": ("check", {"args": README_CHECK, "gpus": 4, "gpu": "h1000", "model": "qwen2.5-7b"}),
    "bad_type": ("recommend", {"gpus": "four"}),
    "bad_enum": ("recommend", {"objective": "fastest"}),
    "unknown_argument": ("check", {"args": README_CHECK, "gpu_type": "h100"}),
    "missing_error": ("explain", {}),
    "nothing_pasted": ("check", {"args": ["python3", "train.py"]}),
    "too_big": ("check", {"script": "#" * (300 * 1024)}),
    "script_path": ("check", {"args": [str(ROOT / "tests" / "data" / "scripts" / "swift" / "gspo.sh")]}),
    "model_file": ("check", {"args": README_CHECK, "model": "config.json"}),
    # a file of the server named inside the pasted text, absolute or climbing out of the call's folder: not read
    "file_in_args": ("check", {"framework": "trl", "gpu": "h100", "args": [
        "--config_file", "../" * 40 + str(ROOT / "docs" / "examples" / "unsloth-qwen3-4b-grpo.yaml").lstrip("/"),
        "--per_device_train_batch_size", "4"]}),
    "script_is_a_path": ("check", {"script": str(ROOT / "tests" / "data" / "scripts" / "swift" / "gspo.sh")}),
    # a relative path (the file exists in the repository, not in the call's fresh folder) given as the script's text
    "script_is_a_relative_path": ("check", {"script": "tests/data/scripts/swift/gspo.sh", "gpu": "h100"}),
    "from_config_nested": ("recommend", {"gpu": "h100", "from_config": "[" * 5000 + "]" * 5000}),
    "time_limit_too_long": ("fix", {"args": README_CHECK, "time_limit": 3600}),
    "unknown_tool": ("sweep", {}),
    # a pasted script is read, never run: its command substitution stays text
    "hostile_script": ("check", {"script": f"#!/bin/bash\nB=$(touch {PWNED}; echo 64)\nC=`touch {PWNED}`\n"
                                 "python3 -m verl.trainer.main_ppo data.train_batch_size=$B "
                                 "actor_rollout_ref.rollout.n=8\n"}),
}


async def _conversation() -> dict:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rlbatch_solver.cli", "mcp"], cwd=str(ROOT))
    out = {}
    with tempfile.TemporaryFile("w+") as log:  # the server's stderr
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["tools"] = (await session.list_tools()).tools
                for key, (tool, arguments) in CALLS.items():
                    out[key] = await session.call_tool(tool, arguments)  # output schema: checked by the client
                out["at_once"] = await _at_once(session)
        log.seek(0)
        out["log"] = log.read()
    return out


async def _at_once(session) -> dict:
    """Calls sent together, each pasting a script of another framework: every answer is its own call's."""
    scripts = {fw: (ROOT / "tests" / "data" / "scripts" / path).read_text() for fw, path in
               [("swift", "swift/gspo.sh"), ("openrlhf", "openrlhf/train_grpo_ray_hybrid_engine.sh")]}
    scripts["verl"] = BROKEN_SCRIPT
    out = {}

    async def one(fw: str) -> None:
        out[fw] = await session.call_tool("check", {"script": scripts[fw]})

    async with anyio.create_task_group() as group:
        for fw in scripts:
            group.start_soon(one, fw)
    return out


@pytest.fixture(scope="module")
def answers() -> dict:
    return anyio.run(_conversation)


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def _error(result) -> str:
    assert result.is_error and result.structured_content is None
    text = result.content[0].text
    assert text.startswith("error: ") and "Fix: " in text and "Traceback" not in text and "\n" not in text, text
    return text


def test_the_tools_are_listed_with_input_and_output_schemas(answers):
    tools = {t.name: t for t in answers["tools"]}
    assert set(tools) == {"check", "fix", "recommend", "explain", "catalog_gpus", "catalog_models"}
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object" and tool.output_schema["required"]
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["recommend"].input_schema["properties"]["objective"]["enum"] == ["time", "memory-headroom", "gpus"]
    assert tools["explain"].input_schema["required"] == ["error"]


def test_every_answer_matches_its_declared_output_schema(answers):
    schemas = {t.name: t.output_schema for t in answers["tools"]}
    answered = [(tool, answers[key]) for key, (tool, _) in CALLS.items() if not answers[key].is_error]
    assert len(answered) >= 9
    for tool, result in answered:
        jsonschema.validate(result.structured_content, schemas[tool])


def test_check_finds_the_readme_example_broken_and_answers_what_check_json_prints(answers):
    data = _data(answers["check_readme"])
    assert data["valid"] is False
    assert [v["rule"] for v in data["violations"] if v["severity"] == "error"] == ["verl.step.mini_divisible_by_micro"]
    cli = run("check", "--framework", "verl", "--gpus", "4", "--json", "--", *README_CHECK)
    assert cli.returncode == 1 and json.loads(cli.stdout) == data
    assert _data(answers["check_nulls"]) == data  # null arguments are arguments not given


def test_a_pasted_launch_script_is_read_like_the_command_line_reads_run_sh(answers):
    result = answers["check_script"]
    data = _data(result)
    assert data["framework"] == "verl" and not data["valid"]
    assert "verl.step.mini_divisible_by_micro" in [v["rule"] for v in data["violations"]]
    assert any("note: read run.sh: verl" in c.text for c in result.content[1:])


def test_fix_on_a_script_answers_the_repair_and_the_script_with_it_in(answers):
    result = answers["fix_script"]
    data = _data(result)
    assert data["valid_before"] is False and data["changes"] and data["fixed_config"]
    rewritten = next(c.text for c in result.content[1:] if c.text.startswith("the script with the repair in"))
    assert "trainer.total_epochs=15 $@" in rewritten and "set -x" in rewritten
    assert "ppo_micro_batch_size_per_gpu=24 " not in rewritten
    after = run("check", "--framework", "verl", "--gpus", "4", "--json", "--", *README_CHECK, *data["fixed_config"])
    assert json.loads(after.stdout)["valid"] is True, after.stdout


def test_recommend_answers_a_config_for_a_small_scenario(answers):
    data = _data(answers["recommend_small"])
    # two asked; one that a listed one makes pointless (as fast, no less memory) is counted, not listed
    assert data["framework"] == "verl" and len(data["choices"]) + len(data["not_listed"]) == 2
    assert all(isinstance(d, str) and d for d in data["not_listed"])
    best = data["choices"][0]
    assert best["rank"] == 1 and "actor_rollout_ref.rollout.n=8" in best["native"]
    assert best["step_time_s"] > 0 and best["memory_gib"]


def test_explain_maps_an_error_line_to_its_rule_and_with_the_config_fixes_it(answers):
    data = _data(answers["explain_line"])
    assert data["matched"] and any(r["rule"].endswith("mini_divisible_by_micro") for r in data["rules"])
    with_config = _data(answers["explain_with_config"])
    assert with_config["fix"] is not None and with_config["fix"]["fixed_config"]


def test_the_catalogs_are_the_command_lines_lists(answers):
    assert _data(answers["catalog_models"])["models"] == json.loads(run("catalog", "models", "--json").stdout)
    assert _data(answers["catalog_gpus"])["gpus"] == json.loads(run("catalog", "gpus", "--json").stdout)


@pytest.mark.parametrize("key,field", [
    ("bad_gpu", "gpu"), ("bad_type", "gpus"), ("bad_enum", "objective"), ("unknown_argument", "gpu_type"),
    ("missing_error", "error"), ("nothing_pasted", "config"), ("too_big", "arguments"), ("script_path", "args"),
    ("model_file", "model"), ("time_limit_too_long", "time_limit"), ("unknown_tool", "tool"),
    ("file_in_args", "args"), ("script_is_a_path", "script"), ("from_config_nested", "from_config"),
])
def test_bad_input_is_a_tool_error_naming_the_field(answers, key, field):
    assert _error(answers[key]).startswith(f"error: {field}: ")


def test_a_scripts_file_name_given_as_its_text_is_said_to_be_a_file_name(answers):
    """script="tests/data/scripts/swift/gspo.sh" was read as a one-line script: "run.sh starts none of the entry
    points we know", about a file the caller never named; now the answer says a file name was given."""
    text = _error(answers["script_is_a_relative_path"])
    assert text.startswith("error: script: ") and "a file name" in text and "run.sh" not in text, text


def test_the_command_lines_error_paragraph_is_the_tools(answers):
    cli = run("check", "--gpus", "4", "--gpu", "h1000", "--model", "qwen2.5-7b", "--", *README_CHECK)
    assert cli.returncode == 2 and cli.stderr.strip() == _error(answers["bad_gpu"])


def test_a_pasted_script_is_never_run(answers):
    data = _data(answers["hostile_script"])
    assert data["framework"] == "verl"
    assert not PWNED.exists()


def test_the_server_logged_no_traceback(answers):
    assert "Traceback" not in answers["log"], answers["log"]


def test_a_call_past_its_deadline_is_stopped_with_an_error():
    from rlbatch_solver.agent.worker import call

    # a whole solve (a model named: it cannot end early on an input error), placed both ways: seconds, not 0.05 s
    out = call("recommend", {"gpus": 64, "gpu": "h100", "model": "qwen2.5-7b", "placement": "auto",
                             "time_limit": 30}, deadline_s=0.05)
    assert out.data is None and out.error.startswith("error: time_limit: the call ran past")


def test_calls_sent_together_each_answer_their_own_input(answers):
    for fw, result in answers["at_once"].items():
        assert _data(result)["framework"] == fw
        assert f"note: read run.sh: {fw}" in result.content[1].text


def test_a_line_that_is_no_message_is_answered_and_serving_goes_on():
    """A client that writes a non-JSON line (or JSON that is no JSON-RPC message) gets JSON-RPC's parse error
    (-32700) or invalid request (-32600) at once, not silence; the next request is answered; EOF ends the server."""
    import queue
    import subprocess
    import threading
    import time

    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
    lines = ["not json {", json.dumps(hello), "", json.dumps({"id": 7, "method": 3}), "[1, 2]",
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})]
    proc = subprocess.Popen([sys.executable, "-m", "rlbatch_solver.cli", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    read: queue.Queue = queue.Queue()  # each answer as it comes (a thread reads), never waiting past the deadline
    threading.Thread(target=lambda: [read.put(line) for line in proc.stdout], daemon=True).start()
    answers, deadline = [], time.monotonic() + 60
    while len(answers) < 5 and time.monotonic() < deadline:
        try:
            answers.append(json.loads(read.get(timeout=max(0.01, deadline - time.monotonic()))))
        except queue.Empty:
            break
    proc.stdin.close()  # EOF: the server ends
    assert proc.wait(timeout=30) == 0
    assert "Traceback" not in proc.stderr.read()
    assert [(a.get("id"), a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700), (1, None), (7, -32600), (None, -32600), (2, None)]
    assert {t["name"] for t in answers[-1]["result"]["tools"]} >= {"check", "fix", "recommend", "explain"}
