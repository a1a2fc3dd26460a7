//go:build !js

package gpu

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/gpucc/gpucc/internal/rundir"
)

// AdapterInfo describes a WebGPU adapter (a physical device as seen through
// one backend).
type AdapterInfo struct {
	Name       string `json:"name"`       // device name, e.g. "NVIDIA H100" or "llvmpipe (LLVM 15.0.6, 256 bits)"
	Driver     string `json:"driver"`     // wgpu's description string (for wgpu-native 0.19 usually the device name again)
	DriverInfo string `json:"driverInfo"` // wgpu's architecture string, often empty
	Vendor     string `json:"vendor"`     // vendor name, from wgpu or from the PCI vendor id
	VendorID   uint32 `json:"vendorId"`   // PCI (or Khronos) vendor id
	DeviceID   uint32 `json:"deviceId"`   // PCI device id
	Backend    string `json:"backend"`    // "vulkan", "metal", "d3d12", "open-gl", ...
	Type       string `json:"type"`       // "discrete-gpu", "integrated-gpu", "cpu" or "unknown"
	// Software reports a recognised software adapter (see IsSoftware).
	Software bool `json:"software"`
	// TimestampQuery reports whether the adapter (for AdapterInfo values
	// returned by Adapters) or the opened device (for Device.Info) supports
	// GPU timestamp queries, which RunTimed needs.
	TimestampQuery bool `json:"timestampQuery"`
	// Limits are the adapter's limits in Adapters and the device's limits in
	// Device.Info.
	Limits Limits `json:"limits"`
}

// String returns a one-line description such as
// `"llvmpipe (LLVM 15.0.6, 256 bits)" (vulkan, cpu, software)`.
func (a AdapterInfo) String() string {
	s := fmt.Sprintf("%q (%s, %s", a.Name, a.Backend, a.Type)
	if a.Software {
		s += ", software"
	}
	return s + ")"
}

// Limits is the subset of WebGPU limits that matter for compute kernels.
type Limits struct {
	MaxStorageBuffersPerShaderStage   uint32 `json:"maxStorageBuffersPerShaderStage"`
	MaxUniformBuffersPerShaderStage   uint32 `json:"maxUniformBuffersPerShaderStage"`
	MaxBindingsPerBindGroup           uint32 `json:"maxBindingsPerBindGroup"`
	MaxComputeWorkgroupSizeX          uint32 `json:"maxComputeWorkgroupSizeX"`
	MaxComputeWorkgroupSizeY          uint32 `json:"maxComputeWorkgroupSizeY"`
	MaxComputeWorkgroupSizeZ          uint32 `json:"maxComputeWorkgroupSizeZ"`
	MaxComputeInvocationsPerWorkgroup uint32 `json:"maxComputeInvocationsPerWorkgroup"`
	MaxComputeWorkgroupStorageSize    uint32 `json:"maxComputeWorkgroupStorageSize"`
	MaxComputeWorkgroupsPerDimension  uint32 `json:"maxComputeWorkgroupsPerDimension"`
	MaxStorageBufferBindingSize       uint64 `json:"maxStorageBufferBindingSize"`
	MaxUniformBufferBindingSize       uint64 `json:"maxUniformBufferBindingSize"`
	MaxBufferSize                     uint64 `json:"maxBufferSize"`
}

func limitsFrom(l wgpu.Limits) Limits {
	return Limits{
		MaxStorageBuffersPerShaderStage:   l.MaxStorageBuffersPerShaderStage,
		MaxUniformBuffersPerShaderStage:   l.MaxUniformBuffersPerShaderStage,
		MaxBindingsPerBindGroup:           l.MaxBindingsPerBindGroup,
		MaxComputeWorkgroupSizeX:          l.MaxComputeWorkgroupSizeX,
		MaxComputeWorkgroupSizeY:          l.MaxComputeWorkgroupSizeY,
		MaxComputeWorkgroupSizeZ:          l.MaxComputeWorkgroupSizeZ,
		MaxComputeInvocationsPerWorkgroup: l.MaxComputeInvocationsPerWorkgroup,
		MaxComputeWorkgroupStorageSize:    l.MaxComputeWorkgroupStorageSize,
		MaxComputeWorkgroupsPerDimension:  l.MaxComputeWorkgroupsPerDimension,
		MaxStorageBufferBindingSize:       l.MaxStorageBufferBindingSize,
		MaxUniformBufferBindingSize:       l.MaxUniformBufferBindingSize,
		MaxBufferSize:                     l.MaxBufferSize,
	}
}

