"""Every trace replays: the fuzz of the env boundary (invariants and replay of its traces), the
tagged encoding of what an agent sent (each domain's own regression cases:
``tests/domains/<d>/test_<d>_replay.py``)."""

from __future__ import annotations

import dataclasses
import math
import types

import numpy as np
import pytest
from traced import SUBMIT, traced
from typer.testing import CliRunner

from backoffice.envs import make_native
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.fuzz import fuzz
from backoffice.envs.core.replay import replay, replay_episode
from backoffice.envs.core.spaces import ACTION_MAX_BYTES
from backoffice.envs.core.trace import LONG_ACTION, decode_sent, encode_sent, episodes, is_plain_json, read_trace
from backoffice.training.cli.main import app
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import DOMAINS, domain_params, release_ids

#: calls per domain of the suite's fuzz (the benchmark, benchmarks/fuzz_replay.py, runs 10^5)
FUZZ_CALLS = 4000


def _cli_replay(path) -> str:
    result = CliRunner().invoke(app, ["replay", str(path)])
    return result.output


# -- the fuzz --------------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", domain_params())
def test_fuzzed_episodes_keep_every_invariant_and_replay(domain: str) -> None:
    report = fuzz(domain, FUZZ_CALLS, seed=37)
    assert report.problems == [] and report.problem_count == 0
    assert report.raised == report.internal_errors == report.replay_mismatches == 0
    assert report.calls >= FUZZ_CALLS and report.replayed == report.episodes >= 40
    # the calls reached every kind of outcome and every kind of task
    assert set(report.splits) == {"train", "heldout", "generated"}
    assert set(report.kinds) == {"valid", "mutated", "finish", "garbage"}
    assert report.statuses["ok"] >= FUZZ_CALLS // 20
    assert {"invalid_action", "invalid_args", "not_found", "unknown_tool"} <= set(report.error_codes)


@pytest.mark.parametrize("domain", domain_params())
def test_fuzz_is_deterministic_per_seed(domain: str) -> None:
    a, b, c = fuzz(domain, 400, seed=5), fuzz(domain, 400, seed=5), fuzz(domain, 400, seed=6)
    assert a.to_json() == b.to_json() and a.digest
    assert c.digest != a.digest


def test_the_fuzz_reports_a_tool_that_raises_and_a_replay_that_drifts(monkeypatch) -> None:
    """The fuzz's checks can fail: a planted tool bug is an internal error, and the replay of
    a trace before ``sent`` (malformed calls sent as "not an action") mismatches."""
    domain = DOMAINS[0]
    toolkit = make_native(domain).domain.toolkit

    def broken(ctx, args):
        raise ValueError("planted")

    monkeypatch.setitem(toolkit.tools, "get_rules", dataclasses.replace(toolkit.tools["get_rules"], fn=broken))
    report = fuzz(domain, 600, seed=1)
    assert report.internal_errors > 0 and report.problem_count > 0
    monkeypatch.undo()

    from backoffice.envs.core import replay as replay_module

    old = replay_module.action_of
    monkeypatch.setattr(replay_module, "action_of", lambda rec: "<not an action>" if rec.get("error_code") == "invalid_action" else old(rec))
    report = fuzz(domain, 600, seed=1)
    assert report.replay_mismatches > 0


# -- the tagged encoding ---------------------------------------------------------------------------
_VALUES = [
    None, True, 0, -1, 2**63 - 1, 2**64 - 1, 2**64, -(2**63) - 1, 10**5000, 1.5, -0.0, "", "x", "é\U0001f600",
    "\ud800", "a\x00b", [1, [2, "c"]], {"a": 1}, {1: "int key"}, {"$float": "nan"}, {"$other": 1},
    (1, "a"), {"b", "a"}, frozenset({3}), b"\x00\xff", bytearray(b"ab"), {"\udc00": 1}, {(1, 2): "tuple key"},
    {"tool": "get_rules", "args": "x"}, types.MappingProxyType({"k": 1}),
]


@pytest.mark.parametrize("value", _VALUES, ids=[f"v{i}" for i in range(len(_VALUES))])
def test_sent_encoding_roundtrips_through_json(value) -> None:
    encoded = encode_sent(value)
    back = decode_sent(loads(dumps(encoded)))
    assert type(back) is type(value) and back == value


def test_sent_encoding_keeps_non_finite_floats_apart_from_null() -> None:
    for value, tag in ((math.inf, "inf"), (-math.inf, "-inf")):
        assert encode_sent({"x": value}) == {"x": {"$float": tag}}
        assert decode_sent(encode_sent({"x": value})) == {"x": value}
    assert math.isnan(decode_sent(encode_sent(math.nan)))
    assert encode_sent(None) is None and encode_sent({"x": None}) == {"x": None}


