"""The public contract of DESIGN.md, checked for every installed domain over its whole release."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from functools import cache

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import backoffice.envs  # noqa: F401  (registers the ids)
from backoffice.envs import DOMAINS as ALL_DOMAINS, get_domain, make_native
from backoffice.envs.core.build import make_task_id, verify_release
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import load_release
from backoffice.envs.core.replay import replay
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import DOMAINS, REPO, domain_params, release_ids, split_envs

pytestmark = pytest.mark.parametrize("domain", domain_params())


@cache
def oracle_runs(domain: str) -> dict:
    """Oracle over the whole release, with observations and sent actions kept."""
    env_for = split_envs(domain)
    out = {}
    for task_id in release_ids(domain):
        env, policy = env_for(task_id), get_policy(domain, "oracle")
        res = run_episode(env, policy, task_id=task_id, keep_observations=True)
        out[task_id] = (res, env.trace)
    return out


def test_every_discovered_domain_is_installed(domain: str) -> None:
    assert sorted(DOMAINS) == sorted(ALL_DOMAINS)


def test_check_env_and_make(domain: str) -> None:
    from gymnasium.utils.env_checker import check_env

    env = gym.make(get_domain(domain).env_id)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    for key in ("task_id", "seed", "split", "snapshot_hash", "allowed_tools", "tools"):
        assert key in info
    assert "submit" in info["allowed_tools"]
    env.close()


def test_env_docstring_has_gymnasium_sections(domain: str) -> None:
    from backoffice.envs import env_class

    doc = env_class(domain).__doc__ or ""
    for section in ("Description", "Action Space", "Observation Space", "Rewards", "Starting State",
                    "Episode End", "Arguments", "Tools", "Grade", "Failure codes", "Version History"):
        assert section in doc, section


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_vector_envs_run_100_steps(domain: str, vector: str) -> None:
    env_id = get_domain(domain).env_id
    fns = [lambda: gym.make(env_id, max_steps=7) for _ in range(2)]
    venv = gym.vector.SyncVectorEnv(fns) if vector == "sync" else gym.vector.AsyncVectorEnv(fns)
    obs, infos = venv.reset(seed=3)
    venv.action_space.seed(3)
    ends = 0
    for _ in range(100):
        obs, rewards, term, trunc, infos = venv.step(venv.action_space.sample())
        ends += int(sum(term) + sum(trunc))
    venv.close()
    assert ends > 0  # episodes end (terminate or truncate) and auto-reset


def test_oracle_passes_every_released_task(domain: str) -> None:
    failed = {t: r.grade["failure_codes"] for t, (r, _) in oracle_runs(domain).items() if not r.grade["pass"]}
    assert not failed, f"{len(failed)} oracle failures, e.g. {list(failed.items())[:5]}"


def test_noop_fails_every_task_that_needs_action(domain: str) -> None:
    env_for, rel = split_envs(domain), load_release(domain)
    needing = [t for t in release_ids(domain) if rel.answer_key(t).get("needs_action", True)]
    assert needing
    passed = [t for t in needing if run_episode(env_for(t), get_policy(domain, "noop"), task_id=t).grade["pass"]]
    assert not passed, f"no-op passes {len(passed)} tasks that need an action: {passed[:5]}"


def test_each_failure_code_is_triggered_by_its_wrong_policy(domain: str) -> None:
    from backoffice.training.policies import domain_module

    dom = get_domain(domain)
    wrong = domain_module(domain).WRONG_POLICIES
    assert set(dom.failure_codes) <= set(wrong), f"no wrong policy for {sorted(set(dom.failure_codes) - set(wrong))}"
    env_for = split_envs(domain)
    oracle_codes = {c for r, _ in oracle_runs(domain).values() for c in r.grade["failure_codes"]}
    assert not oracle_codes
    for code in dom.failure_codes:
        hits = 0
        for task_id in release_ids(domain):
            res = run_episode(env_for(task_id), get_policy(domain, f"wrong:{code}"), task_id=task_id)
            assert set(res.grade["failure_codes"]) <= set(dom.failure_codes), res.grade["failure_codes"]
            if code in res.grade["failure_codes"]:
                hits += 1
                assert not res.grade["pass"]
                if hits >= 3:
                    break
        assert hits, f"wrong:{code} never triggers {code}"


def test_defect_tags_cover_each_split(domain: str) -> None:
    rel, dom = load_release(domain), get_domain(domain)
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        assert len(ids) >= (400 if split == "train" else 150)
        counts = Counter(tag for t in ids for tag in rel.answer_key(t)["defect_tags"])
        for tag in dom.defect_tags:
            assert counts[tag] >= 20, (split, tag, counts[tag])


def test_splits_are_disjoint_by_id_and_content(domain: str) -> None:
    rel = load_release(domain)
    train, held = set(rel.split_ids["train"]), set(rel.split_ids["heldout"])
    assert train and held and not train & held
    by_split: dict[str, set] = {"train": set(), "heldout": set()}
    task_hashes: dict[str, set] = {"train": set(), "heldout": set()}
    for entry in rel.manifest["tasks"]:
        by_split[entry["split"]].add(entry["snapshot_hash"])
        task_hashes[entry["split"]].add(entry["task_hash"])
    assert not by_split["train"] & by_split["heldout"]
    assert not task_hashes["train"] & task_hashes["heldout"]


def test_release_rebuilds_byte_for_byte(domain: str) -> None:
    from backoffice.envs import seeds_folder

    assert verify_release(get_domain(domain), seeds_folder(domain)) == []


def test_reset_reports_manifest_hash_and_restores_it(domain: str) -> None:
    env_for, rel = split_envs(domain), load_release(domain)
    entries = {e["task_id"]: e for e in rel.manifest["tasks"]}
    for task_id in release_ids(domain)[::25]:
        env = env_for(task_id)
        _, info = env.reset(options={"task_id": task_id})
        assert info["snapshot_hash"] == entries[task_id]["snapshot_hash"] == env.state.content_hash()
        assert {t: env.state.count(t) for t in env.state.snapshot.table_names} == entries[task_id]["row_counts"]
        run_episode(env, get_policy(domain, "random", seed=1), task_id=task_id)
        env.reset(options={"task_id": task_id})
        assert env.state.content_hash() == entries[task_id]["snapshot_hash"]
        assert env.state.diff() == {}


def _key_strings(obj, out: set[str]) -> set[str]:
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _key_strings(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _key_strings(v, out)
    return out


def test_no_answer_key_value_reaches_an_observation(domain: str) -> None:
    """A string that only the answer key holds never shows up in what the oracle observes,
    unless the agent itself sent it earlier (then it is the agent's work echoed back)."""
    rel, env = load_release(domain), make_native(domain)
    specs = dumps(env.domain.toolkit.specs()).decode()
    for task_id, (res, trace) in oracle_runs(domain).items():
        task = rel.task(task_id)
        # the rule ids are the domain's documented vocabulary (a rule tool shows them to every task)
        public = dumps(task.to_json()).decode() + dumps(rel.snapshot(task.snapshot_id).to_json()).decode() + specs + dumps(list(env.domain.rules)).decode()
        secret = {s for s in _key_strings(rel.answer_key(task_id), set()) if len(s) >= 4 and s not in public}
        sent = ""
        for obs, rec in zip(res.observations[1:], trace):
            sent += dumps(rec["args"]).decode()
            leaked = [s for s in secret if s in obs and s not in sent]
            assert not leaked, f"{task_id} step {rec['step']} leaks {leaked}"
        assert not [s for s in secret if s in res.observations[0]], task_id


def test_pure_grade_is_independent_of_reward_mode(domain: str) -> None:
    sparse_for, shaped_for = split_envs(domain, reward_mode="sparse"), split_envs(domain, reward_mode="shaped")
    for i, task_id in enumerate(release_ids(domain)[::20]):
        sparse, shaped = sparse_for(task_id), shaped_for(task_id)
        name = "oracle" if i % 2 else "random"
        res_a = run_episode(sparse, get_policy(domain, name, seed=i), task_id=task_id)
        actions = [{"tool": r["tool"], "args": r["args"]} if r["tool"] and r["args"] is not None else "x" for r in sparse.trace]
        obs, info = shaped.reset(seed=res_a.seed, options={"task_id": task_id})
        total = 0.0
        for action in actions:
            obs, reward, term, trunc, info = shaped.step(action)
            total += reward
        assert term or trunc
        assert dumps(info["grade"]) == dumps(res_a.grade)
        assert abs(total - info["shaped_reward"]) < 1e-9
        assert res_a.info["shaped_reward"] == info["shaped_reward"]


def test_terminal_info_contract(domain: str) -> None:
    env = gym.make(get_domain(domain).env_id)
    res = run_episode(env, get_policy(domain, "random", seed=5), task_id=release_ids(domain)[0])
    info = res.info
    for key in ("grade", "shaped_reward", "diff", "score", "is_success"):
        assert key in info
    grade = info["grade"]
    for key in ("pass", "score", "checks", "failure_codes", "process_metrics"):
        assert key in grade
    assert 0.0 <= info["score"] <= 1.0 and isinstance(info["is_success"], bool)
    assert loads(dumps(info)) == info  # plain JSON data


_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_actions_never_raise_nor_change_state(domain: str, data) -> None:
    env = _fuzz_env(domain)
    tools = list(env.domain.toolkit.tools)
    action = data.draw(st.one_of(
        _junk,
        st.text(max_size=300),
        st.binary(max_size=100),
        st.builds(lambda t, a: {"tool": t, "args": a}, st.sampled_from(tools) | st.text(max_size=20), _junk),
        st.builds(lambda t, a: json.dumps({"tool": t, "args": a}), st.sampled_from(tools), _junk),
        st.just("x" * 70_000),
        st.just({"tool": "submit\u0000\ud800", "args": {"\ud800": "\U0001f600" * 3}}),
    ))
    env.reset(options={"task_id": release_ids(domain)[0]})
    before = env.state.content_hash()
    obs, reward, term, trunc, info = env.step(action)
    assert env.observation_space.contains(obs)
    assert info["error_code"] != "internal_error", obs
    if info["result_status"] == "error":
        assert env.state.content_hash() == before


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_sampled_tool_calls_never_crash(domain: str, seed: int) -> None:
    """Well-shaped calls with sampled arguments: errors are data, state changes only on success."""
    env = _fuzz_env(domain)
    env.reset(options={"task_id": release_ids(domain)[seed % 50]})
    env.action_space.seed(seed)
    for _ in range(5):
        before = env.state.content_hash()
        obs, _, term, trunc, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        assert info["error_code"] != "internal_error", obs
        if info["result_status"] == "error":
            assert env.state.content_hash() == before
        if term or trunc:
            break


@cache
def _fuzz_env(domain: str):
    return make_native(domain, max_steps=10_000)


_DETERMINISM_SCRIPT = r"""
import sys
from backoffice.envs import make_native
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.release import load_release
from backoffice.training.policies import get_policy
from backoffice.training.eval.rollout import run_episode
domain, trace_path, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
envs = {s: make_native(domain, split=s, trace_path=trace_path) for s in ("train", "heldout")}  # an env per split
for i, task_id in enumerate(ids):
    for name in ("oracle", "random"):
        res = run_episode(envs[load_release(domain).task(task_id).split], get_policy(domain, name, seed=i), task_id=task_id)
        sys.stdout.buffer.write(dumps(res.info) + b"\n")
for env in envs.values():
    env.close()
"""


def test_two_processes_write_identical_traces_and_grades(domain: str, tmp_path) -> None:
    ids = list(release_ids(domain)[::60])
    outs = []
    for run, hashseed in enumerate(("1", "987")):
        trace = tmp_path / f"trace{run}.jsonl"
        proc = subprocess.run(
            [sys.executable, "-c", _DETERMINISM_SCRIPT, domain, str(trace), *ids],
            capture_output=True, check=True, env={"PYTHONHASHSEED": hashseed, "PATH": ""},
        )
        outs.append((trace.read_bytes(), proc.stdout))
    assert outs[0][0] and outs[0][1]
    assert outs[0] == outs[1]


def test_replay_reproduces_hash_and_grade(domain: str, tmp_path) -> None:
    path = tmp_path / "trace.jsonl"
    env_for = split_envs(domain, trace_path=str(path))  # both splits' envs append to one trace
    for i, task_id in enumerate(release_ids(domain)[::40]):
        run_episode(env_for(task_id), get_policy(domain, "oracle" if i % 2 else "random", seed=i), task_id=task_id)
    env_for.close()
    from backoffice.envs.core.trace import read_trace

    results = replay(read_trace(path))
    assert results and all(r.ok for r in results), [r.divergences for r in results if not r.ok][:3]


def test_tool_specs_export_in_every_shape(domain: str) -> None:
    env = make_native(domain)
    env.reset(seed=0)
    for fmt, key in (("function", "parameters"), ("mcp", "inputSchema"), ("anthropic", "input_schema")):
        specs = env.tool_specs(format=fmt)
        assert specs and all(s["description"] and s[key]["type"] == "object" for s in specs)
    openai = env.tool_specs(format="openai")
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in openai)


