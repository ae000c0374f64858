"""The scenario: what the user asks about (hardware, model, algorithm, lengths,
what is fixed and what we may choose, and what to optimise).

A scenario comes from CLI flags or a YAML file with the same field names::

    framework: verl
    gpu: rtx4090
    gpus: 4            # total GPUs (or gpus_per_node + nnodes); above 8 with neither, nodes of 8
    model: qwen2.5-1.5b
    algorithm: adpo
    n: 8
    prompt_length: 880
    response_length: 1280
    fixed:  {actor_rollout_ref.rollout.gpu_memory_utilization: 0.35}
    search: {data.train_batch_size: [32, 64, 128]}
    objective: time

``fixed`` and ``search`` use the framework's own config keys. Validation errors
name the field and say how to fix it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import MAX_GPUS, MAX_SIZE, InputError, check_size, did_you_mean
from .frameworks.overrides import load_yaml_file

OBJECTIVES = ("time", "memory-headroom", "gpus")
PLACEMENTS = ("colocate", "split", "auto")
NODE_GPUS = 8  # GPUs per node assumed when more than 8 are given without a layout
MAX_SEARCH_VALUES = 256  # values one searched key may list: the solver tables every combination of them


@dataclass
class Scenario:
    framework: str = "verl"
    gpu: str | None = None
    gpus: int | None = None
    gpus_per_node: int | None = None
    nnodes: int = 1
    model: str | None = None
    algorithm: str | None = "grpo"  # None: the algorithm settings are all in ``fixed`` (recommend --from)
    n: int | None = None
    prompt_length: int = 1024
    response_length: int = 1024
    fixed: dict[str, Any] = field(default_factory=dict)
    search: dict[str, list[Any]] = field(default_factory=dict)
    objective: str = "time"
    price_per_gpu_hour: float | None = None
    # memory: the longest micro batch's length as a share of max prompt + response (1.0: worst case)
    length_fraction: float = 1.0
    # a calibration profile's efficiencies (costmodel/efficiency.py names), measured on this scenario's GPU
    calibration: dict[str, float] | None = None
    # time: the data's mean prompt and response lengths in tokens (None: the default shares of the limits)
    mean_prompt_length: float | None = None
    mean_response_length: float | None = None
    # time: the longest response the data reaches, in tokens, where it is known (None: the length profile's law up to
    # the limit); a synchronous rollout waits for it (costmodel/lengths.py response_cap)
    longest_response_length: float | None = None
    # time, where no mean is given: the response-length profile (costmodel/lengths.py PROFILES: default, reasoning,
    # gsm8k, math, limit; None: chosen by the model's family and the training data) and the training data's name or
    # path (a config's data.train_files, --prompt_data, dataset_name or --dataset), which chooses a task's profile
    response_profile: str | None = None
    dataset: str | None = None
    # where rollout runs (recommend --placement): "colocate" (on the training GPUs, taking turns), "split" (a pool of
    # its own, pipelined with training), "auto" (both, compared); None: the framework's synchronous placements
    placement: str | None = None
    # the RAM of one node in GiB (host memory: costmodel/host.py); None: the standard cloud node of the GPU type
    host_mem_gib: float | None = None
    # recommend may change the algorithm's batch sizes (prompts per step, per update); False: they stay as given,
    # or at the framework's defaults (Framework.kept_batch)
    free_batch: bool = False
    # set by recommend, not by users: totals of the algorithm's batch that the search keeps while it chooses their
    # factors (derived variable -> value: ms-swift's and TRL's completions per optimizer step, per-device batch x
    # world x accumulation; Framework.kept_totals)
    kept_totals: dict[str, int] = field(default_factory=dict)
    # set by recommend --from, not by users: the release a pasted config's flags date it to where another release's
    # pack judges it (ms-swift ``for_config``: a --vllm_device config is dated 3.1.0 and judged by 3.3.1's pack, a
    # release --framework cannot name), and the newest release those flags allow (whose engine is priced:
    # SwiftFramework.newest_dated_release); ``judged_by`` reads the scenario as check reads that config
    dated_release: str | None = None
    dated_newest: str | None = None

    def __post_init__(self) -> None:
        self.validate()
        # more than 8 GPUs with no layout given: servers of 8 (the usual HGX/DGX node), so that
        # tensor and expert parallel groups are placed inside a node, as the frameworks' docs advise
        if (self.gpus is not None and self.gpus_per_node is None and self.nnodes == 1 and self.gpus > NODE_GPUS
                and self.gpus % NODE_GPUS == 0):
            self.gpus_per_node, self.nnodes = NODE_GPUS, self.gpus // NODE_GPUS

    # -- derived -----------------------------------------------------------
    def judged_by(self) -> Any:
        """The framework the scenario is read with: ``framework``'s pack, and where the config was dated
        (``dated_release``) that release's own code pricing the memory, as check's ``framework_for`` has it."""
        from .frameworks import get_framework

        fw = get_framework(self.framework)
        if not self.dated_release:
            return fw
        return fw.dated_as(self.dated_release, self.dated_newest)  # a framework that dates configs (ms-swift)

    @property
    def total_gpus(self) -> int:
        if self.gpus is not None:
            return self.gpus
        if self.gpus_per_node is not None:
            return self.gpus_per_node * self.nnodes
        raise InputError("gpus", "the number of GPUs is not set.", "pass --gpus N (or gpus: N in the scenario).")

    @property
    def per_node(self) -> int:
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        return self.total_gpus // self.nnodes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # -- validation ----------------------------------------------------------
    def validate(self) -> None:
        from .frameworks import get_framework
        from .frameworks.registry import split_name

        # a known name, and with "name==version" a version we follow; stored as the bare name, or with the version
        # when the framework has rule packs per version and the scenario names one (verl==0.7.1); a release judged
        # by another's pack (swift==3.8.0 by 3.10.3's) is kept as named, so that every reading of the scenario gets
        # the pack with its note saying so (Framework.version_note) and the named release's own reading (TRL's
        # GRPOConfig fields: with_named_release)
        fw = get_framework(self.framework)
        pinned = fw.pinned and fw.version != type(fw).version
        named = (split_name(self.framework)[1] or "").lstrip("v")
        self.framework = (f"{fw.name}=={named}" if fw.version_note else
                          f"{fw.name}=={fw.version}" if pinned else fw.name)
        for name in ("gpus", "gpus_per_node", "nnodes", "n", "prompt_length", "response_length"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(name, f"'{value}' is not a whole number.", f"set {name} to a positive integer.")
            if value < 1:
                raise InputError(name, f"{value} must be at least 1.", f"set {name} to a positive integer.")
            limit = MAX_GPUS if name in ("gpus", "gpus_per_node", "nnodes") else MAX_SIZE
            check_size(name, value, f"set {name} to a positive integer of at most {limit:,}.", limit)
        if self.gpus is not None and self.gpus_per_node is not None and self.gpus != self.gpus_per_node * self.nnodes:
            raise InputError(
                "gpus", f"gpus = {self.gpus} but gpus_per_node*nnodes = {self.gpus_per_node}*{self.nnodes}.",
                "give either gpus or gpus_per_node (with nnodes).",
            )
        if self.gpus is not None and self.gpus_per_node is None and self.gpus % self.nnodes:
            raise InputError("gpus", f"{self.gpus} GPUs do not split evenly over {self.nnodes} nodes.",
                             f"give a multiple of the node count (--gpus {self.nnodes * -(-self.gpus // self.nnodes)} "
                             f"--nnodes {self.nnodes}), or gpus_per_node in a scenario file.")
        if self.host_mem_gib is not None and (isinstance(self.host_mem_gib, bool)
                                              or not isinstance(self.host_mem_gib, (int, float))
                                              or not 0 < self.host_mem_gib <= 2**20):
            raise InputError("host_mem_gib", f"'{self.host_mem_gib}' is not a node's RAM in GiB.",
                             "set host_mem_gib to a positive number, e.g. 1024 for a node with 1 TiB.")
        if not isinstance(self.free_batch, bool):
            raise InputError("free_batch", f"'{self.free_batch}' is not true or false.",
                             "set free_batch: true to let recommend change the batch sizes, or leave it out.")
        if self.placement is not None and self.placement not in PLACEMENTS:
            raise InputError(
                "placement", f"unknown placement '{self.placement}'.{did_you_mean(str(self.placement), PLACEMENTS)}",
                f"use one of: {', '.join(PLACEMENTS)} (docs/async.md).",
            )
        if self.objective not in OBJECTIVES:
            raise InputError(
                "objective", f"unknown objective '{self.objective}'.{did_you_mean(self.objective, OBJECTIVES)}",
                f"use one of: {', '.join(OBJECTIVES)}.",
            )
        if not isinstance(self.fixed, Mapping):
            raise InputError("fixed", "must be a mapping of config keys to values.", "write fixed: {key: value}.")
        if not isinstance(self.search, Mapping):
            raise InputError("search", "must be a mapping of config keys to lists.", "write search: {key: [1, 2, 4]}.")
        for key, values in self.search.items():
            if not isinstance(values, list) or not values:
                raise InputError(f"search.{key}", "must be a non-empty list of values.", f"write {key}: [1, 2, 4].")
            if len(values) > MAX_SEARCH_VALUES:
                raise InputError(f"search.{key}", f"lists {len(values):,} values, more than the {MAX_SEARCH_VALUES} "
                                 "one key may search.", f"search the values that matter: {key}: [16, 32, 64, 128].")
            for v in values:
                check_size(f"search.{key}", v, f"write {key} values of at most {MAX_SIZE:,}.")
        for key, value in self.fixed.items():
            check_size(f"fixed.{key}", value, f"set {key} to at most {MAX_SIZE:,}.")
        if self.price_per_gpu_hour is not None and not (
            isinstance(self.price_per_gpu_hour, (int, float)) and self.price_per_gpu_hour > 0
        ):
            raise InputError("price_per_gpu_hour", f"{self.price_per_gpu_hour} is not a positive price.",
                             "give the price of one GPU-hour, e.g. 2.5.")
        check_length_fraction(self.length_fraction)
        check_mean_lengths(self.mean_prompt_length, self.mean_response_length)
        check_longest_response(self.longest_response_length, self.mean_response_length)
        check_response_profile(self.response_profile, self.dataset)


def check_response_profile(profile: Any, dataset: Any) -> None:
    """A length profile's name, when given, one of lengths.PROFILES; the data's name, text."""
    from .costmodel.lengths import named

    if profile is not None and not isinstance(profile, str):
        raise InputError("response_profile", f"'{profile}' is not a profile name.",
                         "write response_profile: gsm8k (or default, reasoning, math, limit).")
    named(profile)
    if dataset is not None and not isinstance(dataset, str):
        raise InputError("dataset", f"'{dataset}' is not a dataset name or path.",
                         "write dataset: openai/gsm8k (the name or path your config trains on).")


def check_mean_lengths(prompt: Any, response: Any) -> None:
    """The data's mean prompt / response lengths, when given: positive token counts."""
    for name, value in (("mean_prompt_length", prompt), ("mean_response_length", response)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= MAX_SIZE):
            raise InputError(name, f"{value!r} is not a mean length in tokens.",
                             f"give the mean {name.split('_')[1]} length your data reaches, e.g. 1500 "
                             "(verl logs it as response_length/mean).")


