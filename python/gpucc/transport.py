"""Transports: who runs a graph, chosen as the seed chooses.

- HTTPTransport: POST /v1/execute of a gpucc serve (url and token as
  arguments to Graph, or $GPUCC_URL and $GPUCC_TOKEN; the backend from
  backend= or $GPUCC_BACKEND, else the server's auto).
- HostTransport: running as a guest in the browser (Pyodide in a Worker),
  a host request "gpu.execute" whose reply the host delivers later through
  __gpucc_deliver(id, reply), reply {ok: true, value} or {ok: false, error}.
- CPUTransport: no host at all: the graph is evaluated here by cpu-python,
  gpucc's reference in pure Python, and the result says "cpu-python".

Every transport takes the same protocol v1 document and gives the result
object gpucc run prints. submit returns a Pending at once; natively one
worker thread runs the requests in order and calls the callbacks on it, so
a program keeps going meanwhile and the interpreter waits for them at exit.
"""

import json
import os
import queue
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from . import cpuref, ir
from .errors import GPUCCError

CPU_PYTHON = "cpu-python"


def choose(url=None, token=None, backend=None, timeout=60.0):
    """The transport for Graph's arguments and the environment."""
    backend = backend or os.environ.get("GPUCC_BACKEND") or None
    if backend == CPU_PYTHON:
        return CPUTransport()
    if url is None and HostTransport.available():
        return HostTransport(backend)
    url = url or os.environ.get("GPUCC_URL") or None
    if url:
        return HTTPTransport(url, token if token is not None else os.environ.get("GPUCC_TOKEN"), backend, timeout)
    if backend not in (None, "auto"):
        return Unavailable(backend)
    return CPUTransport()


class Pending:
    """A submitted request: result(timeout) waits and returns the result or
    raises its GPUCCError; done() says whether it has been delivered."""

    def __init__(self, callback=None, on_error=None):
        self._event = threading.Event()
        self.callback, self.on_error = callback, on_error
        self.value = self.error = None

    def done(self):
        return self._event.is_set()

    def wait(self, timeout=None):
        w = _the_worker
        if not self._event.is_set() and w is not None and threading.current_thread() is w.t:
            raise RuntimeError("waiting for a result inside a gpucc callback would wait forever: "
                               "callbacks run on the thread that delivers results; submit with a callback instead")
        if not self._event.wait(timeout):
            raise GPUCCError("timeout", "no result within %s s" % timeout)
        return self

    def result(self, timeout=None):
        self.wait(timeout)
        if self.error is not None:
            raise self.error
        return self.value

    def _deliver(self, value=None, error=None):
        self.value, self.error = value, error
        try:
            if error is None:
                if self.callback is not None:
                    self.callback(value)
            elif self.on_error is not None:
                self.on_error(error)
            elif self.callback is not None:
                sys.stderr.write("gpucc: %s (no on_error given)\n" % error)
        except Exception:  # a callback's bug is the program's, not the queue's
            traceback.print_exc()
        finally:
            self._event.set()


class _Worker:
    """One thread that runs requests in order and delivers each."""

    def __init__(self):
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._loop, name="gpucc-submit", daemon=False)
        self.idle = threading.Condition()
        self.t.start()

    def put(self, pending, fn):
        self.q.put((pending, fn))

    def _loop(self):
        while True:
            try:
                pending, fn = self.q.get(timeout=0.5)
            except queue.Empty:
                if threading.main_thread().is_alive():
                    continue
                return  # the program ended and nothing is queued
            try:
                value = fn()
            except GPUCCError as e:
                pending._deliver(error=e)
            except Exception as e:
                pending._deliver(error=GPUCCError("internal", "%s: %s" % (type(e).__name__, e)))
            else:
                pending._deliver(value=value)
            self.q.task_done()


_the_worker = None
_lock = threading.Lock()


def _worker():
    global _the_worker
    with _lock:
        if _the_worker is None or not _the_worker.t.is_alive():
            _the_worker = _Worker()
        return _the_worker


def wait_all():
    """Waits until every request submitted so far has been delivered."""
    if _the_worker is not None:
        _the_worker.q.join()


class Transport:
    name = "?"

    def execute(self, doc):
        raise NotImplementedError

    def submit(self, doc, callback=None, on_error=None):
        p = Pending(callback, on_error)
        _worker().put(p, lambda: self.execute(doc))
        return p

    def enqueue(self, fn, callback=None, on_error=None):
        """Runs fn() (which may call execute) in order with the requests."""
        p = Pending(callback, on_error)
        _worker().put(p, fn)
        return p

    def request(self, make, post, callback=None, on_error=None):
        """A request whose document make() builds when its turn comes (after
        every request submitted before it has been delivered) and whose
        result post(result) turns into the value delivered."""
        return self.enqueue(lambda: post(self.execute(make())), callback, on_error)


class CPUTransport(Transport):
    """cpu-python: decode (gpucc's lowering and limits), evaluate, report."""

    name = CPU_PYTHON

    def execute(self, doc):
        t0 = time.perf_counter()
        nodes, outputs = ir.decode(doc)
        t1 = time.perf_counter()
        outs = cpuref.run(nodes, outputs)
        t2 = time.perf_counter()
        return {"backend": CPU_PYTHON, "exact": True,
                "outputs": {name: {"shape": list(s), "data": ir.F.Data(d)} for name, (s, d) in outs.items()},
                "timings": {"decodeMs": round((t1 - t0) * 1e3, 3), "dispatchMs": round((t2 - t1) * 1e3, 3),
                            "totalMs": round((t2 - t0) * 1e3, 3)},
                "fallbackAttempts": []}


