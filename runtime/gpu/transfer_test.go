//go:build !js

package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/gpucc/gpucc/runtime/gpu/internal/copycheck"
)

// TestUploadChecked: the first non-finite element is found wherever it
// lies (first, last, inside a chunk, at a worker's boundary), on every
// path, and finite data arrives whole.
func TestUploadChecked(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	// 3 MiB and a bit: several workers, several 1 MiB chunks; and 1001
	// values, a run's small host input, below smallUpload.
	for _, n := range []int{3<<18 + 5, 1001} {
		testUploadChecked(t, d, n)
	}
}

func testUploadChecked(t *testing.T, d *Device, n int) {
	buf := mustBuffer(t, d, 4*uint64(n), "checked")
	defer buf.Release()
	bads := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, c := range []struct {
		path  UploadPath
		chunk uint64
	}{{UploadWriteBuffer, 0}, {UploadStaging, 0}, {UploadStaging, 1 << 20}} {
		d.SetUpload(c.path, c.chunk)
		for _, at := range []int{-1, 0, 1, 7, 8, 1<<18 - 1, 1 << 18, 1<<18 + 3, n/2 + 1, n - 2, n - 1} {
			if at >= n {
				continue
			}
			t.Run(fmt.Sprintf("n=%d/%v/chunk=%d/at=%d", n, c.path, c.chunk, at), func(t *testing.T) {
				data := make([]float32, n)
				for i := range data {
					data[i] = float32(i%1000) - 3e38*float32(i%2) // large but finite
				}
				data[n-3] = math.Float32frombits(0x80000001) // a negative subnormal, finite
				want := -1
				if at >= 0 {
					data[at] = bads[at%3]
					if at+5 < n {
						data[at+5] = bads[(at+1)%3] // a later one is not reported
					}
					want = at
				}
				got, err := d.UploadChecked(buf, data)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("UploadChecked = %d, want %d", got, want)
				}
				if want >= 0 {
					return
				}
				back := make([]float32, n)
				if err := d.Read(buf, back); err != nil {
					t.Fatal(err)
				}
				for i := range data {
					if math.Float32bits(back[i]) != math.Float32bits(data[i]) {
						t.Fatalf("element %d = %v, want %v", i, back[i], data[i])
					}
				}
			})
		}
	}
}

func TestFirstNonFinite(t *testing.T) {
	for n := 0; n < 20; n++ {
		for at := -1; at < n; at++ {
			s := make([]float32, n)
			for i := range s {
				s[i] = math.MaxFloat32
			}
			if at >= 0 {
				s[at] = float32(math.NaN())
			}
			if got := firstNonFinite(f32Bytes(s)); got != at {
				t.Errorf("n=%d at=%d: got %d", n, at, got)
			}
		}
	}
}

// TestReadAllocs: a warm Read into the caller's slice allocates no result
// memory: its allocation count does not grow with the size read.
func TestReadAllocs(t *testing.T) {
	d := openDevice(t)
	counts := map[int]float64{}
	for _, n := range []int{1 << 10, 1 << 20} {
		buf := mustBuffer(t, d, 4*uint64(n), "read")
		out := make([]float32, n)
		if err := d.Read(buf, out); err != nil { // warm: the ring
			t.Fatal(err)
		}
		counts[n] = testing.AllocsPerRun(5, func() {
			if err := d.Read(buf, out); err != nil {
				t.Fatal(err)
			}
		})
		buf.Release()
	}
	t.Logf("allocations per Read: %v", counts)
	if counts[1<<20] > counts[1<<10]+16 {
		t.Errorf("allocations grow with the size read: %v", counts)
	}
}

// TestRunRead: RunRead gives what Run then Read give, for a result within
// one staging chunk and one larger.
func TestRunRead(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	d.SetUpload(UploadWriteBuffer, 4096) // chunks of 1024 floats
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	for _, n := range []int{64, 1024, 5000} {
		x, y := mustBuffer(t, d, 4*uint64(n), "x"), mustBuffer(t, d, 4*uint64(n), "y")
		u, err := d.NewUniform(u32Uniform(uint32(n)), "n")
		if err != nil {
			t.Fatal(err)
		}
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i)
		}
		if err := d.Upload(x, in); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{uint32(n+63) / 64, 1, 1}}}
		if err := d.RunRead(ds, y, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != in[i]+1 {
				t.Fatalf("n=%d: element %d = %v", n, i, got[i])
			}
		}
		x.Release()
		y.Release()
		u.Release()
	}
}

