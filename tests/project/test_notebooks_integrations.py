"""The integration notebooks (TRL tool class, SB3 catalog + evaluate_split, Session + OpenAI
endpoint + MCP over HTTP) run top to bottom in a fresh kernel, on 127.0.0.1 only."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import DOMAINS, REPO

NOTEBOOKS = REPO / "notebooks"

pytestmark = pytest.mark.skipif(not DOMAINS, reason="the notebooks need an installed domain")


def run(name: str, tmp_path: Path) -> str:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError on the first failing cell
    print(f"{name}: {time.perf_counter() - start:.1f} s")
    return "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_trl_tools_notebook(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = run("trl_tools.ipynb", tmp_path)
    assert "reward: 1.0 pass: True" in out and "characters" in out


def test_sb3_notebook(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    out = run("sb3.ipynb", tmp_path)
    assert "trained 64 steps" in out and "4 episodes; pass rate" in out


def test_llm_mcp_notebook(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    pytest.importorskip("openai")
    out = run("llm_mcp.ipynb", tmp_path)
    assert "session: pass True reward 1.0" in out and "chat: pass True" in out
    assert out.count("mcp grade equals native: True pass: True") == 3
