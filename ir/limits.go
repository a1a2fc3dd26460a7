package ir

// Limits is host policy: how large a graph the host accepts. The caller sets
// it; a graph never can. Zero fields mean "use the default".
type Limits struct {
	MaxNodes        int   // nodes per graph
	MaxElements     int64 // elements per tensor
	MaxStorageBytes int64 // summed logical storage of all nodes, 4 bytes per element
	MaxOps          int64 // estimated operations (see EstimateOps)
	MaxOutputs      int   // named outputs
	MaxGraphBytes   int64 // bytes of protocol JSON accepted by Decode
}

// DefaultLimits returns the seed's defaults: 512 nodes, 1,048,576 elements
// per tensor, 32 MiB of storage, 100 million operations and 16 outputs.
func DefaultLimits() Limits {
	return Limits{
		MaxNodes:        512,
		MaxElements:     1 << 20,
		MaxStorageBytes: 32 << 20,
		MaxOps:          100_000_000,
		MaxOutputs:      16,
		MaxGraphBytes:   256 << 20,
	}
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxNodes <= 0 {
		l.MaxNodes = d.MaxNodes
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxStorageBytes <= 0 {
		l.MaxStorageBytes = d.MaxStorageBytes
	}
	if l.MaxOps <= 0 {
		l.MaxOps = d.MaxOps
	}
	if l.MaxOutputs <= 0 {
		l.MaxOutputs = d.MaxOutputs
	}
	if l.MaxGraphBytes <= 0 {
		l.MaxGraphBytes = d.MaxGraphBytes
	}
	return l
}

// MaxRank is the largest tensor rank the IR accepts.
const MaxRank = 8