// TestReadChecked: the first non-finite element read back is found
// wherever it lies (first, last, at a chunk's and a worker's boundary),
// with one staging chunk and with many, and finite data arrives whole.
func TestReadChecked(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	const n = 3<<18 + 5 // 3 MiB and a bit: several workers, several 1 MiB chunks
	buf := mustBuffer(t, d, 4*n, "checked")
	defer buf.Release()
	bads := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, chunk := range []uint64{0, 1 << 20} {
		d.SetUpload(UploadWriteBuffer, chunk) // the read ring's chunk is the upload chunk
		for _, at := range []int{-1, 0, 1, 7, 8, 1<<18 - 1, 1 << 18, 1<<18 + 3, n/2 + 1, n - 2, n - 1} {
			t.Run(fmt.Sprintf("chunk=%d/at=%d", chunk, at), func(t *testing.T) {
				data := make([]float32, n)
				for i := range data {
					data[i] = float32(i%1000) - 3e38*float32(i%2)
				}
				want := -1
				if at >= 0 {
					data[at] = bads[at%3]
					if at+5 < n {
						data[at+5] = bads[(at+1)%3] // a later one is not reported
					}
					want = at
				}
				if err := d.Upload(buf, data); err != nil {
					t.Fatal(err)
				}
				back := make([]float32, n)
				got, err := d.ReadChecked(buf, back)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("ReadChecked = %d, want %d", got, want)
				}
				if want >= 0 {
					return
				}
				for i := range data {
					if math.Float32bits(back[i]) != math.Float32bits(data[i]) {
						t.Fatalf("element %d = %v, want %v", i, back[i], data[i])
					}
				}
			})
		}
	}
}

// TestRunReads: RunReads gives each output's bits, finds the first
// non-finite value of a checked output, and takes one submission and one
// wait for the dispatches, the timestamps and every output within one
// staging chunk (a run used to take one of each per output, and one more
// for the timestamps); outputs past the chunk are read after the run.
func TestRunReads(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	d.SetUpload(UploadWriteBuffer, 1<<16) // the read chunk: 16384 floats
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	bad := float32(math.Inf(-1))
	for _, tc := range []struct {
		name   string
		ns     []int // each output's length
		badAt  int   // a -Inf in the second output's input there (-1: none)
		rounds int   // submissions and waits
	}{
		{"one", []int{64}, -1, 1},
		{"three", []int{5, 1024, 3}, -1, 1},
		{"chunk exactly", []int{8192, 8192}, -1, 1},
		{"bad first", []int{7, 100}, 0, 1},
		{"bad last", []int{7, 100}, 99, 1},
		{"past the chunk", []int{8192, 8193}, -1, -1},
		{"past the chunk, bad", []int{8192, 20000}, 16385, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ds []Dispatch
			var rs []ReadBack
			var ins [][]float32
			for k, n := range tc.ns {
				x, y := mustBuffer(t, d, 4*uint64(n), "x"), mustBuffer(t, d, 4*uint64(n), "y")
				u, err := d.NewUniform(u32Uniform(uint32(n)), "n")
				if err != nil {
					t.Fatal(err)
				}
				defer func() { x.Release(); y.Release(); u.Release() }()
				in := make([]float32, n)
				for i := range in {
					in[i] = float32(i*7+k) - 3e38*float32(i%2)
				}
				if k == 1 && tc.badAt >= 0 {
					in[tc.badAt] = bad
					if tc.badAt+3 < n {
						in[tc.badAt+3] = float32(math.NaN()) // a later one is not reported
					}
				}
				if err := d.Upload(x, in); err != nil {
					t.Fatal(err)
				}
				ins = append(ins, in)
				ds = append(ds, Dispatch{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{uint32(n+63) / 64, 1, 1}})
				rs = append(rs, ReadBack{Buf: y, Out: make([]float32, n), Check: true})
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			s0, w0 := d.n.Submits, d.n.Waits
			if _, err := d.RunReads(ds, rs); err != nil {
				t.Fatal(err)
			}
			if tc.rounds > 0 && (d.n.Submits-s0 != tc.rounds || d.n.Waits-w0 != tc.rounds) {
				t.Errorf("%d submissions and %d waits, want %d of each", d.n.Submits-s0, d.n.Waits-w0, tc.rounds)
			}
			for k, r := range rs {
				want := -1
				if k == 1 && tc.badAt >= 0 {
					want = tc.badAt
				}
				if r.Bad != want {
					t.Fatalf("output %d: Bad = %d, want %d", k, r.Bad, want)
				}
				if want >= 0 {
					break // the outputs after a bad one are not read
				}
				for i, v := range r.Out {
					if w := ins[k][i] + 1; math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("output %d element %d = %v, want %v", k, i, v, w)
					}
				}
			}
		})
	}
}

