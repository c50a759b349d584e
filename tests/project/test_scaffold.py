"""``backoffice new-domain``: the scaffolded domain passes every generic test of the suite as
generated, as a third-party distribution (issue 17: "a third-party domain works") and in the
in-repo layout; its templates are real files (``training/cli/scaffold-template/``, linted with
the code) rendered under another name with nothing of the template's name left.

The generic tests are discovered, not listed: every test file that runs for each discovered
domain (``conftest.domain_params()``). The third-party proof installs the generated distribution
into a throw-away virtual environment layered on this one (a ``.pth`` adds this venv's
site-packages), never into this venv: an installed entry point would leak the domain into every
other test. The child interpreter is real (``sys.executable`` of its subprocesses, e.g. the
two-process determinism test, finds the domain without any environment variable).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from backoffice.training.cli.scaffold import TEMPLATE_NAME, ScaffoldError, check_name, new_domain, render, template_files
from conftest import REPO

pytestmark = pytest.mark.xdist_group("scaffold")

NAME = "refunds"


def generic_tests() -> list[str]:
    """The suite's generic test files: those that run for every discovered domain."""
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py") if "domain_params()" in p.read_text())


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO, **kwargs)
    assert proc.returncode == 0, f"{args[:4]} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """Generate ``--package``, install it into a child venv; return (child python, dist folder)."""
    tmp = tmp_path_factory.mktemp("scaffold")
    _run([sys.executable, "-m", "backoffice.training.cli", "new-domain", NAME, "--package", str(tmp)])
    dist = tmp / "backoffice-refunds"
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "_backoffice_parent.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(dist)])
    return python, dist


def test_the_generic_tests_are_discovered() -> None:
    found = generic_tests()
    for name in ("contract/test_contract", "integrity/test_integrity", "integrity/test_leakage", "contract/test_agent_surface",
                 "catalog/test_catalog", "integrity/test_scale", "contract/test_vector", "engine/test_progress",
                 "contract/test_fuzz_replay"):
        assert f"tests/{name}.py" in found, (name, found)
    assert not any(f.startswith("tests/domains/") or re.search(r"approvals|schedules|remittance|sufficiency|registration", f)
                   for f in found), found


def test_package_layout_is_complete_and_refuses_to_overwrite(installed, tmp_path) -> None:
    _, dist = installed
    pkg = dist / "backoffice_refunds"
    for rel in ("__init__.py", "tables.py", "tools.py", "generator.py", "grader.py", "policies.py", "catalog.py"):
        assert (pkg / rel).is_file(), rel
    assert sorted(p.name for p in (pkg / "seeds" / NAME).iterdir()) == [
        "keys.jsonl.gz", "manifest.json", "snapshots.jsonl.gz", "tasks.jsonl.gz"]
    assert (dist / "tests" / "test_refunds.py").is_file()
    assert '[project.entry-points."backoffice.domains"]\nrefunds = "backoffice_refunds"' in (dist / "pyproject.toml").read_text()
    with pytest.raises(ScaffoldError, match="already exists"):
        new_domain(NAME, package_dir=dist.parent)
    proc = subprocess.run([sys.executable, "-m", "backoffice.training.cli", "new-domain", NAME, "--package", str(dist.parent)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and "already exists" in proc.stdout
    assert not list(tmp_path.iterdir())


def test_third_party_domain_passes_every_generic_test(installed, tmp_path) -> None:
    python, dist = installed
    cli = [str(python), "-m", "backoffice.training.cli"]
    assert "refunds\tbackoffice_refunds\tentry point" in _run([*cli, "domains", "-v"]).stdout
    _run([*cli, "seeds", "build", "--env", NAME])  # into the installed package's seeds/
    made = _run([str(python), "-c", (
        "import gymnasium as gym, backoffice.envs\n"
        "env = gym.make('backoffice/Refunds-v0'); obs, info = env.reset(seed=0)\n"
        "cat = gym.make('backoffice/Refunds-Catalog-v0'); cat.reset(seed=0)\n"
        "print(info['task_id'], env.unwrapped.release.path)")]).stdout
    assert made.startswith("REF-") and "backoffice_refunds/seeds/refunds" in made
    records = tmp_path / "eval.jsonl"
    _run([*cli, "eval", "--env", NAME, "--policy", "oracle", "--policy", "noop", "--out", str(records)])
    rates: dict[str, list[bool]] = {}
    for line in records.read_text().splitlines():
        rec = json.loads(line)
        rates.setdefault(rec["agent"], []).append(rec["pass"])
    assert len(rates["oracle"]) == 300 and all(rates["oracle"])
    assert len(rates["noop"]) == 300 and not any(rates["noop"])

    # every generic test file of the suite (and the domain's own tests) picks the domain up
    assert "identical to a fresh build" in _run([*cli, "seeds", "verify", "--env", NAME]).stdout
    proc = _run([str(python), "-m", "pytest", *generic_tests(), str(dist / "tests" / "test_refunds.py"), "-k", NAME,
                 "-p", "no:cacheprovider", "-q"])
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 100, proc.stdout[-2000:]
    assert " failed" not in proc.stdout.splitlines()[-1] and " error" not in proc.stdout.splitlines()[-1]


_IN_REPO_SCRIPT = r"""
import sys
from pathlib import Path
root = Path(sys.argv[1])
import backoffice.envs, backoffice.graders, backoffice.training.domains
for pkg, folder in ((backoffice.envs, "envs"), (backoffice.graders, "graders"), (backoffice.training.domains, "training/domains")):
    pkg.__path__.append(str(root / folder))
