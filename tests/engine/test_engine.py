"""Engine unit tests on a toy domain: store, tools, checks, guardrail, trace, replay, env."""

from __future__ import annotations

import json
from typing import Any

import pytest

from backoffice.envs.core.build import build_release
from backoffice.envs.core.canonical import dumps_ascii
from backoffice.envs.core.domain import Episode
from backoffice.envs.core.release import Release
from backoffice.envs.core.replay import replay_episode
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.trace import episodes, read_trace
from backoffice.graders import finalize, run_checks
from backoffice.graders.checks import result
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import NoopPolicy
from toy_domain import DOMAIN, ToyEnv


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    root = tmp_path_factory.mktemp("seeds")
    build_release(DOMAIN, root)
    return Release("toy", root)


def _snap() -> Snapshot:
    return Snapshot("s", {"t": [{"id": "b", "v": 2, "tags": ["x"]}, {"id": "a", "v": 1}], "clock": [{"id": "clock", "now": "2026-01-01T00:00:00"}]})


# -- store -----------------------------------------------------------------------------------
def test_store_diff_reports_created_updated_deleted() -> None:
    store = Store(_snap())
    store.insert("t", {"id": "c", "v": 3})
    store.update("t", "a", {"v": 10})
    store.delete("t", "b")
    assert store.diff() == {"t": {
        "created": ["c"], "updated": {"a": {"v": {"before": 1, "after": 10}}}, "deleted": ["b"],
        "created_rows": {"c": {"id": "c", "v": 3}}, "deleted_rows": {"b": {"id": "b", "v": 2, "tags": ["x"]}},
    }}
    assert store.ids("t") == ["a", "c"]


def test_reverted_write_is_no_change_and_hash_returns() -> None:
    snap = _snap()
    store = Store(snap)
    store.update("t", "a", {"v": 5})
    assert store.content_hash() != snap.content_hash()
    store.update("t", "a", {"v": 1})
    assert store.diff() == {} and store.content_hash() == snap.content_hash()


def test_reset_drops_overlay_and_snapshot_is_never_mutated() -> None:
    snap = _snap()
    a, b = Store(snap), Store(snap)
    row = a.get("t", "b")
    row["v"] = 99  # a copy: must not reach the snapshot
    a.update("t", "b", {"tags": ["y", "z"]})
    assert b.get("t", "b") == {"id": "b", "v": 2, "tags": ("x",)}
    a.reset()
    assert a.diff() == {} and a.content_hash() == snap.content_hash()


def test_rollback_undoes_every_write_since_begin() -> None:
    store = Store(_snap())
    store.update("t", "a", {"v": 7})
    store.begin()
    store.insert("t", {"id": "z", "v": 0})
    store.update("t", "a", {"v": 8})
    store.delete("t", "b")
    store.rollback()
    assert store.get("t", "a")["v"] == 7 and not store.exists("t", "z") and store.exists("t", "b")


def test_rows_reject_nested_dicts_and_need_string_ids() -> None:
    store = Store(_snap())
    with pytest.raises(TypeError):
        store.insert("t", {"id": "q", "v": {"nested": 1}})
    with pytest.raises(TypeError):
        store.insert("t", {"id": 5})


def test_dumps_ascii_escapes_everything_non_ascii() -> None:
    text = dumps_ascii({"k": "caf\u00e9 \U0001f600 \n"})
    assert text.isascii() and all(32 <= ord(c) < 127 for c in text)
    assert json.loads(text) == {"k": "caf\u00e9 \U0001f600 \n"}


# -- tools and env ---------------------------------------------------------------------------
def test_tool_errors_are_structured_and_atomic(release: Release) -> None:
    env = ToyEnv(release=release)
    env.reset(options={"task_id": "TOY-T0000"})
    h = env.state.content_hash()
    cases = [
        ("not json", "invalid_action"),
        ({"tool": "nope", "args": {}}, "unknown_tool"),
        ({"tool": "bump", "args": {"counter_id": "C-1", "by": "many"}}, "invalid_args"),
        ({"tool": "bump", "args": {"counter_id": "C-1", "extra": 1}}, "invalid_args"),
        ({"tool": "bump", "args": {"counter_id": "C-9"}}, "not_found"),
        ({"tool": "bump", "args": {"counter_id": "C-1", "by": 9}}, "conflict"),  # wrote, then failed
    ]
    for action, code in cases:
        obs, _, term, trunc, info = env.step(action)
        assert json.loads(obs)["code"] == code and info["error_code"] == code
        assert env.state.content_hash() == h
    env.step({"tool": "bump", "args": {"counter_id": "C-1"}})
    assert env.trace[-1]["changed_ids"] == ["counters:C-1"]