def test_manifest_names_the_release_version_and_the_changelog_has_it(domain: str) -> None:

    from backoffice.envs.core.build import RELEASE_VERSION

    manifest = load_release(domain).manifest
    assert manifest["release"] == RELEASE_VERSION
    assert manifest["generator_version"] == get_domain(domain).generator_version
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"seeds {RELEASE_VERSION}" in changelog


def test_unknown_reset_options_raise_and_aliases_name_one_task(domain: str) -> None:
    env, dom = make_native(domain, split="heldout"), get_domain(domain)
    with pytest.raises(ValueError, match="accepted: task_id, generate"):
        env.reset(options={"no_such_option": 1})
    rel = load_release(domain)
    for alias in dom.task_aliases:
        for task_id in rel.split_ids["heldout"][::17]:
            _, info = env.reset(options={alias: rel.task(task_id).params[alias]})
            assert info["task_id"] == task_id
        with pytest.raises(ValueError, match=alias):
            env.reset(options={alias: "NO-SUCH-VALUE"})


def _refused(env, names: tuple[str, ...], **options) -> str:
    """The message of the ``ValueError`` that ``env.reset(options=options)`` raises; it names
    each of ``names`` (the task and both splits) as a word."""
    with pytest.raises(ValueError) as err:
        env.reset(options=options)
    msg = str(err.value)
    assert all(re.search(rf"\b{re.escape(n)}\b", msg) for n in names), msg
    return msg


