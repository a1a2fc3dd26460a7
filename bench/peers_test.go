package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// The peer benchmarks (issues 22, 23 and 24): gpucc's side of the
// workloads that bench/peers times in ONNX Runtime for Node and Web,
// TF.js-wasm and numpy. Every system fills its inputs with peerFill's
// formula (the same in peers.mjs and numpy_peers.py), so that each prints
// the position-weighted sum and the absolute sum of its output
// (peerChecksum) and bench/peers/summarize.py
// can check that all of them computed the same function before it puts
// their times side by side. bench/peers/README.md has the commands.

// peerFill is input name's data: element i is (k - 32768)/32768·scale with
// k = (40503·i + 9973·seed) mod 65536, exact in float32 in every language.
// Weights (w, w1, w2) are scaled by 1/16, the rest by 1.
func peerFill(name string, n int) []float32 {
	seeds := map[string]int{"a": 1, "b": 2, "c": 3, "x": 4, "y": 5, "w": 6, "bias": 7,
		"w1": 8, "b1": 9, "w2": 10, "b2": 11, "target": 12}
	seed, ok := seeds[name]
	if !ok {
		panic("peerFill: no seed for input " + name)
	}
	scale := 1.0
	if name == "w" || name == "w1" || name == "w2" {
		scale = 1.0 / 16
	}
	v := make([]float32, n)
	for i := range v {
		k := (40503*i + 9973*seed) % 65536
		v[i] = float32(float64(k-32768) / 32768 * scale)
	}
	return v
}

// peerWork is one workload: a graph whose inputs peerFill fills (or, for
// an exported model, its own input), run whole through Executable.RunWith,
// or, for a training step, through a Trainer.
type peerWork struct {
	name  string
	graph func() (*ir.Graph, error)
	step  bool // time Trainer.Step on the graph's "loss" instead of a run
}

func peerWorkloads() []peerWork {
	mk := func(f func(b *ir.Builder)) func() (*ir.Graph, error) {
		return func() (*ir.Graph, error) {
			b := ir.NewBuilder()
			f(b)
			return b.Build(Limits())
		}
	}
	in := func(b *ir.Builder, name string, s ir.Shape) ir.Tensor {
		return b.NamedInput(name, s, peerFill(name, s.Len()))
	}
	sq := func(f func(x ir.Tensor) ir.Tensor) func() (*ir.Graph, error) {
		return mk(func(b *ir.Builder) { b.Output("y", f(in(b, "x", ir.Shape{1024, 1024}))) })
	}
	mm := func(n int) func() (*ir.Graph, error) {
		return mk(func(b *ir.Builder) { b.Output("y", in(b, "a", ir.Shape{n, n}).MatMul(in(b, "b", ir.Shape{n, n}))) })
	}
	mlp := func(b *ir.Builder, param bool) ir.Tensor {
		p := func(name string, s ir.Shape) ir.Tensor {
			if param {
				return b.Param(name, s, peerFill(name, s.Len()))
			}
			return in(b, name, s)
		}
		x := in(b, "x", ir.Shape{256, 784})
		h := x.MatMul(p("w1", ir.Shape{784, 256})).Add(p("b1", ir.Shape{1, 256}).Broadcast(ir.Shape{256, 256})).Relu()
		return h.MatMul(p("w2", ir.Shape{256, 10})).Add(p("b2", ir.Shape{1, 10}).Broadcast(ir.Shape{256, 10}))
	}
	conv := func(c, group int) func() (*ir.Graph, error) {
		return mk(func(b *ir.Builder) {
			x := in(b, "x", ir.Shape{1, c, 56, 56})
			w := in(b, "w", ir.Shape{c, c / group, 3, 3})
			bias := in(b, "bias", ir.Shape{c, 1, 1})
			b.Output("y", x.Conv2D(w, map[string][]int{"pads": {1, 1, 1, 1}, "group": {group}}).Add(bias).Relu())
		})
	}
	model := func(name string) func() (*ir.Graph, error) {
		return func() (*ir.Graph, error) { return loadPeerModel(name) }
	}
	return []peerWork{
		{name: "model/mlp", graph: model("mlp")},
		{name: "model/digits", graph: model("digits")},
		{name: "model/transformer", graph: model("transformer")},
		{name: "conv/resnet3x3-64", graph: conv(64, 1)},
		{name: "conv/depthwise3x3-256", graph: conv(256, 256)},
		{name: "conv/maxpool3x3s2-64", graph: mk(func(b *ir.Builder) {
			x := in(b, "x", ir.Shape{1, 64, 56, 56})
			b.Output("y", x.MaxPool2D(map[string][]int{"kernel_shape": {3, 3}, "strides": {2, 2}, "pads": {1, 1, 1, 1}}))
		})},
		{name: "relu(a*b+c)/1M", graph: mk(func(b *ir.Builder) {
			s := ir.Shape{1 << 20}
			b.Output("y", in(b, "a", s).Mul(in(b, "b", s)).Add(in(b, "c", s)).Relu())
		})},
		{name: "chain16/1M", graph: mk(func(b *ir.Builder) {
			// bench.Chain(1<<20, 16) with named inputs.
			s := ir.Shape{1 << 20}
			x, y := in(b, "x", s), in(b, "y", s)
			v := x
			for i := range 16 {
				switch i % 6 {
				case 0:
					v = v.Relu()
				case 1:
					v = v.Mul(y)
				case 2:
					v = v.AddScalar(0.25)
				case 3:
					v = v.Sub(y)
				case 4:
					v = v.MulScalar(0.5)
				case 5:
					v = v.Add(x)
				}
			}
			b.Output("y", v)
		})},
		{name: "softmax/1024x1024", graph: sq(func(x ir.Tensor) ir.Tensor { return x.Softmax(1) })},
		{name: "layernorm/1024x1024", graph: sq(func(x ir.Tensor) ir.Tensor { return x.LayerNorm(1, 1e-5) })},
		{name: "rowsum/1024x1024", graph: sq(func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 1) })},
		{name: "colsum/1024x1024", graph: sq(func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 0) })},
		{name: "rowmax/1024x1024", graph: sq(func(x ir.Tensor) ir.Tensor { return x.MaxAxes(false, 1) })},
		{name: "matmul/512", graph: mm(512)},
		{name: "matmul/1024", graph: mm(1024)},
		{name: "mlp/256x784-256-10", graph: mk(func(b *ir.Builder) { b.Output("y", mlp(b, false)) })},
		{name: "mlpstep/256x784-256-10", step: true, graph: mk(func(b *ir.Builder) {
			// Mean over the batch of the squared error's row sums; SGD at
			// lr 0.01 (numpy_peers.py and peers.mjs take the same step).
			d := mlp(b, true).Sub(in(b, "target", ir.Shape{256, 10}))
			b.Output("loss", d.Mul(d).Sum().MulScalar(1.0/256))
		})},
	}
}