def test_disallowed_tool_is_refused(release: Release) -> None:
    env = ToyEnv(release=release)
    env.reset(options={"task_id": "TOY-T0000"})
    env._allowed = frozenset({"submit"})
    obs, *_ = env.step({"tool": "bump", "args": {"counter_id": "C-1"}})
    assert json.loads(obs)["code"] == "tool_not_allowed"


def test_truncation_grades_the_state_left_behind(release: Release) -> None:
    env = ToyEnv(release=release, max_steps=2)
    env.reset(options={"task_id": "TOY-T0000"})
    env.step({"tool": "get_counter", "args": {"counter_id": "C-1"}})
    obs, reward, term, trunc, info = env.step({"tool": "get_counter", "args": {"counter_id": "C-1"}})
    assert trunc and not term and "grade" in info and info["grade"]["process_metrics"]["steps"] == 2
    with pytest.raises(RuntimeError):
        env.step({"tool": "submit", "args": {}})


def test_seeded_reset_picks_the_same_task_and_info(release: Release) -> None:
    a, b = ToyEnv(release=release), ToyEnv(release=release)
    assert a.reset(seed=11) == b.reset(seed=11)
    ids = {a.reset(seed=s)[1]["task_id"] for s in range(30)}
    assert len(ids) > 5 and all(i.startswith("TOY-T") for i in ids)
    held = ToyEnv(release=release, split="heldout")
    assert held.reset(seed=11)[1]["task_id"].startswith("TOY-H")


def test_generated_tasks_come_from_integer_seeds(release: Release) -> None:
    env = ToyEnv(release=release, split="generated")
    _, info = env.reset(seed=4)
    assert info["task_id"].startswith("TOY-G")
    _, again = env.reset(options={"task_id": info["task_id"]})
    assert again["snapshot_hash"] == info["snapshot_hash"]


def test_shaped_rewards_sum_to_the_shaped_reward(release: Release) -> None:
    env = ToyEnv(release=release, reward_mode="shaped")
    env.reset(options={"task_id": "TOY-T0001"})
    total = 0.0
    for action in ({"tool": "bump", "args": {"counter_id": "C-1"}}, "bad", {"tool": "submit", "args": {}}):
        _, r, term, trunc, info = env.step(action)
        total += r
    assert term and abs(total - info["shaped_reward"]) < 1e-12


def test_call_cost_replaces_the_cost_of_a_successful_call_only(release: Release) -> None:
    """``call_cost`` prices a successful call in the training rewards; a rejected call keeps its
    cost, and the sparse reward and the grade do not move."""
    from backoffice.envs.core.domain import CALL_COST, ERROR_COST

    actions = (READ, "bad", BUMP1, {"tool": "submit", "args": {}})
    runs = {}
    for mode, cost in (("shaped", None), ("shaped", 0.0), ("shaped", 0.25), ("sparse", 0.0)):
        env = ToyEnv(release=release, reward_mode=mode, call_cost=cost)
        env.reset(options={"task_id": "TOY-T0001"})
        runs[mode, cost] = [env.step(a) for a in actions]
    default, free, dear = runs["shaped", None], runs["shaped", 0.0], runs["shaped", 0.25]
    assert default[0][1] == pytest.approx(-CALL_COST) and free[0][1] == 0.0 and dear[0][1] == pytest.approx(-0.25)
    assert default[1][1] == free[1][1] == dear[1][1] == pytest.approx(-ERROR_COST)  # the rejected call
    assert free[-1][1] - default[-1][1] == pytest.approx(CALL_COST)  # the submit is a successful call too
    assert free[-1][4]["shaped_reward"] - default[-1][4]["shaped_reward"] == pytest.approx(3 * CALL_COST)
    assert [r[1] for r in runs["sparse", 0.0]] == [0.0, 0.0, 0.0, default[-1][4]["score"]]
    assert free[-1][4]["grade"] == default[-1][4]["grade"]
    for bad in (-0.1, 1.5, True, "0", float("nan")):
        with pytest.raises(ValueError, match="call_cost"):
            ToyEnv(release=release, call_cost=bad)