class Unavailable(Transport):
    def __init__(self, backend):
        self.backend = backend
        self.name = backend

    def execute(self, doc):
        raise GPUCCError("backend_unavailable", "backend %r needs a gpucc serve (GPUCC_URL) or the browser host; "
                         "with neither, only cpu-python runs here" % self.backend)


def result_floats(value):
    """A result's output data as float32 values (parsed once from the text)."""
    value = value or {}
    for o in list(value.get("outputs", {}).values()) + list(value.get("params", {}).values()):
        if isinstance(o.get("data"), memoryview):  # a Float32Array from the browser host: exact already
            o["data"] = o["data"].cast("B").cast("f").tolist()
        o["data"] = ir.F.Data(v.f32 if isinstance(v, ir._Num) else ir.F.parse(v.text) if isinstance(v, ir._Int)
                              else ir.F.f32(float(v)) for v in o.get("data", []))
    return value


class HTTPTransport(Transport):
    """POST /v1/execute?backend=B to a gpucc serve."""

    def __init__(self, url, token=None, backend=None, timeout=60.0):
        self.url = url.rstrip("/")
        self.token = token or None
        self.backend = backend or "auto"
        self.timeout = timeout
        self.name = "http"

    def execute(self, doc):
        body = ir.dumps(doc).encode() if isinstance(doc, dict) else doc
        q = urllib.parse.urlencode({"backend": self.backend})
        req = urllib.request.Request(self.url + "/v1/execute?" + q, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
        except (urllib.error.URLError, OSError) as e:
            raise GPUCCError("backend_unavailable", "gpucc serve at %s: %s" % (self.url, getattr(e, "reason", e)))
        return unwrap(raw)


def unwrap(raw):
    """The value of a reply envelope {ok, value} / {ok: false, error}, or its
    error raised."""
    try:
        env = ir.loads(raw.decode() if isinstance(raw, bytes) else raw) if isinstance(raw, (bytes, str)) else raw
    except ValueError as e:
        raise GPUCCError("internal", "a reply that is not JSON: %s" % e)
    if not isinstance(env, dict) or "ok" not in env:
        raise GPUCCError("internal", "a reply without ok")
    if env["ok"]:
        return result_floats(env.get("value"))
    raise GPUCCError.from_dict(env.get("error"))


class HostTransport(Transport):
    """The browser host, from a Pyodide guest: the request goes out through
    the host channel (js.gpuccHost.request), and the host answers later by
    calling __gpucc_deliver(id, reply) between calls into the guest."""

    queue = []       # (transport, pending, make, post) not yet sent
    current = None   # (request id, pending, post) with the host
    name = "host"

    @staticmethod
    def available():
        if sys.platform != "emscripten":
            return False
        try:
            import js  # noqa: F401  (Pyodide's module)
            return bool(getattr(js, "gpuccHost", None))
        except ImportError:
            return False

    def __init__(self, backend=None):
        self.backend = backend or "auto"
        import builtins
        setattr(builtins, "__gpucc_deliver", HostTransport.deliver)  # the name the host calls (no mangling)

    def submit(self, doc, callback=None, on_error=None):
        return self.request(lambda: doc, lambda r: r, callback, on_error)

    def enqueue(self, fn, callback=None, on_error=None):
        p = Pending(callback, on_error)
        try:
            p._deliver(value=fn())
        except GPUCCError as e:
            p._deliver(error=e)
        return p

    def request(self, make, post, callback=None, on_error=None, kind="gpu.execute"):
        """Queues the request; one is with the host at a time, so a training
        step is built from the parameters the step before it wrote. For
        gpu.execute make() gives the graph; for gpu.step, the payload."""
        p = Pending(callback, on_error)
        HostTransport.queue.append((self, p, make, post, kind))
        if HostTransport.current is None:
            HostTransport._next()
        return p

    @staticmethod
    def _next():
        import js
        while HostTransport.queue:
            t, p, make, post, kind = HostTransport.queue.pop(0)
            try:
                body = make()
                if kind == "gpu.execute":
                    body = {"backend": t.backend, "graph": body}
                payload = json.dumps(body, allow_nan=False)
                rid = int(js.gpuccHost.request(kind, payload))
            except GPUCCError as e:
                p._deliver(error=e)
                continue
            except Exception as e:
                p._deliver(error=GPUCCError("not_granted", "the host refused the request: %s" % e))
                continue
            HostTransport.current = (rid, p, post)
            return
        HostTransport.current = None

    def execute(self, doc):
        raise GPUCCError("unsupported", "a guest cannot wait for the host; use submit")

    @staticmethod
    def deliver(rid, reply):
        """The host's answer to request rid: the envelope, as JSON text or as
        the host's object (a JsProxy, converted here: -0 stays -0; each
        number, the shortest decimal of a float32 parsed by JavaScript,
        rounds back to that float32)."""
        if hasattr(reply, "to_py"):
            reply = reply.to_py()
        cur = HostTransport.current
        if cur is None or cur[0] != int(rid):
            return  # not ours, or already answered
        _, p, post = cur
        try:
            env = reply if isinstance(reply, dict) else str(reply)
            p._deliver(value=post(unwrap(env)))
        except GPUCCError as e:
            p._deliver(error=e)
        HostTransport._next()
