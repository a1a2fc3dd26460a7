// Package host is the old name of package server, which executes protocol
// v1 graphs for clients. "host" alone now means host memory, as in
// gpucc.Tensor and backend.HostMemory.
//
// Deprecated: import github.com/gpucc/gpucc/server; these names are
// aliases of its own.
package host

import "github.com/gpucc/gpucc/server"

// Deprecated: the names of package server.
type (
	Host      = server.Server
	Policy    = server.Policy
	Options   = server.Options
	Request   = server.Request
	Reply     = server.Reply
	ErrorBody = server.ErrorBody
	Client    = server.Client
)

// Deprecated: the names of package server.
const (
	DefaultMaxPending = server.DefaultMaxPending
	DefaultPoolBytes  = server.DefaultPoolBytes
)

// New returns a server.Server.
//
// Deprecated: use server.New.
func New(opts Options) *Host { return server.New(opts) }

// Failed is server.Failed.
//
// Deprecated: use server.Failed.
func Failed(err error) Reply { return server.Failed(err) }