// peerModels is where the exported models are: onnx/testdata/models, and
// GPUCC_PEER_MODELS (the transformer, which is not in the repository).
func peerModelPath(name string) string {
	if dir := os.Getenv("GPUCC_PEER_MODELS"); dir != "" {
		if p := filepath.Join(dir, name+".onnx"); fileExists(p) {
			return p
		}
	}
	return filepath.Join("..", "onnx", "testdata", "models", name+".onnx")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// loadPeerModel imports an exported model and binds its input x to the
// model's own input file beside it.
func loadPeerModel(name string) (*ir.Graph, error) {
	path := peerModelPath(name)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: Limits()})
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(filepath.Join(filepath.Dir(path), name+".input.bin"))
	if err != nil {
		return nil, err
	}
	x := make([]float32, len(bin)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(bin[4*i:]))
	}
	return g, g.SetInput("x", x)
}

// TestPeers prints, for GPUCC_PEERS=native,wasm,webgpu, a line per
// workload and backend: "peer", the system, the workload, the best of
// GPUCC_PEERS_RUNS (default 15) warm runs in ms, and the output's sum and
// absolute sum (peerChecksum; of the loss before the first step, for a
// step), tab separated, the format of bench/peers/peers.mjs and
// numpy_peers.py; then gpucc's best kernel time (the backend's dispatch
// clock), which the peers do not print.
// GPUCC_PEERS_ONLY is a regexp on the workload names; GPUCC_PEERS_SUFFIX
// is appended to the system's name (run.sh's "-1t" for GPUCC_THREADS=1). A workload a backend
// cannot compile or run prints a "skip" line with why. Skipped unless
// GPUCC_PEERS is set: bench/peers/run.sh runs it interleaved with the
// peers.
func TestPeers(t *testing.T) {
	backends := os.Getenv("GPUCC_PEERS")
	if backends == "" {
		t.Skip("GPUCC_PEERS is unset (bench/peers/run.sh sets it)")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_PEERS_RUNS"))
	if runs <= 0 {
		runs = 15
	}
	only, err := regexp.Compile(os.Getenv("GPUCC_PEERS_ONLY"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, be := range splitComma(backends) {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, AllowSoftware: true, Limits: Limits()})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range peerWorkloads() {
			if !only.MatchString(w.name) {
				continue
			}
			system := "gpucc-" + be + os.Getenv("GPUCC_PEERS_SUFFIX")
			r, err := timePeer(ctx, rt, w, runs)
			if err != nil {
				fmt.Printf("skip\t%s\t%s\t%v\n", system, w.name, oneLine(err))
				continue
			}
			fmt.Printf("peer\t%s\t%s\t%.4f\t%.9g\t%.9g\t%.4f\n", system, w.name, r.best, r.sum, r.asum, r.kernels)
		}
		rt.Close()
	}
}

// peerTime is a workload's best whole run and best kernel time (the
// backend's dispatch clock) in ms, and its output's peerChecksum.
type peerTime struct{ best, kernels, sum, asum float64 }

// timePeer compiles w and times runs warm runs after one.
func timePeer(ctx context.Context, rt *gpucc.Runtime, w peerWork, runs int) (peerTime, error) {
	r := peerTime{best: math.Inf(1), kernels: math.Inf(1)}
	g, err := w.graph()
	if err != nil {
		return r, err
	}
	if w.step {
		tr, err := rt.NewTrainer(ctx, g, "loss", 0.01)
		if err != nil {
			return r, err
		}
		defer tr.Close()
		for i := range runs + 1 {
			start := time.Now()
			res, err := tr.Step(ctx, nil)
			if err != nil {
				return r, err
			}
			if i == 0 {
				r.sum, r.asum = peerChecksum([]float32{res.Loss})
				continue
			}
			r.best = min(r.best, float64(time.Since(start).Nanoseconds())/1e6)
			r.kernels = min(r.kernels, res.Timings.DispatchMs)
		}
		return r, nil
	}
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		return r, err
	}
	defer exe.Release()
	in := gpucc.Inputs{}
	for _, n := range g.Nodes {
		// Models run on their input x, their weights embedded; every other
		// workload's inputs are passed on each run, as a peer's are.
		if n.Op == ir.OpInput && (n.Name == "x" || !isModel(w.name)) {
			in[n.Name] = gpucc.Tensor{Shape: n.Shape, Data: n.Data}
		}
	}
	into := map[string][]float32{}
	for _, o := range exe.Plan().Program.Outputs {
		into[o.Name] = make([]float32, o.Shape.Len())
	}
	for i := range runs + 1 {
		start := time.Now()
		res, err := exe.RunWith(ctx, in, gpucc.RunOptions{Into: into})
		if err != nil {
			return r, err
		}
		if i > 0 {
			r.best = min(r.best, float64(time.Since(start).Nanoseconds())/1e6)
			r.kernels = min(r.kernels, res.Timings.DispatchMs)
		}
	}
	r.sum, r.asum = peerChecksum(into["y"])
	return r, nil
}

