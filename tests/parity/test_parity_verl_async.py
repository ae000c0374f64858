"""verl 0.9.1's separate_async trainer: our rules against its own constructor checks.

``PPOTrainerSeparateAsync.__init__`` (verl/trainer/ppo/v1/trainer_separate_async.py) asserts its batch and pool
settings before it builds anything: we run it on generated configs with the base class's constructor replaced by a
stop (so no Ray, no GPU), and compare the first assertion it raises with the first of our rules it checks, in its
order. It imports transfer_queue (TransferQueue, in the ``parity-verl`` extra)."""

import random
from unittest import mock

import pytest

pytest.importorskip("verl", reason="parity needs the real verl package (pip install '.[parity-verl]')")
pytest.importorskip("transfer_queue", reason="verl's v1 async trainers import TransferQueue (the parity-verl extra)")

from omegaconf import OmegaConf  # noqa: E402

import rlbatch_solver as rb  # noqa: E402

AR = "actor_rollout_ref"
# verl's assertions in their order, and the rule each is
VERL_ORDER = [
    ("train_batch_size must equal parameter_sync_step * ppo_mini_batch_size",
     "verl.async.separate_batch_is_sync_steps_of_minis"),
    ("nnodes must be > 0 in separate async training", "verl.async.rollout_pool_needed"),
    ("please use nccl/nixl/mooncake", "verl.async.checkpoint_engine_not_naive"),
]


class _Reached(Exception):
    """The checks passed: the constructor went on to the base class."""


def verl_verdict(flat: dict) -> str | None:
    """The rule of the first assertion verl's constructor raises, or None when it passes them all."""
    import verl.trainer.ppo.v1.trainer_separate_async as sep

    nested: dict = {}
    for key, value in flat.items():
        node = nested
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    conf = OmegaConf.create(nested)

    def stop(self, config):
        raise _Reached

    with mock.patch.object(sep.PPOTrainer, "__init__", stop):
        try:
            sep.PPOTrainerSeparateAsync(conf)
        except _Reached:
            return None
        except AssertionError as err:
            text = str(err)
            for fragment, rule in VERL_ORDER:
                if fragment in text:
                    return rule
            raise AssertionError(f"an assertion we do not map: {text}") from err
    raise AssertionError("the constructor neither asserted nor reached its base class")


def case(rng: random.Random) -> dict:
    mini = rng.choice([1, 2, 4, 8, 16])
    sync = rng.choice([1, 2, 4, 8])
    train = mini * sync if rng.random() < 0.6 else rng.choice([4, 8, 12, 16, 32, 64])
    return {
        "trainer.v1.trainer_mode": "separate_async",
        "trainer.v1.separate_async.parameter_sync_step": sync,
        "data.train_batch_size": train,
        f"{AR}.actor.ppo_mini_batch_size": mini,
        f"{AR}.rollout.nnodes": rng.choice([0, 1, 1, 2]),
        f"{AR}.rollout.n_gpus_per_node": rng.choice([1, 2, 4, 8]),
        f"{AR}.rollout.checkpoint_engine.backend": rng.choice(["nccl", "nccl", "naive", "nixl"]),
        "reward.reward_model.enable": False,
        f"{AR}.hybrid_engine": rng.choice([True, False]),
    }


def ours(flat: dict) -> str | None:
    broken = {v.rule for v in rb.check(dict(flat)).errors}
    return next((rule for _, rule in VERL_ORDER if rule in broken), None)


def test_separate_async_constructor_parity(parity_budget):
    count, seed = parity_budget
    rng = random.Random(seed)
    seen = set()
    for _ in range(min(count, 500)):
        flat = case(rng)
        want, got = verl_verdict(flat), ours(flat)
        assert got == want, (flat, want, got)
        seen.add(want)
    assert seen == {None} | {rule for _, rule in VERL_ORDER}  # every outcome was exercised
