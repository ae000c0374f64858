"""The phases of an RL step: one place for each phase's name, title and words.

A ``Phase`` is a ``str``: it compares, hashes, formats and serializes (JSON keys and values) exactly as its
name, the string the reports have always used, so ``{"rollout": ...}[Phase.ROLLOUT]`` and
``json.dumps({Phase.ROLLOUT: 1}) == '{"rollout": 1}'`` hold.
"""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    """A phase of the RL step (GPU memory and time), or the host (RAM) for host-memory rules and messages.

    ``label``: its title in tables; ``text``: its words in the OOM explanation ("" where it has none);
    ``description``: the cost model's words in rule messages; ``oom_text``: when a run fails on it.
    """

    label: str
    text: str
    description: str
    oom_text: str

    def __new__(cls, value: str, label: str, text: str = "", description: str = "", oom_text: str = "") -> Phase:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label, member.text, member.description, member.oom_text = label, text, description, oom_text
        return member

    ROLLOUT = ("rollout", "rollout", "rollout (generation)", "rollout (generation with the inference engine)",
               "out of memory in rollout (generation), from the first step on")
    OLD_LOG_PROB = ("old_log_prob", "old log-prob", "old log-prob pass", "old-policy log-prob forward",
                    "out of memory in the old-policy log-prob forward, from the first step on")
    REF = ("ref", "ref log-prob", "reference pass", "reference-model log-prob forward",
           "out of memory in the reference-model log-prob forward, from the first step on")
    ACTOR_UPDATE = ("actor_update", "actor update", "actor update", "actor update (forward + backward + optimizer)",
                    "out of memory in the actor update (forward, backward, optimizer step)")
    CRITIC_UPDATE = ("critic_update", "critic update", "critic (values or update)", "critic update",
                     "out of memory in the critic update")
    WEIGHT_SYNC = ("weight_sync", "weight sync")  # time only: the trainer's weights to the inference engine
    # time only: the critic's value forward where a framework runs it beside the other experience forwards, on the
    # critic's GPUs (Plan.critic_values_apart); elsewhere it is part of CRITIC_UPDATE
    CRITIC_VALUES = ("critic_values", "critic values")
    OFFLOAD = ("offload", "offload transfers")  # time only: the offloaded states' copies to and from the host
    HOST = ("host", "host", "host RAM")  # the node's RAM (host-memory rules), not a phase of the step

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return repr(self.value)


# the phases whose peak GPU memory the cost model prices (one memory table and rule each), in step order
MEMORY_PHASES: tuple[Phase, ...] = (Phase.ROLLOUT, Phase.OLD_LOG_PROB, Phase.REF, Phase.ACTOR_UPDATE,
                                    Phase.CRITIC_UPDATE)
# the phases on the trainer's GPUs: the forwards and the updates
TRAIN_PHASES: tuple[Phase, ...] = (Phase.OLD_LOG_PROB, Phase.REF, Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE)
