"""EvalResult: the Pass@(K,T) surface, its confidence intervals and what produced it."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import error_summary, write_json
from agent_envs.evaluation.pass_at_k import pass_at_k_table
from agent_envs.evaluation.settings import EvalSettings
from agent_envs.statistics.resampling import bootstrap_means, bootstrap_rng, percentile_interval
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_int

__all__ = ["RESULT_FORMAT", "EvalResult"]

#: /2: the settings are one EvalSettings object, stored under "settings".
RESULT_FORMAT = "agent-envs-result/2"

_ARRAYS = ("surface", "ci_low", "ci_high")


def _ints(values: Any, minimum: int) -> bool:
    """Return whether ``values`` is a list of ints >= ``minimum`` (as validators define ints)."""
    try:
        return isinstance(values, list) and all(
            check_int(value, "value", minimum) is not None for value in values
        )
    except (TypeError, ValueError):
        return False


#: The diagnostics that are one rate each (a number, or null where nothing was judged).
_RATES = ("invalid_action_rate", "unparsable_rate", "decision_quality", "decision_quality_valid")


def _rate(value: Any) -> bool:
    """Return whether ``value`` is what a diagnostic rate holds: a number (not a bool) or null."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _diagnostics_problem(diagnostics: dict[str, Any]) -> str:
    """Return which diagnostic has a shape no evaluation writes, or ``""``.

    The table and ``agent-envs report`` read these without further checks, so
    a hand-edited ``"dead_end_rate": 0.5`` is refused here, not a traceback there.
    """
    for key in _RATES:
        if not _rate(diagnostics.get(key)):
            return f"diagnostics.{key} must be a number or null"
    dead = diagnostics.get("dead_end_rate", [])
    if not isinstance(dead, list) or not all(_rate(value) for value in dead):
        return "diagnostics.dead_end_rate must be a list of numbers or nulls, one per T"
    for key, rate in (("error_recovery", "rate"), ("success_after_error", "success_rate")):
        items = diagnostics.get(key, [])
        if not isinstance(items, list) or not all(
            isinstance(item, dict) and _rate(item.get(rate)) for item in items
        ):
            return f"diagnostics.{key} must be a list of objects, one per T, each {rate} a number"
    horizons = diagnostics.get("by_horizon", {})
    if not isinstance(horizons, dict) or not all(
        isinstance(item, dict)
        and _ints([item.get("tasks")], 0)
        and isinstance(item.get("success_rate"), list)
        and all(_rate(value) for value in item["success_rate"])
        for item in horizons.values()
    ):
        return "diagnostics.by_horizon must map horizons to {tasks, success_rate per T}"
    for key in ("turns", "step_quality"):
        if not isinstance(diagnostics.get(key, {}), dict):
            return f"diagnostics.{key} must be a JSON object"
    return ""


