"""TRL 1.16.0 parity: ``GRPOConfig.__post_init__`` (the installed trl package's own code) against our trl rules.

What the harness supplies: ``GRPOConfig`` asks ``world_size`` of the process; a subclass answers the case's
``--num_processes``. The flags go through TRL's own GRPO script parser (``trl/scripts/grpo.py`` ``make_parser``
with that subclass in GRPOConfig's place: prefixes resolved, unknown flags refused, as at launch). ``--bf16 false``
and ``--use_cpu true`` because there is no GPU (neither changes the batch arithmetic). The ``trl grpo`` command
builds GRPOConfig in its own process at world size 1 before it launches the ranks
(trl/cli/commands/training.py ``TrainingCommand.run``): for a case of that entry point the oracle builds it at
world size 1 first, then at the launch's. The generated cases sit on the rules' edges: generation batches near
multiples of the global batch and of ``num_generations``, both or neither of
``generation_batch_size``/``steps_per_generation``, eval on and off (``--do_eval false`` with an eval strategy too),
``num_generations`` of 1 and 2, ``auto_find_batch_size``, fields older GRPOConfigs had, unambiguous flag prefixes,
and both entry points.
"""

from __future__ import annotations

import logging
import random
import re
import tempfile
from typing import Any, Iterator, Mapping

from parity_core import Allowed, Oracle, Verdict, multiple_near, near

CONFIG = frozenset({"trl.config.auto_find_batch_size_unsupported", "trl.config.gen_and_spg_exclusive",
                    "trl.config.gen_divisible_by_global_batch", "trl.config.eval_batch_divisible_by_num_generations_eval",
                    "trl.config.gen_divisible_by_num_generations", "trl.config.num_generations_at_least_two",
                    "trl.frontend.gen_divisible_by_num_generations",
                    "trl.frontend.eval_batch_divisible_by_num_generations_eval",
                    # GRPOConfig.__post_init__ refuses delta beside the Liger flag (0.18-1.3: versions.LIGER_REFUSES)
                    "trl.liger.no_two_sided"})
FRONT = "[world size 1, the trl grpo front-end] "
PARSER = frozenset({"trl.config.removed_fields"})
TRAINER = frozenset({"trl.trainer.sync_ref_model_needs_beta", "trl.trainer.sync_ref_model_not_with_peft"})
TRAINER_0161 = frozenset({"trl.trainer.global_batch_divisible_by_num_generations",
                          "trl.trainer.eval_batch_divisible_by_num_generations"})

PATTERNS = [
    (r"^" + re.escape(FRONT) + r".*global eval batch size .* divisible by the number of generations used for evaluation",
     ("trl.frontend.eval_batch_divisible_by_num_generations_eval",
      "trl.config.eval_batch_divisible_by_num_generations_eval")),
    (r"^" + re.escape(FRONT) + r".*must be divisible by num_generations",
     ("trl.frontend.gen_divisible_by_num_generations", "trl.config.gen_divisible_by_num_generations")),
    (r"auto_find_batch_size is not supported by GRPO", "trl.config.auto_find_batch_size_unsupported"),
    (r"can not be both configured", "trl.config.gen_and_spg_exclusive"),
    (r"must be divisible by the global batch size", "trl.config.gen_divisible_by_global_batch"),
    (r"global eval batch size .* divisible by the number of generations used for evaluation",
     "trl.config.eval_batch_divisible_by_num_generations_eval"),
    (r"must be divisible by num_generations", "trl.config.gen_divisible_by_num_generations"),
    # 0.19.1's wording (GRPOConfig.__post_init__), 0.17.0's (GRPOTrainer.__init__)
    (r"effective train batch size .* evenly divisible by the number of generations per prompt",
     ("trl.config.gen_divisible_by_num_generations", "trl.trainer.global_batch_divisible_by_num_generations")),
    (r"effective eval batch size .* evenly divisible by the number of generations per prompt",  # 0.17.0's
     "trl.trainer.eval_batch_divisible_by_num_generations"),
    (r"global eval batch size .* evenly divisible by the number of generations per prompt",  # and 0.16.1's
     ("trl.config.eval_batch_divisible_by_num_generations_eval", "trl.trainer.eval_batch_divisible_by_num_generations")),
    (r"at least 2 generations per prompt",  # 0.17.0's GRPOTrainer.__init__ says it too
     ("trl.config.num_generations_at_least_two", "trl.trainer.global_batch_divisible_by_num_generations")),
    (r"unexpected keyword argument|Some specified arguments are not used|Unknown arguments",
     "trl.config.removed_fields"),
    (r"sync_ref_model=True` while `beta=0\.0", "trl.trainer.sync_ref_model_needs_beta"),
    # 0.16.1's GRPOTrainer.__init__
    (r"global train batch size .* evenly divisible by the number of generations per prompt",
     "trl.trainer.global_batch_divisible_by_num_generations"),
    (r"sync_ref_model=True` while using a PEFT model", "trl.trainer.sync_ref_model_not_with_peft"),
    (r"does not support two-sided GRPO loss", "trl.liger.no_two_sided"),  # "Liger loss" to 0.24, "Liger kernel" on
]

