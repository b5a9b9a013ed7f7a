"""EncodeObservation / TextEncoder: deterministic, always inside the space, cut as documented."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ENV_IDS, make_unwrapped
from tests.sb3_fixtures import word_tokenizer
from wrappers.budget import TurnBudget
from wrappers.observation import EncodeObservation
from wrappers.text_encoder import TextEncoder

ENCODERS = {
    "chars": lambda: TextEncoder("chars", max_length=64, charset="abc .\n"),
    "chars-head": lambda: TextEncoder("chars", max_length=64, keep="head", charset="abc"),
    "hashing": lambda: TextEncoder("hashing", dim=128, max_length=300),
    "hashing-view": lambda: TextEncoder("hashing", dim=32, view_only=True, ngram_range=(1, 2)),
    "chars-feedback": lambda: TextEncoder(
        "chars", max_length=16, view_only=True, charset="abc", feedback_length=4, budget_scale=9
    ),
}


@pytest.mark.parametrize("name", sorted(ENCODERS))
@given(text=st.text(max_size=400))
def test_any_text_encodes_inside_the_space(name, text):
    encoder = ENCODERS[name]()
    turns_left = 3 if encoder.budget_scale else None
    array = encoder.encode(text, turns_left)
    assert encoder.space.contains(array)
    assert np.array_equal(array, encoder.encode(text, turns_left))


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_settings_round_trip_to_the_same_encoding(name):
    encoder = ENCODERS[name]()
    rebuilt = TextEncoder.from_config(encoder.config())
    assert rebuilt.config() == encoder.config()
    assert rebuilt.space == encoder.space
    turns_left = 3 if encoder.budget_scale else None
    for text in ("", "abc", "You moved.\n\nab c\n[Turns left: 3 of 9]", "é" * 500):
        assert np.array_equal(rebuilt.encode(text, turns_left), encoder.encode(text, turns_left))


def test_chars_indices_padding_and_unknown_characters():
    encoder = TextEncoder("chars", max_length=5, charset="ab")
    # 0 pads, 1 is unknown, 2 + i is charset[i]; short text is right-aligned.
    assert encoder.encode("ba").tolist() == [0, 0, 0, 3, 2]
    assert encoder.encode("a\x00✓").tolist() == [0, 0, 2, 1, 1]
    assert encoder.space == gym.spaces.MultiDiscrete([4] * 5)


def test_overlong_text_keeps_the_tail_by_default_and_the_head_on_request():
    tail = TextEncoder("chars", max_length=3, charset="abcdef")
    head = TextEncoder("chars", max_length=3, keep="head", charset="abcdef")
    assert tail.select("abcdef") == "def"
    assert tail.encode("abcdef").tolist() == [5, 6, 7]
    assert head.select("abcdef") == "abc"
    assert head.encode("ab").tolist() == [2, 3, 0]  # left-aligned


def test_view_only_keeps_the_text_after_the_last_blank_line():
    encoder = TextEncoder("chars", max_length=40, view_only=True, charset="ab")
    observation = "Intro line.\n\nMore intro.\n\nab\nba\n[Turns left: 2 of 5]"
    assert encoder.select(observation) == "ab\nba\n[Turns left: 2 of 5]"
    assert encoder.select("no blank line") == "no blank line"


def test_feedback_length_puts_the_feedback_head_before_the_view():
    encoder = TextEncoder("chars", max_length=3, view_only=True, charset="ab", feedback_length=2)
    assert encoder.space == gym.spaces.MultiDiscrete([4] * 5)
    # Feedback "ba" (left-aligned, cut to 2), then the view "ab" (right-aligned).
    assert encoder.feedback("bab\n\nab") == "ba"
    assert encoder.encode("bab\n\nab").tolist() == [3, 2, 0, 2, 3]
    # No blank line: no feedback, only padding in its positions.
    assert encoder.encode("ab").tolist() == [0, 0, 0, 2, 3]


def test_on_maze_the_feedback_tells_the_heading_and_the_view_stays_put():
    encoder = TextEncoder(
        "chars", max_length=72, keep="head", view_only=True,
        charset="0123456789abcdefghijklmnopqrstuvwxyz", feedback_length=16, budget_scale=50,
    )  # fmt: skip
    env = TurnBudget(make_unwrapped("agent_envs/Maze-7x7-v0"), 50, visible=True)
    observation, info = env.reset(seed=0, options={"task_id": 0})
    assert encoder.feedback(observation) == "You are inside a"
    views = set()
    for action in env.unwrapped.admissible_actions():
        env.reset(seed=0, options={"task_id": 0})
        observation, _, _, _, info = env.step(action)
        assert encoder.feedback(observation) == f"You moved {action}."[:16]
        encoded = encoder.encode(observation, info["turns_left"])
        assert encoded.shape == encoder.space.shape == ((16 + 72) * 38 + 1,)
        views.add(encoder.select(observation))
    # The heading is in the feedback; the view is the new cell's, budget line dropped.
    assert all(view.startswith("You are at row") and "Turns" not in view for view in views)


def test_hashing_is_normalised_and_case_insensitive():
    encoder = TextEncoder("hashing", dim=256)
    array = encoder.encode("The Secret is HIGHER.")
    assert array.dtype == np.float32
    assert np.isclose(np.linalg.norm(array), 1.0, atol=1e-5)
    assert np.array_equal(array, encoder.encode("the secret is higher."))
    assert not encoder.encode("").any()


def test_hashing_is_stable_across_processes():
    code = (
        "from wrappers.text_encoder import TextEncoder; "
        "print(TextEncoder('hashing', dim=64).encode('Go north, then east.').tobytes().hex())"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
        )
        outputs.add(done.stdout)
    encoded = TextEncoder("hashing", dim=64).encode("Go north, then east.")
    assert outputs == {encoded.tobytes().hex() + "\n"}


def test_returned_arrays_are_private_copies():
    encoder = TextEncoder("chars", max_length=4, charset="ab")
    first = encoder.encode("ab")
    first[:] = 0
    assert encoder.encode("ab").tolist() == [0, 0, 2, 3]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"mode": "onehot"}, "mode must be one of"),
        ({"mode": "chars", "charset": "ab", "keep": "middle"}, "keep must be"),
        ({"mode": "chars", "charset": "ab", "max_length": 0}, "max_length must be"),
        ({"mode": "chars"}, "needs charset"),
        ({"mode": "hashing", "dim": 0}, "dim must be"),
        ({"mode": "hashing", "ngram_range": (3, 2)}, "ngram_range"),
        ({"mode": "tokens"}, "needs tokenizer"),
        ({"mode": "hashing", "feedback_length": 8}, "feedback_length needs mode 'chars'"),
        ({"mode": "chars", "charset": "ab", "feedback_length": 0}, "feedback_length must be"),
    ],
)
def test_bad_settings_raise_clear_errors(arguments, message):
    with pytest.raises(ValueError, match=message):
        TextEncoder(**arguments)


def test_from_config_refuses_unknown_settings():
    with pytest.raises(ValueError, match="Unknown encoder settings"):
        TextEncoder.from_config({"mode": "chars", "charset": "a", "max_lenght": 3})


@pytest.mark.parametrize("mode", ["chars", "hashing"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_wrapped_envs_pass_check_env(env_id, mode):
    env = EncodeObservation(TurnBudget(make_unwrapped(env_id), 30, visible=True), mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env, skip_render_check=True)


def test_wrapper_defaults_to_the_env_charset_so_nothing_is_unknown():
    env = EncodeObservation(gym.make("agent_envs/GuessNumber-v0"), max_length=400)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    assert 1 not in observation.tolist()  # 1 is the unknown index
    assert env.encoder_config()["charset"] == "".join(
        sorted(env.unwrapped.observation_space.character_set)
    )


def test_tokens_mode_with_a_local_tokenizer(tmp_path):
    pytest.importorskip("transformers")
    from baselines.sb3.env import load_tokenizer

    folder, size = word_tokenizer(tmp_path)
    encoder = TextEncoder("tokens", max_length=4, tokenizer=load_tokenizer(folder))
    assert encoder.space == gym.spaces.MultiDiscrete([size + 1] * 4)
    array = encoder.encode("the secret is higher than that")
    assert encoder.space.contains(array)
    assert 0 not in array.tolist()  # six tokens cut to the last four: no padding
    short = encoder.encode("lower")
    assert short.tolist()[:3] == [0, 0, 0] and short[3] > 0
    config = encoder.config()
    assert config["tokenizer"] == folder  # the name it was loaded from, as before
    rebuilt = TextEncoder.from_config(config, tokenizer=load_tokenizer(config["tokenizer"]))
    assert rebuilt.config() == config
    assert np.array_equal(
        rebuilt.encode("the secret is lower"), encoder.encode("the secret is lower")
    )


def test_a_tokenizer_loads_from_local_files_only(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    from baselines.sb3.env import load_tokenizer

    with pytest.raises(ValueError, match=r"No tokenizer at 'no-such/tokenizer'.*nothing downloads"):
        load_tokenizer("no-such/tokenizer")
    asked = []
    monkeypatch.setattr(
        transformers.AutoTokenizer, "from_pretrained", lambda name, **kw: asked.append(kw)
    )
    load_tokenizer(str(tmp_path))
    assert asked == [{"local_files_only": True}]


def test_tokens_mode_refuses_a_tokenizer_name_and_says_to_load_it():
    with pytest.raises(
        ValueError, match=r"not the name 'gpt2': load it first.*local_files_only=True"
    ):
        TextEncoder("tokens", tokenizer="gpt2")
    config = {"mode": "tokens", "max_length": 4, "keep": "tail", "view_only": False,
              "tokenizer": "gpt2"}  # fmt: skip
    for tokenizer in (None, "gpt2"):
        with pytest.raises(ValueError, match=r"names the tokenizer 'gpt2': load it first"):
            TextEncoder.from_config(config, tokenizer=tokenizer)


_NO_TRANSFORMERS = """
import sys

import gymnasium as gym

from wrappers import EncodeObservation, TextEncoder


class Words:
    name_or_path = "words"
    ids = {"go": 0, "north": 1}

    def encode(self, text, add_special_tokens=False):
        return [self.ids.get(word, 2) for word in text.split()]

    def __len__(self):
        return 3


class Echo(gym.Env):
    observation_space = gym.spaces.Text(20)
    action_space = gym.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        return "go north now", {}


encoder = TextEncoder("tokens", max_length=4, tokenizer=Words())
rebuilt = TextEncoder.from_config(encoder.config(), tokenizer=Words())
env = EncodeObservation(Echo(), "tokens", max_length=4, tokenizer=Words())
print(encoder.encode("go north now").tolist(), rebuilt.config()["tokenizer"])
print(env.reset()[0].tolist(), "transformers" in sys.modules)
"""


def test_tokens_mode_with_a_tokenizer_object_never_imports_transformers():
    """The bottom layer takes a tokenizer object and loads none."""
    done = subprocess.run(
        [sys.executable, "-c", _NO_TRANSFORMERS], check=True, capture_output=True, text=True
    )
    assert done.stdout.splitlines() == ["[0, 1, 2, 3] words", "[0, 1, 2, 3] False"]
