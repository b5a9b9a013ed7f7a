"""Seconds of one RLlib PPO ``train()`` on FrozenLake: the docs' small config and the real-run one.

The small config (``--config small``, docs/integrations.md) samples in the driver
(``num_env_runners=0``) with a 512-step batch; the real-run one (``--config
large``) is the docs' former example: 2 env runners and a 2048-step batch.
Prints the build time, then per iteration the wall and the driver's CPU seconds
(the runners' CPU, in other processes, is not in that figure) and the load.

    python benchmarks/rllib_iteration.py [--config small|large] [--iterations 1]

Not a test: it starts Ray, takes a minute or more, and its times depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import time

CONFIGS = {
    "small": {"runners": 0, "batch": 512, "minibatch": 128, "epochs": 4},
    "large": {"runners": 2, "batch": 2048, "minibatch": 128, "epochs": 30},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--iterations", type=int, default=1)
    args = parser.parse_args()
    import logging

    import ray

    from agent_envs.env_stack import BudgetRegime
    from agent_envs.integrations.rllib import ppo_config

    size = CONFIGS[args.config]
    started = time.perf_counter()
    # As the tests start it: no dashboard, so a loaded machine starts it in time.
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    config = (
        ppo_config("agent_envs/FrozenLake-v0", BudgetRegime.mixed([6, 8, 12]))
        .env_runners(num_env_runners=size["runners"])
        .training(
            train_batch_size=size["batch"],
            minibatch_size=size["minibatch"],
            num_epochs=size["epochs"],
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    print(f"{args.config}: {size}; build {time.perf_counter() - started:.1f} s wall")
    try:
        for iteration in range(args.iterations):
            wall, cpu = time.perf_counter(), time.process_time()
            result = algo.train()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            print(
                f"iteration {iteration + 1}: {wall:.1f} s wall, {cpu:.1f} s driver CPU, "
                f"{steps} env steps so far, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    finally:
        algo.stop()
        ray.shutdown()


if __name__ == "__main__":
    main()