ALLOWED = {"trl": [
    Allowed("trl.gpus.budget", "the GPU budget is accelerate's and trl vllm-serve's, not a GRPOConfig check"),
    # GRPOTrainer.__init__'s refusals beside the Liger flag (versions.LIGER_REFUSES): the trainer with it needs
    # liger-kernel, which the parity venv does not install (the cases' Liger flag is switched off in the trainer
    # oracles); each rule's release gate is pinned by hand-made cases per release in tests/test_trl.py. The one
    # GRPOConfig.__post_init__ check beside it, delta, is compared (CONFIG)
    Allowed("trl.liger.no_peft", "GRPOTrainer.__init__ beside the Liger flag: liger-kernel is not installed (hand-made "
            "cases per release in tests/test_trl.py; 0.17 only)"),
    Allowed("trl.liger.bnpo_loss_only", "the Liger flag, as above (0.17 only)"),
    Allowed("trl.liger.no_entropy_mask", "the Liger flag, as above"),
    Allowed("trl.liger.token_level_only", "the Liger flag, as above"),
    Allowed("trl.liger.no_off_policy_mask", "the Liger flag, as above"),
    Allowed("trl.liger.no_fused_linear_cross_entropy", "the Liger flag, as above"),
]}


def trl_case(rng: random.Random) -> dict[str, Any]:
    world = rng.choice([1, 2, 3, 4, 6, 7, 8, 16])
    b = rng.choice([1, 2, 3, 4, 8, 16])
    g = rng.choice([1, 2, 3, 4, 7, 8, 16])
    case: dict[str, Any] = {"num_processes": world, "per_device_train_batch_size": b, "num_generations": g,
                            "gradient_accumulation_steps": rng.choice([1, 2, 3, 4, 8])}
    which = rng.random()
    if which < 0.35:
        case["generation_batch_size"] = multiple_near(rng, b * world if rng.random() < 0.5 else g)
    elif which < 0.6:
        case["steps_per_generation"] = near(rng, rng.choice([1, 2, 4, 8]))
    elif which < 0.7:
        case["generation_batch_size"] = multiple_near(rng, b * world)
        case["steps_per_generation"] = rng.choice([1, 2, 4])
    if rng.random() < 0.3:
        case["eval_strategy"] = "steps"
        case["per_device_eval_batch_size"] = rng.choice([1, 2, 3, 4, 8, 16])
        if rng.random() < 0.5:
            case["num_generations_eval"] = rng.choice([2, 3, 4, 8])
        if rng.random() < 0.3:
            case["do_eval"] = False  # transformers turns it back on with an eval strategy
    if rng.random() < 0.05:
        case["auto_find_batch_size"] = True
    if rng.random() < 0.05:
        case["max_prompt_length"] = 512
    if rng.random() < 0.3:
        case["sync_ref_model"] = True
    if rng.random() < 0.5:
        case["beta"] = rng.choice([0.0, 0.04])
    if rng.random() < 0.3:
        case["use_peft"] = True
    if rng.random() < 0.1:
        case["liger"] = True  # the release's Liger flag (as_flags)
    if rng.random() < 0.1:
        case["delta"] = 2.0
    if rng.random() < 0.3:
        case["entry"] = "trl grpo"
    if rng.random() < 0.3:
        case["prefixed"] = True
    return case


# unambiguous prefixes of GRPOConfig fields, as users shorten them (argparse's allow_abbrev reads them whole)
PREFIXES = {"per_device_train_batch_size": "per_device_train_batch", "num_generations_eval": "num_generations_ev",
            "gradient_accumulation_steps": "gradient_accumulation", "per_device_eval_batch_size": "per_device_eval"}


