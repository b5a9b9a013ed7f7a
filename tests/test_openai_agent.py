"""OpenAIChatAgent over real loopback sockets.

The server is a real ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) started in
the test; it answers with the tiny transformers model when transformers is
installed, and with an echo backend otherwise.  It can be told to fail with
503/429, to hang past the client's timeout, and more (see
``llm_fixtures.ChatServer``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import pickle

import gymnasium as gym
import pytest
from llm_fixtures import ChatServer, TinyBackend, build_tiny_model, echo_backend, prompt_words

from agent_envs import cli
from agent_envs.evaluation import evaluate
from agent_envs.protocol import AgentAction
from baselines.llm.agents.openai_agent import (
    ChatCompletionError,
    OpenAIChatAgent,
    chat_completions_url,
)
from baselines.llm.prompting.replies import DEFAULT_SYSTEM_PROMPT, parse_action
from wrappers.info import ChatHistory

pytestmark = pytest.mark.usefixtures("one_torch_thread")


SECRET = "sk-test-DO-NOT-LEAK-1234567890"


# ------------------------------------------------------------------- server
@pytest.fixture(scope="session")
def backend(tmp_path_factory):
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return echo_backend
    return TinyBackend(build_tiny_model(str(tmp_path_factory.getbasetemp())))


@pytest.fixture
def server(backend):
    chat = ChatServer(backend)
    yield chat
    chat.close()


@pytest.fixture(autouse=True)
def no_ambient_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def make_agent(server, **kwargs):
    kwargs.setdefault("max_new_tokens", 8)
    kwargs.setdefault("backoff", 0.0)
    kwargs.setdefault("timeout", 10.0)
    return OpenAIChatAgent(server.base_url, "tiny", **kwargs)


def test_act_posts_a_chat_completion_and_keeps_the_raw_reply(server):
    agent = make_agent(server, temperature=0.5, top_p=0.9)
    action = agent.act("I am thinking of a number.", {"episode_seed": 11})
    assert isinstance(action, AgentAction)
    assert action == parse_action(action.raw)
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    body = request["body"]
    assert body["model"] == "tiny" and body["max_tokens"] == 8
    assert (body["temperature"], body["top_p"], body["n"]) == (0.5, 0.9, 1)
    assert body["messages"] == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "I am thinking of a number."},
    ]
    assert isinstance(body["seed"], int)
    assert "Authorization" not in request["headers"]
    # The server reports one completion token per word of its reply: the agent keeps that count.
    assert agent.completion_tokens == len(action.raw.split()) > 0
    # ... and the action carries this reply's usage.
    assert action.tokens_generated == agent.completion_tokens
    assert action.tokens_read == prompt_words(body) > 0


def test_each_episode_logs_the_tokens_the_server_reported(server, tmp_path):
    """The run log's per-episode token sums add up to every request's usage."""
    agent = make_agent(server, concurrency=2)
    log = tmp_path / "run.jsonl"
    settings = {"ks": [1], "budgets": [3], "tasks": 3, "samples": 2, "n_bootstrap": 10}
    result = evaluate(agent, "agent_envs/GuessNumber-v0", log_path=log, **settings)
    episodes = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert len(episodes) == result.episodes == 6 and result.errors == 0
    reported = sum(prompt_words(request["body"]) for request in server.requests)
    assert sum(e["tokens_read"] for e in episodes) == reported > 0
    assert sum(e["tokens_generated"] for e in episodes) == agent.completion_tokens > 0
    assert all(e["wall_s"] >= 0 and e["cpu_s"] >= 0 for e in episodes)


def test_usage_that_is_not_a_count_is_not_counted(server):
    """A server's usage of the wrong type, negative or absent reads as not counted."""
    client = make_agent(server).client
    for usage in ({"prompt_tokens": True, "completion_tokens": -1}, {"prompt_tokens": "9"}, None):
        reply = {"choices": [{"message": {"content": "Action: 50"}}], "usage": usage}
        completion = client._content(reply)
        assert completion == ("Action: 50", None, None)


def test_greedy_replies_match_the_local_hf_agent(server, backend):
    """The same model behind HTTP and in-process, greedy: the same action."""
    if backend is echo_backend:
        pytest.skip("needs transformers")
    from baselines.llm.agents.hf_agent import HFAgent

    env = ChatHistory(gym.make("agent_envs/GuessNumber-v0"))
    observation, info = env.reset(seed=0, options={"task_id": 1})
    observation, _, _, _, info = env.step("50")
    remote = make_agent(server, temperature=0).act(observation, info)
    local = HFAgent(backend.model, tokenizer=backend.tokenizer, temperature=0, max_new_tokens=8)
    assert remote == local.act(observation, info)