@dataclass
class EvalResult:
    """The Pass@(K,T) surface of one policy on one env, and how it was measured.

    ``surface[i][j]`` is Pass@(``ks[i]``, ``budgets[j]``): rows K, columns T.
    ``ci_low`` / ``ci_high`` bound its ``confidence`` percentile interval from
    ``n_bootstrap`` resamples of the tasks, seeded by ``seed``.
    ``success_counts[i][j]`` is how many of the ``samples`` attempts at
    ``task_ids[i]`` succeeded within ``budgets[j]`` turns.

    Attributes:
        settings: the :class:`EvalSettings` of the run, as the evaluator
            resolved them (env and agent names, mode); the run log's header
            holds the same object.  ``env_id``, ``agent``, ``mode``, ``ks``,
            ``budgets``, ``task_ids``, ``samples``, ``seed``, ``confidence``
            and ``n_bootstrap`` read from it.
        surface, ci_low, ci_high: arrays of shape ``(len(ks), len(budgets))``.
        success_counts: int array of shape ``(len(task_ids), len(budgets))``.
        episodes: episodes counted; errors: how many of them the policy broke.
        error_examples: up to five distinct error messages, first seen first.
        error_counts: how many episodes ended in each of ``error_examples``.
        diagnostics: see :mod:`agent_envs.evaluation.diagnostics`, or ``None``.
        timing: wall time, episodes run and resumed, env steps, policy calls.
        version: the ``agent_envs`` version that produced the result.
    """

    settings: EvalSettings
    surface: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    success_counts: np.ndarray
    episodes: int = 0
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    error_counts: list[int] = field(default_factory=list)
    diagnostics: dict[str, Any] | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    version: str = ""

    # Read-only views of the settings, under the names results have always used.
    env_id = property(lambda self: self.settings.env_name, doc="The env's id or name.")
    agent = property(lambda self: self.settings.agent_name, doc="The policy's name.")
    mode = property(lambda self: self.settings.mode, doc='"hidden" or "visible".')
    ks = property(lambda self: list(self.settings.ks), doc="The K grid.")
    budgets = property(lambda self: list(self.settings.budgets), doc="The T grid.")
    task_ids = property(lambda self: list(self.settings.tasks), doc="The task ids.")
    samples = property(lambda self: self.settings.samples, doc="Attempts per task (n).")
    seed = property(lambda self: self.settings.seed, doc="The base seed.")
    confidence = property(lambda self: self.settings.confidence, doc="Interval coverage.")
    n_bootstrap = property(lambda self: self.settings.n_bootstrap, doc="Bootstrap resamples.")

    @staticmethod
    def per_task(samples: int, success_counts: np.ndarray, ks: Sequence[int]) -> np.ndarray:
        """Return each task's Pass@(K,T) estimate, shape ``(tasks, len(ks), len(budgets))``."""
        return np.moveaxis(pass_at_k_table(samples, np.asarray(success_counts), list(ks)), 0, 1)

    def per_task_values(self) -> np.ndarray:
        """Return this result's per-task Pass@(K,T) estimates (see :meth:`per_task`)."""
        return self.per_task(self.samples, self.success_counts, self.ks)

    @staticmethod
    def surface_and_interval(
        values: np.ndarray, n_bootstrap: int, seed: int, confidence: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the mean over tasks of ``values`` and its bootstrap interval."""
        draws = bootstrap_means(values, n_bootstrap, bootstrap_rng(seed))
        low, high = percentile_interval(draws, confidence)
        return values.mean(axis=0), low, high

    def pass_at(self, k: int, t: int) -> float:
        """Return Pass@(k, t) from the surface; ``KeyError`` if (k, t) is not on the grid."""
        if k not in self.ks or t not in self.budgets:
            raise KeyError(f"(K={k}, T={t}) is not on the grid K={self.ks}, T={self.budgets}.")
        return float(self.surface[self.ks.index(k), self.budgets.index(t)])

    # ------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict; :meth:`from_dict` inverts it exactly."""
        data: dict[str, Any] = {"format": RESULT_FORMAT}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, EvalSettings):
                value = value.to_json()
            # A copy: editing the dict must not change the result it came from.
            data[name] = value.tolist() if isinstance(value, np.ndarray) else copy.deepcopy(value)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        """Rebuild a result from :meth:`to_dict` output, with a clear error if it is not one."""
        if not isinstance(data, dict) or data.get("format") != RESULT_FORMAT:
            raise InvalidValue(
                f"not an agent-envs result (expected format {RESULT_FORMAT!r}); "
                "pass a JSON file written by `agent-envs eval --out`."
            )
        fields = dict(data)
        fields.pop("format")
        unknown = set(fields) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidValue(f"result has unknown fields {sorted(unknown)}.")
        try:
            for name in _ARRAYS:
                fields[name] = np.asarray(fields[name], dtype=float)
            counts = np.asarray(fields["success_counts"], dtype=float)
            if not np.array_equal(counts, np.round(counts)):
                raise InvalidValue("success_counts must hold whole numbers")
            fields["success_counts"] = counts.astype(np.int64)
            fields["settings"] = EvalSettings.from_json(fields["settings"])
            result = cls(**fields)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidValue(f"malformed result ({exc}).") from None
        problem = result._inconsistency()
        if problem:
            raise InvalidValue(f"malformed result: {problem}.")
        return result

    def _inconsistency(self) -> str:
        """Return what makes this result self-contradictory, or ``""`` if nothing does.

        Design decision: a loaded result is checked against itself, not only
        for its shape: the surface must be what its ``success_counts`` give,
        so that :func:`compare` (which resamples the counts) and the table
        (which shows the surface) can never disagree.
        """

        if not (_ints(self.ks, 1) and _ints(self.budgets, 1) and self.ks and self.budgets):
            return "ks and budgets must be non-empty lists of ints >= 1"
        if self.ks != sorted(set(self.ks)) or self.budgets != sorted(set(self.budgets)):
            return "ks and budgets must be sorted and distinct"
        if not _ints(self.task_ids, 0) or not self.task_ids:
            return "task_ids must be a non-empty list of ints >= 0"
        if len(set(self.task_ids)) != len(self.task_ids):
            return "task_ids must be distinct"
        if not _ints([self.samples], max(self.ks)):
            return f"samples must be an int >= max(K) = {max(self.ks)}"
        if not _ints([self.episodes, self.errors], 0) or self.errors > self.episodes:
            return "episodes and errors must be ints with errors <= episodes"
        if not isinstance(self.env_id, str) or not self.env_id:
            return "settings.env_name must be a non-empty string"
        for name, kind in (("diagnostics", dict), ("timing", dict), ("version", str)):
            value = getattr(self, name)
            if not isinstance(value, kind) and not (name == "diagnostics" and value is None):
                return f"{name} must be a JSON {'object' if kind is dict else 'string'}"
        problem = _diagnostics_problem(self.diagnostics or {})
        if problem:
            return problem
        examples = self.error_examples
        if not isinstance(examples, list) or not all(isinstance(text, str) for text in examples):
            return "error_examples must be a list of strings"
        if not _ints(self.error_counts, 0):
            return "error_counts must be a list of ints >= 0"
        if self.mode not in ("hidden", "visible"):
            return f"mode must be 'hidden' or 'visible', got {self.mode!r}"
        grid = (len(self.ks), len(self.budgets))
        for name in _ARRAYS:
            values = getattr(self, name)
            if values.shape != grid:
                return f"{name} is not {grid[0]}x{grid[1]} (K x T)"
            if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
                return f"{name} must hold numbers in [0, 1]"
        counts = self.success_counts
        if counts.shape != (len(self.task_ids), len(self.budgets)):
            return (
                f"success_counts is not {len(self.task_ids)}x{len(self.budgets)} (tasks x T), "
                f"it is {'x'.join(str(n) for n in counts.shape)}"
            )
        if counts.size and (counts.min() < 0 or counts.max() > self.samples):
            return f"success_counts must lie in [0, samples={self.samples}]"
        if not np.allclose(self.per_task_values().mean(axis=0), self.surface, atol=1e-9):
            return "the surface is not what its success_counts give"
        if np.any(self.ci_low > self.ci_high):
            return "ci_low exceeds ci_high"
        return ""

    def error_summary(self) -> str:
        """Return ``"E of N episodes ended in a policy error: 3x '...'; ..."``, or ``""``."""
        if not self.errors:
            return ""
        counts = self.error_counts if len(self.error_counts) == len(self.error_examples) else []
        kinds = error_summary(zip(self.error_examples, counts, strict=True)) if counts else ""
        if not kinds and self.error_examples:
            kinds = f"first: {self.error_examples[0]!r}"
        return f"{self.errors} of {self.episodes} episodes ended in a policy error" + (
            f": {kinds}" if kinds else ""
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON to ``path``, creating its folder."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvalResult:
        """Read a result written by :meth:`save`, with one-line errors for bad files.

        The file is read by :func:`~agent_envs.files.read_json_input`: a
        regular file of at most :data:`~agent_envs.files.MAX_RESULT_BYTES`.
        """
        from agent_envs.files import read_json_input

        data = read_json_input(path, "result")
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise InvalidValue(f"{path}: {exc}") from None

    # ------------------------------------------------------------ output
    def table(self, ci: bool = True) -> str:
        """Return the surface as a text table for the terminal (rows K, columns T)."""
        from agent_envs.evaluation.formatting import grid_table

        title = (
            f"Pass@(K,T)  env={self.env_id}  agent={self.agent}  mode={self.mode}  "
            f"tasks={len(self.task_ids)}  samples={self.samples}"
        )
        lines = [
            title,
            grid_table(self.ks, self.budgets, self.surface, self.ci_low, self.ci_high, ci),
        ]
        if ci:
            interval = f"{self.confidence:.0%} bootstrap interval over tasks"
            lines.append(f"[{interval}, {self.n_bootstrap} resamples]")
        if self.errors:
            lines.append(self.error_summary() + ".")
        if self.diagnostics:
            from agent_envs.evaluation.formatting import diagnostics_lines

            lines.extend(diagnostics_lines(self.diagnostics, self.budgets))
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str]) -> Path:
        """Write the surface as a heatmap (needs the ``[plot]`` extra); return the path written.

        ``.png`` is added to a path without a suffix (see
        :func:`~agent_envs.evaluation.plotting.plot_path`).
        """
        from agent_envs.evaluation.plotting import plot_grid

        return plot_grid(
            path,
            self.surface,
            self.ks,
            self.budgets,
            title=f"Pass@(K,T): {self.agent} on {self.env_id} ({self.mode} budget)",
            vmin=0.0,
            vmax=1.0,
            cmap="viridis",
            label="Pass@(K,T)",
        )

    def __repr__(self) -> str:
        return (
            f"EvalResult(env_id={self.env_id!r}, agent={self.agent!r}, mode={self.mode!r}, "
            f"ks={self.ks}, budgets={self.budgets}, tasks={len(self.task_ids)}, "
            f"samples={self.samples})"
        )
