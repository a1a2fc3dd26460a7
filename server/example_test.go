package server_test

import (
	"context"
	"fmt"
	"strings"

	_ "github.com/gpucc/gpucc/runtime/cpu" // the backends a host runs on are those built in
	"github.com/gpucc/gpucc/server"
)

// A host grants a client, runs its graph on the cpu reference and answers
// the seed's envelope; an ungranted client gets not_granted.
func Example() {
	h := server.New(server.Options{Policy: server.Policy{Backends: []string{"cpu"}}})
	defer h.Close(context.Background())
	graph := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
		{"id":1,"op":"relu","a":0}],"outputs":[{"name":"y","id":1}]}`

	h.Grant("tenant-1")
	guest := h.Client("tenant-1")
	defer guest.Dispose()
	r := guest.Execute(context.Background(), server.Request{Graph: strings.NewReader(graph), Backend: "cpu"})
	fmt.Println(r.OK, r.Value.Outputs["y"].Data)

	stranger := h.Client("tenant-2")
	r = stranger.Execute(context.Background(), server.Request{Graph: strings.NewReader(graph), Backend: "cpu"})
	fmt.Println(r.OK, r.Error.Code)
	// Output:
	// true [0 3 4]
	// false not_granted
}