def test_gate_cap_off_shapes_the_terminal_reward_on_the_work_share_only(release: Release) -> None:
    """``gate_cap=False``: the training reward's terminal shaping reads the share of work checks
    passed where a failed gate capped the score; the grade, the sparse reward and an episode
    whose gates hold are the same either way."""
    from backoffice.envs.core.domain import default_terminal_shaping
    from backoffice.graders.grade import GATE_CAP, work_share

    def last(actions: tuple, **kwargs: Any) -> tuple:
        env = ToyEnv(release=release, **kwargs)
        env.reset(options={"task_id": "TOY-T0001"})
        return [env.step(a) for a in actions][-1]

    submit = {"tool": "submit", "args": {}}
    dirty = (BUMP1, BUMP2, submit)  # the work, then a write outside the targets: a failed gate
    for mode in ("shaped", "progress"):
        capped, free = last(dirty, reward_mode=mode), last(dirty, reward_mode=mode, gate_cap=False)
        grade = capped[4]["grade"]
        assert free[4]["grade"] == grade and not grade["pass"] and grade["score"] <= GATE_CAP
        share = work_share(grade["checks"])
        assert share > grade["score"]
        gap = default_terminal_shaping({**grade, "score": share}) - default_terminal_shaping(grade)
        assert free[1] - capped[1] == pytest.approx(gap) and gap > 0
        clean = (BUMP1, submit)
        assert last(clean, reward_mode=mode)[1] == last(clean, reward_mode=mode, gate_cap=False)[1]
    assert last(dirty, reward_mode="sparse")[1] == last(dirty, reward_mode="sparse", gate_cap=False)[1] == grade["score"]
    for bad in (0, "no", None):
        with pytest.raises(ValueError, match="gate_cap"):
            ToyEnv(release=release, gate_cap=bad)


# -- checks and guardrail ----------------------------------------------------------------------
def _episode(release: Release, actions: list) -> Episode:
    env = ToyEnv(release=release)
    env.reset(options={"task_id": "TOY-T0000"})
    for a in actions:
        env.step(a)
    return Episode(env.task, release.answer_key("TOY-T0000"), env.state.snapshot, env.state, env.state.diff(), env.trace)


BUMP1 = {"tool": "bump", "args": {"counter_id": "C-1"}}
BUMP2 = {"tool": "bump", "args": {"counter_id": "C-2"}}
READ = {"tool": "get_counter", "args": {"counter_id": "C-1"}}


@pytest.mark.parametrize("spec, passing, failing", [
    ({"kind": "row_equals", "table": "counters", "where": {"id": "C-1"}, "rows": [{"id": "C-1", "value": 1}]}, [BUMP1], []),
    ({"kind": "field_equals", "table": "counters", "row_id": "C-1", "field": "value", "value": 1}, [BUMP1], [BUMP1, BUMP1]),
    ({"kind": "status_is", "table": "counters", "row_id": "C-1", "value": None}, [], [{"tool": "nope"}]),
    ({"kind": "count_is", "table": "counters", "where": {"value": 0}, "count": 1}, [BUMP1], []),
    ({"kind": "no_change", "table": "counters", "except_ids": ["C-1"]}, [BUMP1], [BUMP2]),
    ({"kind": "tool_called", "tool": "bump", "args": {"counter_id": "C-1"}}, [BUMP1], [BUMP2]),
    ({"kind": "tool_not_called", "tool": "bump", "before": {"tool": "get_counter"}}, [READ, BUMP1], [BUMP1, READ]),
])
def test_each_check_kind_passes_and_fails(release: Release, spec, passing, failing) -> None:
    spec = {"id": "c", "failure_code": "oops", **spec}
    assert run_checks([spec], _episode(release, passing))[0]["pass"]
    bad = run_checks([spec], _episode(release, failing))[0]
    if spec["kind"] != "status_is":
        assert not bad["pass"] and bad["failure_code"] == "oops"


WORK_DONE = result("work", "work", True, "wrong_value")
WORK_UNDONE = result("work", "work", False, "wrong_value")


def test_guardrail_flags_writes_outside_targets(release: Release) -> None:
    ep = _episode(release, [BUMP2])
    grade = finalize(ep, [WORK_DONE], {})
    assert not grade["pass"] and grade["failure_codes"] == ["forbidden_write"]
    assert grade["checks"][-1]["detail"] == {"forbidden_writes": ["counters:C-2"]}
    assert grade["checks"][-1]["gate"] is True
    assert finalize(_episode(release, [BUMP1]), [WORK_DONE], {})["pass"]


