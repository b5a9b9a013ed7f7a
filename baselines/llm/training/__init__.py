"""Training a language model on the envs: the ``train-llm`` command and its phases.

The settings (``train_config``), the multi-turn GRPO rollout (``rollout``,
with the dataset prompts it reads) and rewards (``rewards``), the GRPO wiring
(``grpo``, ``shared_opening``), the supervised warm starts (``warm_start``,
``tool_warm_start``), the command (``train``) and the evaluation of the model
it saved (``post_training_eval``).

The top floor of ``baselines.llm``: it imports the other three folders.
"""
