# A stand-in server for measuring the Swift client alone (bench/client/run):
# it serves a grid of N dots, then one event stream of M changes to their
# isTapAnimated, K changes an event, as fast as the client takes them.
#   python3 stand-in.py PORT N M K
import json, sys, socketserver, http.server
N, M, K = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ids = ["01a217d5-f09d-7d21-b265-%012d" % i for i in range(N)]
rows = [[{"id": ids[r*100+c], "isTapAnimated": False, "isRandomAnimated": False} for c in range(100)] for r in range(N // 100)]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, status, body, extra={}):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(data)))
        self.send_header("Observation-Cursor", "0")
        for k, v in extra.items(): self.send_header(k, v)
        self.end_headers(); self.wfile.write(data)
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0); self.rfile.read(n)
        self.send(201, {"id": "obs", "reads": [], "shapes": [], "cursor": 0, "ttlSeconds": 600})
    def do_DELETE(self): self.send(204, {})
    def do_GET(self):
        if self.path.startswith("/grid"): return self.send(200, {"rows": rows})
        if self.path.startswith("/account"): return self.send(200, {"userName": None})
        if self.path.startswith("/observer/changes"):
            self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.send_header("Connection", "close"); self.end_headers()
            import time; time.sleep(2)
            seq = 0; value = True; chunk = []
            for e in range(M // K):
                changes = []
                for i in range(K):
                    seq += 1
                    d = ids[seq % N]
                    changes.append({"seq": seq, "path": "/grid/dots/%s/isTapAnimated" % d, "op": "set", "old": not value, "new": value})
                    if seq % N == 0: value = not value
                chunk.append("id: %d\nevent: changes\ndata: %s\n\n" % (seq, json.dumps({"cursor": seq, "changes": changes}, separators=(",", ":"))))
                if len(chunk) >= 50: self.wfile.write("".join(chunk).encode()); chunk = []
            self.wfile.write("".join(chunk).encode()); self.wfile.flush()
            import time; time.sleep(60)
            return
        self.send(404, {"title": "Not Found", "status": 404, "detail": "no"})
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
