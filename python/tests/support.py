"""What the suite shares: the gpucc binary (GPUCC_BIN), the corpus
(GPUCC_CORPUS), bit comparisons and a gpucc serve for the HTTP tests."""

import json
import math
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gpucc import f32 as F  # noqa: E402
from gpucc import ir  # noqa: E402

BIN = os.environ.get("GPUCC_BIN")
CORPUS = os.environ.get("GPUCC_CORPUS")
SHORT = bool(os.environ.get("GPUCC_SHORT"))


def need_bin(test):
    return unittest.skipUnless(BIN, "GPUCC_BIN is not set (go test ./python runs this suite with it)")(test)


def bits_of(values):
    return [F.bits(v) for v in values]


def same_bits(a, b):
    """Bit for bit, except that any NaN matches any NaN (a NaN output is an
    error on every backend, never a value)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != y and not ((x & 0x7FFFFFFF) > 0x7F800000 and (y & 0x7FFFFFFF) > 0x7F800000):
            return False
    return True


def gpucc(*args, stdin=None):
    """Runs the gpucc binary; returns (exit status, parsed stdout)."""
    p = subprocess.run([BIN] + list(args), input=stdin, capture_output=True, timeout=600)
    try:
        out = ir.loads(p.stdout.decode())
    except ValueError:
        raise AssertionError("gpucc %s printed no JSON: %r %r" % (" ".join(args), p.stdout[:500], p.stderr[:500]))
    return p.returncode, out


def run_cli(doc, backend="cpu"):
    """gpucc run --backend B of doc: (result with float32 data, or the error dict)."""
    rc, out = gpucc("run", "--backend", backend, "-", stdin=ir.dumps(doc).encode())
    if rc != 0:
        return None, out["error"]
    from gpucc.transport import result_floats
    return result_floats(out), None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Serve:
    """A gpucc serve on a free loopback port, with a token."""

    def __init__(self, token="python-suite-token"):
        self.token = token
        for _ in range(5):
            self.port = free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            self.p = subprocess.Popen([BIN, "serve", "--addr", "127.0.0.1:%d" % self.port, "--token", token],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while time.time() < deadline and self.p.poll() is None:
                try:
                    with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                        if r.status == 200:
                            return
                except OSError:
                    time.sleep(0.1)
            self.close()
        raise AssertionError("gpucc serve did not start")

    def backends(self):
        req = urllib.request.Request(self.url + "/v1/info", headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["value"]["backends"]

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def load_corpus():
    with open(CORPUS) as f:
        return ir.loads(f.read())  # numbers keep their text: -0 stays -0
