"""Evaluation runner: executors give the same records, output is resumable after SIGKILL or a
torn line and never holds an episode twice, traces replay to the same grades.

Everything runs on the toy domain (always there); tests over the real domains use whichever
are installed.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evaltoy
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.replay import replay_episode
from backoffice.envs.core.trace import episodes, read_trace
from backoffice.training.eval.evaluate import (
    CorruptOutput,
    Job,
    ProcessExecutor,
    Record,
    Runner,
    SerialExecutor,
    evaluate,
    job_key,
    make_executor,
    plan_jobs,
    read_records,
    sorted_lines,
)
from conftest import DOMAINS

AGENTS = ["oracle", "random", "noop"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evaltoy.build(tmp_path_factory.mktemp("toy-seeds"))


def toy_jobs(root: Path, attempts: int = 2) -> list[Job]:
    return plan_jobs(["toy"], AGENTS, "heldout", attempts=attempts, task_ids=evaltoy.ids(root))


@pytest.fixture(scope="module")
def reference(root: Path, tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Sorted lines of an uninterrupted serial run of :func:`toy_jobs`."""
    out = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    evaluate(toy_jobs(root), out=out, runner=evaltoy.runner(root))
    return sorted_lines(out)


class ReversingThreadExecutor:
    """A fake backend with the executor interface: threads, results in reverse order, and one
    record delivered twice (evaluate must still write it once)."""

    def __init__(self) -> None:
        self.entered = 0

    def __enter__(self) -> ReversingThreadExecutor:
        self.entered += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.entered -= 1

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[Record]:
        with ThreadPoolExecutor(2) as pool:
            records = list(pool.map(runner.run_batch, [[j] for j in jobs]))
        flat = [r for batch in records for r in batch]
        yield from reversed(flat)
        yield dict(flat[0])


# -- plan and record ----------------------------------------------------------------------------
def test_plan_covers_every_domain_agent_task_attempt(root: Path) -> None:
    jobs = toy_jobs(root, attempts=3)
    assert len(jobs) == 20 * 3 * 3 and len({j.key for j in jobs}) == len(jobs)
    assert {j.run_id for j in jobs} == {f"{a}-heldout" for a in AGENTS}
    with pytest.raises(ValueError):
        toy_jobs(root, attempts=0)


def test_records_have_the_contract_fields(root: Path) -> None:
    records = evaluate(toy_jobs(root, 1), runner=evaltoy.runner(root))
    for rec in records:
        for key in ("run_id", "agent", "domain", "task_id", "seed", "split", "pass", "score", "failure_codes",
                    "checks", "process_metrics", "steps", "shaped_reward", "judge", "defect_tags", "outcome_class"):
            assert key in rec
    passed = Counter((r["agent"], r["pass"]) for r in records)
    assert passed[("oracle", True)] == 20 and passed[("noop", True)] == 0


