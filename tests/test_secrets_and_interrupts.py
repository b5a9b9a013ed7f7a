"""Secrets masked by value, interrupts, whole outputs on a full disk, and one-line errors.

Servers listen on
127.0.0.1 only; the CLI runs in process (``cli.main``) unless a test needs a
real signal or a resource limit, which need a process of their own.
"""

from __future__ import annotations

import json
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from cli_fixtures import one_error_line

from agent_envs import cli
from agent_envs.evaluation import evaluate
from agent_envs.plugins import describe_agent
from agent_envs.redaction import is_secret_name, scrub, secret_values
from baselines.simple_agents import OracleAgent

GUESS = "agent_envs/GuessNumber-v0"
ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-hardening-v2-SECRET-0123456789"
QUICK = ["--k", "1", "--t", "3", "--tasks", "2", "--n-bootstrap", "10", "--no-progress"]


# ------------------------------------------------------------------ a raw server
class RawServer:
    """A TCP server on 127.0.0.1 whose every reply is ``respond(request_bytes) -> bytes``.

    ``respond`` returning ``None`` hangs the request until :meth:`close`.
    Every request is recorded as its raw bytes, in arrival order.
    """

    def __init__(self, respond) -> None:
        self.requests: list[bytes] = []
        self.closed = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += self.request.recv(65536)
                server.requests.append(data)
                reply = respond(data)
                if reply is None:
                    server.closed.wait(60)
                    return
                self.request.sendall(reply)

        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.tcp.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.tcp.server_address[1]}/v1"
        threading.Thread(target=self.tcp.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        self.tcp.shutdown()
        self.tcp.server_close()


def http_reply(status: str, body: str = "") -> bytes:
    data = body.encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + data


def openai_eval(tmp_path, kwargs: dict, *extra: str) -> int:
    """Run ``agent-envs eval --agent openai`` with a log and an --out in ``tmp_path``."""
    settings = {"model": "m", "backoff": 0, "timeout": 10, **kwargs}
    return cli.main(
        [
            "eval",
            GUESS,
            "--agent",
            "openai",
            "--agent-kwargs",
            json.dumps(settings),
            *QUICK,
            "--log",
            str(tmp_path / "run.jsonl"),
            "--out",
            str(tmp_path / "out.json"),
            *extra,
        ]
    )


def everything_written(tmp_path, capsys) -> str:
    """Stdout, stderr and every file the run wrote."""
    printed = capsys.readouterr()
    files = [path.read_text(errors="replace") for path in tmp_path.rglob("*") if path.is_file()]
    return "\n".join([printed.out, printed.err, *files])


def assert_no_key(text: str, key: str = KEY) -> None:
    # No piece of it either: a cut after masking left 18 of 19 characters once.
    for start in range(0, len(key) - 8):
        assert key[start : start + 8] not in text, (key[start : start + 8], text[-2000:])


# ------------------------------------------------------- item 3: secrets by value
@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(http_reply(f"401 Bad key {KEY}", "no"), id="401-reason-phrase"),
        pytest.param(http_reply(f"503 Busy {KEY}", "later"), id="503-reason-and-retries"),
        pytest.param(f"HTTP/1.1 {KEY} garbage\r\n\r\n".encode(), id="garbage-status-line"),
        # The retry warnings show the cut body whole: 10 characters of the key once.
        pytest.param(http_reply("503 No", "x" * 490 + KEY), id="key-cut-by-the-body-limit"),
    ],
)
def test_a_key_echoed_by_the_server_is_masked_everywhere(tmp_path, capsys, caplog, reply):
    """Item 3: reason phrases, garbage status lines, retry warnings, the 500-byte cut."""
    server = RawServer(lambda request: reply)
    try:
        status = openai_eval(tmp_path, {"base_url": server.base_url, "api_key": KEY})
    finally:
        server.close()
    assert status == 2
    # caplog: pytest takes the retry warnings that a terminal shows on stderr.
    assert_no_key(everything_written(tmp_path, capsys) + caplog.text)
    assert f"Bearer {KEY}".encode() in server.requests[0]  # the server did get it