from backoffice.envs.core.registry import discover
discover.cache_clear()
import backoffice.envs.refunds as mod
from backoffice.envs.core.build import build_release
from backoffice.envs.core.release import Release
from backoffice.training.policies import get_policy
from backoffice.training.eval.rollout import run_episode
assert discover()["refunds"].builtin
build_release(mod.DOMAIN, root / "seeds")
env = mod.RefundsEnv(split="heldout", release=Release("refunds", root / "seeds"))
for name in ("oracle", "noop", "catalog-features"):
    passes = [run_episode(env, get_policy("refunds", name), task_id=t).grade["pass"] for t in env.release.split_ids["heldout"][:40]]
    print(name, sum(passes))
"""


def test_in_repo_layout_renders_imports_and_solves(tmp_path) -> None:
    for folder in ("envs", "graders", "training/domains", "tests", "seeds"):
        (tmp_path / folder).mkdir(parents=True)
    written = new_domain(NAME, root=tmp_path, build=False)
    assert sorted(str(p.relative_to(tmp_path)) for p in written) == sorted([
        "envs/refunds/__init__.py", "envs/refunds/tables.py", "envs/refunds/tools.py", "envs/refunds/generator.py",
        "graders/refunds.py", "training/domains/refunds/__init__.py", "training/domains/refunds/policies.py",
        "training/domains/refunds/catalog.py", "tests/domains/refunds/test_refunds.py"])
    with pytest.raises(ScaffoldError, match="already exist"):
        new_domain(NAME, root=tmp_path, build=False)
    out = _run([sys.executable, "-c", _IN_REPO_SCRIPT, str(tmp_path)]).stdout.split()
    assert out == ["oracle", "40", "noop", "0", "catalog-features", "40"]
    assert not (REPO / "envs" / NAME).exists() and not (REPO / "seeds" / NAME).exists()


def test_one_template_set_for_both_layouts_and_nothing_of_the_template_left() -> None:
    repo, package = render("credit_notes", "repo"), render("credit_notes", "package")
    assert len(repo) == len([f for f in template_files() if not f.startswith("package/")])
    moves = {"backoffice.envs.credit_notes": "backoffice_credit_notes", "backoffice.graders.credit_notes": "backoffice_credit_notes.grader",
             "backoffice.training.domains.credit_notes": "backoffice_credit_notes"}
    pairs = {"envs/credit_notes/__init__.py": "backoffice_credit_notes/__init__.py",
             "graders/credit_notes.py": "backoffice_credit_notes/grader.py",
             "training/domains/credit_notes/catalog.py": "backoffice_credit_notes/catalog.py",
             "training/domains/credit_notes/policies.py": "backoffice_credit_notes/policies.py",
             "tests/domains/credit_notes/test_credit_notes.py": "tests/test_credit_notes.py"}
    for a, b in pairs.items():
        text = repo[a]
        for old, new in sorted(moves.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(old, new)
        assert text == package[b], a
    assert "class CreditNotesEnv(BackofficeEnv)" in repo["envs/credit_notes/__init__.py"]
    assert 'prefix="CRE"' in repo["envs/credit_notes/__init__.py"]
    for files in (repo, package):
        for path, text in files.items():
            assert TEMPLATE_NAME not in path, path
            leftover = re.search(r"refunds|Refunds|\bREF\b", text)
            assert leftover is None, (path, text[max(0, leftover.start() - 60):leftover.end() + 20])


@pytest.mark.parametrize("bad", ["", "Refunds", "refunds-2", "2refunds", "_refunds", "refunds_", "re__funds", "class", "core", "approvals"])
def test_invalid_or_taken_names_are_refused(bad: str) -> None:
    with pytest.raises(ScaffoldError):
        check_name(bad)