# -- executors: same lines whatever the worker count or backend --------------------------------
def test_one_and_two_workers_write_the_same_lines(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    out1, out2 = tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"
    r1 = evaluate(toy_jobs(root), out=out1, workers=1, runner=evaltoy.runner(root))
    r2 = evaluate(toy_jobs(root), out=out2, workers=2, runner=evaltoy.runner(root))
    assert r1 == r2  # returned in job order
    assert sorted_lines(out1) == sorted_lines(out2) == reference


def test_a_fake_executor_with_the_same_interface_writes_the_same_lines(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    out = tmp_path / "fake.jsonl"
    fake = ReversingThreadExecutor()
    records = evaluate(toy_jobs(root), out=out, executor=fake, runner=evaltoy.runner(root))
    assert fake.entered == 0 and len(records) == len(toy_jobs(root))
    assert sorted_lines(out) == reference  # the duplicate delivery was not written


def test_process_executor_is_reentrant_and_unordered(root: Path) -> None:
    jobs = toy_jobs(root, 1)
    with ProcessExecutor(2) as ex:
        with ex:
            got = [loads(x) if isinstance(x, bytes) else x for x in ex.imap_unordered(evaltoy.runner(root), jobs)]
        assert ex._pool is not None  # the outer block still owns the workers
    assert ex._pool is None
    assert sorted(map(job_key, got)) == sorted(j.key for j in jobs)


def test_make_executor_picks_the_backend() -> None:
    assert isinstance(make_executor(1), SerialExecutor)
    assert isinstance(make_executor(2), ProcessExecutor)
    assert type(make_executor(1, ray="local")).__name__ == "RayExecutor"


def test_ray_local_instance_writes_the_same_lines(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from backoffice.training.eval.evaluate import RayExecutor

    # Ray >= 2.10 has no local_mode: this starts a private single-node instance with 2 CPUs.
    out = tmp_path / "ray.jsonl"
    pythonpath = os.pathsep.join([str(evaltoy.TESTS), os.environ.get("PYTHONPATH", "")])
    executor = RayExecutor(num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}}, batch_size=8)
    evaluate(toy_jobs(root), out=out, executor=executor, runner=evaltoy.runner(root))
    assert sorted_lines(out) == reference


# -- resumable output ---------------------------------------------------------------------------
def test_rerun_skips_written_episodes(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    jobs = toy_jobs(root)
    evaluate(jobs[:50], out=out, runner=evaltoy.runner(root))
    seen: list[Record] = []
    records = evaluate(jobs + jobs[:5], out=out, runner=evaltoy.runner(root), on_record=seen.append)
    assert len(seen) == len(jobs) - 50 and len(records) == len(jobs)
    assert sorted_lines(out) == reference
    assert evaluate(jobs, out=out, runner=evaltoy.runner(root), on_record=seen.append) == records
    assert len(seen) == len(jobs) - 50  # nothing ran the third time


def test_torn_last_line_is_dropped_and_rewritten(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    out = tmp_path / "torn.jsonl"
    jobs = toy_jobs(root)
    evaluate(jobs[:30], out=out, runner=evaltoy.runner(root))
    data = out.read_bytes()
    out.write_bytes(data[:-40])  # the 30th line loses its end (and its newline)
    assert len(read_records(out)) == 29
    evaluate(jobs, out=out, runner=evaltoy.runner(root))
    assert sorted_lines(out) == reference
    assert out.read_bytes().endswith(b"\n")


def test_an_unreadable_complete_line_is_an_error_not_a_rerun(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "bad.jsonl"
    evaluate(toy_jobs(root)[:3], out=out, runner=evaltoy.runner(root))
    lines = out.read_bytes().split(b"\n")
    lines[1] = b'{"run_id": broken'
    out.write_bytes(b"\n".join(lines))
    with pytest.raises(CorruptOutput, match="bad.jsonl:2"):
        evaluate(toy_jobs(root), out=out, runner=evaltoy.runner(root))


def test_two_evaluations_cannot_append_to_one_file(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "locked.jsonl"
    started, release = threading.Event(), threading.Event()

    def hold(record: Record) -> None:
        started.set()
        release.wait(30)

    t = threading.Thread(target=evaluate, args=(toy_jobs(root)[:1],), kwargs={"out": out, "runner": evaltoy.runner(root), "on_record": hold})
    t.start()
    try:
        assert started.wait(30)
        with pytest.raises(RuntimeError, match="another evaluation"):
            evaluate(toy_jobs(root)[:1], out=out, runner=evaltoy.runner(root))
    finally:
        release.set()
        t.join()


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_mid_run_then_resume_holds_every_episode_once(root: Path, reference: list[bytes], tmp_path: Path) -> None:
    out = tmp_path / "killed.jsonl"
    total = len(toy_jobs(root))
    script = str(evaltoy.TESTS / "evaltoy.py")
    # 2 workers, 5 ms per action: about 2 s of work, killed after the first 20 records
    proc = subprocess.Popen([sys.executable, script, str(root), str(out), "2", "0.005", "2"], start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _lines(out) < 20 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the evaluation finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # the evaluator and its workers, mid-run
    finally:
        proc.wait(30)
    written = read_records(out)
    assert 20 <= len(written) < total
    assert len({job_key(r) for r in written}) == len(written)
    resumed = subprocess.run([sys.executable, script, str(root), str(out), "1", "0", "2"], timeout=300)
    assert resumed.returncode == 0
    lines = sorted_lines(out)
    assert len(lines) == total and len(set(lines)) == total
    assert lines == reference


# -- traces and replay --------------------------------------------------------------------------
def _replay_domains() -> list[str]:
    return DOMAINS or ["toy"]


def test_replay_of_200_recorded_heldout_episodes_reproduces_every_grade(root: Path, tmp_path: Path) -> None:
    """Oracle and random on held-out tasks of every installed domain (the toy domain if none
    is), traced during evaluation; replaying each trace gives the recorded end-state hash and
    grade, and the evaluation record agrees with the trace."""
    trace, out = tmp_path / "trace.jsonl", tmp_path / "eval.jsonl"
    if DOMAINS:
        per = math.ceil(100 / len(DOMAINS))
        jobs = plan_jobs(DOMAINS, ["oracle", "random"], "heldout", limit=per)
        runner = Runner()
    else:
        jobs = plan_jobs(["toy"], ["oracle", "random"], "heldout", attempts=5, task_ids=evaltoy.ids(root))
        runner = evaltoy.runner(root)
    assert len(jobs) >= 200
    records = evaluate(jobs, out=out, runner=runner, trace=trace, workers=2)
    eps = list(episodes(read_trace(trace)))
    assert len(eps) == len(jobs)
    by_episode = {(r["domain"], r["task_id"], r["agent"], r["attempt"]): r for r in records}
    assert len(by_episode) == len(records)
    envs: dict[str, object] = {}
    for ep in eps:
        domain = ep[0]["domain"]
        if domain not in envs:
            envs[domain] = runner.make_env(domain, "heldout")
        res = replay_episode(ep, envs[domain])
        assert res.ok, (ep[0]["episode_id"], res.divergences)
        assert res.grade == ep[-1]["grade"] and res.end_state_hash == ep[-1]["end_state_hash"]
    graded = Counter((e[0]["domain"], e[0]["task_id"], e[-1]["end_state_hash"], e[-1]["grade"]["score"]) for e in eps)
    recorded = Counter((r["domain"], r["task_id"], r["end_state_hash"], r["score"]) for r in records)
    assert graded == recorded


def test_records_point_at_their_trace_and_diff(root: Path, tmp_path: Path) -> None:
    """With a trace folder, every record says where its episode's trace lines and diff are,
    and what is there is that episode (same task, same end-state hash, same diff)."""
    from backoffice.training.eval.evaluate import read_located, trace_files

    folder = tmp_path / "traces"
    jobs = plan_jobs(["toy"], ["oracle", "random"], "heldout", attempts=2, task_ids=evaltoy.ids(root))[:12]
    runner = evaltoy.runner(root)
    records = evaluate(jobs, out=tmp_path / "eval.jsonl", runner=runner, trace=folder)
    assert trace_files(folder) == (folder / "trace.jsonl", folder / "diffs.jsonl")
    assert len(records) == 12
    for rec in records:
        lines = read_located(rec["trace_location"])
        assert len(lines) == rec["steps"] and {x["task_id"] for x in lines} == {rec["task_id"]}
        assert lines[-1]["end_state_hash"] == rec["end_state_hash"]
        diff = read_located(rec["diff_location"])
        env = runner.make_env("toy", "heldout")
        res = replay_episode(lines, env)
        assert res.ok and diff == loads(dumps(env.state.diff()))
    again = evaluate(jobs, out=tmp_path / "eval.jsonl", runner=runner, trace=folder)  # resumed: nothing new
    assert [r["trace_location"] for r in again] == [r["trace_location"] for r in records]


def test_eval_cli_rejects_an_unknown_judge() -> None:
    from backoffice.training.cli.main import app

    result = CliRunner().invoke(app, ["eval", "--env", "all", "--judge", "gpt", "--limit", "1"])
    assert result.exit_code != 0 and "judge" in result.output


def _toy_make_native(root: Path):
    def make_native(name: str, **kwargs: object):
        assert name == "toy"
        return evaltoy.make_env(str(root), "toy", str(kwargs.get("split", "train")))
    return make_native


def test_replay_command_says_where_a_trace_diverges(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import backoffice.envs
    from backoffice.training.cli.main import app, replay_file

    monkeypatch.setattr(backoffice.envs, "make_native", _toy_make_native(root))
    trace = tmp_path / "t.jsonl"
    evaluate(plan_jobs(["toy"], ["oracle"], "heldout", task_ids=evaltoy.ids(root))[:4], runner=evaltoy.runner(root), trace=trace)
    assert all(r["ok"] for r in replay_file(trace))
    result = CliRunner().invoke(app, ["replay", str(trace)])
    assert result.exit_code == 0 and "4/4 episodes reproduced" in result.output

    lines = [loads(x) for x in trace.read_bytes().splitlines()]
    bump = next(i for i, r in enumerate(lines) if r["tool"] == "bump")
    lines[bump]["args"] = {"counter_id": "C-2"}  # an edited call: the wrong counter
    tampered = tmp_path / "tampered.jsonl"
    from backoffice.envs.core.canonical import dumps
    tampered.write_bytes(b"".join(dumps(r) + b"\n" for r in lines))
    results = replay_file(tampered)
    bad = [r for r in results if not r["ok"]]
    assert len(bad) == 1 and bad[0]["episode_id"] == lines[bump]["episode_id"]
    assert bad[0]["first_step"] == lines[bump]["step"]
    assert bad[0]["call"] == {"tool": "bump", "args": {"counter_id": "C-2"}}
    assert any(d.startswith(f"step {lines[bump]['step']}: changed_ids") for d in bad[0]["divergences"])
    assert any("grade differs" in d for d in bad[0]["divergences"])
    result = CliRunner().invoke(app, ["replay", str(tampered)])
    assert result.exit_code == 1
    assert f"first divergence at step {lines[bump]['step']}" in result.output and "3/4 episodes reproduced" in result.output

    cut = [r for r in lines if not (r["episode_id"] == lines[0]["episode_id"] and r["step"] > 1)]
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(dumps(r) + b"\n" for r in cut))
    first = replay_file(short)[0]
    assert not first["ok"] and any("never ended" in d for d in first["divergences"])


# -- the CLI on the installed domains -----------------------------------------------------------
@pytest.mark.skipif(not DOMAINS, reason="no domain installed yet (the toy-domain tests above cover the runner)")
def test_cli_eval_all_domains_1_vs_2_workers_and_resume(tmp_path: Path) -> None:
    from backoffice.training.cli.main import app

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = ["eval", "--env", "all", "--limit", "3", "--policy", "oracle", "--policy", "random", "--policy", "noop"]
    r1 = CliRunner().invoke(app, [*args, "--out", str(a), "--workers", "1"])
    r2 = CliRunner().invoke(app, [*args, "--out", str(b), "--workers", "2", "--attempts", "1"])
    assert r1.exit_code == 0, r1.output
    assert r2.exit_code == 0, r2.output
    assert sorted_lines(a) == sorted_lines(b)
    records = read_records(a)
    assert len(records) == len(DOMAINS) * 3 * 3
    assert {r["domain"] for r in records} == set(DOMAINS)
    assert all(r["pass"] for r in records if r["agent"] == "oracle")
    before = a.read_bytes()
    r3 = CliRunner().invoke(app, [*args, "--out", str(a)])
    assert r3.exit_code == 0 and a.read_bytes() == before


@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")
def test_audit_cli_measures_noop_and_blind_policies() -> None:
    from backoffice.training.cli.main import app

    domain = DOMAINS[0]
    result = CliRunner().invoke(app, ["audit", "--env", domain, "--no-rules", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = loads(result.output.strip().splitlines()[-1])
    assert report["domain"] == domain and report["tasks"] > 0 and report["noop_score"] <= 0.1
    assert report["blind"] and all(0 <= b["pass_rate"] <= 0.1 for b in report["blind"].values())
    assert 0 < report["top_class"]["share"] <= 0.35 and report["rule_binds"] == {}
