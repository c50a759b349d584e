"""Reports: grouping by domain x agent, failure code, report fields (list or scalar), pass^k;
the ``backoffice report`` command's tables, JSON and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import evaltoy
from backoffice.envs.core.canonical import dumps
from backoffice.training.cli.main import app
from backoffice.training.eval.evaluate import evaluate, load_records, plan_jobs
from backoffice.training.eval.report import (
    build_report,
    failure_rows,
    pass_hat_k,
    pass_hat_k_rows,
    pass_hat_k_value,
    rate_rows,
    write_plots,
)

PNG = b"\x89PNG\r\n\x1a\n"


def rec(domain: str, agent: str, task: str, ok: bool, attempt: int = 0, codes: tuple[str, ...] = (),
        **fields: Any) -> dict[str, Any]:
    return {"run_id": f"{agent}-heldout", "agent": agent, "domain": domain, "task_id": task, "attempt": attempt,
            "split": "heldout", "pass": ok, "score": 1.0 if ok else 0.5, "steps": 3, "failure_codes": list(codes),
            **fields}


RECORDS = [
    rec("approvals", "oracle", "A1", True, defect_tags=["clean"], outcome_class="proceed"),
    rec("approvals", "oracle", "A2", True, defect_tags=["self_approval", "over_limit"], outcome_class="escalate"),
    rec("approvals", "noop", "A1", False, codes=("wrong_outcome",), defect_tags=["clean"], outcome_class="proceed"),
    rec("approvals", "noop", "A2", False, codes=("wrong_outcome", "basis_missing"), defect_tags=["self_approval", "over_limit"],
        outcome_class="escalate"),
    rec("sufficiency", "oracle", "S1", True, defect_tags=["missing_item"], outcome_class="release_after_reply",
        requirement_types=["presence", "signature"]),
    rec("sufficiency", "noop", "S1", False, codes=("premature_release",), defect_tags=["missing_item"],
        outcome_class="release_after_reply", requirement_types=["presence", "signature"]),
]


def test_rate_rows_explode_list_fields_and_skip_missing_ones() -> None:
    rows = rate_rows(RECORDS, ["domain", "agent", "defect_tags"])
    assert {(r["domain"], r["agent"], r["defect_tags"]): r["episodes"] for r in rows} == {
        ("approvals", "noop", "clean"): 1, ("approvals", "noop", "over_limit"): 1, ("approvals", "noop", "self_approval"): 1,
        ("approvals", "oracle", "clean"): 1, ("approvals", "oracle", "over_limit"): 1, ("approvals", "oracle", "self_approval"): 1,
        ("sufficiency", "noop", "missing_item"): 1, ("sufficiency", "oracle", "missing_item"): 1,
    }
    req = rate_rows(RECORDS, ["domain", "agent", "requirement_types"])
    assert {r["domain"] for r in req} == {"sufficiency"}  # the other domain has no such field
    assert [(r["agent"], r["requirement_types"], r["pass_rate"]) for r in req] == [
        ("noop", "presence", 0.0), ("noop", "signature", 0.0), ("oracle", "presence", 1.0), ("oracle", "signature", 1.0)]
    by = {r["outcome_class"]: r for r in rate_rows(RECORDS, ["outcome_class"])}
    assert by["escalate"]["pass_rate"] == 0.5 and by["escalate"]["mean_score"] == 0.75


def test_failure_rows_count_episodes_and_shares() -> None:
    rows = failure_rows(RECORDS)
    assert [(r["domain"], r["agent"], r["failure_code"], r["count"], r["share"]) for r in rows] == [
        ("approvals", "noop", "basis_missing", 1, 0.5), ("approvals", "noop", "wrong_outcome", 2, 1.0),
        ("sufficiency", "noop", "premature_release", 1, 1.0)]


def test_pass_hat_k_is_the_unbiased_estimate() -> None:
    assert pass_hat_k_value([True, True, False, False], 1) == 0.5
    assert pass_hat_k_value([True, True, False, False], 2) == pytest.approx(1 / 6)
    assert pass_hat_k_value([True, True, True], 3) == 1.0
    assert pass_hat_k_value([True], 2) is None
    many = [rec("d", "a", "T1", a < 3, attempt=a) for a in range(4)] + [rec("d", "a", "T2", True, attempt=a) for a in range(4)]
    rows = pass_hat_k_rows(many)
    assert [r["k"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["pass_hat_k"] == pytest.approx((0.75 + 1) / 2)
    assert rows[3]["pass_hat_k"] == pytest.approx(0.5)
    assert pass_hat_k(many, 2) == {"d / a": pytest.approx((0.5 + 1) / 2)}
    assert pass_hat_k_rows(RECORDS) == []  # one attempt per task: no pass^k table


def test_build_report_is_plain_json() -> None:
    report = build_report(RECORDS)
    assert report["episodes"] == 6 and report["domains"] == ["approvals", "sufficiency"]
    assert json.loads(dumps(report)) == report
    for key in ("by_domain_agent", "by_agent", "failure_codes", "by_defect_tags", "by_outcome_class",
                "by_requirement_types", "pass_hat_k"):
        assert key in report


def test_plots_are_pngs_with_the_same_bytes_every_time(tmp_path: Path) -> None:
    a = write_plots(RECORDS, tmp_path / "a")
    b = write_plots(RECORDS, tmp_path / "b")
    assert [Path(p).name for p in a] == ["a.pass_rate.png", "a.failure_codes.png"]
    for pa, pb in zip(a, b):
        assert Path(pa).read_bytes().startswith(PNG)
        assert Path(pa).read_bytes() == Path(pb).read_bytes()
    clean = write_plots([r for r in RECORDS if r["agent"] == "oracle"], tmp_path / "clean")  # no failure code at all
    assert all(Path(p).read_bytes().startswith(PNG) for p in clean)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toy evaluation with 3 attempts per task, split over two files."""
    root = evaltoy.build(tmp_path_factory.mktemp("toy-seeds"))
    folder = tmp_path_factory.mktemp("runs")
    jobs = plan_jobs(["toy"], ["oracle", "random", "noop"], "heldout", attempts=3, task_ids=evaltoy.ids(root))
    evaluate(jobs[:100], out=folder / "part1.jsonl", runner=evaltoy.runner(root))
    evaluate(jobs[80:], out=folder / "part2.jsonl", runner=evaltoy.runner(root))  # overlaps part1 by 20
    return folder