// softwareMarkers are lower-case substrings of adapter or driver names that
// identify CPU rasterisers.
var softwareMarkers = []string{
	"llvmpipe",
	"lavapipe",
	"softpipe",
	"swiftshader",
	"microsoft basic render driver", // WARP
}

// IsSoftware reports whether an adapter is a software (CPU) implementation:
// Mesa llvmpipe/lavapipe/softpipe, SwiftShader, Microsoft WARP, or any
// adapter whose type is "cpu". name and driver are matched
// case-insensitively; adapterType uses the strings of AdapterInfo.Type.
func IsSoftware(name, driver string, adapterType string) bool {
	if strings.EqualFold(adapterType, "cpu") {
		return true
	}
	s := strings.ToLower(name + "\x00" + driver)
	for _, m := range softwareMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if f == "warp" {
			return true
		}
	}
	return false
}

func adapterInfo(a *wgpu.Adapter) AdapterInfo {
	wi := a.GetInfo()
	info := AdapterInfo{
		Name:           wi.Name,
		Driver:         wi.DriverDescription,
		DriverInfo:     wi.Architecture,
		Vendor:         wi.VendorName,
		VendorID:       wi.VendorId,
		DeviceID:       wi.DeviceId,
		Backend:        wi.BackendType.String(),
		Type:           wi.AdapterType.String(),
		TimestampQuery: a.HasFeature(wgpu.FeatureNameTimestampQuery),
		Limits:         limitsFrom(a.GetLimits().Limits),
	}
	// This wgpu-native build reports the device id in hex as the device
	// name and the real name as the description.
	if (info.Name == "" || isHexID(info.Name)) && info.Driver != "" {
		info.Name = info.Driver
	}
	if info.Vendor == "" || isHexID(info.Vendor) {
		info.Vendor = vendorNames[wi.VendorId]
		if info.Vendor == "" && wi.VendorId != 0 {
			info.Vendor = fmt.Sprintf("0x%04x", wi.VendorId)
		}
	}
	if info.Backend == "" {
		info.Backend = fmt.Sprintf("backend(%d)", uint32(wi.BackendType))
	}
	info.Software = IsSoftware(info.Name, info.Driver, info.Type)
	return info
}

// vendorNames maps well-known PCI/Khronos vendor ids to names.
var vendorNames = map[uint32]string{
	0x10de:  "NVIDIA",
	0x1002:  "AMD",
	0x1022:  "AMD",
	0x8086:  "Intel",
	0x106b:  "Apple",
	0x13b5:  "ARM",
	0x5143:  "Qualcomm",
	0x1414:  "Microsoft",
	0x1ae0:  "Google",
	0x10005: "Mesa",
}

