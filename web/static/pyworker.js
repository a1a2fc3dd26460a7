// pyworker.js: a Python guest in a Web Worker (Pyodide), the seed's
// sandbox. Its only channel to gpucc is the host request: the gpucc module
// calls self.gpuccHost.request(kind, payload), which posts the request to
// the page; the page's host (gpucc.createPythonGPUAdapter) answers through
// pythonCall("__gpucc_deliver", [id, reply]), which arrives here as a
// message and calls the Python function between runs of guest code.
//
// Messages in: {type: "init", pyodideURL, files: [{path, url}]},
// {type: "run", id, code}, {type: "pythonCall", name, args}.
// Messages out: {type: "ready"}, {type: "hostRequest", id, kind, payload},
// {type: "stdout", text}, {type: "done", id} / {type: "failed", id, error}.
let pyodide = null, nextRequest = 1;

self.gpuccHost = {
  request(kind, payload) {
    const id = nextRequest++;
    self.postMessage({type: "hostRequest", id, kind: String(kind), payload: String(payload)});
    return id;
  },
};

async function init(m) {
  importScripts(m.pyodideURL + "pyodide.js");
  pyodide = await loadPyodide({indexURL: m.pyodideURL, stdout: (text) => self.postMessage({type: "stdout", text}),
    stderr: (text) => self.postMessage({type: "stdout", text: "stderr: " + text})});
  for (const f of m.files) {
    const r = await fetch(f.url);
    if (!r.ok) throw new Error("fetching " + f.url + ": " + r.status);
    const dir = f.path.slice(0, f.path.lastIndexOf("/"));
    if (dir) pyodide.FS.mkdirTree(dir);
    pyodide.FS.writeFile(f.path, await r.text());
  }
  pyodide.runPython("import sys; sys.path.insert(0, '/guest')");
  self.postMessage({type: "ready"});
}

self.onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.type === "init") {
      await init(m);
    } else if (m.type === "run") {
      await pyodide.runPythonAsync(m.code);
      self.postMessage({type: "done", id: m.id});
    } else if (m.type === "pythonCall") {
      const fn = pyodide.pyimport("builtins")[m.name];
      if (!fn) throw new Error("the guest has no " + m.name);
      // The reply object reaches Python as a JsProxy. Output data travel as
      // Float32Arrays: exact float32 bits, -0 included (Pyodide turns an
      // integral number, -0 too, into a Python int).
      for (const a of m.args) {
        for (const key of ["outputs", "params"]) { // gpu.execute's outputs, gpu.step's parameters
          const outs = a && a.value && a.value[key];
          if (outs) for (const o of Object.values(outs)) o.data = new Float32Array(o.data);
        }
        if (a && a.value && typeof a.value.loss === "number") a.value.loss = new Float32Array([a.value.loss]);
      }
      fn(...m.args);
    }
  } catch (err) {
    self.postMessage({type: "failed", id: m.id, error: String(err && err.message || err)});
  }
};
