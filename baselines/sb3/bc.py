"""Behaviour-cloning warm start for SB3 policies, from ``NoisyOracleAgent`` demonstrations.

The paper's RL starts from a pretrained model that already acts sensibly;
a classic-RL policy starts from random weights and, on FrozenLake, almost
never finds the goal.  This module stands in for the pretraining:

1. :func:`collect_demonstrations` plays ``NoisyOracleAgent(epsilon)`` on the
   training stack itself (same tasks, budgets, encoder and masks).  Each
   visited state is labelled with the *oracle's* moves (all tied best moves,
   equally weighted), not with the noisy move that was played: the noise only
   widens the states seen, so the policy learns how to recover after a
   mistake.  The discounted return from each state is kept too.
2. :func:`behaviour_clone` trains the SB3 policy network on these pairs by
   supervised learning: cross-entropy of the (masked) action distribution
   against the oracle's moves, and squared error of the value head against
   the returns, so that PPO's first advantages are not noise.

Needs the ``[sb3]`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.sb3.env import TrainConfig, make_env
from baselines.simple_agents import NoisyOracleAgent
from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED, ORACLE_ACTIONS, SUCCESS, TURN
from wrappers.utils import seeding
from wrappers.utils.validators import check_int

__all__ = ["Demonstrations", "behaviour_clone", "collect_demonstrations"]


@dataclass
class Demonstrations:
    """States from noisy-oracle episodes with the oracle's moves and the returns.

    Attributes:
        observations: encoded observations, one row per state.
        masks: the admissible-action mask of each state.
        targets: per state, a distribution over actions: uniform over the
            oracle's best moves.
        returns: the discounted return from each state (rewards as trained).
        success_rate: the fraction of demonstration episodes that succeeded.
    """

    observations: np.ndarray
    masks: np.ndarray
    targets: np.ndarray
    returns: np.ndarray
    success_rate: float

    def __len__(self) -> int:
        return len(self.observations)


def collect_demonstrations(
    config: TrainConfig, episodes: int, epsilon: float = 0.2, seed: int = 0
) -> Demonstrations:
    """Play ``episodes`` episodes of ``NoisyOracleAgent(epsilon)`` on ``make_env(config)``."""
    check_int(episodes, "episodes", 1)
    env = make_env(config)
    base = env.unwrapped
    index_of = env.get_wrapper_attr("index_of")
    action_masks = env.get_wrapper_attr("action_masks")
    size = env.action_space.n
    agent = NoisyOracleAgent(epsilon=epsilon, choice="random", seed=seed)
    observations, masks, targets, returns = [], [], [], []
    successes = 0
    for episode in range(episodes):
        episode_seed = int(seeding.stream(seeding.SB3_DEMOS, seed, episode).integers(2**31))
        observation, info = env.reset(seed=episode_seed)
        labelled, rewards = [], []
        for turn in range(10**6):
            oracle = base.oracle_actions()
            target = np.zeros(size, dtype=np.float32)
            for action in oracle:
                position = index_of(action)
                if position is not None:
                    target[position] = 1.0
            # A state without a best move (a dead end) teaches nothing.
            labelled.append(bool(target.any()))
            if labelled[-1]:
                observations.append(observation)
                masks.append(action_masks())
                targets.append(target / target.sum())
            hints = {
                ORACLE_ACTIONS: oracle,
                ADMISSIBLE_ACTIONS: base.admissible_actions() or list(oracle),
                EPISODE_SEED: episode_seed,
                TURN: turn,
            }
            observation, reward, terminated, truncated, info = env.step(
                index_of(agent.act("", hints))
            )
            rewards.append(float(reward))
            if terminated or truncated:
                break
        successes += bool(info.get(SUCCESS))
        total, backwards = 0.0, []
        for reward in reversed(rewards):
            total = reward + config.gamma * total
            backwards.append(total)
        returns.extend(value for value, keep in zip(backwards[::-1], labelled, strict=True) if keep)
    env.close()
    return Demonstrations(
        observations=np.asarray(observations),
        masks=np.asarray(masks, dtype=bool),
        targets=np.asarray(targets, dtype=np.float32),
        returns=np.asarray(returns, dtype=np.float32),
        success_rate=successes / episodes,
    )


def behaviour_clone(
    model: Any,
    demonstrations: Demonstrations,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Train ``model.policy`` on the demonstrations; return the final loss and accuracy.

    Works for ``PPO``, ``A2C`` and ``MaskablePPO`` (masks are applied as in
    training).  The value head is fitted to the returns at the same time.
    """
    import torch

    policy = model.policy
    if not hasattr(policy, "get_distribution") or not hasattr(policy, "predict_values"):
        raise ValueError(
            f"Behaviour cloning needs an actor-critic policy (ppo, a2c, maskable_ppo), got "
            f"{type(model).__name__}."
        )
    if len(demonstrations) == 0:
        raise ValueError("No demonstration states to clone.")
    # MaskablePPO applies the masks, as in training; the others have none.
    masks = demonstrations.masks if type(model).__name__ == "MaskablePPO" else None
    policy.set_training_mode(True)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = seeding.stream(seeding.SB3_DEMOS, seed)
    count = len(demonstrations)
    observations, _ = policy.obs_to_tensor(demonstrations.observations)
    targets = torch.as_tensor(demonstrations.targets)
    returns = torch.as_tensor(demonstrations.returns)
    loss_value = accuracy = 0.0
    for _ in range(epochs):
        order = generator.permutation(count)
        for start in range(0, count, batch_size):
            rows = order[start : start + batch_size]
            batch = observations[rows]
            distribution = _distribution(policy, batch, None if masks is None else masks[rows])
            log_probs = torch.log_softmax(distribution.distribution.logits, dim=1)
            # Masked actions have a target of 0; clamp keeps 0 * -inf out of the sum.
            cross_entropy = -(targets[rows] * log_probs.clamp(min=-1e4)).sum(dim=1).mean()
            value_loss = torch.nn.functional.mse_loss(
                policy.predict_values(batch).flatten(), returns[rows]
            )
            loss = cross_entropy + 0.5 * value_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_value = float(cross_entropy.detach())
    policy.set_training_mode(False)
    with torch.no_grad():
        distribution = _distribution(policy, observations, masks)
        chosen = distribution.distribution.probs.argmax(dim=1).numpy()
    accuracy = float(np.mean(demonstrations.targets[np.arange(count), chosen] > 0))
    return {"cross_entropy": round(loss_value, 4), "accuracy": round(accuracy, 4)}


def _distribution(policy: Any, observations: Any, masks: np.ndarray | None) -> Any:
    """Return the policy's action distribution, masked when ``masks`` is given."""
    if masks is None:
        return policy.get_distribution(observations)
    return policy.get_distribution(observations, action_masks=masks)
