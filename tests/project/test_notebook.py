"""The quickstart notebook runs top to bottom (nbclient, a fresh kernel of this interpreter)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import DOMAINS, REPO

NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


@pytest.mark.skipif(not DOMAINS, reason="the notebook needs an installed domain")
def test_quickstart_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [_text(c) for c in nb.cells if c.cell_type == "code"]
    joined = "\n".join(outputs)
    expected = "approvals" if "approvals" in DOMAINS else DOMAINS[0]
    assert f"-> using {expected}" in joined
    assert "pass: True" in joined  # the oracle's episode
    assert "45 episodes" in joined
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # the pandas bar chart and the two report plots


def test_notebook_kernel_is_this_interpreter() -> None:
    """nbclient starts the ``python3`` kernel; it must be the venv that has backoffice."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    exe = spec.argv[0]
    assert exe in ("python", "python3", "{python}") or Path(exe).resolve() == Path(sys.executable).resolve(), spec.argv
