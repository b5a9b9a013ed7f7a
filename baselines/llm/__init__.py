"""LLM baselines: agents, prompting, generation and training.

- ``baselines.llm.prompting.prompt_encoder``: the one prompt builder (``PromptEncoder``) that
  evaluation and training share; ``replies`` the reply formats beside their
  parser; ``messages`` the chat messages of one turn;
- ``baselines.llm.agents.generation``: the seeded sampler, ``generate_replies`` and the
  training generators, shared by ``HFAgent`` and the GRPO rollout (``[llm]``);
- ``baselines.llm.agents.hf_agent``: ``HFAgent``, a local transformers model (``[llm]``),
  loaded by ``hf_loading``;
- ``baselines.llm.agents.openai_agent``: ``OpenAIChatAgent``, any OpenAI-compatible server
  (its HTTP client ``openai_client``, the endpoint and key ``chat_endpoint``);
- ``baselines.llm.agents.prefix_cache``: the per-episode KV cache across turns;
- ``baselines.llm.training.rollout``: the multi-turn GRPO rollout for TRL (``[rl]``), with
  ``tasks`` (dataset prompts) and ``rewards``;
- ``baselines.llm.training.warm_start``, ``baselines.llm.models.tiny``: the supervised warm start
  and the built-in tiny model;
- ``baselines.llm.training.train_config``: ``LLMTrainConfig``, each setting beside its flag,
  and the settings object each phase takes whole;
  ``baselines.llm.models.model_source``: the model to train;
- ``baselines.llm.training.grpo``: the GRPO wiring (TRL's trainer and its one callback ``GRPOLog``);
- ``baselines.llm.training.train``: ``train_llm`` and the ``agent-envs train-llm`` command;
  ``baselines.llm.training.post_training_eval`` evaluates the model it saved.

Importing this package imports nothing heavy; each module imports its extra.
"""