def check_longest_response(longest: Any, mean: Any = None) -> None:
    """The longest response the data reaches, when given: a positive token count, not under the mean response."""
    if longest is None:
        return
    if isinstance(longest, bool) or not isinstance(longest, (int, float)) or not (0 < longest <= MAX_SIZE):
        raise InputError("longest_response_length", f"{longest!r} is not a length in tokens.",
                         "give the longest response your data reaches, e.g. 3000 (verl logs it as "
                         "response_length/max), or leave it out to take the length profile's up to the limit.")
    if isinstance(mean, (int, float)) and not isinstance(mean, bool) and longest < mean:
        raise InputError("longest_response_length", f"{longest:g} tokens is shorter than the mean response of "
                         f"{mean:g} tokens.", "give the longest response at least the mean (or correct the mean).")


def check_length_fraction(fraction: Any) -> None:
    """The longest micro batch's share of max prompt + response: a number in (0, 1]."""
    if not (isinstance(fraction, (int, float)) and not isinstance(fraction, bool) and 0.0 < fraction <= 1.0):
        raise InputError("length_fraction", f"{fraction} is not in (0, 1].",
                         "give the longest micro batch's length as a share of max prompt + response, e.g. 0.5 "
                         "(1.0, the default, is the worst case).")


FIELD_NAMES = [f.name for f in fields(Scenario) if f.name != "kept_totals"]  # the fields a user writes


