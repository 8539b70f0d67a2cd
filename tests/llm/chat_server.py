"""A tiny chat-completions server on 127.0.0.1 for the back-end tests.

Tell it what to answer next with ``server.script(...)``: a list of behaviours used one
per request, then ``server.default``. Behaviours: ``"ok"``, ``"429"`` (with
``Retry-After``), ``"500"``, ``"slow"`` (sleeps past the client's timeout, then
answers), ``"empty"`` (content ""), ``"none"`` (content null), ``"nochoices"``,
``"malformed"`` (a body that is not JSON), ``"401"``, ``"404"``. ``answer``: a function
of the prompt whose text an ``"ok"`` request gets (an echo by default); ``delay``: seconds
every request waits before it is answered (a slow endpoint, for throughput measurements).
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    def __init__(self, *, retry_after: str = "0.01", slow_seconds: float = 1.0, answer=None, delay: float = 0.0):
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.answer = answer
        self.delay = delay
        self.default = "ok"
        self.requests: list[dict] = []
        self._script: deque[str] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *behaviours: str) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def _next(self) -> str:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: bytes | str, headers: dict | None = None):
                data = body.encode() if isinstance(body, str) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(request)
                behaviour = server._next()
                prompt = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
                if server.delay:
                    time.sleep(server.delay)
                if behaviour == "slow":
                    time.sleep(server.slow_seconds)
                    behaviour = "ok"
                if behaviour in ("401", "404", "500", "429"):
                    status = int(behaviour)
                    headers = {"Retry-After": server.retry_after} if status == 429 else {}
                    error = {"error": {"message": f"scripted {status}", "type": "test", "code": status}}
                    return self._send(status, json.dumps(error), headers)
                if behaviour == "malformed":
                    return self._send(200, "{this is not json")
                echo = server.answer(prompt) if server.answer is not None else f"echo: {prompt[:40]}"
                content = {"ok": echo, "empty": "", "none": None}.get(behaviour)
                choices = [] if behaviour == "nochoices" else [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]
                body = {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", "?"), "choices": choices,
                    "usage": {"prompt_tokens": len(prompt.split()) + 10, "completion_tokens": 7,
                              "total_tokens": len(prompt.split()) + 17},
                }
                return self._send(200, json.dumps(body))

        return Handler
