"""``backoffice view``: the page is tested in a real browser (headless Chromium over the DevTools
protocol, :mod:`backoffice.training.eval.view.browser`), opened from disk, reading the rendered DOM:

- the overview's numbers equal ``backoffice report --json`` for the same records;
- a click on a failure-code cell, or the failure-code filter, lists exactly those episodes;
- an episode page shows every step of its trace and every check of its record, the diff per
  table, the shaped reward and judge apart from the score; two episodes side by side align by step;
- a record without a trace shows its grade; a missing or corrupt trace is named on the page;
- hostile agent strings (``</script>``, ``onerror=``) stay text;
- a page over 50,000 synthetic records loads, filters, sorts and pages without a script error.

A screenshot of an episode page goes to pytest's tmp folder (``BACKOFFICE_VIEW_PNG=path`` also
writes it there: the README's ``docs/viewer.png`` is made that way). Without Chromium the browser
tests skip, except under ``make test`` (``BACKOFFICE_REQUIRE_BROWSER=1``), which installs it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backoffice.envs.core.canonical import dumps, loads
from backoffice.training.eval.evaluate import Runner, evaluate, load_records, plan_jobs, read_located
from backoffice.training.eval.view import embed_json, write_page
from backoffice.training.eval.view.browser import Chromium, find_chromium
from backoffice.training.eval.view.data import build
from backoffice.training.policies.base import Policy

pytestmark = pytest.mark.xdist_group("view")

CLI = [sys.executable, "-m", "backoffice.training.cli"]
HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
HOSTILE_AGENT = "<b onmouseover=window.__pwned=3>evil</b>"


def _chromium() -> str:
    found = find_chromium()
    if found is None:
        reason = "Chromium not found (apt-get install chromium, or set $CHROMIUM); `make test` installs it"
        if os.environ.get("BACKOFFICE_REQUIRE_BROWSER"):
            pytest.fail(reason + ", and BACKOFFICE_REQUIRE_BROWSER is set")
        pytest.skip(reason)
    return found


# -- records --------------------------------------------------------------------------------
class Hostile(Policy):
    """Sends hostile strings as arguments, then submits."""

    name = HOSTILE_AGENT

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        self.n = 0

    def act(self, obs: str) -> Any:
        self.n += 1
        if self.n == 1:
            return {"tool": "get_request", "args": {"request_id": HOSTILE[:60]}}
        if self.n == 2:
            return {"tool": "list_pending", "args": {"cursor": HOSTILE}}
        return {"tool": "submit", "args": {}}


def _policy(domain: str, agent: str, seed: int) -> Policy:
    if agent == HOSTILE_AGENT:
        return Hostile()
    from backoffice.training.policies import get_policy

    return get_policy(domain, agent, seed=seed)


def _self_approval_tasks(domain: str, split: str) -> list[str]:
    """Heldout tasks tagged self_approval first (where the wrong policy commits its failure),
    whichever ids the release gives them."""
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)
    ids = rel.split_ids[split]
    return sorted(ids, key=lambda t: "self_approval" not in rel.answer_key(t).get("defect_tags", []))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Evaluation records of two domains (oracle, random, noop, a wrong policy; two attempts) with
    traces; one file without traces; records pointing at a missing and at a corrupt trace."""
    root = tmp_path_factory.mktemp("view")
    jobs = plan_jobs(["approvals", "schedules"], ["oracle", "random", "noop"], "heldout", limit=3, attempts=2)
    jobs += plan_jobs(["approvals"], ["wrong:self_approval", HOSTILE_AGENT], "heldout", limit=3, task_ids=_self_approval_tasks)
    traced = root / "traced.jsonl"
    evaluate(jobs, out=traced, trace=root / "t", runner=Runner(make_policy=_policy))
    plain = root / "plain.jsonl"  # no --trace: no trace_location
    evaluate(plan_jobs(["schedules"], ["noop"], "train", run_id="plain", limit=2), out=plain)
    broken = root / "broken.jsonl"
    recs = load_records([traced])
    oracle = next(r for r in recs if r["agent"] == "oracle" and r["domain"] == "approvals")
    corrupt_trace = root / "corrupt.jsonl"
    corrupt_trace.write_bytes(b'{"not": "a trace line"}\n' + b"\x00garbage\n" * 40)
    lines = [
        {**oracle, "run_id": "missing", "trace_location": {**oracle["trace_location"], "path": str(root / "gone" / "trace.jsonl")}},
        {**oracle, "run_id": "corrupt", "trace_location": {**oracle["trace_location"], "path": str(corrupt_trace), "offset": 0}},
    ]
    broken.write_bytes(b"".join(dumps(r) + b"\n" for r in lines) + b"{torn")
    files = [traced, plain, broken]
    page = write_page(files, root / "page.html")
    report = loads(subprocess.run([*CLI, "report", *map(str, files), "--json", "--no-plots"], capture_output=True, check=True).stdout)
    return {"root": root, "files": files, "page": page, "report": report, "records": load_records(files)}


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    _chromium()
    with Chromium(width=1280, height=900) as b:
        yield b


