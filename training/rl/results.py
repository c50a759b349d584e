"""The README's results table: every domain x catalog tier, trained and measured beside its
baselines and ceilings, resumable over several sittings.

Runs (``models/<domain>/<tier>/<kind>-s<seed>/``): pure MaskablePPO with 3 seeds on the
``conclusions`` and ``facts`` tiers and 1 on ``raw``, and one warm-started run (behaviour cloning
of the tier's feature policy, then PPO) per tier. A run whose ``summary.json`` matches the
current catalog (its hash), release, tuned hyperparameters, training reward and budget is up to
date and is skipped, so ``make results`` can be stopped and started again; every finished run is
written (and can be committed) at once. A stale run (made under another catalog, release,
tuning or reward) is retrained and is not tabulated.

Baselines per domain and tier (``results/<domain>/<tier>.json``, recomputed when the catalog or
the release changes): the catalog's random and mask-only policies, a depth-limited tree fitted to
the feature policy's train demonstrations, the feature policy and the oracle, all on heldout.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.graders.progress import DISTANCE_VERSION

#: pure-PPO seeds per tier
SEEDS = {"conclusions": 3, "facts": 3, "raw": 1}
#: the depth of the tree baseline
TREE_DEPTH = 6
MODELS = Path("models")
RESULTS = Path("results")


@dataclass(frozen=True)
class Run:
    """One training run of the table."""

    domain: str
    tier: str
    kind: str  # "ppo" (pure RL) or "warm" (behaviour cloning, then PPO)
    seed: int

    @property
    def out(self) -> Path:
        return MODELS / self.domain / self.tier / f"{self.kind}-s{self.seed}"


def plan(domains: Iterable[str], tiers: Iterable[str] | None = None) -> list[Run]:
    """Every run of the table for ``domains`` (and ``tiers``, default: every tier a catalog has)."""
    from backoffice.training.catalog import tier_specs

    runs = []
    for domain in domains:
        for tier in tier_specs(domain):
            if tiers is not None and tier not in tiers:
                continue
            runs += [Run(domain, tier, "ppo", s) for s in range(SEEDS.get(tier, 1))]
            runs.append(Run(domain, tier, "warm", 0))
    return runs


def _identity(domain: str, tier: str) -> dict[str, str]:
    from backoffice.training.catalog import resolve_spec
    from backoffice.training.rl.sb3_policy import catalog_signature
    from backoffice.training.rl.train import release_id

    return {"catalog_hash": catalog_signature(domain, resolve_spec(domain, tier=tier))["catalog_hash"],
            "release": release_id(domain)}


def current_summary(run: Run, any_release: bool = False) -> dict[str, Any] | None:
    """The summary of ``run`` if its model was made with the current catalog, release, tuned
    hyperparameters and reward (any budget), else ``None``: a stale run is retrained and never
    tabulated. ``release`` is the release the summary's heldout figures were measured on (see
    :func:`reevaluate`); ``any_release`` accepts any."""
    path = run.out / "summary.json"
    if not path.exists() or not (run.out / "model.zip").exists():
        return None
    summary: dict[str, Any] = loads(path.read_bytes())
    ident = _identity(run.domain, run.tier)
    if summary.get("catalog_hash") != ident["catalog_hash"] or (not any_release and summary.get("release") != ident["release"]):
        return None
    config = run_config(run, summary.get("config", {}).get("timesteps", 1))
    if _settings(summary.get("config", {})) != _settings(config):
        return None  # the catalog's tuned hyperparameters (the reward among them) changed
    if config["reward_mode"] == "progress" and summary.get("progress_distance", 1) != DISTANCE_VERSION:
        return None  # trained on an older end-state distance: another reward
    if run.kind == "warm" and (summary.get("validation") or [{}])[0].get("t") != 0:
        return None  # made before the clone was validated (t=0) as a candidate model
    return summary


def reevaluate(run: Run, force: bool = False) -> dict[str, Any] | None:
    """Measure ``run``'s model, made for the current catalog and settings on an earlier release,
    on the current release's heldout split, and record it in its ``summary.json``: ``release``
    becomes the current one (what the heldout figures are measured on), ``trained_release`` keeps
    the release it was trained on and ``heldout_before`` its figures there. The model is not
    retrained (its training tasks were the earlier release's), and the table marks it. Returns the
    new summary, or ``None`` if the run is current already (unless ``force``: measure it again,
    e.g. after a change in how the catalog grounds an action) or not re-evaluable (missing, or
    made for another catalog or settings: retrain it)."""
    from backoffice.training.rl.train import evaluate_heldout

    summary = current_summary(run, any_release=True)
    release = _identity(run.domain, run.tier)["release"]
    if summary is None or (summary.get("release") == release and not force):
        return None
    before = summary.get("heldout_before") if summary.get("release") == release else None
    before = before or {**summary.get("heldout", {}), "release": summary.get("release")}
    summary.setdefault("trained_release", summary.get("release"))
    summary["heldout_before"] = before
    summary["heldout"] = evaluate_heldout(run.domain, Path(summary["model"]), run.out / "heldout.jsonl")
    summary["release"] = release
    return _ship(run, summary)


def _ship(run: Run, summary: dict[str, Any]) -> dict[str, Any]:
    """Write ``summary`` as the repository ships it: the run's ``heldout.jsonl`` stays local
    (``.gitignore``), so the summary names none and keeps the command that writes it again,
    into the untracked ``runs/``."""
    from backoffice.training.rl.train import records_command

    out = Path("runs") / "heldout" / f"{run.domain}-{run.tier}-{run.kind}-s{run.seed}.jsonl"
    command = records_command(run.domain, run.out / "model.zip", out)
    summary["heldout"] = {**summary.get("heldout", {}), "records": None, "records_command": command}
    (run.out / "summary.json").write_bytes(dumps(summary))
    return summary


def _train_config(run: Run, timesteps: int | None = None) -> Any:
    """The ``TrainConfig`` of ``run``: the catalog's tuned hyperparameters, its seed and kind,
    on ``timesteps`` (default: the tuned budget)."""
    from backoffice.training.rl.config import TrainConfig

    return TrainConfig.for_domain(run.domain, run.out, tier=run.tier, seed=run.seed, timesteps=timesteps,
                                  warm_start="demos" if run.kind == "warm" else None)


def budget(run: Run, timesteps: int | None = None) -> int:
    """The training budget of ``run``: ``timesteps`` when given, else the catalog's tuned
    ``timesteps`` (remittance's conclusions tier: 400k), else ``TrainConfig``'s 200k."""
    return timesteps if timesteps is not None else int(_train_config(run).timesteps)


def up_to_date(run: Run, timesteps: int | None = None) -> bool:
    """Whether ``run`` has a model and summary made with the current catalog, release, tuned
    hyperparameters, reward and budget (``timesteps``, default: :func:`budget`)."""
    summary = current_summary(run)
    if summary is None:
        return False
    timesteps = budget(run, timesteps)
    made = summary.get("config", {}).get("timesteps")  # the budget the run was made with
    # a run that stopped early with every validation task passed would stop at the same step
    # (training is seeded) under any budget that reaches that step
    converged = summary.get("best_validation_pass_rate") == 1.0 and summary.get("timesteps", made) < made
    return made == timesteps or (converged and summary["timesteps"] <= timesteps)


def run_config(run: Run, timesteps: int) -> dict[str, Any]:
    """The configuration ``run`` trains with (the catalog's tuned hyperparameters), as recorded
    in ``summary.json``."""
    return _train_config(run, timesteps).record()


#: settings ``TrainConfig`` no longer has, with the value every run made without them had
#: (docs/EXPERIMENTS.md): an older summary that records that value made the same run
RETIRED_SETTINGS: dict[str, Any] = {"self_imitation": 0}


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    """What makes two runs the same run, the budget aside (early stopping is judged apart) and the
    vec env kind (it moves the same envs into or out of the learner's process: the same model,
    tested), and the module path of the tier (``spec``; the recorded ``tier`` and
    ``catalog_hash`` say which tier it was). A setting missing from an older summary had its default then (it was added later);
    a retired setting at its old default (:data:`RETIRED_SETTINGS`) made no difference."""
    from dataclasses import MISSING, fields

    from backoffice.training.rl.config import TrainConfig

    defaults = {f.name: f.default for f in fields(TrainConfig) if f.default is not MISSING}
    config = {k: v for k, v in config.items() if k not in RETIRED_SETTINGS or v != RETIRED_SETTINGS[k]}
    # the spec is the module the tier lives in (it may move): the tier and the catalog_hash name it
    ignored = ("timesteps", "out", "vec_env", "tensorboard_log", "spec")
    settings = {k: v for k, v in {**defaults, **config}.items() if k not in ignored}
    return dict(loads(dumps(settings)))  # as summary.json holds them: a default tuple is a list there


def train_run(run: Run, timesteps: int | None = None, on_progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train one run (pure PPO or warm-started) with the catalog's tuned hyperparameters, on
    ``timesteps`` (default: :func:`budget`)."""
    from backoffice.training.rl.train import train

    return _ship(run, train(_train_config(run, timesteps), on_progress=on_progress))


def _heldout_pass(domain: str, policy: Any) -> float:
    from backoffice.envs import make_native
    from backoffice.training.eval.rollout import play

    env = make_native(domain, split="heldout")
    ids = env.release.split_ids["heldout"]
    return sum(bool(e.info["is_success"]) for e in play(env, policy, ids)) / len(ids)


def _bc_settings(config: Any) -> dict[str, Any]:
    """What the behaviour-cloning ceiling depends on beside the catalog and the release (the
    split and the policy network only when not the default: ceilings cached before they were
    recorded stay valid)."""
    out = {"algo": config.algo, "net_arch": list(config.net_arch), "finish_bias": config.finish_bias,
           "validation_size": config.validation_size, "seed": config.seed, "torch_threads": config.torch_threads,
           "bc_epochs": config.bc_epochs}
    if config.train_split != "train":
        out["train_split"] = config.train_split
    if config.policy != "mlp":
        out["policy"] = config.policy
    if config.finish_tools:
        out["finish_tools"] = list(config.finish_tools)
    return out


def bc_ceiling(domain: str, tier: str) -> dict[str, Any]:
    """The behaviour-cloning ceiling of a tier: the tier's untrained model (its tuned
    hyperparameters, seed 0) cloned from the feature policy's demonstrations on its training tasks
    (:func:`~backoffice.training.rl.config.demo_task_ids`), then played on heldout before any PPO update. The same
    measurement as a warm-started run's ``bc_heldout_pass_rate``, without the PPO that follows."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.rl.train import build_model, ending_actions, warm_start_from_demos

    config = _train_config(Run(domain, tier, "warm", 0))
    threads = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)  # as in training: the fit is then the same
    env = make_catalog_env(domain, split="train", spec=config.spec)
    try:
        model = build_model(config, DummyVecEnv([lambda: env]), ending_actions(env, config.finish_tools))
        warm = warm_start_from_demos(model, config)
    finally:
        env.close()
        torch.set_num_threads(threads)
    return {"bc": warm["bc_heldout_pass_rate"], "bc_accuracy": warm["accuracy"], "bc_settings": _bc_settings(config)}


def baselines(domain: str, tier: str, refresh: bool = False) -> dict[str, Any]:
    """The tier's baselines on heldout (cached in ``results/<domain>/<tier>.json`` per catalog
    and release): random, mask-only, the depth-limited tree, the behaviour-cloning ceiling
    (:func:`bc_ceiling`, also recomputed when the settings it depends on change), the feature
    policy and the oracle."""
    path = RESULTS / domain / f"{tier}.json"
    ident = _identity(domain, tier)
    if path.exists() and not refresh:
        cached = loads(path.read_bytes())
        if all(cached.get(k) == v for k, v in ident.items()):
            bc_now = _bc_settings(_train_config(Run(domain, tier, "warm", 0)))
            if cached.get("bc_settings") != bc_now:
                cached.update(bc_ceiling(domain, tier))
                path.write_bytes(dumps(cached))
            return cached
    out = {**_fixed_baselines(domain, tier, ident), **bc_ceiling(domain, tier)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dumps(out))
    return out


def _fixed_baselines(domain: str, tier: str, ident: dict[str, str]) -> dict[str, Any]:
    """Random, mask-only, the depth-limited tree, the feature policy and the oracle on heldout."""
    from backoffice.envs.core.release import load_release
    from backoffice.training.catalog import resolve_spec
    from backoffice.training.policies import get_policy
    from backoffice.training.rl.demos import TreePolicy, collect, fit_tree

    spec = resolve_spec(domain, tier=tier)
    demos = collect(domain, load_release(domain).split_ids["train"], spec=spec)
    tree = fit_tree(demos.obs, demos.actions, max_depth=TREE_DEPTH)
    out = {
        **ident, "domain": domain, "tier": tier,
        "random": _heldout_pass(domain, get_policy(domain, f"catalog-random@{tier}")),
        "mask_only": _heldout_pass(domain, get_policy(domain, f"catalog-mask-only@{tier}")),
        "tree": _heldout_pass(domain, TreePolicy(domain, tree, spec=spec)), "tree_leaves": tree.leaves,
        "features": _heldout_pass(domain, get_policy(domain, f"catalog-features@{tier}")),
        "oracle": _heldout_pass(domain, get_policy(domain, "oracle")),
    }
    return out


def collect_rows(domains: Iterable[str], tiers: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per domain and tier from the current runs on disk and the cached baselines
    (``None`` where a run has not been made yet or is stale)."""
    rows = []
    runs = plan(domains, tiers)
    for domain, tier in dict.fromkeys((r.domain, r.tier) for r in runs):
        ppo = [r for r in runs if (r.domain, r.tier, r.kind) == (domain, tier, "ppo")]
        warm = [r for r in runs if (r.domain, r.tier, r.kind) == (domain, tier, "warm")]
        done = [s for s in map(current_summary, ppo) if s is not None]
        warm_done = [s for s in map(current_summary, warm) if s is not None]
        base_path = RESULTS / domain / f"{tier}.json"
        base = loads(base_path.read_bytes()) if base_path.exists() else {}
        passes = [s["heldout"]["pass_rate"] for s in done if "heldout" in s]
        row: dict[str, Any] = {
            "domain": domain, "tier": tier, "seeds": len(passes), "seeds_planned": len(ppo),
            "random": base.get("random"), "mask_only": base.get("mask_only"), "tree": base.get("tree"),
            "tree_leaves": base.get("tree_leaves"), "features": base.get("features"), "oracle": base.get("oracle"),
            "ppo_mean": statistics.mean(passes) if passes else None,
            "ppo_sd": statistics.stdev(passes) if len(passes) > 1 else (0.0 if passes else None),
            "ppo_steps": statistics.mean(s["timesteps"] for s in done) if done else None,
            "ppo_cpu_minutes": statistics.mean(s.get("cpu_minutes", 0.0) for s in done) if done else None,
            "reward": "/".join(sorted({s.get("config", {}).get("reward_mode", "shaped") for s in done})) or None,
            "net": "/".join(sorted({s.get("config", {}).get("policy", "mlp") for s in done})) or None,
            "bc": base.get("bc", warm_done[0]["warm_start"].get("bc_heldout_pass_rate") if warm_done else None),
            "warm": warm_done[0]["heldout"]["pass_rate"] if warm_done and "heldout" in warm_done[0] else None,
            # runs measured on this release but trained on an earlier one (:func:`reevaluate`)
            "reevaluated": sum(s.get("trained_release", s.get("release")) != s.get("release") for s in done + warm_done),
        }
        rows.append(row)
    return rows


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table."""
    head = ("| domain | tier | random | mask-only | tree (depth 6, leaves) | BC ceiling | MaskablePPO, mean ± sd (seeds) "
            "| steps | CPU-min | reward | net | warm-started | feature policy | oracle |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        spread = f" ± {100 * r['ppo_sd']:.1f}" if r["seeds"] > 1 else ""  # no spread from one seed
        ppo = "–" if r["ppo_mean"] is None else f"{100 * r['ppo_mean']:.1f}{spread} % ({r['seeds']}/{r['seeds_planned']} seeds)"
        tree = "–" if r["tree"] is None else f"{_pct(r['tree'])} ({r['tree_leaves']})"
        steps = "–" if r["ppo_steps"] is None else f"{r['ppo_steps'] / 1000:.0f}k"
        cpu = "–" if r["ppo_cpu_minutes"] is None else f"{r['ppo_cpu_minutes']:.1f}"
        mark = "†" if r.get("reevaluated") else ""
        lines.append(f"| {r['domain']} | {r['tier']} | {_pct(r['random'])} | {_pct(r['mask_only'])} | {tree} | {_pct(r['bc'])} "
                     f"| {ppo}{mark} | {steps} | {cpu} | {r['reward'] or '–'} | {r['net'] or '–'} | {_pct(r['warm'])}{mark} | {_pct(r['features'])} | {_pct(r['oracle'])} |")
    if any(r.get("reevaluated") for r in rows):
        lines += ["", "† models trained on an earlier release, measured on this one's heldout split (`backoffice results "
                      "--reevaluate`); their steps and CPU-minutes are the original training's."]
    return "\n".join(lines)


def validation_curve(run: Run) -> list[dict[str, Any]] | None:
    """The validation pass rate against timesteps of ``run``: from its ``summary.json`` (runs
    trained since the summary carries it), else from its local ``curve.json``; ``None`` if
    neither holds one (an older run whose curve was not kept)."""
    summary_path, curve_path = run.out / "summary.json", run.out / "curve.json"
    if summary_path.exists():
        points = loads(summary_path.read_bytes()).get("validation")
        if points:
            return list(points)
    if curve_path.exists():
        return list(loads(curve_path.read_bytes()).get("validation", [])) or None
    return None


def plot_curves(domain: str, out: Path) -> Path | None:
    """Validation pass rate against timesteps for every up-to-date pure-PPO run of ``domain``,
    one colour per tier (the learning curves per tier). Runs whose curve was not recorded are
    named under the plot rather than silently left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in plan([domain]) if r.kind == "ppo" and current_summary(r)]
    curves = {r: validation_curve(r) for r in runs}
    drawn = [r for r in runs if curves[r]]
    if not drawn:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    colours = {"conclusions": "tab:blue", "facts": "tab:orange", "raw": "tab:red"}
    styles = ("-", "--", ":")
    for run in drawn:
        points = curves[run] or []
        ax.plot([p["t"] for p in points], [p["pass_rate"] for p in points], color=colours.get(run.tier, "grey"),
                linestyle=styles[run.seed % len(styles)], alpha=0.85, label=f"{run.tier} s{run.seed}")
    ax.set(xlabel="timesteps", ylabel="validation pass rate", ylim=(-0.02, 1.02), title=f"{domain}: MaskablePPO per feature tier")
    ax.legend(fontsize=7, ncol=2)
    missing = [f"{r.tier} s{r.seed}" for r in runs if not curves[r]]
    if missing:
        fig.text(0.01, 0.01, "curve not recorded: " + ", ".join(missing), fontsize=7, color="dimgrey")
    fig.tight_layout(rect=(0, 0.04 if missing else 0, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


__all__ = ["Run", "SEEDS", "baselines", "bc_ceiling", "budget", "collect_rows", "current_summary", "markdown", "plan", "plot_curves", "reevaluate", "train_run",
           "up_to_date", "validation_curve"]
