"""SmolLM2-135M-Instruct's row of ``agent-envs bench``, served by llama.cpp on one thread.

It starts llama-cpp-python's OpenAI-compatible server (``python -m
llama_cpp.server`` from ``--server-python``, an environment with ``pip
install "llama-cpp-python[server]"``) on 127.0.0.1 with the shipped SmolLM2
Q4_1 GGUF and the ``chatml`` chat format, one thread and a 4096-token
context, then runs

    agent-envs bench v1 --only ID --history raw --transcripts --out OUT/NAME \\
        --agent openai --agent-kwargs '{"base_url": ..., "model": "smollm2",
        "temperature": 0.7, "concurrency": 1, "few_shot": 1, "max_new_tokens": 32}'

for each id of ``--only``, one at a time, each into its own folder (a
stopped id resumes from its run log when run again).  It writes
``OUT/NAME/server.json`` beside each ``bench.json``: the server's CPU
seconds for that id (process time, ``psutil``; the model runs there, so the
bench's own CPU seconds miss it), the wall seconds and the load average.

    nice python benchmarks/bench_smollm2_server.py --server-python /path/to/python \\
        --only agent_envs/Wordle-v0 --out runs/bench-smollm2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import psutil
from tool_mode_server import free_port, serve, wait_ready

from agent_envs.cli import main as cli_main
from agent_envs.files import atomic_write_text

#: The agent's settings: sampled (4 attempts a task differ), one few-shot example.
AGENT = {"temperature": 0.7, "concurrency": 1, "few_shot": 1, "max_new_tokens": 32}


def folder_name(env_id: str) -> str:
    """``agent_envs/Wordle-v0`` -> ``wordle``."""
    return env_id.split("/")[-1].removesuffix("-v0").lower()


def run_row(env_id: str, url: str, server: psutil.Process, out: Path) -> int:
    """Bench one id into ``out``; write its server cost beside the result; return the exit code."""
    kwargs = {"base_url": url, "model": "smollm2", **AGENT}
    cpu, wall = _cpu(server), time.perf_counter()
    code = cli_main(
        [
            "bench",
            "v1",
            "--only",
            env_id,
            "--history",
            "raw",
            "--transcripts",
            "--out",
            os.fspath(out),
            "--agent",
            "openai",
            "--agent-kwargs",
            json.dumps(kwargs),
        ]
    )
    cost = {
        "env_id": env_id,
        "server_cpu_s": round(_cpu(server) - cpu, 1),
        "wall_s": round(time.perf_counter() - wall, 1),
        "load_average": os.getloadavg(),
        "server": "llama-cpp-python server, chatml, 1 thread, n_ctx 4096",
    }
    atomic_write_text(out / "server.json", json.dumps(cost, indent=1) + "\n")
    print(json.dumps(cost), flush=True)
    return code


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server-python", default=sys.executable)
    parser.add_argument("--model", default="smollm2-135m", help="a short name or a .gguf path")
    parser.add_argument("--only", required=True, help="comma-separated env ids of suite v1")
    parser.add_argument("--out", required=True, help="a folder: one subfolder per id")
    parser.add_argument("--server-log", default="bench_smollm2_server.log")
    args = parser.parse_args(argv)
    args.chat_format, args.n_ctx = "chatml", 4096
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = serve(args, port)
    try:
        wait_ready(url, server)
        for env_id in args.only.split(","):
            out = Path(args.out) / folder_name(env_id)
            if run_row(env_id, url, psutil.Process(server.pid), out) != 0:
                return 1
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
