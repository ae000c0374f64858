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
            await server.run(Answered(read, write), write, server.create_initialization_options())

    anyio.run(run)


class Answered:
    """The transport's read stream, less the lines that are no JSON-RPC message: each is answered on the spot with
    JSON-RPC 2.0's parse error (-32700, not JSON) or invalid request (-32600, JSON but no request), the request's
    id when it names one, and serving goes on; a blank line is skipped. (The MCP SDK's stdio transport hands such
    a line to the server as an exception, which its dispatcher only logs, so the client waited for ever.)"""

    def __init__(self, read: Any, write: Any) -> None:
        self.read, self.write = read, write

    @property
    def last_context(self) -> Any:  # the sender's context of the last message, as the SDK's own stream has it
        return getattr(self.read, "last_context", None)

    def __aiter__(self) -> "Answered":
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:  # the client closed stdin: serving ends
            raise StopAsyncIteration from None

    async def receive(self) -> Any:
        while True:
            item = await self.read.receive()
            if not isinstance(item, Exception):
                return item
            reply = refusal(item)
            if reply is not None:
                await self.write.send(reply)

    async def aclose(self) -> None:
        await self.read.aclose()

    async def __aenter__(self) -> "Answered":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0, section 5.1


def refusal(problem: Exception) -> Any:
    """The JSON-RPC error answering a line the transport could not read as a message (None for a blank line)."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    errors = problem.errors() if hasattr(problem, "errors") else []
    line = errors[0].get("input") if errors else None
    if errors and errors[0].get("type") == "json_invalid":
        if isinstance(line, str) and not line.strip():
            return None
        code, message, request_id = PARSE_ERROR, "Parse error: the line is not JSON", None
    else:
        code, message = INVALID_REQUEST, "Invalid Request: the JSON is not a JSON-RPC 2.0 message"
        request_id = line.get("id") if isinstance(line, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            request_id = None
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))