def test_a_key_from_the_environment_with_a_newline_is_trimmed_and_masked(
    tmp_path, capsys, monkeypatch
):
    """Item 3: $OPENAI_API_KEY, with the trailing newline of a key read from a file."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    server = RawServer(lambda request: http_reply(f"401 Who is {KEY}", request.decode()))
    try:
        assert openai_eval(tmp_path, {"base_url": server.base_url}) == 2
    finally:
        server.close()
    text = everything_written(tmp_path, capsys)
    assert_no_key(text)
    assert "HTTP 401" in text  # the error itself still reads
    # The header carried the trimmed key, not an "Invalid header value" error.
    assert f"Bearer {KEY}\r\n".encode() in server.requests[0]


def test_a_key_in_the_url_query_reaches_neither_stdout_nor_the_files(tmp_path, capsys):
    """Item 3: `?api_key=` reached stdout (the table title) and out.json."""
    answer = json.dumps({"choices": [{"message": {"content": "Action: 50"}}]})
    server = RawServer(lambda request: http_reply("200 OK", answer))
    try:
        url = f"{server.base_url}?api_key={KEY}&n=1"
        assert openai_eval(tmp_path, {"base_url": url}) == 0
    finally:
        server.close()
    assert_no_key(everything_written(tmp_path, capsys))
    assert f"api_key={KEY}".encode() in server.requests[0]  # still sent where it belongs
    agent = json.loads((tmp_path / "out.json").read_text())["settings"]["agent_name"]
    assert "api_key=***" in agent


class LeaksItsToken:
    """A ``module:Class`` agent whose errors quote its token, raw, JSON-escaped and URL-encoded."""

    def __init__(self, accessToken: str, endpoint: str = "") -> None:
        self.token, self.endpoint = accessToken, endpoint

    def act(self, observation, info):
        raise ValueError(
            f"server said {self.token} / {json.dumps(self.token)} / "
            f"{urllib.parse.quote(self.token, safe='')} / {self.endpoint}"
        )


LEAKER = "tests.test_secrets_and_interrupts:LeaksItsToken"


def test_an_agent_error_never_shows_its_secret_in_any_form(tmp_path, capsys):
    """Item 3: episode errors were never masked; camelCase names; escaped and encoded forms."""
    token = 'tok"en/with+odd chars\\1234'
    kwargs = json.dumps({"accessToken": token})
    log = tmp_path / "run.jsonl"
    agent = ["--agent", LEAKER, "--agent-kwargs", kwargs]
    status = cli.main(["eval", GUESS, *agent, *QUICK, "--transcripts", "--log", str(log)])
    assert status == 2
    text = everything_written(tmp_path, capsys)
    for form in (token, json.dumps(token)[1:-1], urllib.parse.quote(token, safe="")):
        assert form not in text
    assert "server said ***" in text


def test_secret_names_cover_camel_and_kebab_case():
    """Item 3: accessToken, authToken, secretKey, api-key, x-api-key and Authorization."""
    for name in ("accessToken", "authToken", "secretKey", "api-key", "x-api-key", "Authorization"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "key", "monkey", "tokens", "temperature"):
        assert not is_secret_name(name), name
    headers = {"headers": {"x-api-key": "abcdef123456", "Authorization": "Bearer zyxwvu98765"}}
    shown = describe_agent("openai", headers)
    assert "abcdef123456" not in shown and "zyxwvu98765" not in shown
    # By value too: the credential after "Bearer" alone, as a server may echo it.
    assert scrub("got zyxwvu98765", secret_values(headers)) == "got ***"


# -------------------------------------------------- item 4: masking stays readable
def test_a_short_secret_masks_by_position_not_every_letter(tmp_path, capsys):
    """Item 4: with the URL user name `u`, every letter u became `***`."""
    endpoint = "http://u:longpassword99@127.0.0.1:9/v1"
    kwargs = json.dumps({"accessToken": "tok-123456789", "endpoint": endpoint})
    status = cli.main(["eval", GUESS, "--agent", LEAKER, "--agent-kwargs", kwargs, *QUICK])
    assert status == 2
    line = one_error_line(capsys)
    assert "longpassword99" not in line and "http://***@127.0.0.1:9/v1" in line
    assert "every episode failed" in line and "ValueError" in line  # the letter u survives


# ----------------------------------------------------------- item 5: Ctrl-C
def test_ctrl_c_while_the_server_hangs_exits_at_once_and_sends_no_retry(tmp_path):
    """Item 5: after Ctrl-C the process kept retrying for 178 s; now it stops, no retry."""
    server = RawServer(lambda request: None)  # accepts, reads, never answers
    kwargs = {"base_url": server.base_url, "model": "m", "timeout": 60, "max_retries": 2}
    command = [sys.executable, "-m", "agent_envs.cli", "eval", GUESS, "--agent", "openai"]
    command += ["--agent-kwargs", json.dumps({**kwargs, "backoff": 0}), *QUICK[:4]]
    command += ["--tasks", "3", "--no-progress"]  # three requests in flight at once
    # A job a non-interactive shell starts in the background (a CI runner, say) inherits
    # SIGINT ignored, and Python then never raises KeyboardInterrupt: restore the default
    # in the child, as a terminal user's process has it.
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60  # a test timeout, not a speed threshold
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) == 3, "the requests never arrived"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)  # would take > 120 s when it retried
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        server.close()
    assert process.returncode == 130, err
    assert "interrupted" in err
    assert len(server.requests) == 3  # no retry was sent


# ------------------------------------------------------------ item 7: atomic writes
def test_a_full_disk_leaves_the_old_result_whole_and_names_the_file(tmp_path):
    """Item 7: on a full disk a 4096-byte cut file replaced a valid result, unnamed."""
    out = tmp_path / "result.json"
    result = evaluate(OracleAgent(), GUESS, ks=[1], budgets=[7], tasks=2, n_bootstrap=10)
    result.save(out)
    before = out.read_bytes()
    # RLIMIT_FSIZE makes any write past 4096 bytes fail as a full disk would (EFBIG).
    code = (
        "import resource, signal, sys\n"
        "from agent_envs.evaluation import EvalResult, evaluate\n"
        "from baselines.simple_agents import OracleAgent\n"
        "r = evaluate(OracleAgent(), 'agent_envs/GuessNumber-v0', ks=[1], budgets=[7],"
        " tasks=400, n_bootstrap=10)\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        "    r.save(sys.argv[1])\n"
        "except OSError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert out.read_bytes() == before, done.stderr
    assert str(out) in done.stdout, done.stdout + done.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["result.json"]  # no temporary left


# ------------------------------------------------- item 9: one line, exit 2, no work
@pytest.mark.parametrize(
    "flags",
    [
        ["--step-quality", "99999999999"],
        ["--n-bootstrap", "30000000"],
        ["--n-bootstrap", "99999999999"],
        ["--tasks", "0:99999999999999999999"],
    ],
    ids=["step-quality", "bootstrap-30M", "bootstrap-huge", "task-range-overflow"],
)
def test_runaway_eval_flags_fail_at_once(tmp_path, capsys, flags):
    """Item 9: memory growth, hours of bootstrap, _ArrayMemoryError, OverflowError."""
    log = tmp_path / "run.jsonl"
    status = cli.main(
        ["eval", GUESS, "--agent", "oracle", "--k", "1", "--t", "3", "--log", str(log), *flags]
    )
    assert status == 2
    # The error names what the user typed: the flag, not the setting behind it.
    named = {
        "--step-quality": "--step-quality",
        "--n-bootstrap": "--n-bootstrap",
        "--tasks": "task",
    }
    assert named[flags[0]] in one_error_line(capsys)
    assert not log.exists()  # refused before any episode


def test_list_with_a_huge_task_count_fails_at_once(capsys):
    """Item 9: `list --tasks 99999999999` ran for more than 120 s."""
    assert cli.main(["list", "--tasks", "99999999999"]) == 2
    assert "--tasks" in one_error_line(capsys)


def write_result(path: Path, **changes) -> Path:
    result = evaluate(OracleAgent(), GUESS, ks=[1], budgets=[7], tasks=2, n_bootstrap=10)
    data = {**result.to_dict(), **changes}
    path.write_text(json.dumps(data))
    return path


def test_compare_refuses_deep_json_and_bad_diagnostics_in_one_line(tmp_path, capsys):
    """Item 9: RecursionError on 100k-deep JSON; AttributeError on `"diagnostics": "x"`."""
    good = write_result(tmp_path / "good.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert cli.main(["compare", str(deep), str(good)]) == 2
    assert "nested too deeply" in one_error_line(capsys)
    bad = write_result(tmp_path / "bad.json", diagnostics="x")
    assert cli.main(["compare", str(bad), str(good)]) == 2
    assert "diagnostics must be a JSON object" in one_error_line(capsys)
    deep_kwargs = '{"a":' * 100_000 + "1" + "}" * 100_000
    assert cli.main(["eval", GUESS, "--agent-kwargs", deep_kwargs]) == 2
    assert "nested too deeply" in one_error_line(capsys)


# ------------------------------------------------------------------ item 13
@pytest.mark.parametrize("out", ["", "/proc/version"])
def test_an_unwritable_out_is_refused_before_the_run(tmp_path, capsys, out):
    """Item 13: `--out ""` was ignored; `--out /proc/version` failed after the run."""
    log = tmp_path / "run.jsonl"
    status = cli.main(["eval", GUESS, "--agent", "oracle", *QUICK, "--log", str(log), "--out", out])
    assert status == 2
    assert "--out" in one_error_line(capsys)
    assert not log.exists()


# ------------------------------------------------------------------ item 11
class HostileStr(str):
    """An action whose hash and equality raise, as a hostile or buggy agent's might."""

    def __hash__(self):
        raise RuntimeError("no hash for you")

    def __eq__(self, other):
        raise RuntimeError("no equality either")

    def __str__(self):
        raise RuntimeError("no str")


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


