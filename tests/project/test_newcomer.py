"""A newcomer's first hour (issue 35): each test makes a newcomer's mistake and asserts what
they now get: a one-line message that names the fix and a non-zero exit, or the behaviour the
docs describe."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import backoffice.envs  # noqa: F401  (registers the ids)
from conftest import DOMAINS, REPO


@pytest.mark.parametrize("env_id", ["backoffice/Approvals-v0", "backoffice/Approvals-Catalog-v0"])
def test_a_failed_first_reset_leaves_a_gym_make_env_usable(env_id: str) -> None:
    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    env = gym.make(env_id)
    with pytest.raises(KeyError, match="unknown task id"):
        env.reset(options={"task_id": "APR-H9999"})
    env.reset(seed=3)  # Gymnasium's passive checker ran its one reset check on the failed call
    catalog = "Catalog" in env_id
    for _ in range(100):
        action = int(env.get_wrapper_attr("action_masks")().nonzero()[0][0]) if catalog else {"tool": "submit", "args": {}}
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert terminated or truncated
    env.close()


# -- the command line: a one-line message that names the fix, a non-zero exit --------------
needs_approvals = pytest.mark.skipif("approvals" not in DOMAINS, reason="needs the approvals release")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``backoffice ARGS`` in this process the way the console script does (through the
    app's ``__call__``, which turns known failures into one line); ``(exit code, stdout, stderr)``."""
    from backoffice.training.cli.main import app

    with pytest.raises(SystemExit) as exc:
        app(list(args), prog_name="backoffice")
    captured = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else (0 if code is None else 1)), captured.out, captured.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("backoffice: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@needs_approvals
def test_eval_out_a_folder_and_a_missing_folder(capsys, tmp_path: Path) -> None:
    code, _, err = cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "1", "--out", str(tmp_path))
    assert code == 2 and "is a folder: give a JSONL file" in one_line(err)
    target = tmp_path / "not" / "yet" / "x.jsonl"
    code, _, err = cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "1", "--out", str(target))
    assert code == 0 and f"creating the folder {target.parent}" in err and target.exists()


def test_openai_policy_without_a_key(capsys, monkeypatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _, err = cli(capsys, "eval", "--env", DOMAINS[0], "--policy", "openai:gpt-4o", "--limit", "1")
    assert code == 2 and "OPENAI_API_KEY" in one_line(err)


def test_a_model_judge_without_its_endpoint_is_an_error(capsys, monkeypatch) -> None:
    for var in ("BACKOFFICE_JUDGE_ENDPOINT", "BACKOFFICE_JUDGE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    code, _, err = cli(capsys, "eval", "--env", DOMAINS[0], "--judge", "model:gpt-4o-mini", "--limit", "1")
    line = one_line(err)
    assert code == 2 and "$BACKOFFICE_JUDGE_ENDPOINT" in line and "--judge rubric" in line


@needs_approvals
def test_two_evals_on_one_out(capsys, tmp_path: Path) -> None:
    import fcntl

    out = tmp_path / "x.jsonl"
    with open(out, "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running evaluation holds
        code, _, err = cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "1", "--out", str(out))
    assert code == 1 and "is being written by another evaluation" in one_line(err)


@needs_approvals
def test_resume_retries_errored_episodes_unless_kept(capsys, tmp_path: Path) -> None:
    from backoffice.training.eval.evaluate import load_records

    out = tmp_path / "x.jsonl"
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "2", "--out", str(out))[0] == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    errored = {**lines[0], "pass": False, "score": 0.0, "error": {"type": "APIConnectionError", "message": "dead", "step": 0}}
    out.write_text("".join(json.dumps(r) + "\n" for r in (errored, lines[1])))
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "2", "--out", str(out), "--keep-errors")[0] == 0
    assert len(out.read_text().splitlines()) == 2  # kept: nothing ran
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "2", "--out", str(out))[0] == 0
    assert len(out.read_text().splitlines()) == 3  # the errored episode ran again
    records = load_records([out])
    assert len(records) == 2 and not any(r.get("error") for r in records)
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "2", "--out", str(out))[0] == 0
    assert len(out.read_text().splitlines()) == 3  # graded episodes are never rerun