// isHexID reports whether s looks like "0x1a2b".
func isHexID(s string) bool {
	if len(s) < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for _, r := range s[2:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// Verbose makes wgpu log its warnings and errors to stderr ("[wgpu]
// [Warn] ..."), as does GPUCC_VERBOSE=1 in the environment (2: also wgpu's
// info messages), read at each Open or Adapters. Otherwise wgpu is silent:
// its errors come back as errors anyway.
var Verbose bool

func verboseLevel() int {
	n, _ := strconv.Atoi(os.Getenv("GPUCC_VERBOSE"))
	return n
}

func logLevel() wgpu.LogLevel {
	switch {
	case !Verbose && verboseLevel() <= 0:
		return wgpu.LogLevelOff
	case verboseLevel() >= 2:
		return wgpu.LogLevelInfo
	}
	return wgpu.LogLevelWarn
}

// newInstance creates a wgpu instance, turning the binding's panic on
// failure into an error.
func newInstance() (inst *wgpu.Instance, err error) {
	rundir.Ensure() // Mesa's Vulkan drivers print five lines without one
	wgpu.SetLogLevel(logLevel())
	defer func() {
		if r := recover(); r != nil {
			inst, err = nil, fmt.Errorf("create WebGPU instance: %v", r)
		}
	}()
	return wgpu.CreateInstance(nil), nil
}

// Adapters enumerates every adapter wgpu can see on every backend, for
// diagnostics such as `gpucc info`. An empty list is not an error.
func Adapters() ([]AdapterInfo, error) {
	inst, err := newInstance()
	if err != nil {
		return nil, &Error{Op: "adapters", Err: err}
	}
	defer inst.Release()
	var out []AdapterInfo
	for _, a := range inst.EnumerateAdapters(nil) {
		out = append(out, adapterInfo(a))
		a.Release()
	}
	return out, nil
}

// AdaptersOf enumerates the adapters of the given backends only (a mask
// of wgpu.InstanceBackend: Open enumerates the primary ones first), for
// diagnostics and the startup bench.
func AdaptersOf(backends wgpu.InstanceBackend) ([]AdapterInfo, error) {
	inst, err := newInstanceOf(backends)
	if err != nil {
		return nil, &Error{Op: "adapters", Err: err}
	}
	defer inst.Release()
	var out []AdapterInfo
	for _, a := range inst.EnumerateAdapters(nil) {
		out = append(out, adapterInfo(a))
		a.Release()
	}
	return out, nil
}

// rank orders adapters: hardware before software, discrete before
// integrated before anything else, and native backends before GL.
func rank(a AdapterInfo) int {
	r := 0
	if !a.Software {
		r += 1000
	}
	switch a.Type {
	case "discrete-gpu":
		r += 300
	case "integrated-gpu":
		r += 200
	case "unknown":
		r += 100
	}
	switch a.Backend {
	case "vulkan", "metal", "d3d12":
		r += 20
	}
	return r
}

// Options configures Open.
type Options struct {
	// AllowSoftware permits choosing a software adapter (llvmpipe, WARP,
	// SwiftShader, ...) when no hardware adapter is available. Without it
	// Open fails with an error wrapping ErrSoftwareAdapter.
	AllowSoftware bool
	// Adapter, when non-empty, restricts the choice to adapters whose name
	// contains it (case-insensitive).
	Adapter string
	// Upload and UploadChunk choose how Upload moves bytes (see UploadPath);
	// the zero values are queue.WriteBuffer in one call.
	Upload      UploadPath
	UploadChunk uint64

	// Backend, when non-empty, is the only backend whose adapters are
	// enumerated, by AdapterInfo.Backend's name: "vulkan", "metal",
	// "d3d12", "d3d11" or "open-gl" (BackendGL). Without it a process
	// may open GL where Vulkan's enumeration finds nothing, as an H100's
	// test process did once (2026-12-05); with it Open fails instead.
	Backend string
}

// backendMasks are Options.Backend's names and their backends.
var backendMasks = map[string]wgpu.InstanceBackend{
	"vulkan": wgpu.InstanceBackendVulkan, "metal": wgpu.InstanceBackendMetal, "d3d12": wgpu.InstanceBackendDX12,
	"d3d11": wgpu.InstanceBackendDX11, BackendGL: wgpu.InstanceBackendGL,
}

// BackendNames are the names Options.Backend takes, sorted.
func BackendNames() []string { return slices.Sorted(maps.Keys(backendMasks)) }

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoAdapter: wgpu found no usable adapter.
	ErrNoAdapter = errors.New("no WebGPU adapter found")
	// ErrSoftwareAdapter: only software adapters exist and
	// Options.AllowSoftware is false.
	ErrSoftwareAdapter = errors.New("only a software adapter is available")
	// ErrClosed: the Device, Buffer or Pipeline was closed or released.
	ErrClosed = errors.New("use of closed or released object")
	// ErrLimit: a request exceeds a device limit.
	ErrLimit = errors.New("exceeds device limit")
)

// Error is the error type returned by this package. Op names the operation
// ("open", "compile", "new buffer", "upload", "run", "read", ...).
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "gpu: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func errorf(op, format string, args ...any) error {
	return &Error{Op: op, Err: fmt.Errorf(format, args...)}
}

// BackendGL is AdapterInfo.Backend of wgpu's GL adapters.
const BackendGL = "open-gl"

// glRank bounds the rank of an adapter of a secondary backend (GL, DX11):
// a hardware discrete one. wgpu's GL backend reports integrated, cpu or
// unknown, never discrete, but the bound does not lean on that.
var glRank = rank(AdapterInfo{Type: "discrete-gpu", Backend: BackendGL})

// Backends that openAdapters enumerates first, and after them only where
// they could change the choice. wgpu lists an instance of every backend's
// adapters in this order (Vulkan, Metal, DX12, then GL), so primary's
// list followed by secondary's is the list one instance of all gives.
const (
	primaryBackends   = wgpu.InstanceBackendVulkan | wgpu.InstanceBackendMetal | wgpu.InstanceBackendDX12
	secondaryBackends = wgpu.InstanceBackendGL | wgpu.InstanceBackendDX11
)