def scenario_from_dict(data: Mapping[str, Any], where: str = "scenario") -> Scenario:
    if not isinstance(data, Mapping):
        raise InputError(where, "must be a mapping of scenario fields.", "write field: value pairs.")
    unknown = [k for k in data if k not in FIELD_NAMES]
    if unknown:
        k = unknown[0]
        raise InputError(
            f"{where}.{k}", f"is not a scenario field.{did_you_mean(k, FIELD_NAMES)}",
            f"known fields: {', '.join(FIELD_NAMES)}.",
        )
    return Scenario(**dict(data))


def load_scenario(path: str | Path) -> Scenario:
    data = load_yaml_file(path, "scenario", "a scenario YAML file (framework, gpu, gpus, model, algorithm, ...)")
    return scenario_from_dict(data or {}, where=str(path))


def default_scenario() -> Scenario:
    """The seed's worked example: ADPO on 4x RTX 4090 (24 GB), prompt 880, response 1280, n 8."""
    return Scenario(
        framework="verl",
        gpu="rtx4090",
        gpus=4,
        model="qwen2.5-1.5b",
        algorithm="adpo",
        n=8,
        prompt_length=880,
        response_length=1280,
        # the seed's choices that shape learning, not speed: the batch per step and the vLLM share
        fixed={"data.train_batch_size": 64, "actor_rollout_ref.rollout.gpu_memory_utilization": 0.35},
    )
