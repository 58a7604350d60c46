#!/usr/bin/env python3
"""A tiny HTTP server that plays a scripted sequence of S3-like answers, for retry tests.

Usage: flaky_s3.py PLAN   where PLAN is a comma-separated list of steps, one per request:
  200            success (ETag = MD5 of the body received)
  503:SlowDown   that status with an S3 error document carrying that code
  reset          close the connection without answering
  sleep:SECONDS  wait that long, then answer 200
The last step repeats once the plan is used up. Prints the port on the first line of stdout, then
"request N METHOD PATH" for every request. Listens on 127.0.0.1 only; exits when stdin closes.
"""
import hashlib
import http.server
import socketserver
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self):
        server = self.server
        with server.lock:
            index = server.count
            server.count += 1
        step = server.plan[min(index, len(server.plan) - 1)]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        print(f"request {index + 1} {self.command} {self.path}", flush=True)
        if step == "reset":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if step.startswith("sleep:"):
            time.sleep(float(step.split(":", 1)[1]))
            step = "200"
        status, _, code = step.partition(":")
        status = int(status)
        if status < 300:
            self.send_response(status)
            self.send_header("ETag", '"%s"' % hashlib.md5(body).hexdigest())
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        document = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>scripted {code}</Message><RequestId>req-{index + 1}</RequestId></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(document)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(document)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = answer


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.plan = sys.argv[1].split(",")
    server.count = 0
    server.lock = threading.Lock()
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the test closes stdin (or dies) to stop us
    server.shutdown()


if __name__ == "__main__":
    main()
