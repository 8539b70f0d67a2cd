"""A misbehaving chat-completions server on 127.0.0.1: every way an endpoint fails a run.

Tell it what to answer with ``server.script(...)``: behaviours used one per request, then
``server.default`` for every later one. Behaviours:

- ``"ok"``: a chat completion whose content is ``answer(prompt)`` (an echo by default);
- ``"prose"``: an answer with no code at all; ``"wrong"``: code for another function;
- ``"empty"`` (content ""), ``"none"`` (content null), ``"nochoices"`` (an empty choices list);
- ``"length"``: the answer cut off at the token limit after 20 characters (``finish_reason: "length"``);
- ``"malformed"``: a 200 whose body is not JSON;
- ``"cut"``: the body stops mid-answer (the connection closes before its announced length);
- ``"500"``, ``"429"`` (with ``Retry-After``), ``"401"``, ``"404"``, ``"context"`` (400, the
  context-length error of OpenAI-compatible servers);
- ``"slow"``: waits ``slow_seconds`` before answering;
- ``"hang"``: accepts the request and never answers;
- ``"endless"``: a model that never stops generating: headers, then a byte every 0.1 s for
  as long as the client reads.

``requests`` holds every request the server received (counted on arrival, before it
answers), ``max_tokens_seen`` the token caps they carried; ``on_request(n)`` is called with
the count of each new request before it is answered (a test kills its client there). ``answer``: a function of the
prompt (the text of its messages); ``delay``: seconds every request waits (throughput).
The server never sends traffic anywhere: it only answers on the loopback address.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROSE = "I would prioritise the bins that fit best, since that leaves the least waste. Good luck!"
WRONG = "```python\nimport numpy as np\n\ndef helper(x: float) -> float:\n    return x * 2.0\n```"


class ChatServer:
    def __init__(self, *, retry_after: str = "0.01", slow_seconds: float = 1.0, answer=None, delay: float = 0.0):
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.answer = answer
        self.delay = delay
        self.default = "ok"
        self.on_request = None
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []  # each request's Authorization header, in order
        self._script: deque[str] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def max_tokens_seen(self) -> list:
        with self._lock:
            return [r.get("max_tokens", r.get("max_completion_tokens")) for r in self.requests]

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
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _wait(self, seconds: float) -> None:
        self._closing.wait(seconds)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: bytes | str, headers: dict | None = None, *, length=None):
                data = body.encode() if isinstance(body, str) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data) if length is None else length))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first
                    pass

            def _error(self, status: int, message: str, code, headers=None):
                error = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
                self._send(status, json.dumps(error), headers)

            def _completion(self, request, prompt, content, *, choices=True, finish="stop") -> str:
                body = {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", "?"),
                    "choices": [{"index": 0, "finish_reason": finish,
                                 "message": {"role": "assistant", "content": content}}] if choices else [],
                    "usage": {"prompt_tokens": len(prompt.split()) + 10, "completion_tokens": 7,
                              "total_tokens": len(prompt.split()) + 17},
                }
                return json.dumps(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(request)
                    server.authorizations.append(self.headers.get("Authorization"))
                    count = len(server.requests)
                if server.on_request is not None:
                    server.on_request(count)
                behaviour = server._next()
                prompt = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
                if server.delay:
                    server._wait(server.delay)
                if behaviour == "slow":
                    server._wait(server.slow_seconds)
                    behaviour = "ok"
                if behaviour == "hang":
                    server._wait(3600)
                    self.close_connection = True
                    return
                if behaviour == "endless":
                    return self._endless()
                if behaviour in ("401", "404", "500", "429"):
                    status = int(behaviour)
                    headers = {"Retry-After": server.retry_after} if status == 429 else {}
                    return self._error(status, f"scripted {status}", status, headers)
                if behaviour == "context":
                    return self._error(400, "This model's maximum context length is 4096 tokens. However, your "
                                            "messages resulted in 9000 tokens.", "context_length_exceeded")
                if behaviour == "malformed":
                    return self._send(200, "{this is not json")
                echo = server.answer(prompt) if server.answer is not None else f"echo: {prompt[:40]}"
                if behaviour == "cut":
                    body = self._completion(request, prompt, echo)
                    self.close_connection = True
                    return self._send(200, body[: len(body) // 2], length=len(body))
                content = {"ok": echo, "empty": "", "none": None, "prose": PROSE, "wrong": WRONG,
                           "length": echo[:20], "nochoices": echo}[behaviour]
                finish = "length" if behaviour == "length" else "stop"
                return self._send(200, self._completion(request, prompt, content, choices=behaviour != "nochoices",
                                                        finish=finish))

            def _endless(self):
                self.close_connection = True
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(10 ** 9))
                    self.end_headers()
                    self.wfile.write(b'{"id": "chatcmpl-test", "choices": [{"index": 0, "message": {"content": "')
                    while not server._closing.is_set():
                        self.wfile.write(b"a")
                        self.wfile.flush()
                        server._wait(0.1)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass

        return Handler