def trl_cases(seed: int, count: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield trl_case(rng), {}



def as_flags(case: Mapping[str, Any]) -> list[str]:
    """The case as its launch command: the entry point, then the flags (some shortened to a prefix, as users write
    them: every case's flags for both sides, so the parser's reading is compared too)."""
    out: list[str] = ["trl", "grpo"] if case.get("entry") == "trl grpo" else ["accelerate", "launch", "grpo.py"]
    for k, v in case.items():
        if k in ("entry", "prefixed") or (k == "liger" and not _liger_flag()):
            continue
        name = _liger_flag() if k == "liger" else PREFIXES.get(k, k) if case.get("prefixed") else k
        out += [f"--{name}", ("true" if v else "false") if isinstance(v, bool) else str(v)]
    return out


def _liger_flag() -> str | None:
    """The installed release's Liger flag (use_liger_loss to 0.24, use_liger_kernel from 0.25; none before 0.17):
    both sides read the case with it."""
    import trl

    from rlbatch_solver.frameworks.trl.versions import liger_flags

    flags = liger_flags(trl.__version__)
    return flags[-1] if flags else None


class TrlOracle:
    def __init__(self):
        logging.getLogger("trl").setLevel(logging.ERROR)
        from trl import GRPOConfig, ModelConfig
        from trl.scripts.grpo import GRPOScriptArguments
        from trl.scripts.utils import DatasetMixtureConfig, TrlParser

        class _Config(GRPOConfig):
            world = 1

            @property
            def world_size(self):  # the case's --num_processes, not this process's
                return type(self).world

        self._cls = _Config
        # trl/scripts/grpo.py make_parser's dataclasses, with the world size of the case
        self._parser = TrlParser((GRPOScriptArguments, _Config, ModelConfig, DatasetMixtureConfig))
        self._out = tempfile.TemporaryDirectory(prefix="parity-trl-")

    def _parse(self, flags: list[str], world: int) -> None:
        self._cls.world = world
        self._parser.parse_args_and_config(
            flags + ["--output_dir", self._out.name, "--report_to", "none", "--bf16", "false", "--use_cpu", "true"],
            fail_with_unknown_args=False)  # as trl/scripts/grpo.py calls it

    def config(self, case: Mapping[str, Any]) -> Verdict:
        flags = [a for a in as_flags({k: v for k, v in case.items() if k != "num_processes"})
                 if a not in ("trl", "grpo", "accelerate", "launch", "grpo.py")]
        world = int(case["num_processes"])
        if case.get("entry") == "trl grpo":  # the front-end's GRPOConfig at world size 1 comes first
            first = Verdict.run(lambda: self._parse(flags, 1))
            if not first.ok:
                return Verdict(False, FRONT + first.message)
        return Verdict.run(lambda: self._parse(flags, world))

    def trainer(self, case: Mapping[str, Any]) -> Verdict | None:
        """GRPOTrainer.__init__ on a tiny model built here (no download), for the reference-model switches: the
        case's sync_ref_model, beta and PEFT on a batch config GRPOConfig accepts (one process, 2 x 2)."""
        if not case.get("sync_ref_model"):
            return None  # the compared checks only run with sync_ref_model
        from trl import GRPOConfig, GRPOTrainer

        model_dir, tokenizer, dataset = _tiny()
        peft_config = None
        if case.get("use_peft"):
            from peft import LoraConfig

            peft_config = LoraConfig(r=2, target_modules=["q_proj"])
        args = GRPOConfig(output_dir=self._out.name, report_to=[], bf16=False, use_cpu=True,
                          per_device_train_batch_size=2, num_generations=2, max_completion_length=4,
                          sync_ref_model=True, beta=case.get("beta", 0.0))
        return Verdict.run(lambda: GRPOTrainer(model=model_dir, reward_funcs=_zero_reward, args=args,
                                               train_dataset=dataset, processing_class=tokenizer,
                                               peft_config=peft_config))

    def oracles(self) -> list[Oracle]:
        return [Oracle("driver: GRPOConfig(...) and its __post_init__", self.config, CONFIG | PARSER, PATTERNS),
                Oracle("trainer_init: GRPOTrainer.__init__ (tiny CPU model)", self.trainer, TRAINER, PATTERNS)]


def _zero_reward(completions, **kwargs):
    return [0.0] * len(completions)


_TINY: tuple | None = None


def _tiny():
    """A one-layer Qwen2 of 64 tokens and its word-level tokenizer, saved once (harness only)."""
    global _TINY
    if _TINY is None:
        from datasets import Dataset
        from tokenizers import Tokenizer, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

        vocab = {f"w{i}": i for i in range(61)} | {"<pad>": 61, "<eos>": 62, "<unk>": 63}
        tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                            unk_token="<unk>")
        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64))
        path = tempfile.mkdtemp(prefix="parity-trl-model-")
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        _TINY = (path, tokenizer, Dataset.from_dict({"prompt": ["w1 w2", "w3 w4"] * 4}))
    return _TINY