def test_an_env_serves_the_tasks_of_its_own_split_only(domain: str) -> None:
    """The split is the env's: a train env never starts a heldout task (so no training-only
    reward reads a heldout answer key), a heldout env never a train or a generated one."""
    rel = load_release(domain)
    train, held = make_native(domain, split="train"), make_native(domain, split="heldout")
    generated = make_task_id(get_domain(domain), "generated", 0)
    for task_id in rel.split_ids["heldout"][::50]:
        _refused(train, (task_id, "heldout", "train"), task_id=task_id)
    for task_id in rel.split_ids["train"][::50]:
        _refused(held, (task_id, "train", "heldout"), task_id=task_id)
    _refused(held, (generated, "generated", "heldout"), task_id=generated)
    _refused(held, ("generated", "heldout"), generate=0)  # nor by the generate option
    # each env still starts the tasks it serves (a training split serves generated tasks too)
    for env, task_id in ((train, rel.split_ids["train"][0]), (train, generated), (held, rel.split_ids["heldout"][0])):
        assert env.reset(options={"task_id": task_id})[1]["task_id"] == task_id


def test_a_training_reward_env_never_starts_a_heldout_task(domain: str) -> None:
    """``reward_mode="progress"`` reads the answer key at every step: through ``gym.make`` too, its
    train env refuses a heldout task at reset."""
    held = load_release(domain).split_ids["heldout"][0]
    env = gym.make(get_domain(domain).env_id, split="train", reward_mode="progress")
    try:
        _refused(env, (held, "heldout", "train"), task_id=held)
    finally:
        env.close()