def test_score_is_work_done_and_a_failed_gate_caps_it(release: Release) -> None:
    from backoffice.graders.grade import GATE_CAP, score_of

    clean, dirty = _episode(release, [BUMP1]), _episode(release, [BUMP2])
    half = [WORK_DONE, {**WORK_UNDONE, "id": "w2"}]
    assert finalize(clean, [WORK_DONE], {})["score"] == 1.0
    assert finalize(clean, half, {})["score"] == 0.5          # held gates earn nothing
    assert finalize(dirty, [WORK_DONE], {})["score"] == GATE_CAP  # all the work, but collateral damage
    assert finalize(dirty, [WORK_UNDONE], {})["score"] == 0.0
    gate_ok = result("g", "g", True, "x", gate=True)
    assert score_of([WORK_UNDONE, gate_ok, gate_ok]) == 0.0   # gates never pad the score
    with pytest.raises(ValueError, match="work check"):
        score_of([gate_ok])


# -- trace and replay --------------------------------------------------------------------------
def test_trace_lines_have_the_contract_fields_and_replay(release: Release, tmp_path) -> None:
    path = tmp_path / "t.jsonl"
    env = ToyEnv(release=release, trace_path=str(path))
    env.reset(options={"task_id": "TOY-T0002"})
    for a in (BUMP1, "junk", {"tool": "submit"}):
        env.step(a)
    run_episode(env, NoopPolicy(), task_id="TOY-T0002")
    env.close()
    records = read_trace(path)
    for rec in records:
        for key in ("episode_id", "task_id", "seed", "step", "clock", "tool", "args", "result_status", "error_code", "changed_ids"):
            assert key in rec
    eps = list(episodes(records))
    assert [len(e) for e in eps] == [3, 1]
    assert replay_episode(eps[0], ToyEnv(release=release)).ok
    tampered = [dict(r) for r in eps[0]]
    tampered[0]["args"] = {"counter_id": "C-2"}
    res = replay_episode(tampered, ToyEnv(release=release))
    assert not res.ok and any("step 1: changed_ids" in d for d in res.divergences)


def test_target_matches_is_fnmatch() -> None:
    from fnmatch import fnmatchcase

    from backoffice.graders.grade import target_matches

    keys = ["decisions:DEC-1", "decisions:DEC-12", "ledger:LE-1", "decisions:", "a:b*c", "clock:clock"]
    patterns = ["decisions:DEC-1", "decisions:DEC-*", "decisions:*", "*", "ledger:LE-?", "a:b[*]c", "clock:clock", "x*y", ""]
    for k in keys:
        for p in patterns:
            assert target_matches(k, p) == fnmatchcase(k, p), (k, p)


# -- reset options and the snapshot hash --------------------------------------------------------
def test_unknown_reset_option_is_an_error_naming_the_accepted_keys(release: Release) -> None:
    env = ToyEnv(release=release)
    with pytest.raises(ValueError, match="case_idd.*accepted: task_id, generate"):
        env.reset(options={"case_idd": "TOY-T0001"})
    with pytest.raises(KeyError):
        env.reset(options={"task_id": "TOY-T9999"})
    _, info = env.reset(options={"task_id": "TOY-T0001"})
    assert info["task_id"] == "TOY-T0001"


def test_reset_reports_the_computed_hash_and_refuses_a_tampered_release(release: Release) -> None:
    env = ToyEnv(release=release)
    _, info = env.reset(options={"task_id": "TOY-T0003"})
    assert info["snapshot_hash"] == env.state.content_hash() == release.snapshot_hashes["TOY-T0003"]
    tampered = Release("toy", release.path.parent)
    tampered.snapshot_hashes["TOY-T0003"] = "0" * 64
    with pytest.raises(RuntimeError, match="TOY-T0003.*rebuild"):
        ToyEnv(release=tampered).reset(options={"task_id": "TOY-T0003"})


def test_terminal_diff_carries_created_and_deleted_content(release: Release) -> None:
    env = ToyEnv(release=release)
    env.reset(options={"task_id": "TOY-T0001"})
    env.step(BUMP1)
    *_, info = env.step({"tool": "submit", "args": {}})
    assert info["diff"]["counters"]["updated"] == {"C-1": {"value": {"before": 0, "after": 1}}}
    assert info["diff"]["counters"]["created_rows"] == {} and info["diff"]["counters"]["deleted_rows"] == {}
