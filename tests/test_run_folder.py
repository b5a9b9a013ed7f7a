"""A training command's run folder.

The folder is marked (``agent_envs_run.json``) with what the command wrote;
``--resume`` and ``--overwrite`` refuse a non-empty folder without that
marker, ``--overwrite`` deletes only what the marker lists, the model lives
in its own subfolder, and an SB3 save cut off between the model and its
sidecar makes ``--resume`` train again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_envs.arguments import UsageError
from baselines.command import MARKER, RunFolder

GUESS = "agent_envs/GuessNumber-v0"


def _user_files(folder: Path, *names: str) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"the user's own {name}".encode())
    return {name: (folder / name).read_bytes() for name in names}


def _unchanged(folder: Path, files: dict[str, bytes]) -> bool:
    return all((folder / name).read_bytes() == data for name, data in files.items())


# ------------------------------------------------------------------ RunFolder
@pytest.mark.parametrize("flag", ["resume", "overwrite"])
def test_an_unmarked_folder_with_files_is_refused_and_untouched(tmp_path, flag):
    files = _user_files(tmp_path, "result.json", "checkpoints/keep.bin")
    with pytest.raises(UsageError, match=f"did not write.*no {MARKER}.*--{flag}"):
        RunFolder.open(tmp_path, "train-sb3", {}, ["result.json"], **{flag: True})
    assert _unchanged(tmp_path, files) and not (tmp_path / MARKER).exists()


def test_overwrite_deletes_only_what_the_marker_lists(tmp_path):
    run = RunFolder.open(tmp_path / "run", "train-sb3", {"a": 1}, ["result.json"])
    run.wrote("model/", "model/model.zip", "result.json")
    for name in ("model/model.zip", "result.json"):
        _user_files(run.path, name)
    mine = _user_files(run.path, "notes.txt", "data/train.csv")
    again = RunFolder.open(run.path, "train-sb3", {"a": 2}, ["result.json"], overwrite=True)
    assert _unchanged(run.path, mine)
    assert not (run.path / "model").exists() and not (run.path / "result.json").exists()
    assert json.loads((run.path / MARKER).read_text())["written"] == [] == again.written


def test_a_marker_of_another_command_or_outside_the_folder_is_refused(tmp_path):
    RunFolder.open(tmp_path / "a", "train-llm", {}, [])
    with pytest.raises(UsageError, match="holds a train-llm run, not a train-sb3 one"):
        RunFolder.open(tmp_path / "a", "train-sb3", {}, [], resume=True)
    marker = {"command": "train-sb3", "settings": {}, "written": ["../../etc/passwd"]}
    _user_files(tmp_path / "b")
    (tmp_path / "b" / MARKER).write_text(json.dumps(marker))
    with pytest.raises(UsageError, match="outside the folder"):
        RunFolder.open(tmp_path / "b", "train-sb3", {}, [], overwrite=True)


def test_overwrite_never_deletes_through_a_symlink_out_of_the_run_folder(tmp_path):
    """A marker listing paths under symlinks to a user's folders deletes nothing out there."""
    run = RunFolder.open(tmp_path / "run", "train-llm", {}, [])
    elsewhere = _user_files(tmp_path / "elsewhere", "precious.txt", "sub/keep.txt")
    (run.path / "link").symlink_to(tmp_path / "elsewhere")
    (run.path / "link2").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    run.wrote("link/precious.txt", "link2/sub/")
    with pytest.raises(UsageError, match=r"outside the folder.*nothing was deleted"):
        RunFolder.open(run.path, "train-llm", {}, [], overwrite=True)
    assert _unchanged(tmp_path / "elsewhere", elsewhere)


def test_overwrite_removes_a_listed_symlink_itself_never_its_target(tmp_path):
    run = RunFolder.open(tmp_path / "run", "train-llm", {}, [])
    elsewhere = _user_files(tmp_path / "elsewhere", "precious.txt", "sub/keep.txt")
    (run.path / "model").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (run.path / "result.json").symlink_to(tmp_path / "elsewhere" / "precious.txt")
    run.wrote("model/", "result.json")
    RunFolder.open(run.path, "train-llm", {}, [], overwrite=True)
    assert not (run.path / "model").is_symlink() and not (run.path / "result.json").is_symlink()
    assert _unchanged(tmp_path / "elsewhere", elsewhere)


# ----------------------------------------------------------- the two commands
def _sb3(*args: str) -> int:
    from baselines.sb3 import train as sb3_train

    return sb3_train.main(list(args))


def _llm(*args: str) -> int:
    pytest.importorskip("trl")
    from baselines.llm.training import train as llm_train

    return llm_train.main(list(args))


@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
@pytest.mark.parametrize(
    ("command", "names"),
    [
        # Item 6: files that only share a name with train-sb3's outputs.
        (_sb3, ("model.zip", "model.json", "result.json", "episodes.jsonl")),
        # Item 5: a checkpoints/ folder and a config.json train-llm never wrote.
        (_llm, ("checkpoints/step-1/weights.bin", "config.json", "train_llm.json")),
    ],
    ids=["train-sb3", "train-llm"],
)
def test_a_command_never_touches_a_users_folder(
    tmp_path, capsys, no_training, command, names, flag
):
    out = tmp_path / "mine"
    files = _user_files(out, *names)
    assert command(GUESS, "--quick", "--out", str(out), flag) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and MARKER in err[0] and flag in err[0], err
    assert _unchanged(out, files) and not (out / MARKER).exists()


