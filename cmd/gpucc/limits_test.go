package main

import (
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestRunHugeLimits: with every limit raised to MaxInt64, a [2^31,2^31]
// tensor's storage overflows int64. Every backend must refuse it with
// limit_exceeded as JSON, not crash (issue 11, item 6: wasm, webgpu and
// native panicked with exit 2).
func TestRunHugeLimits(t *testing.T) {
	max := strconv.FormatInt(1<<63-1, 10)
	doc := `{"version":1,"nodes":[{"id":0,"op":"full","shape":[2147483648,2147483648],"value":1},{"id":1,"op":"relu","a":0}],"outputs":[{"name":"y","id":1}]}`
	for _, b := range []string{"cpu", "wasm", "webgpu", "native"} {
		t.Run(b, func(t *testing.T) {
			out, v, code := gpucc(t, doc, "run", "--backend", b, "--allow-software", "--cache-dir", "off",
				"--max-elements", max, "--max-storage", max, "--max-ops", max, "--max-output-bytes", max, "-")
			if code != 1 || errorCode(v) != "limit_exceeded" || !strings.Contains(out, "2^63-1") {
				t.Errorf("exit %d, %s", code, out)
			}
		})
	}
}

// TestLimitFlagsDefined: every Limits field has a flag, from ir.LimitFlags,
// on every command that takes limits, defaulting to ir.DefaultLimits; a
// limit_exceeded names the flag that raises it.
func TestLimitFlagsDefined(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	l := limitFlags(fs)
	d := ir.DefaultLimits()
	typ := reflect.TypeOf(ir.Limits{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if typ.Field(i).Type.Kind() == reflect.Bool {
			continue // a policy (NonFinite), not a bound
		}
		r, ok := ir.LimitFlagOf(name)
		if !ok {
			t.Errorf("Limits.%s has no row in ir.LimitFlags", name)
			continue
		}
		f := fs.Lookup(r.Flag)
		if f == nil {
			t.Errorf("Limits.%s: gpucc defines no --%s", name, r.Flag)
			continue
		}
		if got, want := reflect.ValueOf(*l).Field(i).Int(), reflect.ValueOf(d).Field(i).Int(); got != want {
			t.Errorf("--%s defaults to %d, DefaultLimits' %s is %d", r.Flag, got, name, want)
		}
	}
	for _, cmd := range []string{"run", "build", "import", "train", "serve"} {
		out, stderr, _ := gpuccStderr(t, "", cmd, "-h")
		for _, r := range ir.LimitFlags {
			if !strings.Contains(out+stderr, "--"+r.Flag+" ") {
				t.Errorf("gpucc %s -h lists no -%s", cmd, r.Flag)
			}
		}
	}
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", "--max-nodes", "1", example("seed.json"))
	if code != 1 || errorCode(v) != "limit_exceeded" || !strings.Contains(fmt.Sprint(v["error"]), "raise Limits.MaxNodes (gpucc --max-nodes)") {
		t.Errorf("run --max-nodes 1: exit %d, %v", code, v)
	}
}
