"""The language-model policies: what acts in an env, and how it generates.

``policy`` (``LLMPolicy``: the prompt style, sampling settings and seeds every
agent and the GRPO rollout share), the agents ``hf_agent``, ``llamacpp_agent``
and ``openai_agent`` (its HTTP client ``openai_client``, its endpoint and key
``chat_endpoint``), and local generation: ``generation`` (the seeded sampler
and the generators) and ``prefix_cache`` (the per-episode KV cache).

It imports :mod:`baselines.llm.prompting` and :mod:`baselines.llm.models`,
never :mod:`baselines.llm.training`.
"""
