"""Plain-HTTP to HTTPS forwarding proxy that records kubectl's request bodies.

Used by capture.sh only. kubectl talks plain HTTP to this proxy (so the
bodies can be read), the proxy adds the bearer token (kubectl does not send
credentials over plain HTTP) and forwards to `kubeforge dev-server`. The first
request whose Content-Type is Kubernetes protobuf is written to
OUTDIR/last.pb, with its method, path and headers in OUTDIR/last.txt (the
first, because kubectl retries some requests against an older API version
when the server lacks the newer one, e.g. autoscaling/v2 then v1).
"""
import http.client
import http.server
import os
import ssl
import sys

UPSTREAM_HOST, UPSTREAM_PORT, CA_FILE, OUTDIR, LISTEN_PORT = sys.argv[1:6]
TOKEN = os.environ["CAPTURE_TOKEN"]
CONTEXT = ssl.create_default_context(cafile=CA_FILE)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        content_type = self.headers.get("Content-Type", "")
        first = not os.path.exists(os.path.join(OUTDIR, "last.pb"))
        if "application/vnd.kubernetes.protobuf" in content_type and first:
            with open(os.path.join(OUTDIR, "last.pb"), "wb") as f:
                f.write(body)
            with open(os.path.join(OUTDIR, "last.txt"), "w") as f:
                f.write(f"{self.command} {self.path}\n")
                f.write(f"Content-Type: {content_type}\n")
                f.write(f"Accept: {self.headers.get('Accept', '')}\n")
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in ("host", "connection", "authorization")
        }
        headers["Authorization"] = "Bearer " + TOKEN
        conn = http.client.HTTPSConnection(UPSTREAM_HOST, int(UPSTREAM_PORT), context=CONTEXT)
        conn.request(self.command, self.path, body=body or None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        self.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(LISTEN_PORT)), Handler).serve_forever()
