"""EvalResult: the Pass@(K,T) surface, its confidence intervals and what produced it."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import write_json
from agent_envs.evaluation.pass_at_k import bootstrap_means, pass_at_k_table, percentile_interval
from agent_envs.evaluation.settings import EvalSettings

__all__ = ["RESULT_FORMAT", "EvalResult", "bootstrap_rng"]

#: /2: the settings are one EvalSettings object, stored under "settings".
RESULT_FORMAT = "agent-envs-result/2"

# Salts the bootstrap stream so that it never reuses the episodes' seeds.
_BOOTSTRAP_STREAM = 0xB0075
_ARRAYS = ("surface", "ci_low", "ci_high")


def bootstrap_rng(seed: int) -> np.random.Generator:
    """Return the generator the bootstrap of a run with base ``seed`` draws from."""
    return np.random.default_rng([_BOOTSTRAP_STREAM, seed])


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
        error_examples: up to five distinct error messages.
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
            raise ValueError(
                f"not an agent-envs result (expected format {RESULT_FORMAT!r}); "
                "pass a JSON file written by `agent-envs eval --out`."
            )
        fields = dict(data)
        fields.pop("format")
        unknown = set(fields) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"result has unknown fields {sorted(unknown)}.")
        try:
            for name in _ARRAYS:
                fields[name] = np.asarray(fields[name], dtype=float)
            fields["success_counts"] = np.asarray(fields["success_counts"], dtype=np.int64)
            fields["settings"] = EvalSettings.from_json(fields["settings"])
            result = cls(**fields)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed result ({exc}).") from None
        shape = (len(result.ks), len(result.budgets))
        if any(getattr(result, name).shape != shape for name in _ARRAYS):
            raise ValueError(f"malformed result: the surface is not {shape[0]}x{shape[1]} (K x T).")
        return result

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON to ``path``, creating its folder."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvalResult:
        """Read a result written by :meth:`save`, with one-line errors for bad files."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ValueError(f"cannot read result {path}: {reason}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not JSON ({exc.msg} at line {exc.lineno}).") from None
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

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
            lines.append(f"{self.errors} of {self.episodes} episodes ended in a policy error.")
        if self.diagnostics:
            from agent_envs.evaluation.formatting import diagnostics_lines

            lines.extend(diagnostics_lines(self.diagnostics, self.budgets))
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str]) -> None:
        """Write the surface as a heatmap PNG (needs the ``[plot]`` extra: matplotlib)."""
        from agent_envs.evaluation.plotting import plot_grid

        plot_grid(
            path,
            self.surface,
            self.ks,
            self.budgets,
            title=f"Pass@(K,T): {self.agent} on {self.env_id} ({self.mode} budget)",
            vmin=0.0,
            vmax=1.0,
            cmap="viridis",
        )

    def __repr__(self) -> str:
        return (
            f"EvalResult(env_id={self.env_id!r}, agent={self.agent!r}, mode={self.mode!r}, "
            f"ks={self.ks}, budgets={self.budgets}, tasks={len(self.task_ids)}, "
            f"samples={self.samples})"
        )