def test_report_command_prints_tables_and_writes_plots_beside_the_file(toy_run: Path) -> None:
    files = [str(toy_run / "part1.jsonl"), str(toy_run / "part2.jsonl")]
    result = CliRunner().invoke(app, ["report", *files], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for title in ("Pass rate by domain x agent (180 episodes)", "Failure codes", "Pass rate by defect tag", "pass^k"):
        assert title in result.output
    for name in ("part1.pass_rate.png", "part1.failure_codes.png"):
        assert (toy_run / name).read_bytes().startswith(PNG)


def test_report_json_is_machine_readable_and_deduplicated(toy_run: Path, tmp_path: Path) -> None:
    files = [str(toy_run / "part1.jsonl"), str(toy_run / "part2.jsonl")]
    result = CliRunner().invoke(app, ["report", *files, "--json", "--plot-stem", str(tmp_path / "r")])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["episodes"] == 180 == len(load_records(files))  # the 20 overlapping episodes count once
    oracle = next(r for r in data["by_domain_agent"] if r["agent"] == "oracle")
    assert oracle["pass_rate"] == 1.0 and oracle["episodes"] == 60
    assert {r["k"] for r in data["pass_hat_k"]} == {1, 2, 3}
    assert data["plots"] == [] and not list(tmp_path.glob("r.*.png"))  # --json writes no PNG unless asked
    asked = CliRunner().invoke(app, ["report", *files, "--json", "--plots", "--plot-stem", str(tmp_path / "r")])
    assert [Path(p).name for p in json.loads(asked.stdout)["plots"]] == ["r.pass_rate.png", "r.failure_codes.png"]
    assert CliRunner().invoke(app, ["report", str(tmp_path / "missing.jsonl")]).exit_code != 0