@needs_approvals
def test_report_refuses_corrupt_and_mistyped_lines_and_notes_duplicates(capsys, tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "3", "--out", str(good))[0] == 0
    lines = good.read_text().splitlines()
    for name, bad, where in (("torn", "{not json", "unreadable record"), ("yes", json.dumps({**json.loads(lines[1]), "pass": "yes"}),
                                                                          "field 'pass' is 'yes', not a boolean")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join([lines[0], bad, lines[2]]) + "\n")
        code, _, err = cli(capsys, "report", str(path), "--no-plots")
        assert code == 1 and f"{path}:2: " in one_line(err) and where in err
    copy = tmp_path / "b.jsonl"
    copy.write_text(lines[0] + "\n")
    code, out, err = cli(capsys, "report", str(good), str(copy), "--json")
    assert code == 0 and json.loads(out)["episodes"] == 3
    assert f"{copy}: 1 record(s) repeat an episode already read in {good}" in " ".join(err.split())


@needs_approvals
def test_replay_on_a_records_file(capsys, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "1", "--out", str(out))[0] == 0
    code, _, err = cli(capsys, "replay", str(out))
    line = one_line(err)
    assert code == 1 and f"{out}:1: not a trace line" in line and "eval --trace" in line


def test_train_refuses_the_tracked_models_folder(capsys) -> None:
    shipped = REPO / "models" / "approvals" / "conclusions" / "ppo-s0"
    if "approvals" not in DOMAINS or not (shipped / "model.zip").exists():
        pytest.skip("needs the shipped approvals model")
    before = (shipped / "model.zip").stat().st_mtime_ns
    code, _, err = cli(capsys, "train", "--env", "approvals", "--out", str(shipped), "--timesteps", "1")
    assert code == 2 and "tracked by git" in one_line(err) and "--out runs/approvals" in err
    assert (shipped / "model.zip").stat().st_mtime_ns == before


@pytest.mark.parametrize("argv,modules,extra", [
    (["train", "--env", "approvals", "--timesteps", "1"], ("torch", "stable_baselines3", "sb3_contrib"), "train"),
    (["mcp", "--env", "approvals"], ("anyio", "mcp", "mcp.server", "mcp.server.stdio"), "llm"),
])
def test_a_missing_extra_is_named(capsys, monkeypatch, tmp_path: Path, argv: list[str], modules: tuple[str, ...], extra: str) -> None:
    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    import sys

    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)  # import of NAME halted: as if not installed
    import backoffice.training.rl as rl_package

    # the training modules re-import here; at teardown both sys.modules and the package's
    # attribute must point at the module every later test imports (else a later test's
    # monkeypatch of ``backoffice.training.rl.train`` lands on another module object)
    monkeypatch.setattr(rl_package, "train", getattr(rl_package, "train", None), raising=False)
    for name in [m for m in sys.modules if m.startswith("backoffice.training.rl.train")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, *argv)
    assert code == 2 and f"needs the '{extra}' extra" in one_line(err) and f".[{extra}]" in err


def test_make_clean_deletes_no_tracked_file() -> None:
    import shutil
    import subprocess

    root = REPO
    if shutil.which("make") is None or not (root / ".git").exists():
        pytest.skip("needs make and a git checkout")
    recipe = subprocess.run(["make", "-n", "clean"], cwd=root, capture_output=True, text=True, check=True).stdout
    paths = [w for line in recipe.splitlines() if line.startswith("rm ") for w in line.split()[1:] if not w.startswith("-")]
    assert paths and "models" not in paths
    tracked = subprocess.run(["git", "ls-files", "--", *paths], cwd=root, capture_output=True, text=True, check=True).stdout
    assert tracked == ""


