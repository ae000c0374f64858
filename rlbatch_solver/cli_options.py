"""The options several ``rlbatch`` commands share, each declared once as an ``Annotated`` alias, and the
choice options whose vocabulary ``--help`` lists."""

from __future__ import annotations

from typing import Annotated, Callable, Iterable, List, Optional

import typer

from .errors import InputError, check_gpu_count, did_you_mean, shown
from .frameworks.registry import FRAMEWORKS
from .scenario import OBJECTIVES, PLACEMENTS


def choice(option: str, vocabulary: Iterable[str]) -> dict[str, Callable[[str], str] | str]:
    """``typer.Option`` arguments for a word from ``vocabulary``: listed in ``--help``; any other word is an input
    error (``error: objective: ...``, exit 2, the command line's one handler) naming the option, with the nearest
    words and the list to pick from."""
    words = tuple(vocabulary)

    def parse(value: str | None) -> str | None:
        if value is not None and value not in words:
            raise InputError(option.lstrip("-"), f"'{value}' is none of {', '.join(words)}.{did_you_mean(value, words)}",
                             f"pass {option} {words[0]} (or another of those).")
        return value

    # a callback, not a parser: click turns a parser's ValueError into its own usage box
    return {"callback": parse, "metavar": f"<{'|'.join(words)}>"}


