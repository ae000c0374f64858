"""Older ms-swift releases' parity: our release packs (frameworks/swift/versions.py: 4.3.2, 3.12.6, 3.10.3, 3.4.1,
3.4.0, 3.3.1; and 4.6.0's for 4.4-4.5) against that release's own argument and batch checks, read from its wheel
(``pip install --no-deps --target DIR ms-swift==X``; ``SWIFT_RELEASE_DIR`` names DIR).

A 3.x wheel imports torch, transformers, TRL, peft and modelscope at its top, in versions that no longer install
beside ms-swift 4.6.0's. The checks themselves are methods that read their object's attributes, so the harness runs
them without importing the package: it takes each method's code out of the release's own source file (``ast``),
compiles it as it is, and calls it on an object holding that release's dataclass defaults (read from the same files)
and the case's flags. What the harness supplies, in place of the package's imports:

* ``swift.utils``' ``get_device_count`` answers the GPUs visible on a node (the case's ``visible``, else
  NPROC_PER_NODE) and ``get_dist_setting`` the case's NPROC_PER_NODE as the local world size; ``is_mp`` False;
* ``trl.__version__`` a release the wheel accepts (0.17.0 for 3.2-3.4, 0.19.1 for 3.5-3.11, 0.24.0 for 3.12), and
  a ``trl.trainer.grpo_config.GRPOConfig`` with a ``generation_batch_size`` field (3.5's _check_grpo asks);
* ``_init_external_vllm`` (it connects to the rollout server) does nothing;
* the trainer's ``accelerator.num_processes`` is the world size NPROC_PER_NODE*NNODES.

Run, in the order ``RLHFArguments.__post_init__`` runs them: ``_init_grpo``, ``_init_rollout`` (3.10 on),
``_check_rlhf`` (3.2-3.4.0), ``_check_grpo``, ``_external_vllm_warning``; then 3.5-3.12's ``GRPOConfig``: the
generation-batch resolution of its ``__post_init__`` (3.5-3.11) and ``check_num_generations``; 3.1-3.4's
``GRPOTrainer.__init__``: the statements of its batch checks. 3.12's ``GRPOConfig`` leaves the generation batch to
the TRL it installs (not in the wheel): its cases set neither ``generation_batch_size`` nor ``steps_per_generation``,
and the harness resolves them as 3.5-3.11's own code does (steps_per_generation = gradient_accumulation_steps).
Where 3.5-3.11 meet both set, TRL's ``GRPOConfig.__post_init__`` refuses them first (tests/parity/parity_trl.py
compares that check on TRL's own code): those cases are not compared here.

4.x (swift/arguments, swift/rlhf_trainers; 4.0-4.5 pin other transformers and TRL ranges than 4.6.0's): the same,
with ``_check_teacher`` (4.4 on) before ``_check_grpo`` and the option checks ``_check_grpo`` calls; then
``GRPOConfig.__post_init__``'s own ``num_generations < 2`` statement (4.0-4.3) and its generation-batch check:
4.2 on ``_init_generation_batch_params``, which resolves the batch itself (its one-key branches are TRL 0.29.1's, whose
``__post_init__`` 4.2-4.3 run first), 4.0-4.1 ``check_num_generations`` after TRL's default resolution as for 3.12.
``trl.__version__`` is 0.29.1, what a fresh 4.0-4.3 install resolves; both keys set are TRL's to refuse, as above.
"""

from __future__ import annotations

import ast
import logging
import os
import random
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from unittest import mock

from parity_core import Allowed, Oracle, Verdict, near
from parity_swift import hf_batch_case

from rlbatch_solver.frameworks.base import resolve_release
from rlbatch_solver.frameworks.swift import versions as V
from rlbatch_solver.release_numbers import release_numbers

ARGS = frozenset({"swift.args.num_generations_at_least_two", "swift.args.vllm_mode_required",
                  "swift.args.vllm_mode_needs_use_vllm", "swift.args.async_generate_needs_server",
                  "swift.rollout.server_needs_host", "swift.args.rlhf_no_sequence_parallel",
                  "swift.legacy.colocate_device_count", "swift.legacy.async_device_count",
                  "swift.legacy.async_no_tensor_parallel", "swift.legacy.async_generate_needs_async_mode"})
