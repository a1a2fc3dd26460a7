package backend

import "time"

// Stage is one timed part of compiling or running a program.
type Stage uint8

// The stages, in the order a cold run goes through them.
const (
	StageCodegen  Stage = iota // generating kernel source
	StageCompile               // creating shader modules, pipelines, wasm modules, shared objects
	StageUpload                // host data to the device, and allocating what the pool could not supply
	StageDispatch              // executing the kernels
	StageReadback              // device to host
	numStages
)

var stageNames = [numStages]string{"codegen", "compile", "upload", "dispatch", "readback"}

func (s Stage) String() string { return stageNames[s] }

// Cache is one cache level a backend consults.
type Cache uint8

// The cache levels. Their String forms are the keys of the result JSON's
// "cache" object.
const (
	CacheCodegenMemory Cache = iota // generated code, in memory
	CacheCodegenDisk                // generated code, on disk
	CachePipeline                   // compiled GPU pipelines
	CacheBufferPool                 // device buffers kept from earlier runs
	CacheModuleMemory               // instantiated wasm modules
	CacheModuleDisk                 // wasm modules on disk
	CacheLibraryMemory              // loaded shared objects
	CacheLibraryDisk                // shared objects on disk
	CacheShader                     // linked WebGL2 programs
	numCaches
)

var cacheNames = [numCaches]string{"codegenMemory", "codegenDisk", "pipeline", "bufferPool",
	"wasmModuleMemory", "wasmModuleDisk", "nativeSoMemory", "nativeSoDisk", "shader"}

func (c Cache) String() string { return cacheNames[c] }

// Stats records what one Compile or Run did. The zero value is ready; a nil
// *Stats records nothing.
type Stats struct {
	Durations [numStages]time.Duration
	// UploadBytes and ReadbackBytes count host-device transfers.
	UploadBytes, ReadbackBytes int64
	// GPUDispatch is the dispatch stage measured by GPU timestamps, when
	// GPUTimed.
	GPUDispatch time.Duration
	GPUTimed    bool
	// FirstDispatch says the dispatch ran kernels, or touched buffers, for
	// the first time, so that it includes the driver's deferred compilation
	// and the first touch of fresh memory.
	FirstDispatch bool
	// Fast says Compile generated fast kernels (Program.Fast): a matmul's
	// or convolution's products may have been contracted, so results are not cpuref's.
	Fast      bool
	consulted [numCaches]bool
	hit       [numCaches]bool
}

// Start begins timing stage s; the returned function ends it, adding the
// elapsed time (a stage may be timed in several parts):
//
//	defer st.Start(backend.StageUpload)()
func (st *Stats) Start(s Stage) func() {
	if st == nil {
		return func() {}
	}
	t := time.Now()
	return func() { st.Durations[s] += time.Since(t) }
}

// Hit records whether cache level c hit; a level recorded twice keeps the
// last answer.
func (st *Stats) Hit(c Cache, hit bool) {
	if st == nil {
		return
	}
	st.consulted[c], st.hit[c] = true, hit
}

// Caches returns every consulted level and whether it hit.
func (st *Stats) Caches() map[string]bool {
	if st == nil {
		return nil
	}
	var m map[string]bool
	for c := range numCaches {
		if st.consulted[c] {
			if m == nil {
				m = map[string]bool{}
			}
			m[c.String()] = st.hit[c]
		}
	}
	return m
}

// Add adds o's stages, bytes and cache answers to st.
func (st *Stats) Add(o *Stats) {
	for s := range numStages {
		st.Durations[s] += o.Durations[s]
	}
	st.UploadBytes += o.UploadBytes
	st.ReadbackBytes += o.ReadbackBytes
	st.GPUDispatch += o.GPUDispatch
	st.GPUTimed = st.GPUTimed || o.GPUTimed
	st.FirstDispatch = st.FirstDispatch || o.FirstDispatch
	for c := range numCaches {
		if o.consulted[c] {
			st.consulted[c], st.hit[c] = true, o.hit[c]
		}
	}
}
