"""Text mode against tool mode, on a real server: llama.cpp serving SmolLM2-135M-Instruct.

It starts llama-cpp-python's OpenAI-compatible server (``python -m
llama_cpp.server``, from ``--server-python``: an environment with
``pip install "llama-cpp-python[server]"``) on 127.0.0.1 with the shipped
SmolLM2-135M-Instruct GGUF and a function-calling chat format, then plays
each env with :class:`~baselines.llm.agents.openai_agent.OpenAIChatAgent` twice:

* **text**: the bare-action reply format (one line, ``"stop": ["\\n"]``);
* **tool**: ``tool_calls=True``: the env's action is the function ``act``
  (an enum of the admissible actions where they are few), the system prompt
  asks for a call, and the history goes back as ``tool_calls`` and ``tool``
  messages.  ``--tool-choice`` is ``act`` (the named function) by default:
  with ``auto``, llama-cpp-python 0.3.36's ``chatml-function-calling``
  generates the call's arguments with ``max_tokens=None`` whatever the
  request says, so a reply that loops inside the JSON string runs on to the
  end of the context (a request then took over 120 s here); the named
  function's path honours ``max_tokens``.

Both modes play the same tasks with the dialogue as history (the raw
replies, as ``--history-record raw``), greedy
(temperature 0, so one attempt a task), one few-shot oracle example.  Per
(env, mode) it prints Pass@(1,T), the unparsable rate (tool mode: a reply
with no call of ``act``), the invalid-action rate, the episodes the agent
broke (a request that failed after its retries), and the CPU seconds of the
server process and of this one (process time, from ``psutil``), with the load
average.  The server runs on one thread.

    nice python benchmarks/tool_mode_server.py --server-python /path/to/python \\
        [--tasks 10 --t 12] [--chat-format chatml-function-calling] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import gymnasium as gym
import psutil

import agent_envs
from agent_envs.evaluation import evaluate
from baselines.llm.agents.openai_agent import OpenAIChatAgent
from baselines.llm.models.resolve import gguf_file
from wrappers.info import chat_stack

gym.register_envs(agent_envs)

ENVS = ("agent_envs/GuessNumber-v0", "agent_envs/FrozenLake-v0")
MODES = ("text", "tool")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(args: argparse.Namespace, port: int) -> subprocess.Popen:
    """Start the llama.cpp server on ``port``; its log goes to ``args.server_log``."""
    command = [
        args.server_python,
        "-m",
        "llama_cpp.server",
        "--model",
        os.fspath(gguf_file(args.model)),
        "--model_alias",
        "smollm2",
        "--chat_format",
        args.chat_format,
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--n_ctx",
        str(args.n_ctx),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log = open(args.server_log, "w")  # noqa: SIM115  (the server holds it until it stops)
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(url: str, server: subprocess.Popen, timeout: float = 300.0) -> None:
    """Return once ``GET url/models`` answers; raise if the server exits or never answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}); see its log")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5):
                return
        except OSError:
            time.sleep(1.0)
    raise SystemExit(f"the server did not answer within {timeout:.0f} s")


def play(env_id: str, mode: str, url: str, server: psutil.Process, args) -> dict:
    """Evaluate one (env, mode); return its figures."""
    agent = OpenAIChatAgent(
        url,
        "smollm2",
        few_shot=args.few_shot,
        env_id=env_id,
        temperature=0.0,
        max_new_tokens=args.max_new_tokens,
        concurrency=1,
        tool_calls=mode == "tool",
        tool_choice=args.tool_choice if mode == "tool" else "auto",
    )
    server_cpu, cpu, wall = _cpu(server), time.process_time(), time.perf_counter()
    result = evaluate(
        agent,
        lambda: chat_stack(gym.make(env_id), args.t, record="raw"),
        ks=[1],
        budgets=[args.t],
        tasks=args.tasks,
        samples=1,
        n_bootstrap=200,
        max_error_rate=1.0,  # a broken episode is a finding here, not a reason to stop
    )
    diagnostics = result.diagnostics or {}
    return {
        "env": env_id,
        "mode": mode if mode == "text" else f"tool ({args.tool_choice})",
        "episodes": result.episodes,
        "errors": result.errors,
        "pass1": float(result.surface[0, -1]),
        "unparsable_rate": diagnostics.get("unparsable_rate"),
        "invalid_action_rate": diagnostics.get("invalid_action_rate"),
        "server_cpu_s": _cpu(server) - server_cpu,
        "client_cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "load_average": os.getloadavg(),
    }


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server-python", default=sys.executable)
    parser.add_argument("--model", default="smollm2-135m", help="a short name or a .gguf path")
    parser.add_argument("--chat-format", default="chatml-function-calling")
    parser.add_argument("--tool-choice", default="act", choices=("auto", "required", "act"))
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--t", type=int, default=12)
    parser.add_argument("--few-shot", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--server-log", default="tool_mode_server.log")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = serve(args, port)
    try:
        wait_ready(url, server)
        rows = []
        for env_id in args.envs.split(","):
            for mode in args.modes.split(","):
                rows.append(play(env_id, mode, url, psutil.Process(server.pid), args))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"{'env':28} {'mode':5} {'Pass@(1,T)':>10} {'unparsable':>10} {'invalid':>8} "
        f"{'server CPU-s':>12} {'client CPU-s':>12}  load"
    )
    for row in rows:
        print(
            f"{row['env']:28} {row['mode']:11} {row['pass1']:10.3f} "
            f"{_rate(row['unparsable_rate']):>10} {_rate(row['invalid_action_rate']):>8} "
            f"{row['errors']:6d} "
            f"{row['server_cpu_s']:12.1f} {row['client_cpu_s']:12.1f}  "
            + " ".join(f"{x:.2f}" for x in row["load_average"])
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"settings": vars(args), "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
