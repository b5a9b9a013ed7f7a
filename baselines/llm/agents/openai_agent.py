"""OpenAIChatAgent: a model behind an OpenAI-compatible chat-completions server.

vLLM, SGLang, llama.cpp's server, TGI and the OpenAI API itself all serve
``POST /v1/chat/completions``.  The requests go through
:class:`~baselines.llm.agents.openai_client.ChatClient` (the standard library only,
so the ``openai`` SDK is not needed), which retries transient failures,
enforces the deadline and the reply cap, and keeps the API key secret; see
:mod:`baselines.llm.agents.openai_client`.

Prompts and parsing are the ones :class:`~baselines.llm.agents.hf_agent.HFAgent` uses
(:mod:`baselines.llm.prompting.prompt_encoder`, :mod:`baselines.llm.prompting.replies`): the
dialogue from ``info["messages"]`` or the observation alone, the system
prompt first, and the action parsed out of the reply, whose full text is kept
as ``AgentAction.raw``.  The server applies the chat template; the agent does
not trim long dialogues before sending them (use
``wrappers.ChatHistory(window=N)`` to bound them; see "Long dialogues").

Seeds.  Each request carries ``seed``, derived from the agent's ``seed``,
``info["episode_seed"]`` (different for every attempt), the turn and the
prompt (:meth:`~baselines.llm.agents.policy.LLMPolicy.reply_seed`).  Servers that
honour it (vLLM, SGLang, llama.cpp) then make a rerun draw the same samples
while the K attempts of Pass@K stay independent.

Long dialogues.  When the server refuses a prompt as longer than the model's
context, the agent drops the few-shot examples, if any, then the older half
of the exchanges between the task statement and the latest exchange, and
sends the request again, as
``HFAgent`` trims its prompts; the system prompt, the task statement and the
latest exchange are always kept.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from agent_envs.protocol import AgentAction
from agent_envs.redaction import remember, scrub, secret_values
from baselines.llm.agents.openai_client import (
    DEFAULT_MAX_REPLY_BYTES,
    MAX_TIMEOUT,
    ChatClient,
    ChatCompletionError,
    Completion,
    ContextTooLong,
    chat_completions_url,
)
from baselines.llm.agents.policy import LLMAgent
from baselines.llm.prompting.few_shot import oracle_episodes
from baselines.llm.prompting.messages import (
    build_messages,
    count_exchanges,
    drop_exchanges,
    insert_examples,
    turn_of,
)
from baselines.llm.prompting.replies import to_agent_action, with_tokens
from baselines.llm.prompting.tool_calls import TOOL_NAME, action_tool
from baselines.llm.prompting.tool_messages import (
    example_turns,
    record_reply,
    tool_dialogue,
    tool_settings,
)
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED
from wrappers.utils.validators import check_bool, check_int

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "MAX_TIMEOUT",
    "ChatCompletionError",
    "OpenAIChatAgent",
    "chat_completions_url",
]

logger = logging.getLogger(__name__)


class OpenAIChatAgent(LLMAgent):
    """Act with a model served behind an OpenAI-compatible ``/v1/chat/completions``.

    Args:
        base_url: the server, e.g. ``"http://localhost:8000/v1"``.
        model: the model name the server knows.
        api_key: the bearer token; by default ``$OPENAI_API_KEY``; none is sent
            when neither is set (local servers need none).
        system_prompt: put first in every prompt (``None`` for none); a system
            message from ``wrappers.ChatHistory`` takes its place.  By default
            the reply format's own, as ``HFAgent``'s.
        few_shot, reply_format, env_id: as ``HFAgent``'s
            (:class:`~baselines.llm.prompting.few_shot.PromptStyle`): oracle episodes
            shown first, and the reply format.  With the bare-action format
            each request carries ``"stop": ["\\n"]`` (unless ``extra_body``
            says otherwise), so the server ends a reply at its first line.
            If the server refuses a long prompt, the examples are dropped
            before the episode's own exchanges.
        temperature: ``0`` for greedy decoding, else the sampling temperature.
        top_p: nucleus sampling threshold in ``(0, 1]``.
        max_new_tokens: the most tokens generated per turn (the request's
            ``max_tokens``).
        timeout, max_retries, backoff, max_backoff, max_reply_bytes: the
            requests' deadline, retries and reply cap, as
            :class:`~baselines.llm.agents.openai_client.ChatClient`'s; a failure
            that outlasts them is that episode's error.
        concurrency: the most requests in flight during ``act_batch``, which
            leaves a request that fails for good as its
            :class:`ChatCompletionError` in that episode's slot (the
            evaluator records an error for that episode alone).
        seed: the agent's seed, mixed into every request's ``seed``.
        extra_body: more JSON fields for every request, such as
            ``{"stop": ["\\n\\n"]}`` or vLLM's ``{"top_k": 20}``.
        tool_calls: offer the env's action as the function ``act``
            (:func:`baselines.llm.prompting.tool_calls.action_tool`: a JSON schema, with
            an enum of the admissible actions where they are few) and read
            the move from the reply's ``tool_calls``; a reply without a call
            of ``act`` is an empty action, counted as unparsable.  The server
            must support function calling (vLLM, SGLang, llama.cpp's server
            with a function-calling chat format).
        tool_choice: the request's ``tool_choice`` in tool mode: ``"auto"``
            (the default: the server decides), ``"required"`` (a call is
            required) or ``"act"`` (a call of ``act``); other than ``"auto"``
            it needs ``tool_calls=True``.

    Example::

        agent = OpenAIChatAgent("http://localhost:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
        action = agent.act(observation, info)   # an AgentAction; action.raw is the reply
    """

    shown_before_seed = ("concurrency",)
    shown_after_seed = ("client",)

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 16,
        extra_body: dict[str, Any] | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        tool_calls: bool = False,
        tool_choice: str = "auto",
        **settings: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidValue(f"model must be a non-empty str, got {model!r}.")
        tool_calls = check_bool(tool_calls, "tool_calls")
        self.tool_choice = _check_tool_choice(tool_choice, tool_calls)
        super().__init__(**tool_settings(settings, tool_calls))
        #: Sends the requests; holds the URL, the key, the deadline and the retries.
        self.client = ChatClient(
            base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            max_reply_bytes=max_reply_bytes,
        )
        # The client reads the move from tool_calls; the tool's enum needs the admissible actions.
        self.tool_calls = self.client.tool_calls = tool_calls
        self.required_info = (*self.required_info, *[ADMISSIBLE_ACTIONS] * tool_calls)
        self.concurrency = check_int(concurrency, "concurrency", 1)
        self.model = self.name = model
        self.extra_body = _checked_extra_body(extra_body)

    @property
    def url(self) -> str:
        """The chat-completions endpoint."""
        return self.client.url

    @property
    def shown_url(self) -> str:
        """The endpoint as messages show it (secret query parameters masked)."""
        return self.client.shown_url

    @property
    def completion_tokens(self) -> int:
        """Completion tokens the server reported so far (when it reports usage)."""
        return self.client.completion_tokens

    def interrupt(self) -> None:
        """Stop at once: cut every request in flight and send no retry.

        ``act_batch`` calls it when Ctrl-C reaches the main thread, so that its
        request threads end now instead of waiting out their timeouts and
        retries; the next ``act_batch`` starts afresh.
        """
        self.client.interrupt()

    # ---------------------------------------------------------------- acting
    def act(self, observation: str, info: dict[str, Any]) -> AgentAction:
        """Return the action for one episode."""
        body = self.request_body(observation, info)
        return _action(self.complete(body, len(self._examples(info))), info)

    def write_reply(self, action: str) -> str:
        """Return ``action`` written as this agent's reply (in tool mode, a call's record)."""
        if not self.tool_calls:
            return super().write_reply(action)
        call = {"function": {"name": TOOL_NAME, "arguments": json.dumps({"action": action})}}
        return record_reply({"content": None, "tool_calls": [call]}, turn=0).raw

    def _act_batch(
        self, observations: list[str], infos: list[dict[str, Any]]
    ) -> list[AgentAction | ChatCompletionError]:
        """Return one action per episode, with up to ``concurrency`` requests in flight.

        A request that fails for good leaves its :class:`ChatCompletionError`
        in that episode's slot, so the evaluator records an error for that
        episode alone and the others go on.
        """
        bodies = [
            self.request_body(obs, info) for obs, info in zip(observations, infos, strict=True)
        ]
        examples = [len(self._examples(info)) for info in infos]
        self.client.resume()
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(bodies)))
        try:
            futures = [
                pool.submit(self.complete, body, count)
                for body, count in zip(bodies, examples, strict=True)
            ]
            wait(futures)
        except BaseException:  # Ctrl-C in the main thread: the request threads stop too
            self.interrupt()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [
            _action(future.result(), info) if future.exception() is None else future.exception()
            for future, info in zip(futures, infos, strict=True)
        ]

    def request_body(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        """Return the JSON body of the request for one turn."""
        if self.tool_calls:
            messages = self.tool_messages(observation, info)
        else:
            messages = insert_examples(
                build_messages(observation, info, self.system_prompt), self._examples(info)
            )
        prompt_key = json.dumps(messages, sort_keys=True)
        stop = {"stop": ["\n"]} if self.style.reply_format == "action" else {}
        if self.tool_calls:  # a call is JSON that a stop at a newline could cut
            stop = {"tools": [action_tool(info)], "tool_choice": self.tool_choice}
        return {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_new_tokens,
            "n": 1,
            "seed": self.policy.reply_seed(info.get(EPISODE_SEED), turn_of(info), prompt_key),
            **stop,
            **self.extra_body,
        }

    def tool_messages(self, observation: str, info: dict[str, Any]) -> list[dict[str, Any]]:
        """Return the tool-native messages of one turn, few-shot examples as tool-call turns."""
        return tool_dialogue(observation, info, self.system_prompt, self._examples(info))

    def _examples(self, info: dict[str, Any]) -> Any:
        """Return the few-shot messages of ``info``'s episode (tool-call turns in tool mode)."""
        if not self.tool_calls:
            return self.style.examples(info)
        env_id = self.style.example_env(info)
        return example_turns(oracle_episodes(env_id, self.style.few_shot) if env_id else ())

    def complete(self, body: dict[str, Any], examples: int = 0) -> Completion:
        """Send one request and return the reply: its text (in tool mode, its message) and usage.

        Transient failures are retried; a prompt the server finds too long is
        sent again without its ``examples`` few-shot messages (those right
        after the system prompt), then with the older half of the exchanges
        dropped.
        """
        while True:
            try:
                return self.client.send(body)
            except ContextTooLong as failure:
                messages = body["messages"]
                if examples:  # kept as the head, they would cost the task statement instead
                    head = 1 if messages and messages[0]["role"] == "system" else 0
                    logger.info("Prompt too long for the server; dropping the few-shot examples.")
                    body = {**body, "messages": [*messages[:head], *messages[head + examples :]]}
                    examples = 0
                    continue
                exchanges = count_exchanges(messages)
                if exchanges == 0:
                    raise ChatCompletionError(
                        f"POST {self.shown_url}: the prompt is too long even without history "
                        f"(system prompt, task and latest exchange): {failure}"
                    ) from None
                dropped = (exchanges + 1) // 2
                logger.info("Prompt too long for the server; dropping %d exchanges.", dropped)
                body = {**body, "messages": drop_exchanges(messages, dropped)}


