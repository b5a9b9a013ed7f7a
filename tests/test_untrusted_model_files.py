"""Model files and the model cache are untrusted input.

Every GGUF file here is written by the ``gguf`` writer inside the test (a
tiny Llama, 2 layers of real tensors) with forged metadata; none is ever
built into a model, so each test takes seconds.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from gguf_fixtures import tiny_llama, write_tiny_gguf  # noqa: E402
from llm_fixtures import build_tiny_model  # noqa: E402

from agent_envs import cli  # noqa: E402
from baselines.llm.models import gguf_check  # noqa: E402
from baselines.llm.models.model_cache import MANIFEST, STALE_AFTER_S  # noqa: E402
from baselines.llm.models.resolve import CACHE_ENV, ModelError, check_gguf, resolve_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ROOT = Path(__file__).resolve().parents[1]
EVAL = ["eval", "agent_envs/GuessNumber-v0", "--k", "1", "--t", "2", "--tasks", "1"]
EVAL_TAIL = ["--samples", "1", "--n-bootstrap", "10", "--no-progress"]


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory):
    return Path(build_tiny_model(str(tmp_path_factory.mktemp("tok"))))


@pytest.fixture(scope="module")
def llama(tokenizer_path):
    return tiny_llama(tokenizer_path)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "model-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def no_model_built(monkeypatch):
    """Fail the test if transformers is asked to build a model from a GGUF file."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built from a forged file")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


def forged(tmp_path, tokenizer_path, llama, name: str, **config) -> Path:
    """The tiny Llama's real tensors under metadata that declares ``config`` instead."""
    model = copy.deepcopy(llama)
    for key, value in config.items():
        setattr(model.config, key, value)
    return write_tiny_gguf(tmp_path / f"{name}.gguf", tokenizer_path, model)


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agent-envs: error:"), err
    return err[0]


# ------------------------------------------------------------ item 1: bombs
@pytest.mark.parametrize("layers", [20_000, 200_000])
def test_a_gguf_declaring_thousands_of_layers_is_refused_before_any_model(
    tmp_path, tokenizer_path, llama, cache, no_model_built, capsys, layers
):
    """Item 1: 55 kB with block_count=20000 grew eval --agent hf to 7.4 GB."""
    path = forged(tmp_path, tokenizer_path, llama, f"bomb{layers}", num_hidden_layers=layers)
    assert path.stat().st_size < 60_000
    with pytest.raises(ModelError, match=r"declares at least [\d,]+ parameters but its") as error:
        check_gguf(path)
    assert "\n" not in str(error.value)
    kwargs = json.dumps({"model": str(path)})
    assert cli.main([*EVAL, "--agent", "hf", "--agent-kwargs", kwargs, *EVAL_TAIL]) == 2
    assert "parameters but its" in one_line(capsys)
    assert not cache.exists() or not any(cache.iterdir())


def test_a_layer_count_the_tensors_contradict_is_refused(
    tmp_path, tokenizer_path, llama, cache, no_model_built
):
    """Item 1: a small lie, within the size bound, is caught by the shape check."""
    path = forged(tmp_path, tokenizer_path, llama, "three", num_hidden_layers=3)
    with pytest.raises(
        ModelError, match=r"declares 3 layers \(block_count\) but holds tensors for 2"
    ):
        resolve_model(path)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"num_attention_heads": 8}, r"declares 2 heads of 4 for attn_k"),
        ({"num_key_value_heads": 4}, r"declares 4 heads of 8 for attn_k"),
        ({"vocab_size": 500}, "declares a vocabulary of 500 but token_embd.weight has 384"),
    ],
)
def test_declared_heads_and_vocabulary_are_checked_against_the_tensors(
    tmp_path, tokenizer_path, llama, cache, no_model_built, config, message
):
    """Item 1: every declared dimension is compared with the tensors before a model exists."""
    path = forged(tmp_path, tokenizer_path, llama, "heads", **config)
    with pytest.raises(ModelError, match=message):
        resolve_model(path)


