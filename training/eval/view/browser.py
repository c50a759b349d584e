"""A small headless Chromium driver for the viewer's tests and the README screenshot.

It speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file descriptors 3 and
4, NUL-separated JSON messages): no port, no websocket library, no browser download; only a
Chromium binary (Debian: ``apt-get install chromium``). ::

    with Chromium() as browser:
        browser.open(Path("page.html").resolve().as_uri())
        browser.eval("document.title")
        browser.screenshot("shot.png")
        browser.exceptions            # uncaught script errors the page raised
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: where Chromium is looked for, in order (``$CHROMIUM`` first)
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-pipe")


class BrowserError(RuntimeError):
    """Chromium could not start, answered with an error or took too long."""


def find_chromium() -> str | None:
    """The Chromium binary: ``$CHROMIUM``, a Debian/Chrome path, or ``chromium`` on ``PATH``."""
    env = os.environ.get("CHROMIUM")
    for cand in ((env,) if env else ()) + CANDIDATES:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One headless Chromium with one page attached (see the module docstring)."""

    def __init__(self, binary: str | None = None, width: int = 1280, height: int = 900, timeout: float = 30.0):
        found = binary or find_chromium()
        if found is None:
            raise BrowserError("no Chromium found (set $CHROMIUM or apt-get install chromium)")
        self.binary: str = found
        self.width, self.height, self.timeout = width, height, timeout
        self.exceptions: list[str] = []
        self.console: list[str] = []
        self._next = 0
        self._buf = b""
        self._session: str | None = None
        self._events: list[dict[str, Any]] = []

    # -- process ----------------------------------------------------------------------------
    def __enter__(self) -> Chromium:
        self.profile = tempfile.mkdtemp(prefix="bo-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # in the child: the pipe ends become fds 3 (commands) and 4 (replies)
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self._log = open(Path(self.profile) / "chromium.log", "wb")  # closed in __exit__
        self.proc = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, preexec_fn=fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        try:
            try:
                target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            except (BrowserError, OSError) as exc:  # OSError: a broken pipe, the browser has gone
                self._log.flush()
                tail = (Path(self.profile) / "chromium.log").read_bytes()[-2000:].decode(errors="replace")
                raise BrowserError(f"{self.binary} did not start: {exc}; its output ends with:\n{tail}") from None
            self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime"):
                self.send(f"{domain}.enable")
            self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.poll() is None:
                self._session = None
                self._write("Browser.close", {})
                self.proc.wait(timeout=10)
        except Exception:
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._log.close()
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol ---------------------------------------------------------------------------
    def _write(self, method: str, params: dict[str, Any] | None) -> int:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self._session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        return self._next

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited (code {self.proc.poll()})")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        self._event(msg)
        return msg

    def _event(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method == "Runtime.exceptionThrown":
            d = msg["params"]["exceptionDetails"]
            self.exceptions.append(str(d.get("exception", {}).get("description") or d.get("text")))
        elif method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in msg["params"]["args"]))
        if method is not None:
            self._events.append(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float | None = None) -> dict[str, Any]:
        """One command; its ``result`` (raises :class:`BrowserError` on an error reply)."""
        mid = self._write(method, params)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        """The next event named ``method`` (events already received count)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, ev in enumerate(self._events):
                if ev["method"] == method:
                    del self._events[: i + 1]
                    return ev
            self._events.clear()
            self._read(deadline)

    # -- page -------------------------------------------------------------------------------
    def open(self, url: str, timeout: float | None = None) -> None:
        """Load ``url`` and wait for its load event."""
        self._events = []
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", timeout)

    def eval(self, expression: str, timeout: float | None = None) -> Any:
        """The value of a JavaScript expression (awaited if a promise; raises on an exception)."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise BrowserError(f"script error: {d.get('exception', {}).get('description') or d.get('text')}")
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def screenshot(self, path: str | Path, full_page: bool = False) -> Path:
        """A PNG of the page (the viewport, or the whole page with ``full_page``)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