def _action(reply: Completion, info: dict[str, Any]) -> AgentAction:
    """Return the action of a reply (a text's as parsed, a message's as recorded and
    scrubbed), carrying the tokens the server said it read and wrote."""
    if isinstance(reply.content, str):
        action = to_agent_action(reply.content)
    else:
        recorded = record_reply(reply.content, turn_of(info))
        action = AgentAction(scrub(recorded), raw=scrub(recorded.raw))
    return with_tokens(action, reply.prompt_tokens, reply.completion_tokens)


def _checked_extra_body(extra_body: dict[str, Any] | None) -> dict[str, Any]:
    """Return a copy of ``extra_body``, checked now so that a bad one fails before the first turn.

    Its secrets are remembered, so that no message shows them.
    """
    if extra_body is not None and not isinstance(extra_body, dict):
        raise InvalidType(f"extra_body must be a dict or None, got {type(extra_body).__name__}.")
    extra_body = dict(extra_body or {})
    json.dumps(extra_body)
    remember(secret_values({"extra_body": extra_body}))
    return extra_body


#: What ``tool_choice`` may be: the server picks, a call is required, or ``act`` is.
TOOL_CHOICES = ("auto", "required", TOOL_NAME)


def _check_tool_choice(tool_choice: Any, tool_calls: bool) -> str | dict[str, Any]:
    """Return the request's ``tool_choice`` (a named function as OpenAI's object)."""
    if tool_choice not in TOOL_CHOICES:
        raise InvalidValue(
            f"tool_choice must be one of {', '.join(TOOL_CHOICES)} (a named function: "
            f"the one tool, {TOOL_NAME}), got {tool_choice!r}."
        )
    if tool_choice != "auto" and not tool_calls:
        raise InvalidValue(f"tool_choice={tool_choice!r} needs tool_calls=True.")
    if tool_choice == TOOL_NAME:
        return {"type": "function", "function": {"name": TOOL_NAME}}
    return tool_choice