CONFIG = frozenset({"swift.args.gen_divisible_by_base", "swift.args.gen_divisible_by_num_generations",
                    "swift.args.eval_batch_divisible_by_num_generations_eval",
                    "swift.args.num_generations_at_least_two"})
TRAINER = frozenset({"swift.trainer.batch_divisible_by_num_generations",
                     "swift.trainer.eval_batch_divisible_by_num_generations"})

PATTERNS = [
    (r"GRPO requires at least 2 generations", "swift.args.num_generations_at_least_two"),
    (r"num_generations must be greater than 1 for GRPO", "swift.args.num_generations_at_least_two"),  # 4.4 on
    (r"vllm_mode is required when use_vllm is true", "swift.args.vllm_mode_required"),
    (r"vllm_mode is not supported when use_vllm is false", "swift.args.vllm_mode_needs_use_vllm"),
    (r"async generate require vllm_mode == server", "swift.args.async_generate_needs_server"),
    (r"RLHF do not support sequence parallel", "swift.args.rlhf_no_sequence_parallel"),
    (r"Colocate mode requires device_count", "swift.legacy.colocate_device_count"),
    (r"Async mode requires total GPUs", "swift.legacy.async_device_count"),
    (r"async mode do not support tensor parallel", "swift.legacy.async_no_tensor_parallel"),
    (r"async_generate requires async mode", "swift.legacy.async_generate_needs_async_mode"),
    (r"must be divisible by the global batch size", "swift.args.gen_divisible_by_base"),
    (r"steps_per_generation must be", "swift.args.gen_divisible_by_base"),
    (r"The effective train batch size \(\d+ x \d+ x \d+\) must be evenly divisible",
     ("swift.args.gen_divisible_by_num_generations", "swift.trainer.batch_divisible_by_num_generations")),
    (r"The global train batch size \(\d+ x \d+\) must be evenly divisible",
     "swift.trainer.batch_divisible_by_num_generations"),
    (r"generation_batch_size \(\d+\) must be evenly divisible by num_generations",
     "swift.args.gen_divisible_by_num_generations"),  # 4.2 on: _init_generation_batch_params
    (r"The (global|effective) eval batch size", ("swift.args.eval_batch_divisible_by_num_generations_eval",
                                                 "swift.trainer.eval_batch_divisible_by_num_generations")),
    (r"^AssertionError:?$", "swift.rollout.server_needs_host"),  # _init_rollout's bare assert on the host
]

ALLOWED = [
    Allowed("swift.gpus.budget", "needs --gpus, the GPUs of the whole job (not a swift flag): the rollout server's "
            "own device check runs in another process"),
    Allowed("swift.args.gen_equals_base_times_spg", "TRL's GRPOConfig.__post_init__ (the TRL ms-swift 3.x installs) "
            "refuses generation_batch_size with steps_per_generation: compared on TRL's own code "
            "(tests/parity/parity_trl.py)"),
    # _check_grpo's refusals beside Liger's GRPO loss: the parity cases do not set --use_liger_kernel; each rule's
    # release gate is pinned by hand-made cases in tests/test_swift.py
    Allowed("swift.liger.no_sequence_parallel", "--use_liger_kernel: not in the parity cases (hand-made cases per "
            "release in tests/test_swift.py)"),
    Allowed("swift.liger.no_padding_free", "--use_liger_kernel, as above"),
    Allowed("swift.liger.grpo_advantage_only", "--use_liger_kernel, as above"),
]