def test_seed_is_derived_from_episode_seed_and_turn(server):
    agent = make_agent(server)
    for info in (
        {"episode_seed": 1, "turn": 0},
        {"episode_seed": 1, "turn": 0},
        {"episode_seed": 2, "turn": 0},
        {"episode_seed": 1, "turn": 1},
    ):
        agent.act("same observation", info)
    seeds = [request["body"]["seed"] for request in server.requests]
    assert seeds[0] == seeds[1] and len(set(seeds)) == 3


def test_the_request_seed_is_the_shared_llm_policy_derivation(server):
    from baselines.llm.agents.policy import LLMPolicy

    agent = make_agent(server, seed=3)
    assert isinstance(agent.policy, LLMPolicy)
    info = {"episode_seed": 9, "turn": 2}
    body = agent.request_body("Guess.", info)
    prompt = json.dumps(body["messages"], sort_keys=True)
    assert body["seed"] == LLMPolicy(seed=3).reply_seed(9, 2, prompt)


def test_history_from_chat_history_is_sent(server):
    env = ChatHistory(gym.make("agent_envs/GuessNumber-v0"), system_prompt="From wrapper.")
    observation, info = env.reset(seed=0, options={"task_id": 0})
    observation, _, _, _, info = env.step("50")
    make_agent(server).act(observation, info)
    sent = server.requests[0]["body"]["messages"]
    assert sent == info["messages"]
    assert sent[0]["content"] == "From wrapper."


def test_api_key_from_argument_or_environment(server, monkeypatch):
    make_agent(server, api_key=SECRET).act("x", {})
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    make_agent(server).act("x", {})
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer from-env"


def test_api_key_never_shows(server, caplog):
    agent = make_agent(server, api_key=SECRET, max_retries=1)
    assert SECRET not in repr(agent) and SECRET not in str(vars(agent))
    server.script.extend(["503", "401"])
    with caplog.at_level(logging.DEBUG), pytest.raises(ChatCompletionError) as failure:
        agent.act("x", {})
    assert "401" in str(failure.value)
    assert SECRET not in str(failure.value)
    assert "***" in str(failure.value)  # the server echoed it; it was blanked out
    assert all(SECRET not in record.getMessage() for record in caplog.records)
    assert any("503" in record.getMessage() for record in caplog.records)
    clone = pickle.loads(pickle.dumps(agent))
    assert SECRET not in repr(vars(clone)) and SECRET.encode() not in pickle.dumps(agent)


def test_a_transient_503_is_retried(server):
    server.script.append("503")
    action = make_agent(server, max_retries=2).act("x", {})
    assert isinstance(action, AgentAction)
    assert len(server.requests) == 2
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_a_429_with_retry_after_is_retried(server):
    server.script.extend(["429", "429"])
    make_agent(server, max_retries=2).act("x", {})
    assert len(server.requests) == 3


def test_retries_are_bounded(server):
    server.script.extend(["503"] * 5)
    with pytest.raises(ChatCompletionError, match="after 3 tries"):
        make_agent(server, max_retries=2).act("x", {})
    assert len(server.requests) == 3


