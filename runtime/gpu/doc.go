// Package gpu is a small native wrapper around github.com/cogentcore/webgpu
// (wgpu-native 0.19) that the gpucc runtime uses to run generated WGSL
// compute kernels.
//
// The model is deliberately narrow: storage buffers of bytes (usually
// float32), compute pipelines with a single explicit bind group (group 0)
// whose binding i is described by a BindingKind, and batches of dispatches
// that are recorded into one command encoder, submitted, and waited for.
//
// A typical use:
//
//	dev, err := gpu.Open(gpu.Options{})
//	if err != nil { ... }
//	defer dev.Close()
//	p, err := dev.Compile(src, "main", []gpu.BindingKind{gpu.ReadOnlyStorage, gpu.Storage, gpu.Uniform})
//	a, _ := dev.NewBuffer(4*n, "a")
//	out, _ := dev.NewBuffer(4*n, "out")
//	u, _ := dev.NewUniform(params, "params")
//	_ = dev.Upload(a, data)
//	_ = dev.Run([]gpu.Dispatch{{Pipeline: p, Buffers: []*gpu.Buffer{a, out, u}, Groups: [3]uint32{(n + 63) / 64, 1, 1}}})
//	_ = dev.Read(out, result)
//
// # Errors and aborts
//
// wgpu-native turns validation errors that are not caught by an error scope
// into a Rust panic, which aborts the whole process. The binding wraps the
// creation calls, buffer writes, pass/encoder ends and map calls in error
// scopes, so WGSL parse/validation errors and layout mismatches come back
// as an *Error holding wgpu's full message (with the source excerpt).
// Errors in Queue.Submit, however, are always fatal in wgpu-native (for
// example submitting work that uses a destroyed buffer), and the binding
// exposes neither an uncaptured-error callback nor a working device-lost
// callback (setting DeviceLostCallback panics in cgo's pointer check). This
// package therefore validates everything it can (sizes, limits, binding
// counts and kinds, workgroup counts, aliasing, released objects) before
// calling wgpu, never destroys a buffer that a cached bind group still uses,
// and always waits for submitted work, so that bad input comes back as an
// *Error instead of an abort. A run is recorded and submitted in one cgo
// call (record.go) inside one error scope, popped before the submission,
// so that an invalid recording is released and never submitted; the
// calls the device makes into wgpu are counted by kind (Counts), and
// tests pin what a run costs in them. A timed run's timestamps are
// resolved into the buffer the run maps, beside its outputs when it reads
// any back: written by the pass itself and resolved there without a copy
// (GPUCC_TIMESTAMPS=encoder: by the encoder around the pass, resolved into
// a buffer of their own and copied). A run that waits, like
// the one before it, records the next one while it waits for the GPU,
// and the next run submits that recording (ahead.go). Maps do not go through the binding's MapAsync,
// whose callback data Go's collector may free before wgpu calls it back
// (see asyncMap). RequestDevice failures carry no message from
// wgpu; Open reports the adapter and the limits it asked for instead.
//
// wgpu's own log lines ("[wgpu] [Warn] ...") are off unless Verbose is set
// (GPUCC_VERBOSE=1): its errors are also returned, so the lines are
// redundant. Mesa's "XDG_RUNTIME_DIR is invalid" lines come from the
// driver, not wgpu: a new instance first gives the process an
// XDG_RUNTIME_DIR of its own when it has none (internal/rundir).
//
// Close keeps its wgpu device (with its instance, adapter and queue) for
// the next Open that would choose it (idle.go), so that a process makes
// only as many devices as it holds open at once: NVIDIA's Vulkan driver
// lost its adapter after 30 devices made and released in one process
// (H200 and H100, 2026-12-06). GPUCC_DEVICE_POOL=off releases them. An
// Open that finds another adapter than the same options opened before in
// the process (the driver's limit reached) refuses rather than go on there.
//
// All methods of a Device are safe for concurrent use; calls are serialised
// by a per-device mutex.
package gpu
