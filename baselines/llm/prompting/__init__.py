"""What a language model reads and writes, as text and tokens: ``baselines.llm``'s ground floor.

The reply formats beside their parser (``replies``), a turn's chat messages
(``messages``), the token prompt (``prompt_encoder``) and the chat template's
deltas between turns (``chat_tokens``), the few-shot examples (``few_shot``),
and tool calling (``tool_calls``, ``tool_messages``, ``hf_tools``).

It imports no other folder of ``baselines.llm``.
"""