def _open(browser: Chromium, page: Path, fragment: str = "") -> None:
    browser.open(page.resolve().as_uri() + fragment, timeout=60)
    browser.wait_for("document.body.dataset.ready === '1'", timeout=60)


def _cells(browser: Chromium, table: str) -> list[dict[str, str]]:
    return browser.eval(f"Array.from(document.querySelectorAll('#{table} td[data-episodes], #{table} td[data-count], #{table} td[data-value]'))"
                        ".map(function (td) { return Object.assign({text: td.textContent}, td.dataset); })")


def _rows(browser: Chromium) -> list[tuple[str, ...]]:
    """(domain, agent, run, task, attempt) of the episode list's rows on the current page."""
    return [tuple(r) for r in browser.eval(
        "Array.from(document.querySelectorAll('#bo-episodes tr[data-index]')).map(function (tr) {"
        " var c = tr.children; return [c[1].textContent, c[2].textContent, c[3].textContent, c[5].textContent, c[6].textContent]; })")]


def _key(r: dict[str, Any]) -> tuple[str, ...]:
    return (r["domain"], r["agent"], r["run_id"], r["task_id"], str(r.get("attempt", 0)))


# -- without a browser ----------------------------------------------------------------------
def test_embedded_json_cannot_end_its_script_block() -> None:
    text = embed_json({"a": HOSTILE, "b": "<!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert loads(text) == {"a": HOSTILE, "b": "<!-- & -->"}


def test_data_names_trace_problems_and_keeps_records_without_a_trace(runs: dict[str, Any]) -> None:
    data = build(runs["files"])
    assert data["meta"]["episodes"] == len(runs["records"]) == runs["report"]["episodes"]
    assert any("torn last line" in p for p in data["meta"]["problems"])
    by_run = {d["record"]["run_id"]: d for d in data["details"]}
    assert by_run["plain"]["trace"] is None and by_run["plain"]["problems"] == [] and by_run["plain"]["record"]["checks"]
    assert "trace file not found" in by_run["missing"]["problems"][0]
    assert "corrupt" in by_run["corrupt"]["problems"][0] or "unreadable" in by_run["corrupt"]["problems"][0]
    for d in data["details"]:
        if d["record"]["run_id"] == "oracle-heldout":
            assert d["trace"] == read_located(d["record"]["trace_location"]) or d["record"]["seed_str"]
            assert len(d["trace"]) == d["record"]["steps"] and d["diff"] is not None and not d["problems"]
    # --trace finds moved files by name
    moved = runs["root"] / "moved"
    moved.mkdir(exist_ok=True)
    for name in ("trace.jsonl", "diffs.jsonl"):
        (moved / name).write_bytes((runs["root"] / "t" / name).read_bytes())
    gone = runs["root"] / "gone.jsonl"
    gone.write_bytes(b"".join(dumps({**r, "trace_location": {**r["trace_location"], "path": "/nowhere/trace.jsonl"},
                                     "diff_location": {**r["diff_location"], "path": "/nowhere/diffs.jsonl"}}) + b"\n"
                              for r in load_records([runs["files"][0]])[:3]))
    assert all(d["trace"] and d["diff"] and not d["problems"] for d in build([gone], trace=moved)["details"])
    assert all(d["problems"] for d in build([gone])["details"])
    # a relative path (an eval run from the folder above) is found beside the records file
    (runs["root"] / "sub").mkdir(exist_ok=True)
    rel = runs["root"] / "sub" / "rel.jsonl"
    rel.write_bytes(b"".join(dumps({**r, "trace_location": {**r["trace_location"], "path": "t/trace.jsonl"},
                                    "diff_location": {**r["diff_location"], "path": "t/diffs.jsonl"}}) + b"\n"
                             for r in load_records([runs["files"][0]])[:3]))
    assert all(d["trace"] and d["diff"] and not d["problems"] for d in build([rel])["details"])


# -- in the browser -------------------------------------------------------------------------
def test_overview_numbers_equal_backoffice_report_json(runs: dict[str, Any], browser: Chromium) -> None:
    _open(browser, runs["page"])
    report = runs["report"]
    assert browser.eval("window.__boErrors.length") == 0 and browser.exceptions == []
    cells = {(c["domain"], c["agent"]): c for c in _cells(browser, "bo-grid-domain-agent")}
    assert len(cells) == len(report["by_domain_agent"])
    for row in report["by_domain_agent"]:
        cell = cells[(row["domain"], row["agent"])]
        assert float(cell["passRate"]) == row["pass_rate"] and float(cell["meanScore"]) == row["mean_score"]
        assert int(cell["episodes"]) == row["episodes"] and int(cell["passed"]) == row["passed"]
        assert cell["text"].startswith(f"{row['pass_rate'] * 100:.1f} % ({row['episodes']})")
        assert f"score {row['mean_score']:.3f}" in cell["text"]
    agents = _cells(browser, "bo-grid-agent")
    assert sorted((float(c["passRate"]), int(c["episodes"])) for c in agents) == sorted((r["pass_rate"], r["episodes"]) for r in report["by_agent"])
    codes = _cells(browser, "bo-grid-failure-codes")
    assert sorted((c["domain"], c["agent"], c["code"], int(c["count"]), float(c["share"])) for c in codes) == sorted(
        (r["domain"], r["agent"], r["failure_code"], r["count"], r["share"]) for r in report["failure_codes"])
    for field in ("defect_tags", "outcome_class"):
        got = _cells(browser, "bo-grid-" + field.replace("_", "-"))
        assert report[f"by_{field}"] and sorted((c["domain"], c["agent"], c["value"], float(c["passRate"]), int(c["episodes"])) for c in got) == sorted(
            (r["domain"], r["agent"], str(r[field]), r["pass_rate"], r["episodes"]) for r in report[f"by_{field}"])
    k = _cells(browser, "bo-pass-hat-k")
    assert report["pass_hat_k"] and sorted((c["domain"], c["agent"], int(c["k"]), float(c["value"])) for c in k) == sorted(
        (r["domain"], r["agent"], r["k"], r["pass_hat_k"]) for r in report["pass_hat_k"])
    assert browser.eval("document.querySelectorAll('.plots img').length") == 2
    browser.wait_for("Array.from(document.querySelectorAll('.plots img')).every(function (i) { return i.complete && i.naturalWidth > 300; })")
    assert browser.eval("document.getElementById('bo-trace-problems').textContent").startswith("2 episode(s)")
    assert browser.eval("window.__pwned") is None
    assert HOSTILE_AGENT in browser.eval("document.getElementById('bo-grid-domain-agent').textContent")


def test_a_failure_code_lists_exactly_its_episodes(runs: dict[str, Any], browser: Chromium) -> None:
    _open(browser, runs["page"])
    recs = runs["records"]
    code = "self_approval"
    # a click on the failure-code cell of (approvals, wrong:self_approval)
    browser.eval(f"document.querySelector('#bo-grid-failure-codes td[data-code=\"{code}\"][data-agent=\"wrong:self_approval\"]').click()")
    want = {_key(r) for r in recs if code in r["failure_codes"] and r["agent"] == "wrong:self_approval" and r["domain"] == "approvals"}
    assert want and set(_rows(browser)) == want and len(_rows(browser)) == len(want)
    assert browser.eval("document.getElementById('f-code').selectedOptions[0].textContent") == code
    # the failure-code filter alone: every agent and domain
    for code in ("wrong_outcome", "rounding_drift"):
        browser.eval("document.getElementById('f-clear').click()")
        browser.eval(f"(function () {{ var s = document.getElementById('f-code'); s.value = Array.from(s.options).filter(function (o) {{ return o.textContent === '{code}'; }})[0].value;"
                     " s.dispatchEvent(new Event('change')); })()")
        want = {_key(r) for r in recs if code in r["failure_codes"]}
        got: set[tuple[str, ...]] = set()
        pages = 0
        while True:
            got |= set(_rows(browser))
            pages += 1
            if browser.eval("document.getElementById('bo-next').disabled"):
                break
            browser.eval("document.getElementById('bo-next').click()")
        assert want and got == want, code
        assert browser.eval("document.getElementById('bo-count').textContent") == f"{len(want)} of {len(recs)} episodes"
    assert browser.exceptions == []


def _open_episode(browser: Chromium, page: Path, run_id: str, task_id: str | None = None, attempt: int = 0) -> int:
    _open(browser, page)
    browser.eval(f"document.getElementById('f-q').value = {dumps(task_id or '').decode()}; document.getElementById('f-q').dispatchEvent(new Event('input'))")
    index = browser.eval(
        "(function () { var rows = Array.from(document.querySelectorAll('#bo-episodes tr[data-index]')).filter(function (tr) {"
        f" return tr.children[3].textContent === {dumps(run_id).decode()} && tr.children[6].textContent === '{attempt}'; }});"
        " rows[0].click(); return Number(rows[0].dataset.index); })()")
    browser.wait_for("document.body.dataset.view === 'episode'")
    return int(index)


def test_an_episode_page_shows_every_step_check_and_change(runs: dict[str, Any], browser: Chromium, tmp_path: Path) -> None:
    recs = runs["records"]
    for rec in [r for r in recs if r["run_id"] in ("oracle-heldout", "wrong:self_approval-heldout") and r.get("attempt", 0) == 0][:4]:
        _open_episode(browser, runs["page"], rec["run_id"], rec["task_id"])
        trace = read_located(rec["trace_location"])
        steps = browser.eval("Array.from(document.querySelectorAll('#bo-steps tr[data-step]')).map(function (tr) {"
                             " return [Number(tr.dataset.step), tr.dataset.tool, tr.children[4].textContent]; })")
        assert [(s[0], s[1]) for s in steps] == [(t["step"], t["tool"]) for t in trace]
        assert [s[2].startswith("ok") for s in steps] == [t["result_status"] == "ok" for t in trace]
        checks = browser.eval("Array.from(document.querySelectorAll('#bo-checks tr[data-check]')).map(function (tr) {"
                              " return [tr.dataset.check, tr.dataset.pass === '1', tr.dataset.gate === '1', tr.children[1].textContent]; })")
        assert checks == [[c["id"], c["pass"], c["gate"], "gate" if c["gate"] else "work"] for c in rec["checks"]]
        diff = read_located(rec["diff_location"])
        changed = sorted(t for t, d in diff.items() if d["created"] or d["updated"] or d["deleted"])
        assert browser.eval("Array.from(document.querySelectorAll('.bo-diff-table')).map(function (e) { return e.dataset.table; })") == changed
        for table in changed:
            for rid, fields in diff[table]["updated"].items():
                for field in fields:
                    assert browser.eval(f"document.querySelectorAll('.bo-diff-table[data-table=\"{table}\"] .bo-updated tr[data-id=\"{rid}\"][data-field=\"{field}\"]').length") == 1
        assert float(browser.eval("document.querySelector('[data-field=score]').dataset.value")) == rec["score"]
        assert float(browser.eval("document.querySelector('[data-field=shaped]').dataset.value")) == rec["shaped_reward"]
        assert "training reward, apart from the score" in browser.eval("document.querySelector('[data-field=shaped]').textContent")
        assert browser.eval("document.querySelector('[data-field=judge]') !== null")
        assert rec["task_id"] in browser.eval("document.getElementById('bo-brief').textContent")
    # the screenshot: a failed episode, its checks beside its diff
    wrong = next(r for r in recs if r["agent"] == "wrong:self_approval" and "self_approval" in r["failure_codes"])
    _open_episode(browser, runs["page"], wrong["run_id"], wrong["task_id"])
    shot = browser.screenshot(tmp_path / "episode.png")
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    if os.environ.get("BACKOFFICE_VIEW_PNG"):  # the README's docs/viewer.png, in 64 colours
        from PIL import Image

        out = browser.screenshot(os.environ["BACKOFFICE_VIEW_PNG"])
        Image.open(out).convert("RGB").quantize(64).save(out, optimize=True)
    assert browser.exceptions == []


def test_records_without_or_with_a_broken_trace_say_so(runs: dict[str, Any], browser: Chromium) -> None:
    plain = next(r for r in runs["records"] if r["run_id"] == "plain")
    _open_episode(browser, runs["page"], "plain", plain["task_id"])
    assert "without --trace" in browser.eval("document.getElementById('bo-no-trace').textContent")
    assert browser.eval("document.querySelectorAll('#bo-checks tr[data-check]').length") == len(plain["checks"])
    for run_id, words in (("missing", "trace file not found"), ("corrupt", "is not step 1")):
        _open_episode(browser, runs["page"], run_id)
        problems = browser.eval("Array.from(document.querySelectorAll('.bo-problem')).map(function (e) { return e.textContent; })")
        assert any(words in p for p in problems), problems
        assert browser.eval("document.querySelectorAll('#bo-checks tr[data-check]').length") > 0
    _open(browser, runs["page"])
    browser.eval("document.getElementById('bo-trace-problems').click()")
    assert sorted(r[2] for r in _rows(browser)) == ["corrupt", "missing"]
    assert any("torn last line" in p for p in browser.eval("Array.from(document.querySelectorAll('.problem')).map(function (e) { return e.textContent; })"))


def test_hostile_strings_stay_text(runs: dict[str, Any], browser: Chromium) -> None:
    rec = next(r for r in runs["records"] if r["agent"] == HOSTILE_AGENT)
    _open_episode(browser, runs["page"], rec["run_id"], rec["task_id"])
    assert browser.eval("window.__pwned") is None
    assert browser.eval("document.querySelectorAll('#app img, #app script, #app b[onmouseover]').length") == 0
    assert json.dumps(HOSTILE) in browser.eval("document.getElementById('bo-steps').textContent")  # as the JSON it was
    assert HOSTILE_AGENT in browser.eval("document.getElementById('bo-title').textContent")
    assert browser.exceptions == []


def test_side_by_side_aligns_two_agents_by_step(runs: dict[str, Any], browser: Chromium) -> None:
    recs = runs["records"]
    task = next(r["task_id"] for r in recs if r["agent"] == "oracle" and r["domain"] == "approvals")
    left = next(r for r in recs if r["agent"] == "oracle" and r["task_id"] == task)
    right = next(r for r in recs if r["agent"] == "random" and r["task_id"] == task)
    _open_episode(browser, runs["page"], left["run_id"], task)
    browser.eval("(function () { var s = document.getElementById('bo-compare-with'); s.value = Array.from(s.options).filter(function (o) {"
                 " return o.textContent.indexOf('random / run random-heldout / attempt 0') === 0; })[0].value; document.getElementById('bo-compare').click(); })()")
    browser.wait_for("document.body.dataset.view === 'compare'")
    n = max(left["steps"], right["steps"])
    assert browser.eval("document.querySelectorAll('#bo-cmp-steps tr[data-step]').length") == n
    lt, rt = read_located(left["trace_location"]), read_located(right["trace_location"])
    differs = browser.eval("Array.from(document.querySelectorAll('#bo-cmp-steps tr[data-step]')).map(function (tr) { return tr.className === 'differs'; })")
    same = [k < len(lt) and k < len(rt) and (lt[k]["tool"], lt[k]["args"]) == (rt[k]["tool"], rt[k]["args"]) for k in range(n)]
    assert differs == [not s for s in same]
    ids = {c["id"] for c in left["checks"]} | {c["id"] for c in right["checks"]}
    assert browser.eval("document.querySelectorAll('#bo-cmp-checks tr[data-check]').length") == len(ids)
    assert browser.exceptions == []


def synthetic_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` plausible evaluation records (5 domains x 5 agents, checks, codes, tags)."""
    rng = random.Random(seed)
    domains = ["approvals", "schedules", "remittance", "sufficiency", "registration"]
    codes = ["wrong_outcome", "guardrail_breach", "rounding_drift", "approval_missing", "invalid_approver", "collateral_change"]
    out = []
    for i in range(n):
        ok = rng.random() < 0.5
        fc = [] if ok else sorted(rng.sample(codes, rng.randint(1, 2)))
        checks = [{"id": f"check_{k}", "kind": "row_equals", "pass": ok or k > 1, "gate": k % 2 == 1,
                   "failure_code": None if ok or k > 1 else fc[min(k, len(fc) - 1)], "detail": None if ok else {"expected": k, "got": k + 1}}
                  for k in range(6)]
        agent = ["oracle", "random", "noop", "ppo", "llm"][(i // 5) % 5]
        seed_ = rng.getrandbits(63)
        out.append({"run_id": f"{agent}-heldout", "agent": agent, "agent_version": "1", "domain": domains[i % 5], "task_id": f"SYN-{i // 25:05d}",
                    "seed": seed_, "seed_str": str(seed_), "split": "heldout" if i % 3 else "train", "attempt": 0, "pass": ok,
                    "score": 1.0 if ok else round(rng.random() * 0.9, 3), "failure_codes": fc, "checks": checks,
                    "process_metrics": {"steps": 7, "tool_calls": {"submit": 1}}, "steps": rng.randint(1, 40), "shaped_reward": 0.5,
                    "judge": None, "end_state_hash": "0" * 32, "defect_tags": [rng.choice(["clean", "over_limit", "short_notice"])],
                    "outcome_class": rng.choice(["proceed", "hold", "reject"])})
    return out


def test_fifty_thousand_records_load_and_filter_without_a_script_error(tmp_path: Path, browser: Chromium) -> None:
    recs = synthetic_records(50_000)
    src = tmp_path / "big.jsonl"
    src.write_bytes(b"".join(dumps(r) + b"\n" for r in recs))
    t0 = time.perf_counter()
    page = write_page([src], tmp_path / "big.html", plots=False)
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    _open(browser, page)
    loaded = time.perf_counter() - t0
    assert browser.eval("document.getElementById('bo-count').textContent") == "50000 of 50000 episodes"
    t0 = time.perf_counter()
    browser.eval("(function () { var s = document.getElementById('f-code'); s.value = Array.from(s.options).filter(function (o) { return o.textContent === 'rounding_drift'; })[0].value;"
                 " s.dispatchEvent(new Event('change')); })()")
    want = sum("rounding_drift" in r["failure_codes"] for r in recs)
    assert browser.eval("document.getElementById('bo-count').textContent") == f"{want} of 50000 episodes"
    browser.eval("document.getElementById('f-q').value = 'syn-0012'; document.getElementById('f-q').dispatchEvent(new Event('input'))")
    want = sum("rounding_drift" in r["failure_codes"] and "SYN-0012" in r["task_id"] for r in recs)
    assert browser.eval("document.getElementById('bo-count').textContent") == f"{want} of 50000 episodes"
    browser.eval("document.getElementById('f-clear').click()")
    browser.eval("document.querySelector('th[data-sort=score]').click(); document.getElementById('bo-last').click()")
    assert browser.eval("document.getElementById('bo-page').textContent") == "page 1000 of 1000"
    scores = browser.eval("Array.from(document.querySelectorAll('#bo-episodes tr[data-index]')).map(function (tr) { return Number(tr.children[8].textContent); })")
    assert len(scores) == 50 and scores == sorted(scores) and scores[-1] == 1.0
    browser.eval("document.querySelector('#bo-grid-domain-agent td[data-episodes]').click()")
    assert browser.eval("document.getElementById('bo-count').textContent") == "2000 of 50000 episodes"
    filtered = time.perf_counter() - t0
    browser.eval("location.hash = '#ep/49999'")
    browser.wait_for("document.body.dataset.view === 'episode'")
    assert browser.eval("document.querySelectorAll('#bo-checks tr[data-check]').length") == 6
    assert browser.eval("window.__boErrors.length") == 0 and browser.exceptions == []
    print(f"50,000 records: page {page.stat().st_size / 1e6:.1f} MB built in {built:.1f} s, loaded in {loaded:.1f} s, filtered in {filtered:.2f} s")


def test_cli_view_writes_the_page_and_serves_it(runs: dict[str, Any], tmp_path: Path) -> None:
    import socket
    import urllib.request

    out = tmp_path / "cli.html"
    res = subprocess.run([*CLI, "view", *map(str, runs["files"]), "--out", str(out), "--no-plots"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"page: {out}" in res.stdout and out.read_text().startswith("<!DOCTYPE html>")
    assert "http" not in out.read_text().split('id="bo-data"')[0].replace("http-equiv", "")  # no network reference in the head
    bad = subprocess.run([*CLI, "view", str(tmp_path / "nope.jsonl")], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "no such file" in bad.stdout + bad.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*CLI, "view", str(runs["files"][0]), "--out", str(tmp_path / "served.html"), "--no-plots", "--serve", "--port", str(port)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[1].startswith(f"serving http://127.0.0.1:{port}/served.html"), lines
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/served.html", timeout=30) as resp:
            assert resp.read() == (tmp_path / "served.html").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_notebook_shows_the_page_in_an_iframe(runs: dict[str, Any]) -> None:
    import html

    from backoffice.training.eval.view import notebook

    shown = notebook(runs["files"][:1])
    text = shown.data
    assert text.startswith("<div><iframe") and 'sandbox="allow-scripts"' in text
    doc = html.unescape(text.split('srcdoc="', 1)[1].rsplit('"></iframe></div>', 1)[0])
    assert doc.startswith("<!DOCTYPE html>") and 'id="bo-data"' in doc
