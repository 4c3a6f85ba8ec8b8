"""A small, real OpenAI-compatible chat server over the transformers backend.

Tests of the ``openai`` backend talk HTTP to it on 127.0.0.1. It speaks the
parts of the protocol the backend uses: ``GET /v1/models`` and ``POST
/v1/chat/completions`` with ``n``, ``temperature``, ``top_p``,
``max_tokens``, ``seed`` and vLLM's ``structured_outputs: {"grammar": GBNF}``
extra field (decoded with llguidance, which reads GBNF). With
``accept_structured_outputs=False`` it answers HTTP 400 to that field, like a
server that does not know it. (``transformers serve`` needs network access
for its model registry here, so the tests use this server instead.)

It also runs on its own, serving any model the ``transformers`` backend loads
(a directory, a ``.gguf`` file, a registered name such as ``smollm2-135m``),
optionally with a LoRA adapter::

    python tests/app/openai_server.py --model smollm2-135m --adapter runs/sft/adapter --port 8000
    geoql compile "cafes in Bonn" --backend openai -o base_url=http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from geoql.app.backends.base import GenerationRequest


class ChatServer:
    def __init__(self, backend, model_name: str = "tiny", *, accept_structured_outputs: bool = True, port: int = 0):
        self.backend = backend
        self.model_name = model_name
        self.accept_structured_outputs = accept_structured_outputs
        self.requests: list[dict] = []  # bodies received, for assertions
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model_name, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):  # noqa: N802
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                if body.get("model") != server.model_name:
                    return self._send(404, {"error": {"message": f"model {body.get('model')} not found"}})
                grammar = (body.get("structured_outputs") or {}).get("grammar")
                if grammar and not server.accept_structured_outputs:
                    return self._send(400, {"error": {"message": "extra fields not permitted: structured_outputs"}})
                req = GenerationRequest(messages=body["messages"], n=int(body.get("n", 1)),
                                        temperature=float(body.get("temperature", 1.0)),
                                        top_p=float(body.get("top_p", 1.0)),
                                        max_new_tokens=int(body.get("max_tokens", 64)),
                                        grammar=grammar, seed=body.get("seed"))
                texts = server.backend.generate(req).texts
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": server.model_name,
                    "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                                 "finish_reason": "stop"} for i, t in enumerate(texts)],
                })

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ChatServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv=None) -> int:
    from geoql.app.backends.transformers_backend import TransformersBackend

    parser = argparse.ArgumentParser(description="An OpenAI-compatible chat server on 127.0.0.1 over the transformers backend.")
    parser.add_argument("--model", required=True, help="model directory, .gguf file or registered name (smollm2-135m)")
    parser.add_argument("--adapter", default=None, help="PEFT LoRA adapter directory")
    parser.add_argument("--name", default="geoql", help="the model name the server answers to")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    backend = TransformersBackend(args.model, adapter=args.adapter, device="cpu", dtype="float32")
    backend.tokenizer  # load before listening, so the first request does not wait for it
    server = ChatServer(backend, args.name, port=args.port)
    print(f"serving {backend.describe()} as {args.name!r} on {server.base_url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
