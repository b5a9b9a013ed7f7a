"""Model loading: GGUF files through the real conversion and cache, short names, no network."""

from __future__ import annotations

import socket

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from gguf_fixtures import tiny_llama, write_tiny_gguf  # noqa: E402
from llm_fixtures import build_tiny_model  # noqa: E402

from agent_envs.cli import main  # noqa: E402
from baselines.llm.agents.hf_agent import HFAgent  # noqa: E402
from baselines.llm.models import resolve  # noqa: E402
from baselines.llm.models.resolve import (  # noqa: E402
    CACHE_ENV,
    ModelError,
    cache_dir,
    check_gguf,
    gguf_file,
    resolve_model,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def tokenizer_path(tmp_path_factory):
    return build_tiny_model(str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def llama(tokenizer_path):
    return tiny_llama(tokenizer_path)


@pytest.fixture
def gguf_path(tmp_path, tokenizer_path, llama):
    return write_tiny_gguf(tmp_path / "tiny.Q8_0.gguf", tokenizer_path, llama)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "model-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def no_network(monkeypatch):
    """Fail the test on any attempt to open a connection or resolve a host name."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise AssertionError(f"network attempt: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def expected(weights, kind):
    """What a GGUF file of ``kind`` holds for ``weights``, dequantised by the gguf package."""
    data = weights.detach().float().numpy()
    if data.ndim == 1:
        return data
    return gguf.quants.dequantize(gguf.quants.quantize(data, kind), kind)


# ------------------------------------------------------------- round trip
@pytest.mark.parametrize("kind", ["Q8_0", "Q4_1"])
def test_a_gguf_file_round_trips_through_the_loader(tmp_path, tokenizer_path, llama, cache, kind):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = write_tiny_gguf(tmp_path / f"tiny.{kind}.gguf", tokenizer_path, llama, kind)
    folder = resolve_model(path)
    assert folder.parent == cache and folder.name.startswith(f"tiny.{kind}-")
    loaded = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    quant = gguf.GGMLQuantizationType[kind]
    original = llama.state_dict()
    for name, weights in loaded.state_dict().items():
        # Exactly the dequantised file: q and k come back in HF's row order.
        assert (weights.numpy() == expected(original[name], quant)).all(), name
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    reference = AutoTokenizer.from_pretrained(tokenizer_path)
    text = "I am thinking of an integer between 1 and 100.\nAction: 50<|im_end|>"
    assert tokenizer(text)["input_ids"] == reference(text)["input_ids"]
    assert tokenizer.chat_template == reference.chat_template
    assert tokenizer.eos_token == "<|im_end|>"


def test_the_second_load_reads_the_cache(gguf_path, cache, monkeypatch):
    import transformers

    first = resolve_model(gguf_path)

    def refuse(*args, **kwargs):
        raise AssertionError("converted twice")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    assert resolve_model(gguf_path) == first
    assert [p.name for p in cache.iterdir()] == [first.name]  # no staging folder left


def test_a_changed_file_gets_a_new_folder(gguf_path, tokenizer_path, cache):
    first = resolve_model(gguf_path)
    write_tiny_gguf(gguf_path, tokenizer_path, tiny_llama(tokenizer_path, seed=1))
    second = resolve_model(gguf_path)
    assert second != first and second.parent == first.parent


def test_hf_agent_plays_the_same_from_the_gguf_file_and_from_its_folder(gguf_path, cache):
    observation = "I am thinking of an integer between 1 and 100. Guess it."
    replies = []
    for model in (gguf_path, resolve_model(gguf_path)):
        agent = HFAgent(model, temperature=0, max_new_tokens=6, device="cpu")
        assert agent.tokenizer.padding_side == "left"
        replies.append(agent.act(observation, {"episode_seed": 3}).raw)
    assert replies[0] == replies[1]


def test_the_cache_folder_is_documented_and_overridable(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "agent-envs" / "models"


# ------------------------------------------------------------------ errors
def test_a_corrupt_file_gets_one_line_and_leaves_no_folder(tmp_path, gguf_path, cache):
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a gguf file at all" * 10)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(gguf_path.read_bytes()[:5000])
    for path in (garbage, truncated):
        with pytest.raises(ModelError, match="not a readable GGUF file") as error:
            resolve_model(path)
        assert "\n" not in str(error.value) and str(path) in str(error.value)
    assert not cache.exists() or not any(cache.iterdir())


def test_an_unsupported_quantisation_gets_one_line(tmp_path, tokenizer_path, llama, cache):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", tokenizer_path, llama, "Q8_1")
    with pytest.raises(ModelError, match="Q8_1") as error:
        resolve_model(path)
    assert "\n" not in str(error.value)
    assert not cache.exists() or not any(cache.iterdir())


def test_a_missing_loading_package_is_named_in_one_line(gguf_path, cache, monkeypatch):
    """transformers 5 refuses a GGUF file without accelerate: say so before converting."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "accelerate" else find_spec(name, *a),
    )
    with pytest.raises(ModelError, match=r"needs accelerate, which the \[llm\] extra") as error:
        resolve_model(gguf_path)
    assert "\n" not in str(error.value) and str(gguf_path) in str(error.value)
    assert not cache.exists() or not any(cache.iterdir())
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert resolve_model(gguf_path).is_dir()  # with accelerate it converts


def test_a_missing_path_or_hub_name_fails_at_once_without_the_network(no_network, cache):
    for name in ("no/such/model", "Qwen/Qwen2.5-0.5B-Instruct", "missing.gguf"):
        with pytest.raises(ModelError, match="never downloaded") as error:
            resolve_model(name)
        assert "\n" not in str(error.value)
        with pytest.raises(ModelError):
            HFAgent(name)
    assert no_network == []


def test_the_cli_gives_one_line_for_a_model_that_is_not_local(no_network, cache, capsys):
    status = main(
        [
            "eval",
            "agent_envs/GuessNumber-v0",
            "--agent",
            "hf",
            "--agent-kwargs",
            '{"model": "HuggingFaceTB/SmolLM2-135M-Instruct"}',
            "--k",
            "1",
            "--t",
            "4",
            "--tasks",
            "1",
            "--samples",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "never downloaded" in err
    assert no_network == []


def test_a_folder_without_config_is_refused(tmp_path):
    with pytest.raises(ModelError, match=r"config\.json"):
        resolve_model(tmp_path)


def test_gguf_file_refuses_what_is_not_gguf(tokenizer_path):
    with pytest.raises(ModelError, match=r"not a \.gguf file"):
        gguf_file(tokenizer_path)


# ------------------------------------------------------------- short names
def test_a_short_name_without_its_package_names_the_extra(monkeypatch):
    monkeypatch.setattr(resolve.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match=r"\[smollm2\]"):
        resolve_model("smollm2-135m")


def test_the_shipped_smollm2_file_is_found_and_readable():
    try:
        path = gguf_file("smollm2-135m")
    except ModelError as error:
        pytest.skip(f"the [smollm2] extra is not installed: {error}")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    check_gguf(path)  # header, tensor index and each quantisation (Q4_1, Q8_0, F32)


def test_the_first_conversion_says_what_it_does_and_how_long_it_took(gguf_path, cache, caplog):
    """The slow first load is announced, the cached ones are quiet."""
    with caplog.at_level("INFO", logger="agent_envs.progress"):
        folder = resolve_model(gguf_path)
    notes = [record.getMessage() for record in caplog.records]
    assert len(notes) == 2, notes
    assert notes[0] == f"converting tiny.Q8_0.gguf (GGUF) to a transformers folder, once: {folder}"
    assert notes[1].startswith("converted tiny.Q8_0.gguf in ")
    assert notes[1].endswith("later loads reuse the folder")
    caplog.clear()
    with caplog.at_level("INFO", logger="agent_envs.progress"):
        assert resolve_model(gguf_path) == folder
    assert caplog.records == []