class ReleaseOracle:
    """The installed older release's (0.29.1, 0.19.1, 0.18.2, 0.17.0, 0.16.1, 0.15.2, 0.14.0) own script parser and GRPOConfig, as ``TrlOracle.config`` runs
    1.16.0's: ``make_parser``'s dataclasses with a GRPOConfig that answers the case's world size. 0.14.0's
    ``TrlParser.parse_args_and_config`` has no ``fail_with_unknown_args`` (a config file's unknown keys are dropped
    there too). The trainer's checks are compared for 1.16.0 only (``TrlOracle.trainer``)."""

    def __init__(self):
        logging.getLogger("trl").setLevel(logging.ERROR)
        import inspect

        import trl.import_utils as flags

        # 0.14.0 reads transformers' _is_package_available as a bool; transformers 5 returns (bool, version), a
        # truthy tuple that would import vllm: take its bool
        for name in dir(flags):
            if name.endswith("_available") and isinstance(getattr(flags, name), tuple):
                setattr(flags, name, getattr(flags, name)[0])
        from trl import GRPOConfig
        from trl.scripts.grpo import make_parser
        from trl.scripts.utils import TrlParser

        class _Config(GRPOConfig):
            world = 1

            @property
            def world_size(self):
                return type(self).world

        self._cls = _Config
        types = [(_Config if t is GRPOConfig else t) for t in make_parser().dataclass_types]
        self._parser = TrlParser(types)
        self._unknown_kw = "fail_with_unknown_args" in inspect.signature(self._parser.parse_args_and_config).parameters
        self._out = tempfile.TemporaryDirectory(prefix="parity-trl-release-")

    def _parse(self, flags: list[str], world: int) -> tuple:
        self._cls.world = world
        # 0.14.0's script requires --dataset_name (not a batch setting)
        args = flags + ["--output_dir", self._out.name, "--report_to", "none", "--bf16", "false", "--use_cpu", "true",
                        "--dataset_name", "parity"]
        try:
            if self._unknown_kw:
                return self._parser.parse_args_and_config(args, fail_with_unknown_args=False)
            return self._parser.parse_args_and_config(args)
        except SystemExit as exc:  # argparse's own errors exit
            raise ValueError(f"argparse exited ({exc.code})") from exc

    def config(self, case: Mapping[str, Any]) -> Verdict:
        """The ranks' GRPOConfig only: these releases' `trl grpo` parses the flags into an argparse namespace and
        launches (0.29.1: trl/cli/main.py main; 0.19.1: trl/cli.py main, a TrlParser without dataclasses; 0.16.1,
        0.14.0: trl/cli.py main, parser.parse_args()), building no GRPOConfig
        at world size 1 as 1.16.0's TrainingCommand.run does."""
        flags = [a for a in as_flags({k: v for k, v in case.items() if k != "num_processes"})
                 if a not in ("trl", "grpo", "accelerate", "launch", "grpo.py")]
        return Verdict.run(lambda: self._parse(flags, int(case["num_processes"])))

    def trainer(self, case: Mapping[str, Any]) -> Verdict | None:
        """0.16.1's batch checks, which GRPOTrainer.__init__ runs: the trainer on the tiny model with the case's parsed
        GRPOConfig and accelerate's ``num_processes`` answering the case's world size (``None`` where the parser
        refuses the case: the trainer never starts). vLLM is switched off (its client is built after the checks) and
        ``use_cache`` given (0.16.1 passes None, which transformers 5 refuses)."""
        from unittest.mock import PropertyMock, patch

        from accelerate import Accelerator
        from transformers import PreTrainedModel
        from trl import GRPOTrainer

        flags = [a for a in as_flags({k: v for k, v in case.items() if k != "num_processes"})
                 if a not in ("trl", "grpo", "accelerate", "launch", "grpo.py")]
        world = int(case["num_processes"])
        try:
            parsed = self._parse(flags, world)
        except Exception:
            return None
        args = next(x for x in parsed if isinstance(x, self._cls))
        args.use_vllm, args.model_init_kwargs = False, {"use_cache": False}
        if getattr(args, "use_liger_loss", None):  # 0.17.0's Liger loss needs liger-kernel, not installed here
            args.use_liger_loss = False
        if not hasattr(PreTrainedModel, "warnings_issued"):  # 0.16.1 writes to it; transformers 5 dropped it
            PreTrainedModel.warnings_issued = {}
        model_dir, tokenizer, dataset = _tiny()
        with patch.object(Accelerator, "num_processes", new_callable=PropertyMock, return_value=world):
            return Verdict.run(lambda: GRPOTrainer(model=model_dir, reward_funcs=_zero_reward, args=args,
                                                   train_dataset=dataset, eval_dataset=dataset,
                                                   processing_class=tokenizer))

    def oracles(self) -> list[Oracle]:
        out = [Oracle("driver: GRPOConfig(...) and its __post_init__", self.config, CONFIG | PARSER, PATTERNS)]
        import trl

        if trl.__version__ in ("0.17.0", "0.16.1", "0.15.2"):  # their batch checks are GRPOTrainer.__init__'s
            out.append(Oracle("trainer_init: GRPOTrainer.__init__ (tiny CPU model)", self.trainer, TRAINER_0161,
                              PATTERNS))
        return out