def _number(x: float) -> str:
    """A bound as people write it: 1,048,576 (not 1.04858e+06), 0.5."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,g}"


def bounded(option: str, low: float, high: float, example: str, *, above_low: bool = False) -> dict[str, Callable]:
    """``typer.Option`` arguments for a number between ``low`` and ``high`` (``above_low``: ``low`` itself refused);
    any other number (NaN and infinities too) is an input error naming the option, exit 2. The bounds keep every
    run short and small: a time limit of a year, a table of 10**80 rows, a million workers are not asked for."""

    def parse(value: float | None) -> float | None:
        if value is None:
            return None
        inside = (value > low if above_low else value >= low) and value <= high  # False for NaN
        if not inside:
            lowest = f"more than {_number(low)}" if above_low else f"at least {_number(low)}"
            raise InputError(option.lstrip("-"), f"{shown(value)} is out of range ({lowest}, at most {_number(high)}).",
                             f"pass {option} {example}.")
        return value

    return {"callback": parse}


MAX_TIME_LIMIT_S = 3600.0  # an hour: the solves answer in seconds; a longer limit is a typo
MAX_LIMIT = 100_000  # configs enumerate keeps
MAX_SHOW = 1_000  # rows of enumerate's table (--json prints all)
MAX_TOP = 100  # configs recommend ranks
MAX_WORKERS = 1_024  # sweep processes or Ray tasks at once

_FRAMEWORK_HELP = (f"{', '.join(FRAMEWORKS)}. Default: verl, or the one a launch script names "
                   "(explain: every framework's messages).")
_CALIBRATION_HELP = ("A calibration profile (rlbatch calibrate); default: the per-user profile if there is one. "
                     "Applied where its GPU type is the one asked about.")
_MEAN_PROMPT_HELP = ("Time and tokens/s: your data's mean prompt length in tokens (verl logs prompt_length/mean); "
                     "default: the calibration profile's, else the length profile's data mean, else 0.28 of "
                     "max_prompt_length (docs/cost-model.md).")
_MEAN_RESPONSE_HELP = ("Time and tokens/s: your data's mean response length in tokens (verl logs response_length/mean); "
                       "default: the calibration profile's, else a share of max_response_length (docs/cost-model.md).")
_LONGEST_RESPONSE_HELP = ("Time: the longest response your data reaches in tokens (verl logs response_length/max), "
                          "where it stays under max_response_length: a synchronous rollout waits for it; default: "
                          "the length profile's longest, up to the limit.")
_RESPONSE_PROFILE_HELP = ("Time, where no mean is given: how long your model answers. default (0.35 of the limit), "
                          "reasoning (0.55 of an 8K limit, less of a longer one), gsm8k (~270 tokens), math (~1,500 tokens), limit (every "
                          "response at the limit); unset: chosen by the model's family and the config's training "
                          "data (docs/cost-model.md section 4).")
_HOST_MEM_HELP = ("RAM of one node in GiB: with --gpu and --model, checks the host memory (CPU offload, sleeping "
                  "engines' weights, model loading); unset, the standard cloud node's for the GPU type, said so.")
_LENGTH_FRACTION_HELP = ("Memory: the longest micro batch's length as a share of max prompt+response "
                         "(default 1.0, the worst case).")

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Framework = Annotated[Optional[str], typer.Option("--framework", "-f", help=_FRAMEWORK_HELP)]


def _gpu_count(value: int | None) -> int | None:
    """--gpus judged as it is read, before anything the command does with the rest (check_gpu_count): explain of a
    message alone never uses it, and said nothing of a 0."""
    check_gpu_count(value)
    return value


def gpus_option(help: str) -> typer.models.OptionInfo:
    """The --gpus option of a command, with ``help``; a count below 1 or beyond any cluster is an input error."""
    return typer.Option("--gpus", help=help, callback=_gpu_count)


Gpus = Annotated[Optional[int], gpus_option("Total GPUs (or give them in the config).")]
Model = Annotated[Optional[str], typer.Option("--model", help="Model name or path to a HF config.json.")]
Gpu = Annotated[Optional[str], typer.Option("--gpu", help="GPU type, e.g. rtx4090, a100-80gb, h100: with --model, "
                                            "memory per phase.")]
Config = Annotated[Optional[str], typer.Option("--config", help="A YAML config file (instead of, or before, "
                                               "overrides).")]
GpuFile = Annotated[Optional[str], typer.Option("--gpu-file", help="A YAML file with more GPU types.")]
LengthFraction = Annotated[Optional[float], typer.Option("--length-fraction", help=_LENGTH_FRACTION_HELP)]
Calibration = Annotated[Optional[str], typer.Option("--calibration", help=_CALIBRATION_HELP)]
MeanPromptLen = Annotated[Optional[float], typer.Option("--mean-prompt-len", help=_MEAN_PROMPT_HELP)]
MeanResponseLen = Annotated[Optional[float], typer.Option("--mean-response-len", help=_MEAN_RESPONSE_HELP)]
LongestResponseLen = Annotated[Optional[float], typer.Option("--longest-response-len", help=_LONGEST_RESPONSE_HELP)]
ResponseProfile = Annotated[Optional[str], typer.Option("--response-profile", help=_RESPONSE_PROFILE_HELP)]
HostMem = Annotated[Optional[float], typer.Option("--host-mem", help=_HOST_MEM_HELP)]
TimeLimit = Annotated[float, typer.Option("--time-limit", help="Seconds for the whole command (it says whether "
                                          "its answer is proven within them).",
                                          **bounded("--time-limit", 0, MAX_TIME_LIMIT_S, "10", above_low=True))]
Overrides = Annotated[Optional[List[str]], typer.Argument(help="The framework's own arguments, pasted after --, "
                                                          "or a launch script (run.sh).")]

# the scenario of enumerate and recommend
ScenarioFile = Annotated[Optional[str], typer.Option("--scenario", help="Scenario YAML file (flags override it).")]
Nnodes = Annotated[Optional[int], typer.Option("--nnodes", help="Nodes the GPUs are spread over (default 1; more "
                                              "than 8 GPUs on one: servers of 8).")]
# the algorithms are the framework's own (any case, with aliases): --framework's list, checked by it
Algo = Annotated[Optional[str], typer.Option("--algo", help="The framework's algorithm, e.g. ppo, grpo, dapo, gspo, "
                                             "adpo, rloo, reinforce++ (a bad one: the framework's list).")]
N = Annotated[Optional[int], typer.Option("--n", help="Responses per prompt (rollout.n).")]
PromptLen = Annotated[Optional[int], typer.Option("--prompt-len", help="The longest prompt in tokens "
                                                 "(max_prompt_length); memory is priced at it.")]
ResponseLen = Annotated[Optional[int], typer.Option("--response-len", help="The longest response in tokens "
                                                   "(max_response_length); memory is priced at it.")]
Set = Annotated[Optional[List[str]], typer.Option("--set", help="Fix a native key: --set data.train_batch_size=64 "
                                                  "(repeatable).")]
Search = Annotated[Optional[List[str]], typer.Option("--search", help="Search a native key: --search key=1,2,4 "
                                                     "(repeatable).")]
Objective = Annotated[Optional[str], typer.Option("--objective", help="What the best config is best at: time "
                                                  "(time per sample, the default), memory-headroom (the most free "
                                                  "memory in its tightest phase, then the fastest) or gpus (the "
                                                  "fewest GPUs, then the fastest).",
                                                  **choice("--objective", OBJECTIVES))]
Placement = Annotated[Optional[str], typer.Option(
    "--placement", help="colocate: rollout on the training GPUs, taking turns; split: rollout on a pool of its "
    "own, pipelined with training (verl separate_async, OpenRLHF --train.async_enable); auto: both, compared "
    "(docs/async.md). Default: the framework's synchronous placements.", **choice("--placement", PLACEMENTS))]
