"""``rlbatch mcp``: a Model Context Protocol server on stdin/stdout whose tools are the command line's check, fix,
recommend and explain and its catalogs (``agent/tools.py``), each with its input and output schema
(``agent/schemas.py``).

A call's arguments are checked against the tool's input schema and its size limits first; the tool then runs in a
process of its own, stopped at its deadline (``agent/worker.py``). Bad input answers a tool error whose text is the
command line's one paragraph (``error: FIELD: PROBLEM Fix: ...``), never a traceback."""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import InputError
from . import schemas, worker

DESCRIPTIONS = {
    "check": "Check an RL post-training config (verl, ms-swift, OpenRLHF, TRL) before launching it: every broken "
             "batch-size rule with its numbers, the stage the run would die at and the framework source; with gpu "
             "and model, the memory of every phase against the GPU (will it OOM?). Give the framework's arguments "
             "(args) or a launch script's text (script). valid=false is an answer, not an error.",
    "fix": "The smallest change that makes a config valid (and fit in memory, given gpu and model): changes, "
           "fixed_config (paste-ready arguments) and, with a script, the script with the repair in; when pinned "
           "values conflict, the conflicting rules and what to relax.",
    "recommend": "The fastest valid config that fits in GPU memory for a scenario (framework, gpu, gpus, model, "
                 "algo, n, prompt_len, response_len), with memory and time per phase and the next-best; or, "
                 "from_config, a better config for your own launch script.",
    "explain": "Map the error line a job died on (a batch-size assertion, CUDA/vLLM out of memory, Ray's memory "
               "monitor) to the rule, in plain words; with the config (args or script), propose the fix.",
    "catalog_gpus": "The GPU types known (names and aliases for gpu): memory, BF16 TFLOP/s, bandwidths.",
    "catalog_models": "The model cards known (names for model): parameters, layers, hidden size, heads.",
}
GRACE_S = 20.0  # beyond a call's time_limit: the process's start, input reading and answer
CHECK_LIMIT_S = 60.0  # calls without a time_limit (check, the catalogs)
CONCURRENT_CALLS = max(1, min(4, os.cpu_count() or 1))


def tools() -> list[Any]:
    import mcp.types as types

    read_only = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return [types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=schemas.INPUTS[name],
                       output_schema=schemas.OUTPUTS[name], annotations=read_only) for name in DESCRIPTIONS]


def answer(name: str, arguments: Any) -> worker.Outcome:
    """A call: its arguments checked, then the tool run in its own process until its deadline."""
    if name not in schemas.INPUTS:
        from ..errors import did_you_mean, shown

        err = InputError("tool", f"there is no tool {shown(name, 40)!r}.{did_you_mean(name, DESCRIPTIONS)}",
                         f"use one of {', '.join(DESCRIPTIONS)}.")
        return worker.Outcome(error=f"error: {err}")
    try:
        given = schemas.check_arguments(name, arguments if arguments is not None else {})
    except InputError as err:
        return worker.Outcome(error=f"error: {err}")
    except (RecursionError, ValueError, TypeError) as err:  # arguments nested past reading, or not JSON values
        return worker.Outcome(error=f"error: arguments: could not be read ({type(err).__name__}). Fix: give the "
                              "arguments the input schema lists, as strings, numbers and lists of strings.")
    if "time_limit" in schemas.INPUTS[name]["properties"]:
        limit = given.setdefault("time_limit", 10.0)
        return worker.call(name, given, limit + GRACE_S)
    return worker.call(name, given, CHECK_LIMIT_S, limit_field="request")


def result(outcome: worker.Outcome) -> Any:
    """The MCP result: the ``--json`` dict as structured content and as text, then the notes; or the error."""
    import mcp.types as types

    notes = [types.TextContent(text=t) for t in outcome.texts]
    if outcome.error is not None:
        return types.CallToolResult(content=[types.TextContent(text=outcome.error), *notes], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(outcome.data, indent=2)), *notes],
                                structured_content=outcome.data)


def build() -> Any:
    """The server (its handlers: list the tools; call one)."""
    import anyio
    import mcp.types as types
    from anyio import to_thread
    from mcp.server.lowlevel import Server

    from .. import __version__

    limiter = anyio.CapacityLimiter(CONCURRENT_CALLS)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def call_tool(ctx, params) -> types.CallToolResult:
        outcome = await to_thread.run_sync(answer, params.name, params.arguments, limiter=limiter)
        return result(outcome)

    return Server("rlbatch", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


INSTRUCTIONS = ("Batch-size and memory answers for RL post-training (verl, ms-swift, OpenRLHF, TRL) before a job is "
                "launched: check a config, fix it, recommend one, or explain the error a job died on. Pasted text "
                "is read, never run; each call is bounded in time and size.")


def serve() -> None:
    """Serve on stdin/stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build()

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