@contextlib.contextmanager
def on_retry(action):
    """Call ``action`` when the client logs a retry: in its thread, before the retry is sent."""

    class Hook(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if " retry " in record.getMessage():
                action()

    client_logger = logging.getLogger("baselines.llm.agents.openai_client")
    hook = Hook(logging.WARNING)
    client_logger.addHandler(hook)
    try:
        yield
    finally:
        client_logger.removeHandler(hook)


def test_a_hang_past_the_timeout_is_retried_then_answered(server):
    # The first try hangs (the server never answers it), so its short deadline
    # passes on any machine; the retry then gets all the time the model needs.
    server.script.append("hang")
    agent = make_agent(server, timeout=0.2, max_retries=1)
    with on_retry(lambda: setattr(agent.client, "timeout", 60.0)):
        action = agent.act("x", {})
    assert action == parse_action(action.raw) and action.raw
    assert len(server.requests) == 2


def test_a_server_that_keeps_hanging_raises_a_timeout_error(server):
    server.script.extend(["hang", "hang"])
    with pytest.raises(ChatCompletionError, match=r"no complete response within 0\.2s"):
        make_agent(server, timeout=0.2, max_retries=1).act("x", {})
    assert server.wait_for_requests(2) == 2


def test_connection_refused_is_retried_then_raises(backend):
    chat = ChatServer(backend)
    url = chat.base_url
    chat.close()  # nothing listens on that port any more
    agent = OpenAIChatAgent(url, "tiny", max_retries=1, backoff=0.0)
    with pytest.raises(ChatCompletionError, match="connection failed"):
        agent.act("x", {})


@pytest.mark.parametrize(("script", "match"), [("400", "HTTP 400"), ("garbage", "not JSON")])
def test_other_errors_are_not_retried(server, script, match):
    server.script.append(script)
    with pytest.raises(ChatCompletionError, match=match):
        make_agent(server, max_retries=3).act("x", {})
    assert len(server.requests) == 1


def test_a_prompt_too_long_for_the_server_drops_old_exchanges(backend):
    chat = ChatServer(backend, context_limit=6)
    try:
        env = ChatHistory(gym.make("agent_envs/GuessNumber-v0"))
        observation, info = env.reset(seed=0, options={"task_id": 0})
        for guess in ("50", "25", "12", "6", "3", "1", "2"):
            observation, _, _, _, info = env.step(guess)
        make_agent(chat).act(observation, info)
        last = chat.requests[-1]["body"]["messages"]
        assert len(last) <= 6
        assert last[1] == info["messages"][0]  # the task statement (after the system prompt)
        assert last[-1] == info["messages"][-1]  # the latest observation
        assert len(chat.requests) <= 4  # halving: a few tries, not one per exchange
    finally:
        chat.close()


def test_a_prompt_too_long_drops_the_examples_first_and_keeps_the_task_statement():
    # Before the fix the first example's first observation (another lake's map)
    # was kept as the "task statement" and the episode's own was dropped instead.
    chat = ChatServer(echo_backend, context_limit=6)
    try:
        env = ChatHistory(gym.make("agent_envs/FrozenLake-v0"))
        observation, info = env.reset(seed=0, options={"task_id": 0})
        for move in ("left", "up", "left"):
            observation, _, terminated, truncated, info = env.step(move)
            assert not (terminated or truncated)
        agent = make_agent(chat, few_shot=1, env_id="agent_envs/FrozenLake-v0")
        for act in (
            lambda: agent.act(observation, info),
            lambda: agent.act_batch([observation], [info]),
        ):
            chat.requests.clear()
            act()
            first, last = (chat.requests[i]["body"]["messages"] for i in (0, -1))
            assert len(first) > 1 + len(info["messages"])  # the examples went out at first
            assert len(last) <= 6
            assert last[1] == info["messages"][0]  # the task statement (after the system prompt)
            assert last[-1] == info["messages"][-1]  # the latest observation
    finally:
        chat.close()


def test_act_batch_runs_requests_concurrently_and_keeps_order(server):
    server.script.extend(["barrier", "barrier"])  # both must be in flight at once
    agent = make_agent(server, concurrency=2, max_retries=0, temperature=0)
    observations = [f"observation number {index}" for index in range(6)]
    actions = agent.act_batch(observations, [{"episode_seed": i} for i in range(6)])
    assert server.max_in_flight == 2
    singles = [agent.act(o, {"episode_seed": i}) for i, o in enumerate(observations)]
    assert [a.raw for a in actions] == [a.raw for a in singles]


def test_act_batch_fails_only_the_episode_whose_request_failed(server):
    server.script.extend(["400"])
    agent = make_agent(server, concurrency=1, max_retries=0)
    first, second, third = agent.act_batch(["a", "b", "c"], [{}, {}, {}])
    assert isinstance(first, ChatCompletionError) and "HTTP 400" in str(first)
    assert isinstance(second, str) and isinstance(third, str)


def test_chat_completions_url():
    assert chat_completions_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("https://h/api/v1/") == "https://h/api/v1/chat/completions"
    assert chat_completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"base_url": "localhost:8000"}, ValueError),
        ({"base_url": "ftp://h/v1"}, ValueError),
        ({"model": ""}, ValueError),
        ({"concurrency": 0}, ValueError),
        ({"timeout": 0}, ValueError),
        # A timeout that is not a finite, sane number fails now.
        ({"timeout": float("nan")}, ValueError),
        ({"timeout": float("inf")}, ValueError),
        ({"timeout": 1e30}, ValueError),
        ({"backoff": float("nan")}, ValueError),
        ({"max_reply_bytes": 0}, ValueError),
        ({"max_retries": -1}, ValueError),
        ({"temperature": -0.1}, ValueError),
        ({"extra_body": {"stop": {1, 2}}}, TypeError),
        ({"extra_body": "stop"}, TypeError),
    ],
)
def test_bad_arguments_fail_clearly(kwargs, error):
    arguments = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **kwargs}
    # The error names the argument at fault (a set is refused by the JSON encoder).
    ((name, value),) = kwargs.items()
    match = "not JSON serializable" if isinstance(value, dict) else rf"^{name}\b"
    with pytest.raises(error, match=match):
        OpenAIChatAgent(**arguments)


