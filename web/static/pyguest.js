// pyguest.js: the page's side of a Python guest (pyworker.js). 
//
//   const guest = createPythonGuest({pyodideURL, files, allowExecute, maxPending, backend, allowSoftware})
//   await guest.ready; await guest.run(code); guest.output (lines printed); guest.dispose()
//
// The guest is an engine for gpucc's host model: its host requests queue
// up for takeHostRequests(), the adapter (gpucc.createPythonGPUAdapter)
// answers them, and pythonCall relays each reply to the Worker. dispose()
// disposes the adapter first, so no late reply reaches the guest, then
// terminates the Worker.
window.createPythonGuest = (opts) => {
  const worker = new Worker(opts.workerURL || "pyworker.js");
  const queue = [], output = [], runs = {};
  let disposed = false, nextRun = 1, readyResolve, readyReject;
  const engine = {
    takeHostRequests() { return queue.splice(0); },
    pythonCall(name, args) {
      // postMessage clones the reply as it is (JSON would turn -0 into 0).
      if (!disposed) worker.postMessage({type: "pythonCall", name, args});
    },
  };
  const adapter = gpucc.createPythonGPUAdapter(engine, {allowExecute: opts.allowExecute !== false,
    maxPending: opts.maxPending || 16, backend: opts.backend || "auto", allowSoftware: !!opts.allowSoftware});
  const guest = {
    adapter, output, requests: 0,
    ready: new Promise((res, rej) => { readyResolve = res; readyReject = rej; }),
    run(code) {
      const id = nextRun++;
      return new Promise((resolve, reject) => { runs[id] = {resolve, reject}; worker.postMessage({type: "run", id, code}); });
    },
    dispose() { disposed = true; adapter.dispose(); worker.terminate(); },
  };
  worker.onmessage = (e) => {
    const m = e.data;
    if (m.type === "ready") readyResolve();
    else if (m.type === "stdout") output.push(m.text);
    else if (m.type === "hostRequest") { guest.requests++; queue.push({id: m.id, kind: m.kind, payload: m.payload}); adapter.pump(); }
    else if (m.type === "done") { runs[m.id].resolve(); delete runs[m.id]; }
    else if (m.type === "failed") {
      if (runs[m.id]) { runs[m.id].reject(new Error(m.error)); delete runs[m.id]; }
      else if (m.id === undefined) readyReject(new Error(m.error));
      else output.push("error: " + m.error);
    }
  };
  worker.postMessage({type: "init", pyodideURL: opts.pyodideURL, files: opts.files});
  return guest;
};
