#!/usr/bin/env python3
"""Google's endpoints as the fuzzer needs them (scripts/fuzz.sh): a token endpoint that grants
any JWT bearer assertion, and a Play Developer API that knows no purchase (404), so that the
configured Google Play paths are fuzzed without the internet. Usage: google_play_standin.py PORT"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/token":
            self.answer(200, {"access_token": "standin", "expires_in": 3599, "token_type": "Bearer"})
        else:
            self.answer(404, {"error": {"code": 404, "message": "The purchase token was not found."}})

    def do_GET(self):
        self.answer(404, {"error": {"code": 404, "message": "The purchase token was not found."}})

    def log_message(self, *arguments):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