class Hostile:
    """Answers like the oracle on task 0; on task 1 returns or raises something hostile."""

    required_info = ("oracle_actions",)

    def __init__(self, how: str) -> None:
        self.how = how

    def __repr__(self):  # the agent's own repr is broken too
        raise RuntimeError("agent repr")

    def act(self, observation, info):
        if info["task_id"] == 0:
            return info["oracle_actions"][0]
        if self.how == "hash":
            return HostileStr(info["oracle_actions"][0])
        if self.how == "repr":
            return BadRepr()
        raise SystemExit(3)


class HostileBatch(Hostile):
    def act_batch(self, observations, infos):
        return [self.act(o, i) for o, i in zip(observations, infos, strict=True)]


@pytest.mark.parametrize("how", ["hash", "repr", "exit"])
@pytest.mark.parametrize("shape", [Hostile, HostileBatch])
def test_a_hostile_action_or_exit_is_that_episodes_error(how, shape):
    """Item 11: a str subclass with a failing __hash__, a raising repr, SystemExit(3)."""
    grid = dict(ks=[1], budgets=[7], tasks=2, n_bootstrap=10, max_error_rate=1.0)
    result = evaluate(shape(how), GUESS, **grid)
    assert result.episodes == 2
    if how == "hash":  # played as the plain text it spells: the oracle's move
        assert result.errors == 0 and result.surface[0, 0] == 1.0
    elif shape is HostileBatch and how == "exit":  # raised in act_batch: the whole call
        assert result.errors == 2 and "SystemExit: 3" in result.error_examples[0]
    else:
        assert result.errors == 1 and result.surface[0, 0] == 0.5
        assert ("SystemExit: 3" if how == "exit" else "not a str") in result.error_examples[0]