def test_the_declared_parameters_are_bounded_by_the_bytes():
    """Item 1: whatever the tensor names, the declared shape must fit in the file's bytes."""
    declared = {"block_count": 32, "embedding_length": 4096, "feed_forward_length": 11008}
    problem = gguf_check._size_problem({**declared, "vocab_size": 32000}, Path(__file__))
    assert problem is not None and "parameters but its" in problem
    assert (
        gguf_check._size_problem({"block_count": 1, "embedding_length": 8}, Path(__file__)) is None
    )


# -------------------------------------------- item 2: wrong hidden/ff sizes
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"hidden_size": 48}, "declares a hidden size (embedding_length) of 48 but"),
        ({"intermediate_size": 128}, "declares a feed-forward size of 128 but"),
    ],
)
def test_a_wrong_hidden_or_feed_forward_size_is_one_line_from_eval_and_train_llm(
    tmp_path, tokenizer_path, llama, cache, no_model_built, capsys, config, message
):
    """Item 2: a 60-line `ignore_mismatched_sizes` traceback and exit 1 from both commands."""
    path = forged(tmp_path, tokenizer_path, llama, "sizes", **config)
    kwargs = json.dumps({"model": str(path)})
    assert cli.main([*EVAL, "--agent", "hf", "--agent-kwargs", kwargs, *EVAL_TAIL]) == 2
    assert message in one_line(capsys)
    pytest.importorskip("trl")
    out = tmp_path / "train"
    argv = ["train-llm", "agent_envs/GuessNumber-v0", "--quick", "--model", str(path)]
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and message in err.strip().splitlines()[-1], err


def test_a_mismatch_transformers_finds_is_one_line_too(tmp_path, monkeypatch, tokenizer_path):
    """Item 2: a RuntimeError from from_pretrained (sizes) becomes a ModelError, not a trace."""
    from baselines.llm.models import resolve

    def mismatched(*args, **kwargs):
        raise RuntimeError("Error(s) in loading state_dict:\n\tsize mismatch for x\n\tYou set")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", mismatched)
    source = tmp_path / "m.gguf"
    write_tiny_gguf(source, tokenizer_path, tiny_llama(tokenizer_path))
    with pytest.raises(ModelError, match="transformers cannot load") as error:
        resolve._dequantise(source, tmp_path / "out")
    assert "\n" not in str(error.value)


# ------------------------------------------------------ item 3: the cache
@pytest.fixture
def gguf_path(tmp_path, tokenizer_path, llama):
    return write_tiny_gguf(tmp_path / "tiny.Q8_0.gguf", tokenizer_path, llama)


def test_the_conversion_writes_a_manifest_of_hashes(gguf_path, cache):
    """Item 3: the source's full hash and each written file's hash."""
    import hashlib

    folder = resolve_model(gguf_path)
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["source_sha256"] == hashlib.sha256(gguf_path.read_bytes()).hexdigest()
    files = {p.name for p in folder.iterdir()} - {MANIFEST}
    assert set(manifest["files"]) == files and "config.json" in files
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest


def _plant(entry: Path, tmp_path: Path) -> None:
    """Put a GPT-2 folder (another model entirely) under the cache entry's name."""
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=50)).save_pretrained(entry)


@pytest.mark.parametrize("planted", ["gpt2-folder", "config-only", "changed-weights"])
def test_a_cache_entry_that_does_not_match_its_manifest_is_converted_again(
    gguf_path, cache, tmp_path, planted
):
    """Item 3: a GPT-2 copied under the entry's name loaded silently in place of the Llama."""
    folder = resolve_model(gguf_path)
    if planted == "changed-weights":
        weights = next(folder.glob("*.safetensors"))
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0xFF
        weights.write_bytes(bytes(data))
    else:
        import shutil

        shutil.rmtree(folder)
        if planted == "gpt2-folder":
            _plant(folder, tmp_path)
        else:
            folder.mkdir()
            (folder / "config.json").write_text('{"model_type": "llama"}')
    assert resolve_model(gguf_path) == folder
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 2
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {p.name for p in folder.iterdir()} - {MANIFEST}
    assert [p.name for p in cache.iterdir()] == [folder.name]  # nothing left beside it


