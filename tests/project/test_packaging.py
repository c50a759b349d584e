"""The built wheel ships every discovered domain: its package, its grader and its release."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from backoffice.envs.core.registry import discover
from conftest import REPO


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools writes build/ and *.egg-info into the source tree, which
    # other test workers read at the same time
    src = tmp_path_factory.mktemp("src") / "tree"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "runs", "__pycache__", ".*cache"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("backoffice_gym-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_every_builtin_domain_package_is_in_the_wheel(wheel_names: set[str]) -> None:
    builtin = [ref for ref in discover().values() if ref.builtin]
    assert builtin
    for ref in builtin:
        folder = REPO / "envs" / ref.name
        for source in folder.rglob("*.py"):
            name = "backoffice/envs/" + source.relative_to(REPO / "envs").as_posix()
            assert name in wheel_names, f"{name} is missing from the wheel"
        assert f"backoffice/seeds/{ref.name}/manifest.json" in wheel_names


def test_every_package_folder_is_in_the_wheel(wheel_names: set[str]) -> None:
    for folder, namespace in (("envs", "envs"), ("graders", "graders"), ("training", "training")):
        for init in (REPO / folder).rglob("__init__.py"):
            name = f"backoffice/{namespace}/" + init.relative_to(REPO / folder).as_posix()
            assert name in wheel_names, f"{name} is missing from the wheel"



def test_the_scaffold_templates_are_in_the_wheel(wheel_names: set[str]) -> None:
    """``backoffice new-domain`` renders them from an installed wheel too."""
    from backoffice.training.cli.scaffold import template_files

    for rel in template_files():
        assert f"backoffice/training/cli/scaffold-template/{rel}" in wheel_names, rel
