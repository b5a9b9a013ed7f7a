"""Write the example pictures of docs/rendering.md: one ``rgb_array`` frame per grid family.

Each picture is task 0 after two oracle moves, seed 0, scaled up 2x, saved as
a PNG by the tiny writer below (zlib, no imaging library).

Run: ``python tools/render_examples.py`` (writes ``docs/images/render_*.png``).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import gymnasium as gym
import numpy as np

import agent_envs

gym.register_envs(agent_envs)

EXAMPLES = {
    "sokoban": "agent_envs/Sokoban-v0",
    "frozen_lake": "agent_envs/FrozenLake-v0",
    "maze": "agent_envs/Maze-7x7-v0",
    "hanoi": "agent_envs/Hanoi-3-v0",
}


def png(image: np.ndarray) -> bytes:
    """Return ``image`` (H x W x 3, uint8) as PNG bytes."""
    height, width, _ = image.shape
    rows = b"".join(b"\x00" + image[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    out = Path(__file__).resolve().parents[1] / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    for name, env_id in EXAMPLES.items():
        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=0, options={"task_id": 0})
        for _ in range(2):
            env.step(env.unwrapped.oracle_actions()[0])
        image = env.render().repeat(2, axis=0).repeat(2, axis=1)
        (out / f"render_{name}.png").write_bytes(png(image))
        print(f"docs/images/render_{name}.png {image.shape}")


if __name__ == "__main__":
    main()