// peerChecksum is an output's position-weighted sum Σ y[i]·h(i), with
// h(i) = (2654435761·i mod 2³²)/2³², and its absolute sum Σ |y[i]|: the
// weights make a permuted or shifted output disagree, which a plain sum
// would not see. peers.mjs and numpy_peers.py compute the same.
func peerChecksum(y []float32) (wsum, asum float64) {
	for i, v := range y {
		wsum += float64(v) * float64(uint32(i)*2654435761) / (1 << 32)
		asum += math.Abs(float64(v))
	}
	return wsum, asum
}

func isModel(name string) bool { return len(name) > 6 && name[:6] == "model/" }

func oneLine(err error) string {
	return regexp.MustCompile(`\s+`).ReplaceAllString(err.Error(), " ")
}

// TestPeerHarness checks that bench/peers' harnesses compute gpucc's
// functions: ORT-node and TF.js-wasm on a few workloads, one run each,
// against cpuref's output sums (the rule of summarize.py: within 1e-4 of
// the absolute sum). A peer that read its inputs in another order, or ran
// another graph, would be timed on another problem. It needs the peers
// installed (make peers-deps) and skips without them.
func TestPeerHarness(t *testing.T) {
	dir := filepath.Join("peers")
	if !fileExists(filepath.Join(dir, "node_modules")) {
		t.Skip("bench/peers/node_modules is absent: make peers-deps installs ONNX Runtime and TF.js")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: make peers-deps installs it")
	}
	only := `^(model/mlp|model/digits|conv/maxpool3x3s2-64|conv/depthwise3x3-256|relu\(a\*b\+c\)/1M|layernorm/1024x1024|mlpstep/256x784-256-10)$`
	if out, err := exec.Command("/usr/bin/python3", filepath.Join(dir, "make_onnx.py")).CombinedOutput(); err != nil {
		t.Fatalf("make_onnx.py: %v\n%s", err, out)
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu", Limits: Limits()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	re := regexp.MustCompile(only)
	want := map[string][2]float64{}
	for _, w := range peerWorkloads() {
		if !re.MatchString(w.name) {
			continue
		}
		r, err := timePeer(context.Background(), rt, w, 0)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		want[w.name] = [2]float64{r.sum, r.asum}
	}
	for _, args := range [][]string{{"ort-node", "1", "0", only}, {"tfjs", "0", only}} {
		cmd := exec.Command("node", append([]string{"peers.mjs"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node peers.mjs %v: %v\n%s", args, err, out)
		}
		seen := 0
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 6 || f[0] != "peer" {
				continue
			}
			w, ok := want[f[2]]
			if !ok {
				t.Errorf("%s ran %s, which TestPeers does not have", f[1], f[2])
				continue
			}
			s, _ := strconv.ParseFloat(f[4], 64)
			a, _ := strconv.ParseFloat(f[5], 64)
			if tol := 1e-4 * w[1]; !(math.Abs(s-w[0]) <= tol && math.Abs(a-w[1]) <= tol) {
				t.Errorf("%s %s: output sum %g, |sum| %g; cpuref's %g, %g", f[1], f[2], s, a, w[0], w[1])
			}
			seen++
		}
		if seen == 0 {
			t.Errorf("node peers.mjs %v printed no result:\n%s", args, out)
		}
	}
}
