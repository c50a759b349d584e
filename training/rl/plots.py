"""The learning curve of a run (``learning_curve.png``): pure score, pass rate and shaped reward
over training episodes against timesteps, beside the validation pass rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _rolling(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` values (fewer at the start)."""
    if len(values) == 0:
        return values
    c = np.cumsum(np.insert(values.astype(float), 0, 0.0))
    hi = np.arange(1, len(values) + 1)
    lo = np.maximum(0, hi - max(1, window))
    return (c[hi] - c[lo]) / (hi - lo)


def plot_curve(curve: dict[str, Any], path: Path, title: str) -> Path:
    """Learning curve: pure score and shaped reward (rolling means over training episodes)
    against timesteps, and the validation pass rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    eps = curve["episodes"]
    t = np.array([e["t"] for e in eps], dtype=float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    if len(t):
        window = max(20, len(t) // 50)
        ax1.plot(t, _rolling(np.array([e["score"] for e in eps]), window), label=f"train pure score (mean of {window} episodes)")
        ax1.plot(t, _rolling(np.array([e["pass"] for e in eps]), window), label="train pass rate", alpha=0.7)
        ax2.plot(t, _rolling(np.array([e["shaped"] for e in eps]), window), color="tab:green", label="shaped reward")
    val = curve["validation"]
    if val:
        ax1.plot([v["t"] for v in val], [v["pass_rate"] for v in val], "o-", color="black", label="validation pass rate")
    ax1.set(xlabel="timesteps", ylabel="pure score / pass rate", ylim=(-0.02, 1.02), title="pure grade")
    ax2.set(xlabel="timesteps", ylabel="episode shaped reward", title="shaped reward (training signal)")
    thousands = FuncFormatter(lambda x, _: f"{x / 1000:.0f}k")
    for ax in (ax1, ax2):
        ax.xaxis.set_major_formatter(thousands)
        if ax.get_legend_handles_labels()[0]:  # a clone kept without PPO has no training episodes
            ax.legend(loc="best", fontsize=8, framealpha=0.6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
