"""The real model in float32 and bfloat16 on this CPU, against its matmul rate measured here.

For each dtype it measures, on one thread:

* the **floor**: a 512x576 by 576x1536 matrix multiply (SmolLM2's MLP shape),
  GFLOP per CPU-second;
* the **GRPO update**: SmolLM2-135M with LoRA (rank 16, ``q_proj`` and
  ``v_proj``, every layer, the real-model studies' adapters) forward and
  backward over 4 x 256 tokens, CPU-s per 1k trained tokens, and its ratio to
  the floor (``4 x parameters`` FLOP a trained token: the forward, and the
  backward through the activations; the frozen weights get no gradient, and
  the adapters' share is below 1%);
* **decoding**: a prefill of 8 x 400 tokens and 6 cached single-token steps,
  CPU-s, as a rollout turn runs them.

bfloat16 means :mod:`baselines.llm.models.precision`'s: the base stored in bfloat16,
every forward under bfloat16 autocast, the adapters float32.  Each figure is
the minimum of ``--repeats`` runs (CPU time, ``time.process_time``).  Run it
on a quiet core; it prints the load average.

    python benchmarks/bf16_speed.py
"""

from __future__ import annotations

import argparse
import copy
import os
import time


def _cpu(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        function()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    from baselines.llm.models.hf_loading import load_for_inference
    from baselines.llm.models.lora import LoRASpec, apply_lora
    from baselines.llm.models.precision import autocast_for, native_bfloat16

    torch.set_num_threads(1)
    torch.manual_seed(0)
    base, _, _ = load_for_inference("smollm2-135m", None, "cpu", "float32", False)
    parameters = sum(p.numel() for p in base.parameters())
    tokens = torch.randint(0, 40_000, (4, 256))
    prompts = torch.randint(0, 40_000, (8, 400))
    print(f"native bfloat16: {native_bfloat16('cpu')}; parameters {parameters / 1e6:.1f} M")
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(512, 576).to(dtype), torch.randn(576, 1536).to(dtype)
        matmul = _cpu(lambda a=a, b=b: [a @ b for _ in range(50)], args.repeats)
        floor = 50 * 2 * 512 * 576 * 1536 / matmul / 1e9
        torch.manual_seed(1)
        model = apply_lora(
            copy.deepcopy(base).to(dtype), LoRASpec(16, targets=("q_proj", "v_proj"))
        )

        def update(model=model):
            model.zero_grad()
            with autocast_for(model):
                loss = model(input_ids=tokens, labels=tokens).loss
            loss.float().backward()

        def decode(model=model):
            with torch.no_grad(), autocast_for(model):
                out = model(input_ids=prompts, use_cache=True)
                cache, step = out.past_key_values, out.logits[:, -1:].argmax(-1)
                for _ in range(6):
                    out = model(input_ids=step, past_key_values=cache, use_cache=True)
                    cache, step = out.past_key_values, out.logits[:, -1:].argmax(-1)

        update()  # the first call allocates
        per_k = _cpu(update, args.repeats) / tokens.numel() * 1000
        limit = 4 * parameters * 1000 / (floor * 1e9)
        print(
            f"{str(dtype).removeprefix('torch.'):9s} floor {floor:6.1f} GFLOP/CPU-s | "
            f"update {per_k:5.2f} CPU-s per 1k tokens ({per_k / limit:.1f}x the floor's "
            f"{limit:.2f}) | decode {_cpu(decode, args.repeats):5.2f} CPU-s"
        )
    print(f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
