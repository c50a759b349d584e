"""A small fake OpenAI-compatible endpoint on 127.0.0.1, for tests and examples (no network, no key).

It implements ``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models``. Replies come
from a *brain*: a chat function (see :mod:`backoffice.training.agents.chat`) that receives the request's
``messages`` and ``tools`` and returns tool calls or text, which the server wraps in the
chat-completions response shape. The default brain replays each domain's oracle, one tool call
per reply, reading the task from the conversation itself (the brief is the first user message).

In a test::

    with FakeOpenAI(oracle_chat()) as server:
        chat = OpenAIChat(model="fake", base_url=server.base_url, api_key="unused")
        ...

From a shell (the README example)::

    python -m backoffice.training.agents.fake_openai --port 8011 --brain oracle   # or --brain text
"""

from __future__ import annotations

import argparse
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.training.agents.chat import ChatFn, normalize_reply, oracle_chat, text_only_chat


def completion(request: dict[str, Any], brain: ChatFn, index: int) -> dict[str, Any]:
    """The chat-completions response body for ``request`` (deterministic: no time, no uuid)."""
    messages = list(request.get("messages") or [])
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    reply = normalize_reply(brain(messages, list(request.get("tools") or [])), turn)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        # deterministic stand-ins for token counts: messages in, tool calls (or 1) out
        "usage": {"prompt_tokens": len(messages), "completion_tokens": max(1, len(reply.tool_calls)),
                  "total_tokens": len(messages) + max(1, len(reply.tool_calls))},
    }


class FakeOpenAI:
    """A threaded HTTP server serving :func:`completion`; use as a context manager.

    ``port=0`` picks a free port; ``base_url`` (``http://127.0.0.1:<port>/v1``) is what an
    OpenAI client needs. ``requests`` counts the chat-completions calls served and ``bodies``
    keeps every request body. ``fault(request) -> (status, body) | None`` lets a test answer
    a request with an error instead (a 500, a 400 "context length exceeded", an empty
    ``choices`` list with status 200 ...).
    """

    def __init__(self, brain: ChatFn | None = None, host: str = "127.0.0.1", port: int = 0,
                 fault: Callable[[dict[str, Any]], tuple[int, Any] | None] | None = None):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the fake endpoint serves loopback addresses only")
        self.brain = brain if brain is not None else oracle_chat()
        self.fault = fault
        self.bodies: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        # typeshed types the host as str | bytes | bytearray (what bind accepts); once bound it is
        # getsockname()'s str
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"  # type: ignore[str-bytes-safe]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out in separate writes: without NODELAY, Nagle's algorithm
                # and the peer's delayed ACK add ~40 ms to every response
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any) -> None:
                data = dumps(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "backoffice"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    request = loads(raw)
                    with server._lock:
                        server.bodies.append(request)
                    answer = server.fault(request) if server.fault is not None else None
                    if answer is not None:
                        self._send(*answer)
                        return
                    if request.get("stream"):
                        raise ValueError("streaming is not supported by the fake endpoint")
                    with server._lock:  # one brain call at a time: brains may keep caches
                        server.requests += 1
                        body = completion(request, server.brain, server.requests)
                except Exception as exc:  # a bad request is the client's problem: answer 400
                    self._send(400, {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "invalid_request_error"}})
                    return
                self._send(200, body)

        return Handler

    def start(self) -> FakeOpenAI:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


BRAINS: dict[str, Callable[[], ChatFn]] = {"oracle": oracle_chat, "text": lambda: text_only_chat}


def main(argv: list[str] | None = None) -> None:
    """Serve the fake endpoint in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible endpoint replaying the oracle (or text only).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--brain", choices=sorted(BRAINS), default="oracle")
    ns = parser.parse_args(argv)
    server = FakeOpenAI(BRAINS[ns.brain](), ns.host, ns.port)
    print(f"fake OpenAI endpoint ({ns.brain}) at {server.base_url}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":  # pragma: no cover
    main()
