"""Registration tool latency at scale: every tool at 1x and at 1000x the released rows.

For three generated tasks (built with ``scale``: the same task, its world grown with
distractors), the oracle's episode gives the typical calls: an update with a mistyped member id
(``get_intake_form``, ``get_rules``, ``get_name_variants``, ``search_patients``, ``get_patient``,
``update_patient``, ``verify_member_id``, ``lookup_member``, ``add_coverage``, ``link_gp``,
``add_contact``, ``record_consent``, ``submit``), a new patient (``create_patient``) and a
referral (``refer_to_human``); plus a name-only search (``search_patients[name]``) and a paged
rule file (``get_rules[limit]``). Each call is timed in the state it was made in (reset, replay
the calls before it, time ``Toolkit.call_encoded``: validation, the tool, the one
serialisation), after one warm-up episode (the snapshot's lazy indexes built once). Reports the
build time and row counts, the median per tool at each scale and the ratio; the target is every
ratio <= 3.

    .venv/bin/python benchmarks/scale_registration_check.py [--scales 1 1000] [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from typing import Any

from backoffice.envs import make_native
from backoffice.envs.core.tools import ToolContext
from backoffice.training.policies import get_policy

DOMAIN = "registration"
#: generated tasks: invalid_member_id (update, roster lookup), new_patient (create), ambiguous_match (refer)
TASKS = (5, 9, 6)


def _oracle_calls(env: Any, index: int, scale: int) -> list[dict[str, Any]]:
    """The oracle's calls on generated task ``index`` at ``scale`` (asserting that it passes)."""
    obs, info = env.reset(seed=0, options={"generate": index, "scale": scale})
    policy = get_policy(DOMAIN, "oracle")
    policy.reset(obs, info)
    calls = []
    while True:
        action = policy.act(obs)
        calls.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert info["grade"]["pass"], (index, scale, info["grade"]["failure_codes"])
            return calls


def _extra_calls(form: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"tool": "search_patients", "args": {"name": f"{form['given_name']} {form['family_name']}"}},
            {"tool": "get_rules", "args": {"limit": 3}}]


def _name(call: dict[str, Any]) -> str:
    args = call["args"]
    if call["tool"] == "search_patients" and set(args) == {"name"}:
        return "search_patients[name]"
    return call["tool"] + ("[limit]" if "limit" in args else "")


def time_calls(env: Any, index: int, scale: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per call, by tool, for the oracle's calls and the extra calls of task ``index``."""
    calls = _oracle_calls(env, index, scale)
    _oracle_calls(env, index, scale)  # warm: every index the episode uses is built
    env.reset(seed=0, options={"generate": index, "scale": scale})
    form = env.state.get("intake_forms", env.task.params["intake_form_id"])
    toolkit = env.domain.toolkit
    allowed = frozenset(env.task.allowed_tools)
    out: dict[str, list[float]] = defaultdict(list)
    plan = [(j, c) for j, c in enumerate(calls)] + [(0, c) for c in _extra_calls(form)]
    for j, call in plan:
        samples = []
        for _ in range(repeats):
            env.reset(seed=0, options={"generate": index, "scale": scale})
            for prev in calls[:j]:
                env.step(prev)
            ctx = ToolContext(env.state, env.task, j)
            t0 = time.perf_counter()
            result, _, _ = toolkit.call_encoded(ctx, call["tool"], call["args"], allowed)
            samples.append(time.perf_counter() - t0)
            assert result["status"] == "ok", (call, result)
        out[_name(call)].append(statistics.median(samples))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 1000])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    env = make_native(DOMAIN, split="train", max_steps=200)
    for scale in args.scales:
        for index in TASKS:
            t0 = time.perf_counter()
            env.reset(seed=0, options={"generate": index, "scale": scale})
            rows = env.state.snapshot.row_count()
            print(f"scale {scale}, task G{index:04d}: built and reset in {time.perf_counter() - t0:.2f} s; "
                  f"{sum(rows.values())} rows ({', '.join(f'{k} {v}' for k, v in sorted(rows.items()))})")
            time_calls(env, index, scale, 2)  # warm-up (the interpreter, the indexes)
    times: dict[int, dict[str, list[float]]] = {s: defaultdict(list) for s in args.scales}
    for index in TASKS:
        for scale in args.scales:  # the scales alternate, so machine load affects both alike
            for tool, ts in time_calls(env, index, scale, args.repeats).items():
                times[scale][tool].extend(ts)
    per_scale = {s: {tool: statistics.median(ts) for tool, ts in times[s].items()} for s in args.scales}
    base, *others = args.scales
    print(f"\n{'tool':28} " + " ".join(f"{f'{s}x (us)':>12}" for s in args.scales)
          + " " + " ".join(f"{f'{s}x/{base}x':>10}" for s in others))
    worst = 0.0
    for tool in sorted(per_scale[base]):
        line = f"{tool:28} " + " ".join(f"{per_scale[s].get(tool, float('nan')) * 1e6:12.1f}" for s in args.scales)
        for s in others:
            ratio = per_scale[s][tool] / per_scale[base][tool]
            worst = max(worst, ratio)
            line += f" {ratio:10.2f}"
        print(line)
    print(f"\nworst ratio {worst:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