// TestFirstNonFiniteWords: firstNonFinite finds the first word whose
// exponent is all ones (±Inf, every NaN) in every position of slices of
// 0-70 words, at every 4-byte alignment, among fillers at the edges of
// the finite range (±MaxFloat32, ±0, subnormals, a word below the
// largest exponent): each against the word-by-word definition.
func TestFirstNonFiniteWords(t *testing.T) {
	fill := []uint32{0x7f7fffff, 0xff7fffff, 0, 0x80000000, 1, 0x807fffff, 0x7f000000, 0x3f800000}
	bad := []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffffffff, 0x7f800001}
	raw := make([]uint32, 80)
	for n := 0; n <= 70; n++ {
		for shift := 0; shift < 2; shift++ { // the first word 8-aligned or not
			s := raw[shift : shift+n]
			for at := -1; at < n; at++ {
				for k := range s {
					s[k] = fill[(k*7+at+n)%len(fill)]
				}
				if at >= 0 {
					s[at] = bad[(at+n)%len(bad)]
					if at+1 < n {
						s[at+1] = bad[(at+n+1)%len(bad)] // a later one is not reported
					}
				}
				var b []byte
				if n > 0 {
					b = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*n)
				}
				if got := firstNonFinite(b); got != at {
					t.Fatalf("n=%d shift=%d at=%d: got %d", n, shift, at, got)
				}
			}
		}
	}
}

// TestCopyWorkers: GPUCC_COPY_WORKERS sets the bound of a host copy's
// goroutines; otherwise it is GOMAXPROCS up to 16, and a copy takes one
// goroutine per 512 KiB up to the bound.
func TestCopyWorkers(t *testing.T) {
	for _, c := range []struct {
		env         string
		procs, want int
	}{{"", 2, 2}, {"", 16, 16}, {"", 64, 16}, {"24", 2, 24}, {"0", 8, 8}, {"x", 4, 4}, {"-1", 32, 16}} {
		if got := copyWorkersFrom(c.env, c.procs); got != c.want {
			t.Errorf("GPUCC_COPY_WORKERS=%q with %d procs: %d, want %d", c.env, c.procs, got, c.want)
		}
	}
	defer func(old int) { maxCopyWorkers = old }(maxCopyWorkers)
	maxCopyWorkers = 16
	for n, want := range map[int]int{parallelMin - 1: 1, parallelMin: 2, 4 << 20: 8, 16 << 20: 16, 256 << 20: 16} {
		if got := copyWorkers(n); got != want {
			t.Errorf("copyWorkers(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestSubmitReads: runs submitted with their reads, waited for in any
// order, give each output's bits, and waiting submits nothing (a read
// submitted at the wait would queue behind every later run); a checked
// read names its first non-finite value; a staged run given up is
// released, and its buffer serves a later run; reads past one chunk come
// back nil, for the caller to read after the run.
func TestSubmitReads(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	d.SetUpload(UploadWriteBuffer, 1<<16) // the read chunk: 16384 floats
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	const runs, n = 6, 3000
	type run struct {
		in []float32
		st *Staged
	}
	var rs []run
	for k := range runs {
		x, y := mustBuffer(t, d, 4*n, "x"), mustBuffer(t, d, 4*n, "y")
		u, err := d.NewUniform(u32Uniform(n), "n")
		if err != nil {
			t.Fatal(err)
		}
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i*k) - 1e38*float32(i%3)
		}
		if k == 4 {
			in[1234] = float32(math.Inf(1))
		}
		if err := d.Upload(x, in); err != nil {
			t.Fatal(err)
		}
		ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{(n + 63) / 64, 1, 1}}}
		st, err := d.SubmitReads(ds, []ReadBack{{Buf: y, Out: make([]float32, n), Check: true}})
		if err != nil || st == nil {
			t.Fatalf("run %d: staged %v, err %v", k, st, err)
		}
		x.Release() // the device orders the buffers' reuse after the run
		y.Release()
		u.Release()
		rs = append(rs, run{in, st})
	}
	rs[5].st.Release() // given up
	s0, _ := d.RoundTrips()
	for _, k := range []int{3, 0, 4, 1, 2} {
		if _, err := rs[k].st.Wait(); err != nil {
			t.Fatal(err)
		}
		r := rs[k].st.Reads()[0]
		if k == 4 {
			if r.Bad != 1234 {
				t.Fatalf("run 4: Bad = %d, want 1234", r.Bad)
			}
			continue
		}
		if r.Bad != -1 {
			t.Fatalf("run %d: Bad = %d", k, r.Bad)
		}
		for i, v := range r.Out {
			if w := rs[k].in[i] + 1; math.Float32bits(v) != math.Float32bits(w) {
				t.Fatalf("run %d element %d = %v, want %v", k, i, v, w)
			}
		}
	}
	if s, _ := d.RoundTrips(); s != s0 {
		t.Errorf("waiting for staged runs submitted %d times", s-s0)
	}
	if _, err := rs[0].st.Wait(); err != nil {
		t.Fatalf("a second wait: %v", err)
	}
	d.mu.Lock()
	spare := len(d.spare)
	d.mu.Unlock()
	if spare != runs {
		t.Errorf("%d staging buffers spare after %d runs, want %d", spare, runs, runs)
	}
	big := mustBuffer(t, d, 4*(1<<14+1), "big")
	defer big.Release()
	if st, err := d.SubmitReads(nil, []ReadBack{{Buf: big, Out: make([]float32, 1<<14+1)}}); err != nil || st != nil {
		t.Fatalf("a read past the chunk: staged %v, err %v", st, err)
	}
}

