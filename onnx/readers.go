package onnx

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// readIndex answers, for a value name, how many times the graph's nodes
// read it and which node reads it last (used, and the BatchNormalization
// fold, ask it). It holds every non-empty read as a pair (the name's
// hash, the node), sorted: 16 bytes a read, charged to the decoder's
// budget with the read (wire.go), made in one allocation of the counted
// length. A map
// of the names took 24× the model (8 MB of a million distinct input
// names: 201 MB allocated); a scan of the later nodes per question made
// the import quadratic (issue 30, finding 6). Two names of one hash can
// only make a name look read more: an unused extra output refused, a
// BatchNormalization left unfolded; never a wrong value.
type readIndex struct {
	seed  maphash.Seed
	reads []readEntry
	nodes int // a graph output reads as node nodes, counted in last only
}

type readEntry struct {
	h    uint64
	node int
}

// sizeRead is a readEntry's size: the decoder charges it for each node
// input and graph output, so the index stays within the decoder's bound.
const sizeRead = 16

// readCount counts a value's readers: n reads by nodes (reads: their
// inputs and their subgraphs'), the last in node last (-1: none;
// len(nodes) for a graph output).
type readCount struct{ n, last int }

func newReadIndex(g *graphProto) *readIndex {
	n := len(g.outputs)
	for j := range g.nodes {
		reads(&g.nodes[j], func(in string) {
			if in != "" {
				n++
			}
		})
	}
	x := &readIndex{seed: maphash.MakeSeed(), reads: make([]readEntry, 0, n), nodes: len(g.nodes)}
	for j := range g.nodes {
		reads(&g.nodes[j], func(in string) {
			if in != "" {
				x.reads = append(x.reads, readEntry{maphash.String(x.seed, in), j})
			}
		})
	}
	for _, o := range g.outputs {
		x.reads = append(x.reads, readEntry{maphash.String(x.seed, o.name), len(g.nodes)})
	}
	slices.SortFunc(x.reads, func(a, b readEntry) int { return cmp.Compare(a.h, b.h) })
	return x
}

// of counts name's readers.
func (x *readIndex) of(name string) readCount {
	h := maphash.String(x.seed, name)
	i, _ := slices.BinarySearchFunc(x.reads, h, func(e readEntry, h uint64) int { return cmp.Compare(e.h, h) })
	r := readCount{last: -1}
	for ; i < len(x.reads) && x.reads[i].h == h; i++ {
		if x.reads[i].node < x.nodes {
			r.n++
		}
		r.last = max(r.last, x.reads[i].node)
	}
	return r
}