def test_a_catalog_env_refuses_task_ids_of_another_split_when_built(domain: str) -> None:
    if get_domain(domain).catalog is None:
        pytest.skip(f"{domain} has no catalog")
    from backoffice.training.catalog import make_catalog_env

    rel = load_release(domain)
    held, train = rel.split_ids["heldout"][0], rel.split_ids["train"][0]
    for split, task_ids, names in (("train", [train, held], (held, "heldout", "train")),
                                   ("heldout", [train], (train, "train", "heldout"))):
        with pytest.raises(ValueError) as err:
            make_catalog_env(domain, split=split, task_ids=task_ids)
        assert all(re.search(rf"\b{re.escape(n)}\b", str(err.value)) for n in names), str(err.value)


def test_task_aliases_name_tasks_of_the_envs_split_only(domain: str) -> None:
    """An alias (a domain's ``task_aliases``) looks in the env's split alone: the value of a
    heldout task names no task to a train env, that of a train task none to a heldout env."""
    dom, rel = get_domain(domain), load_release(domain)
    for alias in dom.task_aliases:
        for env_split, other in (("train", "heldout"), ("heldout", "train")):
            env = make_native(domain, split=env_split)
            for task_id in rel.split_ids[other][::50]:
                value = rel.task(task_id).params[alias]
                msg = _refused(env, (alias, env_split), **{alias: value})
                assert "names no task" in msg, msg