// TestCopyCheckedPaths runs copyChecked both ways, fused (copycheck.Copy,
// where the CPU has AVX2) and in blocks, on readback and upload, over
// sizes that take one worker and several (a piece's edge every 64 bytes
// past 1 MiB), cached and streaming stores, with the first non-finite
// word first, last, at a block's, a worker's and a 128-byte group's
// edge, and none: the index is the first, the word there is copied (a
// caller names the value from the copy), and finite data arrives whole.
func TestCopyCheckedPaths(t *testing.T) {
	defer func(f bool) { fusedCheck = f }(fusedCheck)
	for _, fused := range []bool{false, true} {
		if fused && !copycheck.Available {
			continue
		}
		fusedCheck = fused
		for _, n := range []int{3, 4<<10 + 7, 1<<18 + 5, 3<<18 + 13} { // words
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(i%1000) - 3e38*float32(i%2)
			}
			src[1] = math.Float32frombits(1)
			raw := f32Bytes(src)
			for _, at := range []int{-1, 0, 1, 31, 32, n / 2, 1<<16 - 1, 1 << 16, 1<<18 - 1, n - 1} {
				if at >= n {
					continue
				}
				for _, readback := range []bool{false, true} {
					data := append([]byte(nil), raw...)
					if at >= 0 {
						binary.LittleEndian.PutUint32(data[4*at:], 0x7fc00000|uint32(at))
						if at+2 < n {
							binary.LittleEndian.PutUint32(data[4*(at+2):], 0xff800000) // later: not reported
						}
					}
					dst := make([]byte, len(data))
					got := copyChecked(dst, data, readback)
					if got != at {
						t.Fatalf("fused %v, %d words, readback %v: copyChecked = %d, want %d", fused, n, readback, got, at)
					}
					if at < 0 && !bytes.Equal(dst, data) {
						t.Fatalf("fused %v, %d words, readback %v: finite data not copied whole", fused, n, readback)
					}
					if at >= 0 && !bytes.Equal(dst[4*at:4*at+4], data[4*at:4*at+4]) { // the caller names it from dst
						t.Fatalf("fused %v, %d words, readback %v: the non-finite word not copied", fused, n, readback)
					}
				}
			}
		}
	}
}
