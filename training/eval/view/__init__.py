"""The episode viewer: one self-contained HTML page over evaluation records (``backoffice view``).

::

    from backoffice.training.eval.view import write_page
    write_page(["runs/x.jsonl"], "runs/x.html", trace="runs/t/")   # open it from disk, no network

The page (no network, no CDN: its script, style and plots are inside it) has an overview (pass
rate, mean score, pass^k, failure codes, defect tags, outcome classes by domain x agent, the
report's plots; a click on a cell filters the episode list), the episode list (filters, task id
search, sorting, paging), an episode page (brief, every step, the diff per table, every check,
judge and shaped reward apart from the score) and two episodes of one task side by side.

All data goes in ``<script type="application/json">`` blocks with ``<``, ``>`` and ``&``
escaped, and the page's script only ever puts it into the document as text (agent-sent strings
are hostile). :func:`notebook` shows the same page in Jupyter (an ``<iframe srcdoc>``).
"""

from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps
from backoffice.training.eval.view.assets import CSS, JS
from backoffice.training.eval.view.data import build, load

__all__ = ["build", "embed_json", "load", "notebook", "page", "serve", "write_page"]


def embed_json(obj: Any) -> str:
    """``obj`` as JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&``
    become ``\\u003c`` ... (also inside strings, where JSON reads them back unchanged), so no
    ``</script>`` or ``<!--`` can end the block early."""
    data = dumps(obj).replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    return data.decode()


def _plots(records: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The report's two PNG plots (pass rate, failure codes), base64-encoded."""
    from backoffice.training.eval.report import write_plots

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in write_plots(records, Path(tmp) / "view"):
            name = Path(path).name.split(".")[1]
            out.append({"name": name, "png": base64.b64encode(Path(path).read_bytes()).decode()})
    return out


def page(files: Sequence[str | Path], trace: str | Path | None = None, plots: bool = True, title: str | None = None) -> str:
    """The HTML page over the records of ``files`` (traces and diffs where they point, or under ``trace``)."""
    loaded = load(files)
    data = build(files, trace, loaded)
    details = data.pop("details")
    briefs = data.pop("briefs")
    data["plots"] = _plots(loaded.records) if plots and data["meta"]["episodes"] else []
    title = title or "backoffice view: " + ", ".join(Path(f).name for f in files)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        "<div id=\"bo-errors\" hidden></div><div id=\"app\"><p>loading ...</p></div>\n"
        f"<script type=\"application/json\" id=\"bo-data\">{embed_json(data)}</script>\n"
        f"<script type=\"application/json\" id=\"bo-briefs\">{embed_json(briefs)}</script>\n"
        f"<script type=\"application/json\" id=\"bo-details\">{embed_json(details)}</script>\n"
        f"<script>{JS}</script>\n</body></html>\n"
    )


def write_page(files: Sequence[str | Path], out: str | Path, trace: str | Path | None = None, plots: bool = True) -> Path:
    """Write :func:`page` to ``out``; return the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(files, trace, plots=plots), encoding="utf-8")
    return out


def notebook(files: Sequence[str | Path], trace: str | Path | None = None, height: int = 800) -> Any:
    """The page for a Jupyter notebook: an ``IPython.display.HTML`` holding it in an ``<iframe srcdoc>``
    (its own document, so the notebook's styles and scripts do not mix with it)."""
    from IPython.display import HTML

    doc = page(files, trace)
    return HTML(f'<div><iframe style="width:100%;height:{int(height)}px;border:0" sandbox="allow-scripts" '
                f'srcdoc="{html.escape(doc, quote=True)}"></iframe></div>')


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 8765, ready: Any = None) -> None:
    """Serve the folder of ``path`` over HTTP (loopback by default) until interrupted; ``ready``
    is called with the page's URL once the server listens."""
    import functools
    import http.server

    path = Path(path).resolve()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(path.parent))
    with http.server.ThreadingHTTPServer((host, port), handler) as httpd:
        url = f"http://{host}:{httpd.server_address[1]}/{path.name}"
        if ready is not None:
            ready(url)
        httpd.serve_forever()
