package c

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestTypedGraphsMatchCpuref: random graphs over every dtype
// (irtest.RandomTyped: elementwise rows, casts, where, views, gathers,
// reductions), emitted by EmitTypedGraph and compiled with the system
// compiler, give cpuref.EvalTyped's bits on every output, and fault
// exactly where the reference fails the run (integer_fault, or
// invalid_input for a gather index). Every graph must be emitted: a new
// row without its C fails here.
func TestTypedGraphsMatchCpuref(t *testing.T) {
	cc := compiler(t)
	const graphs = 96
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n")
	src.WriteString(TypedPrelude())
	var main strings.Builder
	main.WriteString("int main(void) {\n")
	type run struct {
		seed int
		g    *ir.Graph
	}
	var runs []run
	skipped := 0
	for seed := range graphs {
		g := irtest.RandomTyped(uint64(seed), 24)
		fn := fmt.Sprintf("graph%d", seed)
		unit, err := EmitTypedGraph(g, fn)
		if err != nil {
			if !errors.Is(err, ir.ErrUnsupported) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			skipped++
			continue
		}
		runs = append(runs, run{seed, g})
		src.WriteString(unit)
		fmt.Fprintf(&main, "\t{\n\t\tvoid *b[%d]; int fault[2] = {0, 0};\n", len(g.Nodes))
		for i, n := range g.Nodes {
			fmt.Fprintf(&main, "\t\tb[%d] = calloc(%d, 8);\n", i, n.Shape.Len()+1)
			if n.Op != ir.OpInput {
				continue
			}
			v := cpuref.Value{DType: n.DType, F: n.Data, I: n.Ints}
			var lits []string
			for k := range v.Len() {
				lits = append(lits, cLiteral(v, k))
			}
			st := StorageType(n.DType)
			if n.DType == ir.F32 {
				st = "t_u32"
			}
			fmt.Fprintf(&main, "\t\t{ static const %s in[%d] = {%s}; memcpy(b[%d], in, sizeof in); }\n", st, len(lits), strings.Join(lits, ", "), i)
		}
		fmt.Fprintf(&main, "\t\t%s(b, fault);\n\t\tprintf(\"graph %d %%d %%d\\n\", fault[0], fault[1]);\n\t\tif (!fault[0]) {\n", fn, seed)
		for _, o := range g.Outputs {
			n := g.Nodes[o.ID]
			elem := fmt.Sprintf("((%s *)b[%d])[k]", StorageType(n.DType), o.ID)
			switch n.DType {
			case ir.F32:
				fmt.Fprintf(&main, "\t\t\tfor (int k = 0; k < %d; k++) { t_fu u; u.f = %s; printf(\"%%u\\n\", u.u); }\n", n.Shape.Len(), elem)
			case ir.F16, ir.BF16:
				fmt.Fprintf(&main, "\t\t\tfor (int k = 0; k < %d; k++) { t_fu u; u.f = %s; printf(\"%%u\\n\", u.u); }\n", n.Shape.Len(), typedLoad(n.DType, elem))
			default:
				fmt.Fprintf(&main, "\t\t\tfor (int k = 0; k < %d; k++) printf(\"%%lld\\n\", (t_i64)%s);\n", n.Shape.Len(), elem)
			}
		}
		main.WriteString("\t\t}\n\t}\n")
	}
	main.WriteString("\treturn 0;\n}\n")
	src.WriteString(main.String())
	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "graphs.c"), filepath.Join(dir, "graphs")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O1", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99", "-o", exe, cfile}
	if goruntime.GOARCH == "amd64" {
		flags = append(flags, "-mno-fma")
	}
	if out, err := exec.Command(cc, flags...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	raw, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	next := func() string {
		if !sc.Scan() {
			t.Fatal("the C driver's output ends early")
		}
		return sc.Text()
	}
	faults := 0
	for _, r := range runs {
		var fault, node int
		fmt.Sscanf(next(), "graph %d %d %d", new(int), &fault, &node)
		vals, err := cpuref.EvalTyped(r.g)
		want := 0
		switch {
		case errors.Is(err, ir.ErrIntegerFault):
			want = FaultInteger
		case errors.Is(err, ir.ErrInvalidInput):
			want = FaultIndex
		case err != nil:
			t.Fatalf("seed %d: %v", r.seed, err)
		}
		if fault != want {
			t.Errorf("seed %d: C fault %d, cpuref %v", r.seed, fault, err)
			break // the output stream no longer lines up
		}
		if e, ok := err.(*ir.Error); ok && fault != 0 && node != e.Node {
			t.Errorf("seed %d: C faults at node %d, cpuref at %d (%v)", r.seed, node, e.Node, err)
		}
		if fault != 0 {
			faults++
			continue
		}
		for _, o := range r.g.Outputs {
			v := vals[o.ID]
			for k := range v.Len() {
				got, w := next(), format(v, k)
				if got != w && !(v.DType.IsFloat() && isNaN(got) && isNaN(w)) {
					t.Errorf("seed %d output %s (%v) element %d: C %s, cpuref %s\n%s", r.seed, o.Name, v.DType, k, got, w, ir.Encode(r.g))
					return
				}
			}
		}
	}
	if skipped > 0 { // every row a typed graph can hold has its C
		t.Errorf("%d of %d graphs hold an op the C typed path lacks", skipped, graphs)
	}
	t.Logf("%d random typed graphs match cpuref (%d faulting as it does); %d hold an op the C rows lack", len(runs), faults, skipped)
}