# the argument methods in the order RLHFArguments.__post_init__ calls them (those the release has)
ARG_METHODS = ("_init_grpo", "_init_rollout", "_check_rlhf", "_check_grpo", "_external_vllm_warning")
# 4.x: _check_teacher (4.4 on: num_generations > 1 unless a teacher is set) runs before _check_grpo, which calls the
# checks of its options (_check_opd_rl 4.4 on, _check_rlsd and _check_sdar 4.6)
ARG_METHODS_4 = ("_init_grpo", "_init_rollout", "_check_teacher", "_check_grpo")
CALLED_4 = ("_external_vllm_warning", "_check_opd_rl", "_check_rlsd", "_check_sdar")
TRAINER_WORDS = ("possible_values", "num_processes =", "global_batch_size =", "effective_batch_size =",
                 "effective_batch_size \\", "self.effective_train_batch_size")


def release_dir() -> Path | None:
    d = os.environ.get("SWIFT_RELEASE_DIR")
    return Path(d) if d and (Path(d) / "swift").is_dir() else None


def release_version(root: Path) -> str:
    """The wheel's version, from its dist-info directory's name."""
    infos = sorted(root.glob("ms_swift-*.dist-info"))
    if not infos:
        raise FileNotFoundError(f"no ms_swift-*.dist-info in {root}")
    return infos[0].name.removesuffix(".dist-info").split("-")[1]


class _Stub:
    """The logger, and any name the release's module imports at its top that a check calls on the way (e.g.
    ``set_default_ddp_config``, which only sets environment variables): does nothing, returns itself."""

    def __getattr__(self, name: str) -> "_Stub":
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> "_Stub":
        return self


def _module_names(path: Path) -> dict[str, Any]:
    """The names ``path``'s module imports at its top, each a ``_Stub``, and its literal constants."""
    out: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = _Stub()
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:  # a constant of the module's own (rlhf_support_vllm_types = ['grpo', ...])
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            out.update({t.id: value for t in node.targets})
    return out


def _classes(path: Path) -> list[ast.ClassDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]


def _defaults(paths: list[Path]) -> dict[str, Any]:
    """The dataclass fields' literal defaults of every class in ``paths`` (``field(default_factory=list)`` as [])."""
    out: dict[str, Any] = {}
    for path in paths:
        for cls in _classes(path):
            for node in cls.body:
                if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)) or node.value is None:
                    continue
                value: Any = None
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    if isinstance(node.value, ast.Call):
                        for kw in node.value.keywords:
                            if kw.arg == "default_factory" and isinstance(kw.value, ast.Name):
                                value = {"list": [], "dict": {}}.get(kw.value.id)
                            elif kw.arg == "default":
                                try:
                                    value = ast.literal_eval(kw.value)
                                except ValueError:
                                    value = None
                out.setdefault(node.target.id, value)
    return out


def _method(source: str, node: ast.FunctionDef, env: dict[str, Any]) -> Callable:
    code = textwrap.dedent(ast.get_source_segment(source, node) or "")
    scope: dict[str, Any] = dict(env)
    exec(compile(code, "<release>", "exec"), scope)  # the release's own method, compiled as it is
    return scope[node.name]


def _methods(path: Path, names: tuple[str, ...], env: dict[str, Any], prefer: str) -> dict[str, Callable]:
    """The methods ``names`` of the classes in ``path`` (the class ``prefer`` first)."""
    source = path.read_text()
    env = {**_module_names(path), **env}
    out: dict[str, Callable] = {}
    for cls in sorted(_classes(path), key=lambda c: c.name != prefer):
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name in names and node.name not in out:
                out[node.name] = _method(source, node, env)
    return out


def _statements(path: Path, cls_name: str, method: str, words: tuple[str, ...], name: str,
                env: dict[str, Any], stop: str | None = None) -> Callable | None:
    """A function ``name(self, args)`` of the top-level statements of ``cls_name.method`` whose code holds one of
    ``words`` (up to the first holding ``stop``), in their order: the release's own lines."""
    source = path.read_text()
    env = {**_module_names(path), **env}
    for cls in _classes(path):
        if cls.name != cls_name:
            continue
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == method:
                picked = []
                for stmt in node.body:
                    text = textwrap.dedent(ast.get_source_segment(source, stmt) or "")
                    if stop and stop in text:
                        break
                    if any(w in text for w in words):
                        picked.append(text)
                if not picked:
                    return None
                body = textwrap.indent("\n".join(picked), "    ")
                scope: dict[str, Any] = dict(env)
                exec(compile(f"def {name}(self, args):\n{body}\n", "<release>", "exec"), scope)
                return scope[name]
    return None