def test_the_hostile_agent_through_the_cli(capsys):
    """Item 11: SystemExit(3) exited 3 with no message; now the run ends normally."""
    hostile = [
        "--agent",
        "tests.test_secrets_and_interrupts:Hostile",
        "--agent-kwargs",
        '{"how": "exit"}',
    ]
    assert cli.main(["eval", GUESS, *hostile, *QUICK, "--max-error-rate", "1"]) == 0
    assert "SystemExit: 3" in capsys.readouterr().out


def test_the_env_never_sees_the_subclass():
    """Item 11: the env gets a plain str, so its own hashing and comparing cannot fail."""
    from agent_envs.evaluation.rollout import plain_action
    from agent_envs.protocol import AgentAction

    action = plain_action(HostileStr("50"))
    assert type(action) is str and action == "50"
    kept = plain_action(AgentAction("50", raw="I guess 50", tokens_read=7, tokens_generated=3))
    assert kept.raw == "I guess 50" and (kept.tokens_read, kept.tokens_generated) == (7, 3)
    for count in (True, -1, 2.0, "3", HostileStr("4")):  # not a count of tokens: not counted
        odd = plain_action(AgentAction("50", raw="50", tokens_read=count, tokens_generated=count))
        assert (odd.tokens_read, odd.tokens_generated) == (None, None)
    with pytest.raises(TypeError, match="whose repr raised"):
        plain_action(BadRepr())