def test_sb3_overwrite_keeps_the_users_files_beside_a_run(tmp_path, monkeypatch):
    from baselines.sb3 import train as sb3_train

    trained = []

    def fake_train(config, out, log=print):
        trained.append(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "model.zip").write_text("zip")
        (out / "model.json").write_text("{}")
        return out / "model.zip"

    monkeypatch.setattr(sb3_train, "train", fake_train)
    out = tmp_path / "run"
    assert _sb3(GUESS, "--quick", "--no-eval", "--out", str(out)) == 0
    assert trained == [out / "model"]  # the model in its own subfolder
    mine = _user_files(out, "notes.txt")
    assert _sb3(GUESS, "--quick", "--no-eval", "--out", str(out), "--overwrite") == 0
    assert _unchanged(out, mine) and len(trained) == 2


def test_an_sb3_save_cut_off_before_the_sidecar_is_trained_again(tmp_path, monkeypatch):
    """Item 7: model.zip without model.json made --resume fail ("No sidecar ...")."""
    from baselines.sb3 import train as sb3_train

    out = tmp_path / "run"
    real_train = sb3_train.train
    assert _sb3(GUESS, "--quick", "--no-eval", "--out", str(out)) == 0
    (out / "model" / "model.json").unlink()  # as a save killed between the two renames leaves
    calls = []
    monkeypatch.setattr(sb3_train, "train", lambda *a, **k: calls.append(1) or real_train(*a, **k))
    assert _sb3(GUESS, "--quick", "--no-eval", "--out", str(out), "--resume") == 0
    assert calls == [1] and (out / "model" / "model.json").is_file()


def test_save_with_sidecar_leaves_no_sidecar_beside_a_model_it_does_not_describe(
    tmp_path, monkeypatch
):
    """Item 7: the sidecar is moved in last, after the old one is removed."""
    import os

    from baselines.sb3 import training

    class Model:
        class policy:
            optimizer = None

    monkeypatch.setattr(training, "save_model", lambda model, path: path.write_text("new"))
    (tmp_path / "model.zip").write_text("old")
    (tmp_path / "model.json").write_text('{"old": true}')
    real_replace = os.replace

    def crash_on_sidecar(src, dst):
        if Path(dst) == tmp_path / "model.json":  # the last step: the sidecar moved in
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(training.os, "replace", crash_on_sidecar)
    keys = {"algo": "ppo", "encoding": {}, "action_vocabulary": [], "action_masks": False,
            "visible_budget": False, "config": {}}  # fmt: skip
    with pytest.raises(OSError, match="No space left"):
        training.save_with_sidecar(Model(), keys, tmp_path)
    assert (tmp_path / "model.zip").read_text() == "new" and not (tmp_path / "model.json").exists()
    assert [path.name for path in tmp_path.iterdir()] == ["model.zip"]  # no staging left


# --------------------------------------------------------------------- item 16
def test_timesteps_are_bounded(tmp_path, capsys, no_training):
    assert _sb3(GUESS, "--timesteps", str(10**30), "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--timesteps" in err[0] and not (tmp_path / "o").exists()


def test_quick_fills_in_only_the_flags_not_given():
    from baselines.sb3.train import COMMAND

    args = COMMAND.parse([GUESS, "--quick", "--timesteps", "999", "--eval-samples", "3"])
    config = COMMAND.configs(args)[0]
    settings = COMMAND.evaluation(args, config)
    assert config.timesteps == 999 and config.n_envs == 2 and settings.samples == 3
    quick = COMMAND.parse([GUESS, "--quick"])
    assert COMMAND.configs(quick)[0].timesteps == 256
    assert COMMAND.evaluation(quick, COMMAND.configs(quick)[0]).samples == 2


def test_train_llm_quick_fills_in_only_the_flags_not_given():
    """train-llm's --quick follows train-sb3's rule."""
    from baselines.llm.training.train import COMMAND

    argv = [GUESS, "--quick", "--steps", "5", "--group-size", "4", "--tasks", "0:6"]
    args = COMMAND.parse([*argv, "--eval-samples", "3", "--eval-tasks", "10000:10005"])
    config = COMMAND.configs(args)[0]
    settings = COMMAND.evaluation(args, config)
    assert (config.steps, config.k, len(config.tasks)) == (5, 4, 6)
    assert config.tasks_per_step == 1 and config.warm_start == 4  # not given: --quick's
    assert settings.samples == 3 and len(settings.tasks) == 5
    quick = COMMAND.parse([GUESS, "--quick"])
    config = COMMAND.configs(quick)[0]
    assert (config.steps, config.k, len(config.tasks)) == (2, 2, 2)
    settings = COMMAND.evaluation(quick, config)
    assert settings.samples == 2 and len(settings.tasks) == 2


def test_resume_with_other_eval_settings_says_what_to_do_without_a_log_flag(tmp_path):
    from baselines.sb3.train import _no_log_flag

    message = (
        "run/episodes.jsonl was written with different settings (samples 2 -> 3); "
        "use another --log path, or the same settings to resume."
    )
    said = _no_log_flag(message, Path("run"))
    assert "--log" not in said and "--eval-" in said and "--overwrite" in said
    assert "episodes.jsonl" in said
