"""Plot a ``train-llm`` run's per-step log: training success, invalid replies, zero-variance groups.

Reads ``train_llm.json`` (its ``log``: one entry per GRPO step) and writes a
PNG beside the markdown table it prints.  Needs the ``[plot]`` extra.

    python -m studies.real_llm.grpo_curve runs/real-grpo/train_llm.json curve.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m studies.real_llm.grpo_curve TRAIN_LLM_JSON PNG", file=sys.stderr)
        return 2
    source, target = Path(argv[0]), Path(argv[1])
    log = json.loads(source.read_text())["log"]
    print("| step | training success | invalid replies | zero-variance groups | loss | seconds |")
    print("|---|---|---|---|---|---|")
    for e in log:
        print(
            f"| {e['step']} | {e['success']:.3f} | {e['invalid']:.3f} | {e['zero_std']:.2f} | "
            f"{e['loss']:.3f} | {e['seconds']:.1f} |"
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [e["step"] for e in log]
    figure, axis = plt.subplots(figsize=(7, 3.6))
    for key, label in (
        ("success", "training success (16 episodes)"),
        ("invalid", "invalid-reply rate"),
        ("zero_std", "zero-variance groups (of 2)"),
    ):
        axis.plot(steps, [e[key] for e in log], marker="o", markersize=3, label=label)
    axis.set_xlabel("GRPO step")
    axis.set_ylim(-0.02, 1.02)
    axis.set_title("SmolLM2-135M-Instruct, GRPO with LoRA on GuessNumber-20-v0 (T=8, CPU)")
    axis.legend(fontsize=8, loc="center right")
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=120)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
