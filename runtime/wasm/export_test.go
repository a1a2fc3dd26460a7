package wasm

import (
	"encoding/json"

	"github.com/gpucc/gpucc/codegen/c"
)

// Artifact is the wasm backend's prebuilt artifact of a C unit and its
// module, for tests that hand the backend one (backend.Program.Prebuilt).
func Artifact(unit *c.Unit, mod []byte) []byte {
	b, err := json.Marshal(artifact{Unit: unit, Module: mod})
	if err != nil {
		panic(err)
	}
	return b
}