def test_errors_masked_before_they_are_cut():
    """Item 3: masking ran after the cut of an error, which left most of the key."""
    from agent_envs.evaluation.policies import describe_error
    from agent_envs.redaction import remember

    remember([KEY])
    text = describe_error(ValueError("x" * 480 + KEY), limit=500)
    assert_no_key(text)
    assert os.fspath(text).endswith("***")


# --------------------------------------------- items 1-2: one run per log and folder
EVAL = ["--k", "1", "--t", "5", "--tasks", "3", "--n-bootstrap", "10", "--no-progress"]


def replace_line(log: Path, number: int, line: str) -> None:
    lines = log.read_text().splitlines()
    lines[number - 1] = line
    log.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "other", [["--seed", "7"], ["--agent", "random"]], ids=["another-seed", "another-agent"]
)
def test_a_log_line_from_another_run_is_refused_with_its_number(tmp_path, capsys, other):
    """Item 2: a --seed 7 line in a --seed 11 log, and random-agent lines, were accepted."""
    mine, theirs = tmp_path / "mine.jsonl", tmp_path / "theirs.jsonl"
    run = ["eval", GUESS, *EVAL, "--agent", "noisy-oracle", "--seed", "11"]
    assert cli.main([*run, "--log", str(mine)]) == 0
    assert cli.main([*run, *other, "--log", str(theirs)]) == 0
    replace_line(mine, 3, theirs.read_text().splitlines()[2])  # the same episode, other run
    capsys.readouterr()
    assert cli.main([*run, "--log", str(mine)]) == 2
    line = one_error_line(capsys)
    assert f"{mine}:3" in line and "another run" in line


