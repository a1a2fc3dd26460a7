package main

import (
	"strconv"
	"strings"
	"testing"
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
