"""SmolLM2-135M-Instruct experiments: how the real-model run's env and prompt were chosen.

``setup`` is what they share with the real-model study and the GRPO speed
benchmark (the model, the few-shot prompt, the rollout); ``every_family``
plays every family zero-shot against few-shot; ``pick`` measures the base
model on held-out tasks; ``grpo_curve`` tabulates and plots a ``train-llm``
run's per-step log.  Each runs as ``python -m studies.real_llm.NAME``.
"""