class Obj:
    """The argument object: the release's defaults, the case's flags; other attributes None."""

    def __init__(self, values: Mapping[str, Any]):
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class ReleaseOracle:
    def __init__(self, root: Path):
        logging.getLogger("swift").setLevel(logging.ERROR)
        self.version = release_version(root)
        self.numbers = release_numbers(self.version)
        sw = root / "swift"
        self.env = {"logger": _Stub(), "is_mp": lambda: False, "os": os}
        self.post = None  # 4.0-4.3: GRPOConfig.__post_init__'s own num_generations check
        self.resolve = None
        self.resolves_itself = False  # 4.2 on: the generation-batch check resolves the batch itself
        self.trainer = None
        self.arg_order = ARG_METHODS
        if self.numbers >= (4, 0, 0):
            self._init_4(sw)
            return
        args_file = sw / "llm" / "argument" / "rlhf_args.py"
        config_file = sw / "trainers" / "rlhf_arguments.py"
        self.args_methods = _methods(args_file, ARG_METHODS, self.env, "RLHFArguments")
        self.defaults = _defaults([args_file, *sorted((sw / "llm" / "argument").rglob("*.py")),
                                   sw / "trainers" / "arguments.py"] + ([config_file] if config_file.exists() else []))
        self.defaults.update(rlhf_type="grpo", _init_external_vllm=lambda: None)
        self.check_generations = None
        if config_file.exists():  # 3.5 on (3.4's file holds a GRPOConfig without the check)
            self.check_generations = _methods(config_file, ("check_num_generations",), self.env,
                                              "GRPOConfig").get("check_num_generations")
        if self.check_generations is not None:
            self.resolve = _statements(config_file, "GRPOConfig", "__post_init__",
                                       ("num_processes =", "steps_per_generation", "generation_batch_size"),
                                       "_resolve", self.env, stop="check_num_generations")
        else:
            self.trainer = _statements(sw / "trainers" / "rlhf_trainer" / "grpo_trainer.py", "GRPOTrainer",
                                       "__init__", TRAINER_WORDS, "_batch_checks", self.env)
        if self.numbers < (3, 5, 0):
            self.trl = "0.17.0"
        elif self.numbers < (3, 12, 0):
            self.trl = "0.19.1"
        else:
            self.trl = "0.24.0"

    def _init_4(self, sw: Path) -> None:
        """4.x: the arguments under swift/arguments, GRPOConfig and its mixins under swift/rlhf_trainers. 4.2 on check
        the generation batch in RolloutTrainerArgumentsMixin._init_generation_batch_params, which resolves it
        itself; 4.0-4.1 in GRPOConfig.check_num_generations, after TRL's resolution."""
        args_file = sw / "arguments" / "rlhf_args.py"
        config_file = sw / "rlhf_trainers" / "arguments.py"
        mixin_file = sw / "rlhf_trainers" / "args_mixin.py"
        self.arg_order = ARG_METHODS_4
        self.args_methods = _methods(args_file, ARG_METHODS_4 + CALLED_4, self.env, "RLHFArguments")
        self.defaults = _defaults([args_file, *sorted((sw / "arguments").rglob("*.py")), sw / "trainers" /
                                   "arguments.py", mixin_file, config_file])
        self.defaults.update(rlhf_type="grpo", _init_external_vllm=lambda: None)
        self.check_generations = (
            _methods(mixin_file, ("_init_generation_batch_params",), self.env, "RolloutTrainerArgumentsMixin")
            .get("_init_generation_batch_params")
            or _methods(config_file, ("check_num_generations",), self.env, "GRPOConfig").get("check_num_generations"))
        self.resolves_itself = self.numbers >= (4, 2, 0)
        # the statements after TRL's __post_init__ up to the generation-batch check: `num_generations < 2` (4.0-4.3)
        self.post = _statements(config_file, "GRPOConfig", "__post_init__", ("self.num_generations < 2",), "_post",
                                self.env)
        self.trl = "0.29.1"  # what a fresh install resolves (4.0-4.1: trl<0.30; 4.2 on: trl<1.0)

    # -------------------------------------------------------------- stand-ins for the package's imports
    def _modules(self, case: Mapping[str, Any]) -> dict[str, types.ModuleType]:
        nproc = case.get("NPROC_PER_NODE", 1)
        visible = case.get("visible", nproc)
        utils = types.ModuleType("swift.utils")
        utils.get_device_count = lambda: visible
        utils.get_dist_setting = lambda: (0, 0, nproc * case.get("NNODES", 1), nproc)
        utils.is_master = lambda: False
        utils.get_device = lambda *a: "cuda:0"
        swift = types.ModuleType("swift")
        swift.utils = utils
        trl = types.ModuleType("trl")
        trl.__version__ = self.trl
        grpo_config = types.ModuleType("trl.trainer.grpo_config")
        grpo_config.GRPOConfig = type("GRPOConfig", (), {"generation_batch_size": None})
        import_utils = types.ModuleType("trl.import_utils")
        import_utils.is_liger_kernel_available = lambda: True
        return {"swift": swift, "swift.utils": utils, "trl": trl, "trl.trainer": types.ModuleType("trl.trainer"),
                "trl.trainer.grpo_config": grpo_config, "trl.import_utils": import_utils}

    def _obj(self, case: Mapping[str, Any]) -> Obj:
        values = dict(self.defaults)
        values.update({k: v for k, v in case.items() if k not in ("NPROC_PER_NODE", "NNODES", "visible")})
        if "gradient_accumulation_steps" not in case:
            values["gradient_accumulation_steps"] = 1  # RLHFArguments._set_default for GRPO
        has_val = case.get("split_dataset_ratio", 0) > 0
        values["eval_strategy"] = case.get("eval_strategy", "steps") if has_val else "no"
        values["world_size"] = case.get("NPROC_PER_NODE", 1) * case.get("NNODES", 1)
        return Obj(values)

    # -------------------------------------------------------------- oracles
    def args(self, case: Mapping[str, Any]) -> Verdict:
        obj = self._obj(case)
        for name, fn in self.args_methods.items():  # one method calls another (_init_rollout: the warning)
            setattr(obj, name, types.MethodType(fn, obj))

        def run() -> None:
            with mock.patch.dict(sys.modules, self._modules(case)):
                for name in self.arg_order:
                    if name in self.args_methods:
                        self.args_methods[name](obj)
        return Verdict.run(run)

    def config(self, case: Mapping[str, Any]) -> Verdict | None:
        if self.check_generations is None:
            return None
        both = "generation_batch_size" in case and "steps_per_generation" in case
        either = "generation_batch_size" in case or "steps_per_generation" in case
        resolves = self.resolve is not None or self.resolves_itself
        if both or (not resolves and either):
            return None  # TRL's GRPOConfig decides these (module docstring)
        obj = self._obj(case)

        def run() -> None:
            if self.post is not None:
                self.post(obj, obj)
            if self.resolve is not None:
                self.resolve(obj, obj)
            elif resolves:  # 4.2 on: _init_generation_batch_params, called below, resolves them
                pass
            else:  # 3.12, 4.0-4.1: TRL's default resolution, as 3.5-3.11's own __post_init__ writes it
                obj.steps_per_generation = obj.gradient_accumulation_steps
                obj.generation_batch_size = obj.per_device_train_batch_size * obj.world_size * obj.steps_per_generation
            self.check_generations(obj)
        return Verdict.run(run)

    def train(self, case: Mapping[str, Any]) -> Verdict | None:
        if self.trainer is None:
            return None
        args = self._obj(case)
        if self.args(case).ok is False:
            return None  # the run stopped at argument parsing
        trainer = Obj({"num_generations": args.num_generations,
                       "accelerator": Obj({"num_processes": args.world_size}), "args": args})
        return Verdict.run(lambda: self.trainer(trainer, args))

    def oracles(self) -> list[Oracle]:
        # num_generations < 2: _check_grpo refuses it in 3.4 only; 3.5-4.3 GRPOConfig's __post_init__ does; 4.4 on
        # RLHFArguments._check_teacher, unless a teacher is set
        at_least_two = {"swift.args.num_generations_at_least_two"}
        by_args = self.numbers < (3, 5, 0) or self.numbers >= (4, 4, 0)
        args, config = (ARGS, CONFIG - at_least_two) if by_args else (ARGS - at_least_two, CONFIG)
        out = [Oracle(f"driver: RLHFArguments ({', '.join(self.arg_order[:4])})", self.args, args, PATTERNS)]
        if self.check_generations is not None:
            out.append(Oracle("driver: GRPOConfig.__post_init__ (check_num_generations)", self.config, config,
                              PATTERNS))
        if self.trainer is not None:
            out.append(Oracle("trainer_init: GRPOTrainer.__init__ batch checks", self.train, TRAINER, PATTERNS))
        return out


