"""A real HTTP server on 127.0.0.1 (ephemeral port, thread) that serves a queue of /metrics bodies."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serve(bodies: list[str], *, status: int = 200):
    """Serve ``bodies`` one per GET /metrics (the last one repeats); yields (base_url, server)."""
    queue = list(bodies)
    served: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.path != "/metrics" or not queue:
                self.send_error(404)
                return
            body = queue.pop(0) if len(queue) > 1 else queue[0]
            served.append(body)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.served = served
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