def test_credentials_in_base_url_are_refused_without_echoing_them():
    """A user name and password in base_url never print."""
    with pytest.raises(ValueError) as failure:
        OpenAIChatAgent("http://bob:hunter2@127.0.0.1:9/v1", "m")
    assert "hunter2" not in str(failure.value) and "bob" not in str(failure.value)
    with pytest.raises(ValueError) as failure:
        OpenAIChatAgent("bob:hunter2@127.0.0.1:9/v1", "m")  # malformed as well
    assert "hunter2" not in str(failure.value)


def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(server, backend):
    """The bearer token is never sent to another origin."""
    elsewhere = ChatServer(backend)
    try:
        server.redirect_to = elsewhere.base_url + "/chat/completions"
        server.script.append("redirect")
        with pytest.raises(ChatCompletionError, match="redirected") as failure:
            make_agent(server, api_key=SECRET, max_retries=0).act("x", {})
        assert elsewhere.requests == []
        assert SECRET not in str(failure.value)
        assert "base_url" in str(failure.value)
    finally:
        elsewhere.close()


def test_timeout_is_a_deadline_for_the_whole_request(server):
    """A server that drips its reply cannot hold a request past timeout.

    The drip sends a byte every 20 ms (about 4 s for the whole reply), so no
    single read waits anywhere near the timeout; only a deadline over the
    whole request stops it.  The server sees the client hang up mid-reply,
    rather than the client reading it all and raising afterwards.
    """
    import time

    server.script.append("drip")
    with pytest.raises(ChatCompletionError, match=r"no complete response within 0\.3s"):
        make_agent(server, timeout=0.3, max_retries=0).act("x", {})
    for _ in range(500):  # the drip notices the hang-up at its next byte
        if server.drips:
            break
        time.sleep(0.02)
    assert server.drips == ["cut"]


def test_a_reply_larger_than_max_reply_bytes_is_an_error(server):
    """The bytes read per reply are capped."""
    server.script.append("huge")
    agent = make_agent(server, max_retries=0, max_reply_bytes=20_000)
    with pytest.raises(ChatCompletionError, match="larger than max_reply_bytes=20000"):
        agent.act("x", {})
    assert isinstance(agent.act("x", {}), AgentAction)  # a normal reply still fits


def test_extra_body_is_sent(server):
    make_agent(server, extra_body={"stop": ["\n\n"], "top_k": 5}).act("x", {})
    body = server.requests[0]["body"]
    assert body["stop"] == ["\n\n"] and body["top_k"] == 5
    json.dumps(body)


# ------------------------------------------------------- through the evaluator
def test_evaluate_over_http(server):
    from agent_envs.evaluation import evaluate

    result = evaluate(
        make_agent(server, concurrency=4),
        lambda: ChatHistory(gym.make("agent_envs/GuessNumber-v0")),
        ks=[1, 2],
        budgets=[2, 3],
        tasks=2,
        samples=2,
        batch_size=4,
        n_bootstrap=10,
    )
    assert result.errors == 0 and result.episodes == 4
    assert len(server.requests) == 12  # 4 episodes x 3 turns
    seeds = {request["body"]["seed"] for request in server.requests}
    assert len(seeds) == 12  # every attempt and turn samples anew


def test_a_failing_server_becomes_episode_errors_not_a_crash(server):
    from agent_envs.evaluation import evaluate

    server.script.extend(["400"] * 3)
    result = evaluate(
        make_agent(server, max_retries=0),
        "agent_envs/GuessNumber-v0",
        ks=[1],
        budgets=[2],
        tasks=3,
        n_bootstrap=10,
        max_error_rate=1.0,
    )
    assert result.errors == 3
    assert "HTTP 400" in result.error_examples[0]


