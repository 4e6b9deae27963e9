"""A small prefill/decode proxy: each completion runs its prompt on the prefill server
(max_tokens=1, so that server computes and saves the prompt's KV cache through the KV
connector), then the whole request on the decode server, which loads that KV cache
instead of computing it, and streams the answer back to the client.

    python pd_proxy.py --port 8420 --prefill 8421 --decode 8422

Standard library only; one line per request on stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefill", type=int, required=True, help="port of the prefill server")
    parser.add_argument("--decode", type=int, required=True, help="port of the decode server")
    args = parser.parse_args(argv)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        _started = False  # the reply to the client has begun

        def log_message(self, fmt, *a):  # one line per request of our own instead
            pass

        def do_GET(self):
            ok = all(_status(port, "/health") == 200 for port in (args.prefill, args.decode))
            self._reply(200 if ok else 503, b"ok" if ok else b"a server is down")

        def do_POST(self):
            if self.path != "/v1/completions":
                return self._reply(404, b"only /v1/completions")
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = json.loads(body)
            t0 = time.time()
            prefill = dict(request, max_tokens=1, stream=False)
            prefill.pop("stream_options", None)
            status, text = _post(args.prefill, json.dumps(prefill).encode())
            t1 = time.time()
            if status != 200:
                _log(f"prefill failed status={status} body={text[:200]!r}")
                return self._reply(502, text)
            try:
                self._decode(body, request, t0, t1)
            except (OSError, http.client.HTTPException) as exc:  # one line, not a traceback: decode may be gone
                _log(f"decode failed: {type(exc).__name__}: {exc}")
                if not self._started:
                    self._reply(502, str(exc).encode())

        def _decode(self, body: bytes, request: dict, t0: float, t1: float) -> None:
            self._started = False
            conn = http.client.HTTPConnection("127.0.0.1", args.decode, timeout=300)
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            self._started = True
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.getheader("Content-Type", "application/json"))
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while chunk := resp.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            conn.close()
            _log(f"completion prompt_tokens={len(request.get('prompt', []))} prefill_s={t1 - t0:.3f} "
                 f"decode_status={resp.status} total_s={time.time() - t0:.3f}")

        def _reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    # A process started in the background inherits SIGINT ignored: stop on SIGINT and SIGTERM anyway.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True  # a request stuck on a dead server must not hold the proxy's exit
    _log(f"proxy on 127.0.0.1:{args.port}: prefill {args.prefill}, decode {args.decode}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        _log("proxy stopped")
    return 0


def _status(port: int, path: str) -> int | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return None


def _post(port: int, body: bytes) -> tuple[int | None, bytes]:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    except OSError as exc:
        return None, str(exc).encode()


def _log(msg: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    print(f"{stamp}Z pd_proxy {msg}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