def _entry_name(gguf_path: Path) -> str:
    import hashlib

    return f"{gguf_path.stem}-{hashlib.sha256(gguf_path.read_bytes()).hexdigest()[:16]}"


@pytest.mark.parametrize("how", ["symlink", "foreign-owner", "world-writable"])
def test_an_untrusted_cache_entry_is_refused_in_one_line_and_left_alone(
    gguf_path, cache, tmp_path, how
):
    """Item 3: a symlink at the entry's name was followed; any folder there was trusted."""
    entry = cache / _entry_name(gguf_path)
    cache.mkdir()
    if how == "symlink":
        target = tmp_path / "elsewhere"
        _plant(target, tmp_path)
        entry.symlink_to(target)
    else:
        _plant(entry, tmp_path)
        if how == "foreign-owner":
            if os.getuid() != 0:
                pytest.skip("giving a folder to another user needs root")
            os.chown(entry, 12345, 12345)
        else:
            entry.chmod(0o777)
    reason = {"symlink": "is a symlink", "foreign-owner": "belongs to another user",
              "world-writable": "is writable by every user"}[how]  # fmt: skip
    with pytest.raises(ModelError, match=reason) as error:
        resolve_model(gguf_path)
    assert "\n" not in str(error.value)
    assert (entry / "config.json").is_file()  # not ours to delete
    assert json.loads((entry / "config.json").read_text())["model_type"] == "gpt2"


# --------------------------------------------- item 4: staging folders
def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_staging_folders_of_killed_conversions_are_removed_and_reported(gguf_path, cache, caplog):
    """Item 4: `.<stem>-<hash>-<random>` folders of killed conversions stayed forever."""
    entry = _entry_name(gguf_path)
    cache.mkdir()
    dead = cache / f".{entry}-{_dead_pid()}-abcdefgh"
    alive = cache / f".{entry}-{os.getppid()}-ijklmnop"  # a running conversion: kept
    old_style = cache / f".{entry}-qrstuvwx"  # before the pid was in the name
    fresh_old_style = cache / f".{entry}-yz012345"
    for folder in (dead, alive, old_style, fresh_old_style):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"\0" * 1_000_000)
    long_ago = time.time() - STALE_AFTER_S - 60
    os.utime(old_style, (long_ago, long_ago))
    with caplog.at_level("WARNING"):
        folder = resolve_model(gguf_path)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [folder.name, alive.name, fresh_old_style.name]
    )
    assert "removed 2 staging folder(s)" in caplog.text and "freeing 2.0 MB" in caplog.text


def test_a_conversion_killed_by_sigkill_is_cleaned_by_the_next_run(gguf_path, cache, caplog):
    """Item 4: kill -9 in the middle of a real conversion, then a later run."""
    script = (
        "import os, signal, sys\n"
        "from baselines.llm.models import resolve\n"
        "real = resolve._dequantise\n"
        "def dies(path, folder):\n"
        "    real(path, folder)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "resolve._dequantise = dies\n"
        "resolve.resolve_model(sys.argv[1])\n"
    )
    env = {**os.environ, CACHE_ENV: str(cache), "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-c", script, str(gguf_path)], env=env, timeout=300)
    assert killed.returncode == -9
    left = [p for p in cache.iterdir() if p.name.startswith(".")]
    assert len(left) == 1 and (left[0] / "config.json").is_file()
    with caplog.at_level("WARNING"):
        folder = resolve_model(gguf_path)
    assert [p.name for p in cache.iterdir()] == [folder.name]
    assert "removed 1 staging folder(s)" in caplog.text and "MB." in caplog.text