def test_a_log_of_the_previous_format_gets_a_clear_error(tmp_path, capsys):
    """Item 2: a log whose lines carry no fingerprint cannot be checked, so it is refused."""
    log = tmp_path / "run.jsonl"
    run = ["eval", GUESS, *EVAL, "--agent", "oracle", "--log", str(log)]
    assert cli.main(run) == 0
    header, *episodes = (json.loads(line) for line in log.read_text().splitlines())
    header["format"] = "agent-envs-runlog/4"
    header.pop("run", None)
    for episode in episodes:
        episode.pop("run", None)
    log.write_text("".join(json.dumps(line) + "\n" for line in [header, *episodes]))
    capsys.readouterr()
    assert cli.main(run) == 2
    assert "older run log (agent-envs-runlog/4" in one_error_line(capsys)


def sb3_main(*args: str) -> int:
    from baselines.sb3 import train as sb3_train

    return sb3_train.main(list(args))


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two SB3 models of one env, trained with different seeds (train-sb3 --quick)."""
    pytest.importorskip("stable_baselines3")
    root = tmp_path_factory.mktemp("models")
    for seed in ("0", "1"):
        out = root / f"seed{seed}"
        assert sb3_main(GUESS, "--quick", "--no-eval", "--seed", seed, "--out", str(out)) == 0
    return root / "seed0", root / "seed1"


def test_a_retrained_model_never_resumes_the_old_models_log(tmp_path, capsys, two_models):
    """Item 1: the same agent name for two models at one path resumed the old log."""
    import shutil

    folder = tmp_path / "ta"
    folder.mkdir()
    log = tmp_path / "run.jsonl"
    run = ["eval", GUESS, *EVAL, "--agent", "sb3", "--log", str(log)]
    run += ["--agent-kwargs", json.dumps({"path": str(folder / "model.zip")})]
    for name in ("model.zip", "model.json"):
        shutil.copy(two_models[0] / "model" / name, folder / name)
    assert cli.main(run) == 0
    for name in ("model.zip", "model.json"):  # another model, saved to the same path
        shutil.copy(two_models[1] / "model" / name, folder / name)
    capsys.readouterr()
    assert cli.main(run) == 2
    line = one_error_line(capsys)
    assert "different settings" in line and "agent_name" in line and "sha256:" in line


def test_train_sb3_refuses_a_used_out_unless_told_and_resumes_truly(tmp_path, capsys):
    """Item 1: a second train-sb3 into one --out overwrote the model and resumed the old log."""
    pytest.importorskip("stable_baselines3")
    out = tmp_path / "ta"
    quick = [GUESS, "--quick", "--out", str(out)]
    assert sb3_main(*quick) == 0
    model = (out / "model" / "model.zip").read_bytes()
    capsys.readouterr()
    assert sb3_main(*quick, "--gamma", "0.9") == 2  # other settings, no flag: refused
    err = capsys.readouterr().err
    model_path = out / "model" / "model.zip"
    assert "--resume" in err and "--overwrite" in err and model_path.read_bytes() == model
    assert sb3_main(*quick, "--gamma", "0.9", "--resume") == 2  # resume needs the same settings
    assert "gamma" in capsys.readouterr().err
    assert sb3_main(*quick, "--resume") == 0  # the same settings: nothing retrained or replayed
    assert (out / "model" / "model.zip").read_bytes() == model
    assert json.loads((out / "result.json").read_text())["timing"]["episodes_run"] == 0
    assert sb3_main(*quick, "--gamma", "0.9", "--overwrite") == 0  # a new model, a new log
    result = json.loads((out / "result.json").read_text())
    assert result["timing"]["episodes_resumed"] == 0
    assert json.loads((out / "model" / "model.json").read_text())["config"]["gamma"] == 0.9


# ------------------------------------------- items 6, 8, 9, 13 on the train commands
def llm_main(*args: str) -> int:
    pytest.importorskip("trl")
    from baselines.llm.training import train as llm_train

    return llm_train.main(list(args))


@pytest.mark.parametrize("command", [sb3_main, llm_main], ids=["train-sb3", "train-llm"])
@pytest.mark.parametrize("where", ["file/x", "file", "", "/proc/version"])
def test_a_bad_out_fails_before_any_training(tmp_path, capsys, no_training, command, where):
    """Items 6 and 13: `--out regular.txt/x` failed after 81 s of training; "" was ignored."""
    (tmp_path / "file").write_text("a regular file")
    out = str(tmp_path / where) if where in ("file/x", "file") else where
    assert command(GUESS, "--quick", "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0], err


@pytest.mark.parametrize(
    "kwargs", ['{"learning_rate": "x"}', '{"nope": 1}'], ids=["bad-value", "unknown-name"]
)
def test_bad_algo_kwargs_fail_in_one_line_before_any_work(tmp_path, capsys, no_training, kwargs):
    """Item 9: an AssertionError from SB3 after setup, and exit 1 for an unknown name."""
    pytest.importorskip("stable_baselines3")
    assert sb3_main(GUESS, "--algo-kwargs", kwargs, "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--algo-kwargs" in err[0], err


@pytest.mark.parametrize("command", ["train-sb3", "train-llm"])
def test_ctrl_c_in_a_train_command_says_what_it_leaves(tmp_path, capsys, monkeypatch, command):
    """Item 8: they said `rerun with the same --log`, a flag they do not have."""
    from baselines.llm.training import train as llm_train
    from baselines.sb3 import train as sb3_train

    pytest.importorskip("trl" if command == "train-llm" else "stable_baselines3")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sb3_train, "train", interrupted)
    monkeypatch.setattr(llm_train, "train_llm", interrupted)
    out = tmp_path / "run"
    assert cli.main([command, GUESS, "--quick", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "--resume" in err and "--log" not in err and str(out) in err


def test_train_llm_refuses_a_used_out_and_overwrite_clears_the_old_result(
    tmp_path, capsys, no_training
):
    """Item 1: train-llm wrote a new model beside an old result.json from another seed."""
    from baselines.command import RunFolder

    out = tmp_path / "run"
    RunFolder.open(out, "train-llm", {}, []).wrote("model/", "result.json")  # an earlier run
    (out / "result.json").write_text("{}")
    (out / "model").mkdir()
    assert llm_main(GUESS, "--quick", "--seed", "1", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err
    assert (out / "result.json").read_text() == "{}"
    (out / "model" / "train_llm.json").write_text(json.dumps({"config": {"seed": 0}}))
    assert llm_main(GUESS, "--quick", "--seed", "1", "--resume", "--out", str(out)) == 2
    assert "other settings" in capsys.readouterr().err
    with pytest.raises(no_training):  # the checks passed: training was about to start
        llm_main(GUESS, "--quick", "--seed", "1", "--overwrite", "--out", str(out))
    assert not (out / "result.json").exists() and not (out / "model").exists()


def test_a_failed_plot_or_sidecar_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    """Item 7: plots and sidecars too are written beside and renamed, never cut in place."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from baselines.sb3.agent import write_sidecar

    result = evaluate(OracleAgent(), GUESS, ks=[1], budgets=[7], tasks=2, n_bootstrap=10)
    plot = result.plot(tmp_path / "surface.png")
    before = plot.read_bytes()

    def full_disk_savefig(self, target, *args, **kwargs):
        Path(target).write_bytes(b"x" * 4096)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full_disk_savefig)
    with pytest.raises(OSError, match=r"surface\.png"):
        result.plot(plot)
    assert plot.read_bytes() == before
    sidecar = tmp_path / "model.json"
    sidecar.write_text('{"old": true}')
    real_write_text = Path.write_text

    def full_disk_write_text(self, *args, **kwargs):
        real_write_text(self, "x" * 10)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk_write_text)
    keys = ("algo", "encoding", "action_vocabulary", "action_masks", "visible_budget")
    with pytest.raises(OSError):
        write_sidecar(tmp_path / "model.zip", dict.fromkeys(keys, 0))
    assert sidecar.read_text() == '{"old": true}'
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model.json", "surface.png"]