// choosePrimaryFirst returns the adapters chooseAdapter would see and the
// index it would pick among them, had every backend been enumerated: the
// primary backends' adapters, then secondary's, which it asks for only
// when no primary adapter that opts allows outranks every adapter a
// secondary backend could have (glRank). So a machine with a hardware
// discrete Vulkan, Metal or DX12 adapter never starts GL's EGL (42 ms on
// lavapipe here); a machine with only GL, or only a software or
// integrated primary adapter, enumerates both and chooses exactly as
// before.
func choosePrimaryFirst(primary []AdapterInfo, secondary func() []AdapterInfo, opts Options) (int, []AdapterInfo, error) {
	if best, err := chooseAdapter(primary, opts); err == nil && rank(primary[best]) > glRank {
		return best, primary, nil
	}
	all := append(primary[:len(primary):len(primary)], secondary()...)
	best, err := chooseAdapter(all, opts)
	return best, all, err
}

// openAdapters enumerates the adapters as choosePrimaryFirst asks, one
// instance for the primary backends and, where it asks, one for the
// secondary ones, and picks one as chooseAdapter does. It returns the
// instance that holds the adapter chosen, the adapter and its info,
// having released every other adapter and instance. Where gpucc cannot
// make an instance of some backends (newInstanceOf), it enumerates one of
// every backend, as before.
func openAdapters(opts Options) (*wgpu.Instance, *wgpu.Adapter, AdapterInfo, error) {
	var (
		insts    []*wgpu.Instance
		adapters []*wgpu.Adapter
		owner    []int // the instance of each adapter
		infos    []AdapterInfo
		best     int
		err      error
	)
	list := func(inst *wgpu.Instance) []AdapterInfo {
		insts = append(insts, inst)
		var out []AdapterInfo
		for _, a := range inst.EnumerateAdapters(nil) {
			adapters, owner = append(adapters, a), append(owner, len(insts)-1)
			out = append(out, adapterInfo(a))
		}
		return out
	}
	if opts.Backend != "" {
		mask, ok := backendMasks[opts.Backend]
		if !ok {
			return nil, nil, AdapterInfo{}, fmt.Errorf("no backend %q: want one of %s", opts.Backend, strings.Join(BackendNames(), ", "))
		}
		inst, ierr := newInstanceOf(mask)
		if ierr != nil {
			return nil, nil, AdapterInfo{}, ierr
		}
		infos = list(inst)
		best, err = chooseAdapter(infos, opts)
	} else if p, perr := newInstanceOf(primaryBackends); perr == nil {
		var serr error
		best, infos, err = choosePrimaryFirst(list(p), func() []AdapterInfo {
			s, e := newInstanceOf(secondaryBackends)
			if e != nil {
				serr = e
				return nil
			}
			return list(s)
		}, opts)
		if serr != nil {
			err = serr
		}
	} else {
		all, aerr := newInstance()
		if aerr != nil {
			return nil, nil, AdapterInfo{}, aerr
		}
		infos = list(all)
		best, err = chooseAdapter(infos, opts)
	}
	keep := -1
	if err == nil {
		keep = owner[best]
	}
	for i, a := range adapters {
		if i != best || err != nil {
			a.Release()
		}
	}
	for i, inst := range insts {
		if i != keep {
			inst.Release()
		}
	}
	if err != nil {
		return nil, nil, AdapterInfo{}, err
	}
	return insts[keep], adapters[best], infos[best], nil
}

// chooseAdapter picks the index of the best adapter among infos.
func chooseAdapter(infos []AdapterInfo, opts Options) (int, error) {
	idx := make([]int, 0, len(infos))
	for i, a := range infos {
		if opts.Adapter == "" || strings.Contains(strings.ToLower(a.Name), strings.ToLower(opts.Adapter)) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		var names []string
		for _, a := range infos {
			names = append(names, a.String())
		}
		if len(names) == 0 && opts.Backend != "" {
			return -1, fmt.Errorf("%w of backend %s", ErrNoAdapter, opts.Backend)
		}
		if len(names) == 0 {
			return -1, fmt.Errorf("%w (is a Vulkan/Metal/D3D12 driver installed?)", ErrNoAdapter)
		}
		return -1, fmt.Errorf("%w matching %q; available: %s", ErrNoAdapter, opts.Adapter, strings.Join(names, ", "))
	}
	sort.SliceStable(idx, func(i, j int) bool { return rank(infos[idx[i]]) > rank(infos[idx[j]]) })
	best := idx[0]
	if infos[best].Software && !opts.AllowSoftware {
		var names []string
		for _, i := range idx {
			names = append(names, infos[i].String())
		}
		return -1, fmt.Errorf("%w: %s; allow software adapters to use it (--allow-software)", ErrSoftwareAdapter, strings.Join(names, ", "))
	}
	return best, nil
}