def test_cli_eval_with_the_openai_agent(server, capsys, tmp_path):
    kwargs = {"base_url": server.base_url, "model": "tiny", "max_new_tokens": 4, "backoff": 0}
    out = tmp_path / "result.json"
    status = cli.main(
        [
            "eval",
            "GuessNumber-v0",
            "--agent",
            "openai",
            "--agent-kwargs",
            json.dumps(kwargs),
            "--k",
            "1",
            "--t",
            "2",
            "--tasks",
            "2",
            "--history",
            "1",
            "--n-bootstrap",
            "10",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert status == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["errors"] == 0
    assert len(server.requests) == 4
    assert len(server.requests[-1]["body"]["messages"]) == 4  # system, task, 1 exchange


def test_the_wrap_an_existing_agent_example_runs(capsys):
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "wrap_existing_agent.py"
    example = runpy.run_path(str(path))  # the script's globals, run as a module, not as main
    result = example["main"](["--tasks", "8"])
    assert result["errors"] == 0
    assert "Pass@(K,T)" in capsys.readouterr().out
    # Bisection within 7 guesses always finds a secret in 1..100.
    assert result["surface"][0][-1] == 1.0


def test_the_api_key_appears_nowhere_in_a_cli_run(server, capsys, tmp_path):
    """Not in stdout, stderr, the result, the log, transcripts or plots."""
    kwargs = {"base_url": server.base_url, "model": "tiny", "max_new_tokens": 4, "backoff": 0}
    files = {name: tmp_path / name for name in ("r.json", "run.jsonl", "r.png")}
    common = ["eval", "GuessNumber-v0", "--agent", "openai", "--k", "1", "--t", "2"]
    status = cli.main(
        [
            *common,
            "--agent-kwargs",
            json.dumps({**kwargs, "api_key": SECRET}),
            "--tasks",
            "2",
            "--n-bootstrap",
            "10",
            "--no-progress",
            "--transcripts",
            "--out",
            str(files["r.json"]),
            "--log",
            str(files["run.jsonl"]),
            "--plot",
            str(files["r.png"]),
        ]
    )
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert '"api_key": "***"' in printed.out  # the table title says a key was given
    for text in (printed.out, printed.err):
        assert SECRET not in text
    for path in files.values():
        assert SECRET.encode() not in path.read_bytes()
    # Bad --agent-kwargs holding a key: the error never echoes it.
    for bad in (
        f'{{"api_key": "{SECRET}", oops}}',
        json.dumps({**kwargs, "api_key": SECRET, "no_such_argument": 1}),
        json.dumps({**kwargs, "api_key": SECRET, "timeout": "soon"}),
    ):
        assert cli.main([*common, "--agent-kwargs", bad]) == 2
        printed = capsys.readouterr()
        assert "error" in printed.err and SECRET not in printed.err + printed.out


def test_a_rotated_key_resumes_the_run_and_another_model_does_not(server, capsys, tmp_path):
    """The resume check tells agents apart without the secret."""
    log = tmp_path / "run.jsonl"

    def run(**changes):
        kwargs = {"base_url": server.base_url, "model": "tiny", "max_new_tokens": 4, **changes}
        argv = ["eval", "GuessNumber-v0", "--agent", "openai", "--k", "1", "--t", "2"]
        argv += ["--tasks", "1", "--n-bootstrap", "10", "--no-progress", "--log", str(log)]
        return cli.main([*argv, "--agent-kwargs", json.dumps(kwargs)])

    assert run(api_key="sk-first-key-000") == 0
    requests = len(server.requests)
    assert run(api_key="sk-second-key-111") == 0  # same agent: resumed
    assert len(server.requests) == requests  # no episode redone
    assert run(api_key="sk-second-key-111", model="other") == 2
    assert "different settings" in capsys.readouterr().err
    assert b"sk-first" not in log.read_bytes() and b"sk-second" not in log.read_bytes()


def test_a_run_against_an_unreachable_server_exits_non_zero(backend, capsys, tmp_path):
    """Every episode failed, so the run fails and says why."""
    chat = ChatServer(backend)
    url = chat.base_url
    chat.close()  # nothing listens there now
    kwargs = {"base_url": url, "model": "tiny", "max_retries": 0, "backoff": 0}
    out = tmp_path / "r.json"
    argv = ["eval", "GuessNumber-v0", "--agent", "openai", "--agent-kwargs", json.dumps(kwargs)]
    argv += ["--k", "1", "--t", "2", "--tasks", "3", "--samples", "1", "--no-progress"]
    assert cli.main([*argv, "--out", str(out)]) == 2
    printed = capsys.readouterr()
    assert "every episode failed" in printed.err and "3 of 3 episodes" in printed.err
    assert "3x 'ChatCompletionError: POST" in printed.err and "connection failed" in printed.err
    assert printed.out == "" and not out.exists()
