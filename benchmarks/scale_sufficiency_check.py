"""Sufficiency tool latency at scale: every tool at 1x and at 1000x the released rows.

For a few generated tasks (built with ``scale``), the oracle's episode gives the typical calls
(``get_case``, ``get_requirements``, ``search_held_records``, ``list_documents``,
``attach_held_record``, ``request_items``, ``wait``, ``resume_clock``, ``release_case``,
``route_case``, ``submit``), plus ``list_cases`` (the intake queue), ``search_held_records`` with an
item type and ``add_note``. Each call is timed in the state it was made in (reset, replay the
calls before it, time ``Toolkit.call_encoded``: validation, the tool, the one serialisation),
after one warm-up episode (the snapshot's lazy indexes built once). Reports the median per tool
at each scale and the ratio; the target is every ratio <= 3.

    .venv/bin/python benchmarks/scale_sufficiency_check.py [--scales 1 1000] [--repeats 30]
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

DOMAIN = "sufficiency"
#: generated tasks: held_record_available, reply_incomplete, wrong_queue_route
TASKS = (6, 8, 11)


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


def _extra_calls(case_id: str, held_item: str | None) -> list[dict[str, Any]]:
    calls = [{"tool": "list_cases", "args": {"queue": "intake"}},
             {"tool": "list_cases", "args": {"queue": "intake", "limit": 5}},
             {"tool": "add_note", "args": {"case_id": case_id, "text": "Reviewed the file."}}]
    if held_item:
        calls.append({"tool": "search_held_records", "args": {"case_id": case_id, "item_type": held_item}})
    return calls


def time_calls(env: Any, index: int, scale: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per call, by tool, for the oracle's calls and the extra calls of task ``index``."""
    calls = _oracle_calls(env, index, scale)
    _oracle_calls(env, index, scale)  # warm: every index the episode uses is built
    env.reset(seed=0, options={"generate": index, "scale": scale})
    cid = env.task.params["case_id"]
    case = env.state.get("cases", cid)
    held = env.state.rows("held_records", applicant_id=case["applicant_id"])
    extra = _extra_calls(cid, held[0]["item_type"] if held else None)
    toolkit = env.domain.toolkit
    allowed = frozenset(env.task.allowed_tools)
    out: dict[str, list[float]] = defaultdict(list)
    plan = [(j, c) for j, c in enumerate(calls)] + [(0, c) for c in extra]
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
        name = call["tool"] + "".join(f"[{k}]" for k in ("item_type", "limit") if k in call["args"])
        out[name].append(statistics.median(samples))
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
