"""The Ray backend: the same numbers and log as the local backend, resume across
backends, a killed worker, Ctrl-C, an unpicklable policy and the CLI end to end.

One local Ray instance (2 CPUs) serves the whole module.  Every test skips,
with the reason, when the ``[ray]`` extra is not installed.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import signal
import sys
import threading

import pytest

from agent_envs.cli import main
from agent_envs.evaluation import PerEpisode, evaluate
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.run_log import RunLog
from agent_envs.plugins import AgentSpec
from baselines.simple_agents import NoisyOracleAgent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the [ray] extra is not installed (pip install -e '.[ray]')",
)

GRID = dict(ks=[1, 2], budgets=[3, 6, 12], tasks=5, samples=3, seed=7, n_bootstrap=100)
TWO = dict(backend="ray", workers=2)


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    """One local Ray instance for the module; evaluate() reuses it and leaves it up."""
    import ray

    # The test policies live in this module, which Ray workers cannot import: ship them by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    if started:
        ray.shutdown()


class FlakyBatch:
    """An ``act_batch`` noisy oracle whose policy fails on some episodes (slot exceptions)."""

    required_info = ("admissible_actions", "oracle_actions")

    def __init__(self) -> None:
        self.agent = NoisyOracleAgent(epsilon=0.3)

    def act_batch(self, observations, infos):
        return [
            ValueError("flaky")
            if info["episode_seed"] % 5 == 0 and info["turn"] == 1
            else self.agent.act(observation, info)
            for observation, info in zip(observations, infos, strict=True)
        ]


class KillsItsWorker(NoisyOracleAgent):
    """A noisy oracle that SIGKILLs the Ray worker playing episode (2, 1) once.

    The marker file makes it happen once per test, and never in the driver.
    """

    def __init__(self, marker: str, driver_pid: int) -> None:
        super().__init__(epsilon=0.3)
        self.marker, self.driver_pid = marker, driver_pid

    def act(self, observation, info):
        if os.getpid() != self.driver_pid and info["turn"] == 1 and info["task_id"] == 2:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return super().act(observation, info)


#: Settings that say how a run was played, not what it measured.
HOW = ("backend", "workers", "chunk_size", "log_path")


def episodes(path):
    """The log's episode lines, in a canonical order, and its header's other settings."""
    header, *rest = (json.loads(line) for line in path.read_text().splitlines())
    settings = {key: value for key, value in header["settings"].items() if key not in HOW}
    for line in rest:
        for timing in EpisodeRecord.TIMINGS:  # measured, so different in each run
            line.pop(timing)
    return settings, sorted(rest, key=lambda line: (line["task"], line["sample"], line["budget"]))


def numbers(result):
    """Everything in a result that must not depend on the backend (timing aside)."""
    data = result.to_dict()
    data.pop("timing")
    data["settings"] = {key: value for key, value in data["settings"].items() if key not in HOW}
    return data


# The three policy shapes travel differently: a picklable act_batch object, a
# spec built in each worker, and a PerEpisode factory.
CASES = {
    "guess-number-batched-errors": ("agent_envs/GuessNumber-v0", FlakyBatch, {}),
    "frozen-lake-slippery-spec": (
        "agent_envs/FrozenLake-Slippery-v0",
        lambda: AgentSpec("noisy-oracle", {"epsilon": 0.3}),
        {},
    ),
    "sokoban-per-episode-visible": (
        "agent_envs/Sokoban-v0",
        lambda: PerEpisode(functools.partial(NoisyOracleAgent, epsilon=0.2)),
        {"visible_budget": True},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ray_gives_the_same_numbers_and_log_as_local(case, tmp_path):
    env_id, policy, extra = CASES[case]
    local = evaluate(policy(), env_id, **GRID, **extra, log_path=tmp_path / "local.jsonl")
    remote = evaluate(policy(), env_id, **GRID, **extra, log_path=tmp_path / "ray.jsonl", **TWO)
    assert numbers(remote) == numbers(local)
    assert remote.settings.backend == "ray" and remote.timing["workers"] == 2
    assert episodes(tmp_path / "ray.jsonl") == episodes(tmp_path / "local.jsonl")
    if case.startswith("guess"):
        assert 0 < remote.errors < remote.episodes  # policy errors stay episode errors
    else:  # one act() per turn (act_batch calls depend on how episodes are grouped)
        assert remote.timing["policy_calls"] == local.timing["policy_calls"]


def test_resume_across_backends_both_ways(tmp_path, monkeypatch):
    env_id = "agent_envs/FrozenLake-Slippery-v0"
    agent = NoisyOracleAgent(epsilon=0.3)
    whole = evaluate(agent, env_id, **GRID)
    # Local -> Ray: a local log cut after 6 episodes is finished on Ray.
    log = tmp_path / "local-first.jsonl"
    evaluate(agent, env_id, **GRID, log_path=log)
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:7]))
    resumed = evaluate(agent, env_id, **GRID, log_path=log, **TWO)
    assert resumed.timing["episodes_resumed"] == 6
    assert numbers(resumed) == numbers(whole)
    # Ray -> local: Ctrl-C on the driver while it writes the 5th episode.
    log = tmp_path / "ray-first.jsonl"
    append = RunLog.append

    def interrupted(self, record, transcript=None):
        if self.path.read_text().count("\n") == 5:
            raise KeyboardInterrupt
        append(self, record, transcript)

    monkeypatch.setattr(RunLog, "append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        evaluate(agent, env_id, **GRID, log_path=log, **TWO)
    monkeypatch.undo()
    assert len(episodes(log)[1]) == 4
    finished = evaluate(agent, env_id, **GRID, log_path=log)
    assert finished.timing["episodes_resumed"] == 4
    assert numbers(finished) == numbers(whole)


def test_a_killed_worker_loses_and_duplicates_nothing(tmp_path):
    env_id = "agent_envs/GuessNumber-v0"
    marker = tmp_path / "killed"
    named = dict(GRID, agent_name="noisy-oracle 0.3")
    local = evaluate(NoisyOracleAgent(epsilon=0.3), env_id, **named)
    killer = KillsItsWorker(str(marker), os.getpid())
    log = tmp_path / "run.jsonl"
    remote = evaluate(killer, env_id, **named, log_path=log, **TWO, chunk_size=4)
    assert marker.exists()  # a worker process really died mid-chunk
    _, lines = episodes(log)
    idents = [(line["task"], line["sample"], line["budget"]) for line in lines]
    assert len(idents) == len(set(idents)) == 5 * 3  # each episode exactly once
    assert numbers(remote) == numbers(local)


def test_an_unpicklable_policy_gets_a_clear_error(tmp_path):
    class Locked(NoisyOracleAgent):
        def __init__(self) -> None:
            super().__init__()
            self.lock = threading.Lock()

    log = tmp_path / "run.jsonl"
    with pytest.raises(TypeError, match=r"cannot be sent to Ray workers .*AgentSpec"):
        evaluate(Locked(), "agent_envs/GuessNumber-v0", **GRID, log_path=log, backend="ray")
    assert not log.exists()  # refused before the run started


def test_cli_eval_on_ray_matches_local(tmp_path, capsys):
    common = ["eval", "agent_envs/GuessNumber-v0", "--agent", "noisy-oracle"]
    common += ["--agent-kwargs", '{"epsilon": 0.3}', "--k", "1,2", "--t", "3,6"]
    common += ["--tasks", "4", "--samples", "2", "--n-bootstrap", "50", "--no-progress"]
    assert main([*common, "--out", str(tmp_path / "local.json")]) == 0
    ray_args = ["--backend", "ray", "--workers", "2", "--log", str(tmp_path / "ray.jsonl")]
    assert main([*common, *ray_args, "--out", str(tmp_path / "ray.json")]) == 0
    local, remote = (json.loads((tmp_path / f).read_text()) for f in ("local.json", "ray.json"))
    assert remote.pop("timing")["workers"] == 2
    local.pop("timing")
    for settings in (local["settings"], remote["settings"]):
        for name in HOW:
            settings.pop(name)
    assert remote == local
    capsys.readouterr()
    assert main([*common, "--backend", "ray", "--workers", "3"]) == 2
    assert "need 3 CPUs, but the cluster has 2" in capsys.readouterr().err
    assert main([*common, "--workers", "2"]) == 2
    assert "workers needs backend='ray' (--backend ray)" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [None, 1])
def test_workers_the_clusters_gpus_cannot_place_are_refused_not_left_waiting(workers):
    # The module's cluster has 2 CPUs and no GPU: an actor that reserves one GPU never
    # starts, and the run would wait for its chunks forever.
    grid = dict(ks=[1], budgets=[3], tasks=2, n_bootstrap=10, backend="ray", workers=workers)
    with pytest.raises(ValueError, match=r"need 1 CPUs and 1 GPUs .* has 2 and 0"):
        evaluate(NoisyOracleAgent(), "agent_envs/GuessNumber-v0", **grid, gpus_per_worker=1)


def _env_that_fails_in_workers(driver_pid: int):
    if os.getpid() != driver_pid:
        raise ModuleNotFoundError("No module named 'my_envs'")
    import gymnasium as gym

    return gym.make("agent_envs/GuessNumber-v0")


def test_a_worker_that_cannot_build_stops_the_run_at_once():
    env = functools.partial(_env_that_fails_in_workers, os.getpid())
    with pytest.raises(RuntimeError, match=r"could not build the policy or the env .*my_envs"):
        evaluate(NoisyOracleAgent(), env, **GRID, **TWO)


def test_cli_bench_on_ray_gives_the_local_rows_result(tmp_path, capsys):
    """`bench --backend ray`: one row of the suite, the same result as played here."""
    row = ["bench", "v1", "--agent", "noisy-oracle", "--agent-kwargs", '{"epsilon": 0.3}',
           "--only", "agent_envs/GuessNumber-v0"]  # fmt: skip
    assert main([*row, "--out", str(tmp_path / "local")]) == 0
    assert main([*row, "--backend", "ray", "--workers", "2", "--out", str(tmp_path / "ray")]) == 0
    capsys.readouterr()
    local, remote = (
        json.loads((tmp_path / f / "bench.json").read_text()) for f in ("local", "ray")
    )
    assert remote["score"] == local["score"] and remote["rows"] == ["agent_envs/GuessNumber-v0"]
    [(env_id, ray_row)] = remote["results"].items()
    assert ray_row["settings"]["backend"] == "ray" and ray_row["timing"]["workers"] == 2
    for result in (ray_row, local["results"][env_id]):
        result.pop("timing")
        for name in HOW:
            result["settings"].pop(name)
    assert ray_row == local["results"][env_id]
    assert episodes(tmp_path / "ray" / "logs" / "agent_envs__GuessNumber-v0.jsonl") == episodes(
        tmp_path / "local" / "logs" / "agent_envs__GuessNumber-v0.jsonl"
    )
    # The row's CPU holds the workers' episodes, which the bench process did not play.
    cost = remote["episode_columns"].index("cpu_s")
    workers = sum(episode[cost] for episode in remote["episodes"][env_id])
    assert remote["seconds"][env_id]["cpu"] >= round(workers, 2)