def test_sent_encoding_of_what_no_trace_rebuilds_is_stable() -> None:
    class Thing:
        pass

    first, second = encode_sent({"a": Thing()}), encode_sent({"a": Thing()})
    assert first == second and " at 0x" not in dumps(first).decode()
    assert first["a"]["$opaque"]["json"] is False
    assert encode_sent(np.int64(3))["$opaque"]["type"] == "numpy.int64"
    assert encode_sent(" " * (LONG_ACTION + 1)) == {"$long": {"type": "str", "length": LONG_ACTION + 1}}
    assert LONG_ACTION == ACTION_MAX_BYTES


def test_is_plain_json_flags_what_orjson_reads_lossily() -> None:
    assert is_plain_json({"a": [1, "b", None, True, 1.5, {"c": -2}]})
    for lossy in ({"a": math.nan}, {"a": math.inf}, {"a": (1,)}, {"a": np.float64(1)}, {1: 2}, {"a": {1}}):
        assert not is_plain_json(lossy)


# -- issue 37's minimal cases ----------------------------------------------------------------------
@pytest.mark.parametrize("domain", domain_params())
def test_a_malformed_call_replays_with_its_tool_name(domain: str, tmp_path) -> None:
    infos, lines = traced(domain, tmp_path, [{"tool": "get_rules", "args": "x"}, SUBMIT])
    assert lines[0]["tool"] == "get_rules" and lines[0]["args"] is None and lines[0]["error_code"] == "invalid_action"
    assert lines[0]["sent"] == {"tool": "get_rules", "args": "x"}
    assert infos[-1]["grade"]["process_metrics"]["tool_calls"].get("get_rules") == 1
    assert "1/1 episodes reproduced" in _cli_replay(tmp_path / f"{domain}.jsonl")


# -- old traces ------------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", domain_params())
def test_traces_without_the_new_fields_still_replay(domain: str, tmp_path) -> None:
    """Lines written before ``sent`` and ``max_steps``: well-formed episodes replay as before, and
    a malformed call that kept its tool name replays with it."""
    path = tmp_path / "t.jsonl"
    env = make_native(domain, trace_path=str(path))
    for i, task_id in enumerate(release_ids(domain)[:4]):
        run_episode(env, get_policy(domain, "oracle" if i % 2 else "random", seed=i), task_id=task_id)
    env.reset(seed=2)
    env.step({"tool": "get_rules", "args": ["x"]})
    env.step({"tool": "no_such", "args": "x"})
    env.step(SUBMIT)
    env.close()
    old = [{k: v for k, v in line.items() if k not in ("sent", "max_steps", "scale")} for line in read_trace(path)]
    assert any(line["tool"] == "get_rules" and line["args"] is None for line in old)
    results = [replay_episode(ep, make_native(domain)) for ep in episodes(old)]
    assert len(results) == 5 and all(r.ok for r in results), [r.divergences for r in results]


def test_replay_uses_the_recorded_step_limit(tmp_path) -> None:
    """An episode of an env with a larger ``max_steps`` than the default replays to its end."""
    domain = DOMAINS[0]
    path = tmp_path / "t.jsonl"
    env = make_native(domain, trace_path=str(path), max_steps=100)
    env.reset(seed=3)
    for _ in range(99):
        env.step({"tool": "no_such_tool", "args": {}})
    *_, terminated, truncated, info = env.step({"tool": "no_such_tool", "args": {}})
    assert truncated and not terminated
    env.close()
    lines = read_trace(path)
    assert lines[-1]["max_steps"] == 100 and len(lines) == 100
    res = replay(lines)
    assert res[0].ok, res[0].divergences[:3]
    assert "1/1 episodes reproduced" in _cli_replay(path)


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
def test_a_tool_name_with_a_lone_surrogate_is_malformed_and_grades(traced: bool, tmp_path) -> None:
    """It was ``unknown_tool`` with the name in the trace: the trace writer and the grade (its
    ``process_metrics``) raised out of ``step()`` on it."""
    domain = DOMAINS[0]
    path = tmp_path / "t.jsonl"
    env = make_native(domain, trace_path=str(path) if traced else None)
    env.reset(seed=1)
    *_, info = env.step({"tool": "sub\ud800mit", "args": {}})
    assert info["error_code"] == "invalid_action" and env.trace[-1]["tool"] is None
    *_, terminated, _, info = env.step(SUBMIT)
    assert terminated and "<invalid>" in info["grade"]["process_metrics"]["tool_calls"]
    env.close()
    if traced:
        lines = read_trace(path)
        assert lines[0]["sent"] == {"tool": {"$str": "sub\\ud800mit"}, "args": {}}
        assert all(r.ok for r in replay(lines))
