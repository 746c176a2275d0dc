"""What the fake model servers of tests/agents/ share: a quiet HTTP/1.1 handler with a send
helper and a JSON body reader, and serving on a free 127.0.0.1 port written to a file (by
rename, so a reader never sees half a number)."""
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, ctype, payload):
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def json_body(self, undecodable=lambda raw: {}):
        """The request's JSON body; `undecodable(raw)` when it is not JSON."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return undecodable(raw)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the agent closing a kept-alive connection is not news


def serve(handler, port_file):
    srv = _Server(("127.0.0.1", 0), handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()