def test_terminal_diff_carries_the_content_of_created_rows(domain: str) -> None:
    env_for = split_envs(domain)
    for task_id in release_ids(domain)[:: max(1, len(release_ids(domain)) // 20)]:
        env = env_for(task_id)
        res = run_episode(env, get_policy(domain, "oracle"), task_id=task_id)
        for table, d in res.info["diff"].items():
            assert sorted(d["created_rows"]) == d["created"] and sorted(d["deleted_rows"]) == d["deleted"]
            for rid, row in d["created_rows"].items():
                assert row == loads(dumps(env.state.get(table, rid)))


def test_task_aliases_are_unique_within_each_split(domain: str) -> None:
    rel = load_release(domain)
    for alias in get_domain(domain).task_aliases:
        for split in ("train", "heldout"):
            values = [rel.task(t).params[alias] for t in rel.split_ids[split]]
            assert len(set(values)) == len(values), (alias, split, [v for v, n in Counter(values).items() if n > 1][:5])


def test_every_tool_declares_whether_it_writes_and_read_tools_never_do(domain: str) -> None:
    """``writes=False`` is a promise: replaying the oracle, every read call it made (and the same
    calls again at every later step) leaves the content hash unchanged."""
    env_for = split_envs(domain, max_steps=10_000)
    env = env_for(release_ids(domain)[0])
    tools = env.domain.toolkit.tools
    undeclared = sorted(n for n, t in tools.items() if t.writes is None)
    assert not undeclared, f"tools without writes=: {undeclared}"
    reads = {n for n, t in tools.items() if t.writes is False and not t.terminal}
    assert reads, "a domain has read tools"
    mcp = {s["name"]: s for s in env.domain.toolkit.specs(format="mcp")}
    assert all(mcp[n]["annotations"]["readOnlyHint"] == (not tools[n].writes) for n in tools)
    for task_id in release_ids(domain)[:: max(1, len(release_ids(domain)) // 12)]:
        env = env_for(task_id)
        res = run_episode(env, get_policy(domain, "oracle"), task_id=task_id)
        actions = [{"tool": r["tool"], "args": r["args"]} for r in env.trace if not tools[r["tool"]].terminal]
        read_calls = [a for a in actions if a["tool"] in reads]
        assert res.grade["pass"]
        env.reset(options={"task_id": task_id})
        for action in actions:
            env.step(action)
            before = env.state.content_hash()
            for call in read_calls:
                env.step(call)
                assert env.state.content_hash() == before, (task_id, call)


def test_the_declaration_names_tables_policies_and_catalog(domain: str) -> None:
    """One ``Domain`` declaration names everything the engine and the tools around it use."""
    import importlib

    dom = get_domain(domain)
    assert dom.tables, "declare the world's tables (Domain.tables)"
    rel = load_release(domain)
    first = rel.task(rel.split_ids["train"][0])
    assert set(rel.snapshot(first.snapshot_id).table_names) - {"clock"} == set(dom.tables)
    assert dom.policies and hasattr(importlib.import_module(dom.policies), "Oracle")
    if dom.catalog is not None:
        from backoffice.training.catalog import spec_class

        assert spec_class(domain).domain == domain
