"""LLM baselines, one folder per role; each imports only the folders below it.

- ``baselines.llm.training`` (top): the ``agent-envs train-llm`` command
  (``train``), its settings (``train_config``: ``LLMTrainConfig``, each setting
  beside its flag, and the settings object each phase takes whole), the
  multi-turn GRPO rollout for TRL (``rollout``, ``[rl]``) and its
  ``rewards``, the GRPO wiring (``grpo``, ``shared_opening``), the warm
  starts (``warm_start``, ``tool_warm_start``) and the evaluation of the
  saved model (``post_training_eval``);
- ``baselines.llm.agents``: ``LLMPolicy`` (``policy``: the prompt style,
  sampling and seeds every agent and the rollout share), ``HFAgent``
  (``hf_agent``, ``[llm]``), ``LlamaCppAgent`` (``llamacpp_agent``) and
  ``OpenAIChatAgent`` (``openai_agent``, with its HTTP client
  ``openai_client`` and its endpoint and key ``chat_endpoint``), the seeded
  sampler and generators (``generation``) and the per-episode KV cache
  (``prefix_cache``);
- ``baselines.llm.models``: which model and how it loads: short names and
  the cache (``resolve``, ``model_cache``, ``gguf_check``), ``hf_loading``,
  ``precision``, ``lora``, the built-in ``tiny`` model and the model a run
  trains (``model_source``);
- ``baselines.llm.prompting`` (ground): what a model reads and writes: the
  one prompt builder (``prompt_encoder``) that evaluation and training
  share, the reply formats beside their parser (``replies``), the chat
  messages of one turn (``messages``), the chat template's deltas
  (``chat_tokens``), the few-shot examples (``few_shot``) and tool calling
  (``tool_calls``, ``tool_messages``, ``hf_tools``).

``tests/test_layering.py`` holds the folders to that order.  Importing this
package imports nothing heavy; each module imports its extra.
"""