@needs_approvals
def test_a_model_trained_in_python_evaluates_through_the_cli(capsys, tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.rl.sb3_policy import save_model

    bare = tmp_path / "bare" / "model.zip"
    env = make_catalog_env("approvals", split="train")
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    bare.parent.mkdir()
    model.save(str(bare))  # what a newcomer does first: no catalog.json beside it
    code, _, err = cli(capsys, "eval", "--env", "approvals", "--policy", f"sb3:{bare}", "--limit", "1")
    assert code == 2 and "save_model(" in " ".join(err.split())
    path = save_model(model, tmp_path / "m" / "model.zip", "approvals")
    env.close()
    out = tmp_path / "x.jsonl"
    code, _, _ = cli(capsys, "eval", "--env", "approvals", "--policy", f"sb3:{path}", "--limit", "2", "--out", str(out))
    assert code == 0 and len(out.read_text().splitlines()) == 2


@needs_approvals
def test_trl_final_score_reward_alone_counts_the_score_once() -> None:
    import inspect

    from backoffice.training.agents.trl import final_score_reward, tool_env_class, tool_methods

    with_env_reward, without = tool_env_class("approvals"), tool_env_class("approvals", env_reward=False)
    env = without()
    assert not hasattr(env, "get_reward") and hasattr(with_env_reward(), "get_reward")
    assert [m.__name__ for m in tool_methods(env)] == [m.__name__ for m in tool_methods(with_env_reward())]
    assert "get_reward" not in dict(inspect.getmembers(env, inspect.ismethod))  # what TRL scans
    env.reset(seed=0)
    env.submit()
    assert final_score_reward(environments=[env]) == [env.session.reward]


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_garbage_cursor_is_invalid_args_never_an_empty_page(domain: str) -> None:
    """Every paginated tool the oracle calls, called again with a cursor no list returned:
    a structured ``invalid_args`` error (state untouched), never an empty ``ok`` page."""
    from backoffice.envs import make_native
    from backoffice.envs.core.tools import PageArgs
    from backoffice.training.eval.rollout import run_episode
    from backoffice.training.policies import get_policy

    env = make_native(domain, split="heldout")
    paged = {name for name, tool in env.domain.toolkit.tools.items() if issubclass(tool.args_model, PageArgs)}
    calls: dict[str, dict] = {}
    for task_id in env.release.split_ids["heldout"][:20]:
        run_episode(env, get_policy(domain, "oracle"), task_id=task_id)
        for line in env.trace:
            if line["tool"] in paged and line["result_status"] == "ok" and line["tool"] not in calls:
                calls[line["tool"]] = {"task_id": task_id, "args": line["args"]}
    assert calls, f"the {domain} oracle calls no paginated tool"
    for tool, call in sorted(calls.items()):
        env.reset(**env.reset_args(call["task_id"]))
        before = env.state.content_hash()
        for garbage in ("ZZZ-not-an-id", "0", "~"):
            obs, *_ = env.step({"tool": tool, "args": {**call["args"], "cursor": garbage}})
            result = json.loads(obs)
            assert result["status"] == "error" and result["code"] == "invalid_args" and "next_cursor" in result["message"], (tool, obs)
        assert env.state.content_hash() == before
    env.close()


def test_shipped_summaries_point_at_no_missing_file() -> None:
    """A shipped model's summary.json names no heldout.jsonl it does not ship: ``records`` is
    null and ``records_command`` writes the records again (a ``backoffice eval`` line)."""
    from backoffice.envs.core.canonical import loads

    root = REPO
    summaries = sorted((root / "models").glob("*/*/*/summary.json"))
    if not summaries:
        pytest.skip("no shipped models")
    for path in summaries:
        heldout = loads(path.read_bytes()).get("heldout")
        if not isinstance(heldout, dict):
            continue
        assert heldout["records"] is None or (root / heldout["records"]).exists(), path
        command = heldout["records_command"]
        assert command.startswith("backoffice eval ") and f"sb3:{path.parent.relative_to(root)}/model.zip" in command
        assert "--out runs/" in command  # never into the tracked models/


@needs_approvals
def test_args_as_json_text_are_named_for_what_they_are() -> None:
    from backoffice.envs import make_native

    env = make_native("approvals", split="heldout")
    env.reset(seed=0)
    for args, message in (('{"request_id": "R-1"}', "a JSON string holding an object: pass the object itself"),
                          ("{request_id: R-1", "unparsable arguments text"), ('"R-1"', "JSON text holding str")):
        obs, *_ = env.step({"tool": "get_request", "args": args})
        got = json.loads(obs)
        assert got["code"] == "invalid_action" and message in got["message"], (args, got)
    env.close()


def test_readme_names_the_release_the_manifests_carry() -> None:
    import re

    root = REPO
    releases = {json.loads(m.read_text())["release"] for m in (root / "seeds").glob("*/manifest.json")}
    readme = (root / "README.md").read_text()
    named = set(re.findall(r"\*\*seeds (v[0-9.]+)\*\*", readme)) | set(re.findall(r"\(seeds (v[0-9.]+),", readme))
    assert named and {n.lstrip("v") for n in named} == {r.lstrip("v") for r in releases}, (named, releases)


def test_train_tensorboard_without_the_package_names_the_extra(capsys, monkeypatch, tmp_path: Path) -> None:
    import importlib.util

    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    code, _, err = cli(capsys, "train", "--env", "approvals", "--out", str(tmp_path / "m"), "--tensorboard", str(tmp_path / "tb"))
    assert code == 2 and "'tensorboard' extra" in one_line(err) and ".[tensorboard]" in err


def test_version(capsys) -> None:
    from importlib.metadata import version

    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.strip() == f"backoffice-gym {version('backoffice-gym')}"


def test_license_citation_and_tag_target() -> None:
    import shutil
    import subprocess

    yaml = pytest.importorskip("yaml")

    root = REPO
    assert "MIT License" in (root / "LICENSE").read_text()
    citation = yaml.safe_load((root / "CITATION.cff").read_text())
    from importlib.metadata import version

    assert citation["cff-version"] == "1.2.0" and str(citation["version"]) == version("backoffice-gym") and citation["license"] == "MIT"
    assert (root / "docs" / "DETERMINISM.md").exists() and (root / "docs" / "RELEASING.md").exists()
    if shutil.which("make") is None:
        return
    dry = subprocess.run(["make", "-n", "tag"], cwd=root, capture_output=True, text=True, check=True).stdout
    release = json.loads((root / "seeds" / "approvals" / "manifest.json").read_text())["release"]
    assert f"v{version('backoffice-gym')} seeds-{release}" in dry


def test_a_model_judge_whose_endpoint_fails_is_an_error(capsys, monkeypatch) -> None:
    if "registration" not in DOMAINS:
        pytest.skip("needs the registration release")
    monkeypatch.setenv("BACKOFFICE_JUDGE_ENDPOINT", "http://127.0.0.1:9/v1/chat/completions")  # nothing listens there
    monkeypatch.setenv("BACKOFFICE_JUDGE_API_KEY", "unused")
    code, _, err = cli(capsys, "eval", "--env", "registration", "--policy", "oracle", "--judge", "model:m", "--limit", "3")
    assert code == 1 and "judged none of the 3 episodes" in one_line(err)


def test_the_train_bar_shows_where_an_early_stop_ended(capsys, monkeypatch, tmp_path: Path) -> None:
    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    import backoffice.training.rl.train as train_module

    def early(config, on_progress=None):  # what an early stop at 100 % validation returns
        on_progress(30_000)
        return {"timesteps": 30_000, "episodes": 900, "train_seconds": 1.0, "best_validation_pass_rate": 1.0,
                "validation_ids": 100, "env_step_us": 500.0, "model": str(config.out / "model.zip")}

    import backoffice.training.cli.main as cli_module

    monkeypatch.setattr(train_module, "train", early)
    monkeypatch.setattr(cli_module.console, "width", 200)
    code, out, _ = cli(capsys, "train", "--env", "approvals", "--timesteps", "300000", "--out", str(tmp_path / "m"))
    text = " ".join(out.split())
    assert code == 0 and "stopped early at 30,000" in text and "30000/300000" in text and "300000/300000" not in text


@needs_approvals
def test_resume_refuses_a_mistyped_line_with_file_and_line(capsys, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    assert cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "2", "--out", str(out))[0] == 0
    first, second = out.read_text().splitlines()
    out.write_text(first + "\n" + json.dumps({**json.loads(second), "score": "0.5"}) + "\n")
    code, _, err = cli(capsys, "eval", "--env", "approvals", "--policy", "noop", "--limit", "3", "--out", str(out))
    assert code == 1 and f"{out}:2: not an evaluation record: field 'score' is '0.5', not a number" in one_line(err)


def test_audit_json_is_json_on_stdout(capsys) -> None:
    """``audit --json`` prints JSON on stdout and nothing else: its progress bar goes to stderr."""
    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    code, out, _ = cli(capsys, "audit", "--env", "approvals", "--no-rules", "--json")
    assert code == 0
    (result,) = json.loads(out)
    assert result["domain"] == "approvals" and set(result["id_tree"]) == {"1", "2", "4", "6"}