# ------------------------------------------------------------------ cases
def _case(rng: random.Random, version: str) -> dict[str, Any]:
    case, w, g, b = hf_batch_case(rng)  # 4.6.0's harness's world, num_generations and per-device batch
    nproc = case["NPROC_PER_NODE"]
    if rng.random() < 0.4:
        case["gradient_accumulation_steps"] = rng.choice([1, 2, 3, 4, 8])
    legacy = release_numbers(version) < (3, 5, 0)
    if not legacy and rng.random() < 0.3:
        spg = rng.choice([1, 2, 3, 4])
        if rng.random() < 0.6:
            case["generation_batch_size"] = near(rng, b * w * spg) if rng.random() < 0.6 else rng.randint(1, 128)
        else:
            case["steps_per_generation"] = spg
    if rng.random() < 0.3:
        case["split_dataset_ratio"] = 0.05
        if rng.random() < 0.2:
            case["eval_strategy"] = "no"
        case["per_device_eval_batch_size"] = rng.choice([1, 2, 3, 4, g, near(rng, g)])
    if rng.random() < 0.6:
        case["use_vllm"] = rng.random() < 0.85
    if rng.random() < 0.15:
        case["async_generate"] = True
    if legacy:
        if rng.random() < 0.15:
            case["sequence_parallel_size"] = rng.choice([1, 2])
        if case.get("use_vllm"):
            workers = rng.choice([1, 2, nproc, nproc])
            if workers != 1 or rng.random() < 0.5:
                case["num_infer_workers"] = workers
            case["visible"] = rng.choice([nproc, nproc + workers, near(rng, nproc + workers), workers])
            if rng.random() < 0.3:
                case["tensor_parallel_size"] = rng.choice([1, 2, 4])
        if release_numbers(version) >= (3, 3, 0) and rng.random() < 0.1:
            case["vllm_server_host"] = "127.0.0.1"
    else:
        if rng.random() < 0.6:
            case["vllm_mode"] = rng.choice(["colocate", "colocate", "server"])
        if rng.random() < 0.3:
            case["vllm_server_host"] = "127.0.0.1"
        if release_numbers(version) >= (4, 0, 0) and rng.random() < 0.15:
            case["teacher_model"] = "Qwen/Qwen2.5-7B-Instruct"  # 4.4 on exempt num_generations 1; 4.0-4.3 do not
    return case


def release_cases(version: str, seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Cases for a release; ``visible`` (the GPUs a node shows, 3.2-3.4's device-count asserts read it) is ours as
    --gpus (``check_kwargs``), not a flag (``as_flags``)."""
    rng = random.Random(seed)
    for _ in range(count):
        yield _case(rng, version), {}


def as_flags(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "visible"}


def check_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    visible = config.get("visible")
    return {"gpus": visible * config.get("NNODES", 1)} if visible else {}


def pack_of(version: str) -> str:
    """The pack that judges a release (a listed one its own: 3.4.0's, not its series' 3.4.1)."""
    return resolve_release(version, V)[0]
