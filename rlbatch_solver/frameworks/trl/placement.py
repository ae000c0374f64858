"""TRL's layouts for ``recommend --placement`` and the server command a server-mode answer needs (docs/async.md).

Colocated: vLLM inside the training processes (``--vllm_mode colocate``). Server: ``trl vllm-serve`` on ``k`` GPUs of
its own (``--tensor-parallel-size`` x ``--data-parallel-size`` = k), the trainer on the other ``total - k``
(accelerate's ``--num_processes``). GRPOTrainer's server mode generates in turn with training: the main process
gathers every rank's prompts, asks the server and broadcasts the completions while every rank waits
(trl/generation/vllm_generation.py ``VLLMGeneration.generate``), and ``steps_per_generation`` / ``num_iterations``
only reuse one generation over several optimizer steps (trl/trainer/grpo_trainer.py ``GRPOTrainer._prepare_inputs``:
``generate_every``), they never overlap it with training. So a server layout's step is the server's generation plus
the trainer's phases, and each ``k`` is its own solve: the table of layouts is the answer to "how many GPUs for the
server?" (trl #4766).

TRL 1.16's asynchronous trainer (``trl.experimental.async_grpo.AsyncGRPOTrainer``: ``max_staleness``,
``max_inflight_tasks``, ``weight_sync_steps`` in ``AsyncGRPOConfig``) does overlap them, but it is a Python API with no
launch script and its own batching (token-budget packing), which we do not model: its layouts are not offered.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

from ...rules.base import Value

# tensor-parallel sizes a `trl vllm-serve` layout tries (a power of two within a node; vLLM also needs the heads
# divisible by it: the rule trl.vllm.heads_divisible_by_tp); data parallelism takes the rest of the server's GPUs
SERVER_TP = (1, 2, 4, 8)
# trl/scripts/vllm_serve.py ScriptArguments.gpu_memory_utilization: the server's own share (GRPOConfig's
# vllm_gpu_memory_utilization "only applies when vllm_mode is set to colocate", trl/trainer/grpo_config.py)
SERVER_GMU_PERMILLE = 900
# above this many server layouts, only a quarter, a half and three quarters of the GPUs to the trainer are solved
# first (commands/placement.py then refines around the best); at or below it every split is solved
ALL_SPLITS_UP_TO = 8


class ServerSplit(NamedTuple):
    """One server layout."""

    server: int  # the server's GPUs
    world: int  # the trainer's processes (accelerate --num_processes)
    machines: int  # the trainer's machines (accelerate --num_machines)


def server_splits(total: int, nnodes: int, per_node: int) -> list[ServerSplit]:
    """The server layouts of ``total`` GPUs, trainer processes ascending. One machine: the server takes any 1..total-1
    GPUs, the trainer the rest (one process per GPU). Several: the server takes one whole machine and the trainer the
    others (accelerate starts the same number of processes on every machine, so a server sharing a machine with
    trainer ranks would leave that machine's other GPUs idle; a server over several machines needs a Ray cluster,
    trl/scripts/vllm_serve.py ``distributed_executor_backend``)."""
    if nnodes <= 1:
        return [ServerSplit(total - w, w, 1) for w in range(1, total)]
    return [ServerSplit(per_node, total - per_node, nnodes - 1)]


def server_sizes(server: int, per_node: int) -> tuple[list[int], list[int]]:
    """The tensor- and data-parallel sizes whose product can be ``server`` GPUs (TP within a machine)."""
    tps = [t for t in SERVER_TP if server % t == 0 and t <= per_node]
    return tps, sorted({server // t for t in tps})


def is_coarse(index: int, count: int) -> bool:
    """Whether the ``index``-th of ``count`` server layouts (trainer GPUs ascending) is solved first: all of them when
    there are few, else those nearest a quarter, a half and three quarters of the list."""
    if count <= ALL_SPLITS_UP_TO:
        return True
    return index in {min(count - 1, round(count * f)) for f in (0.25, 0.5, 0.75)}


def server_gpus(values: Mapping[str, Value]) -> int:
    return int(values.get("server_tp") or 1) * int(values.get("server_dp") or 1)


def trainer_world(values: Mapping[str, Value]) -> int:
    return int(values.get("gpus_per_node") or 1) * int(values.get("nnodes") or 1)


def is_server(values: Mapping[str, Value]) -> bool:
    return bool(values.get("use_vllm")) and bool(values.get("vllm_server"))


# the trainer's --vllm_server_host when the server has a machine of its own (GRPOConfig.vllm_server_host, default
# "0.0.0.0": this machine): a placeholder for the server machine's address, as ms-swift's answers write ROLLOUT_HOST
SERVER_HOST = "SERVER_HOST"


def remote_server(native: Sequence[str]) -> bool:
    """Whether a server-mode answer's trainer talks to a server on another machine (it names the server's host)."""
    return any(a.split(" ", 1)[0] in ("--vllm_server_host", "--vllm_server_base_url") for a in native)


def device_lists(values: Mapping[str, Value], remote: bool = False) -> tuple[str, str]:
    """CUDA_VISIBLE_DEVICES of the trainer and of the server: on a machine that holds both, the trainer's ranks on the
    first GPUs and the server on the next ones (TRL's docs: "the vLLM server and the trainer must run on separate CUDA
    devices"); a server on a machine of its own (``remote``) on that machine's first k."""
    world, server = trainer_world(values), server_gpus(values)
    if remote:
        return ",".join(map(str, range(int(values.get("gpus_per_node") or 1)))), ",".join(map(str, range(server)))
    return ",".join(map(str, range(world))), ",".join(map(str, range(world, world + server)))


def server_command(values: Mapping[str, Value], model: str, remote: bool = False,
                   max_model_len: int | None = None) -> list[str]:
    """The ``trl vllm-serve`` command of a server-mode answer: its GPUs, the model, TP and DP (trl/scripts/vllm_serve.py
    ScriptArguments; TRL 1.16 runs vLLM's own ``vllm serve`` with them and warns that the command is deprecated), and
    ``max_model_len`` where given (ScriptArguments.max_model_len, passed on as vLLM's --max-model-len): the longest
    prompt + completion the answer is priced at, where the trainer has no flag for the prompt's length."""
    _, devices = device_lists(values, remote)
    return [f"CUDA_VISIBLE_DEVICES={devices} trl vllm-serve", f"--model {model}",
            f"--tensor-parallel-size {int(values.get('server_tp') or 1)}",
            f"--data-parallel-size {int(values.get('server_dp') or 1)}",
            *([f"--max-model-len {max_model_len}"] if max_model_len else [])]


def read_server_line(tokens: list[str], scope: Mapping[str, Any]) -> tuple[dict[str, int], int | None]:
    """A ``trl vllm-serve`` line of a launch script (its words after ``vllm-serve``) -> its sizes (and max_model_len)
    as our keys and the
    GPUs its ``CUDA_VISIBLE_DEVICES`` shows (None when the line does not say). ``--tensor-parallel-size`` and
    ``--tensor_parallel_size`` (the dataclass field; HfArgumentParser takes both), ``--flag value`` and ``--flag=value``."""
    from ..overrides import flag_int, parse_scalar

    sizes: dict[str, int] = {}
    names = {"tensor_parallel_size": "server.tensor_parallel_size", "data_parallel_size": "server.data_parallel_size",
             "max_model_len": "server.max_model_len"}
    for i, tok in enumerate(tokens):
        key, eq, value = tok.partition("=")
        key = key.lstrip("-").replace("-", "_")
        if key in names:
            if not eq:
                value = tokens[i + 1] if i + 1 < len(tokens) else ""
            sizes[names[key]] = flag_int(key, parse_scalar(value))
    devices = scope.get("CUDA_VISIBLE_DEVICES")
    gpus = len([d for d in str(devices).split(",") if d.strip()]) if devices else None
    return sizes, gpus
