//go:build js

package main

// Training steps with the parameters resident (the host request
// "gpu.step"): the first step of a session sends the forward graph (its
// parameters marked "param": true), the scalar output's name and the
// learning rate; the adapter decodes it against the host's limits before
// anything is allocated, makes a gpucc.Trainer (grad.Step's graph, the
// parameters uploaded once) and answers {session, loss, params, ...}. A
// later step names the session and sends only the batch inputs that
// changed (by name; the others stay on the device), so the parameters are
// never uploaded again; they are read back for the guest when it asks
// ("params": true). Steps count against the engine's pending cap as
// executions do, need the grant, and a disposed engine gets no reply and
// has its sessions closed.

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/server"
)

// stepPayload is gpu.step's payload.
type stepPayload struct {
	Backend string          `json:"backend"`
	Session int             `json:"session"` // 0: a new session, from graph
	Graph   json.RawMessage `json:"graph"`
	Loss    string          `json:"loss"`
	LR      float32         `json:"lr"`
	Inputs  map[string]struct {
		Shape []int     `json:"shape"`
		Data  []float32 `json:"data"`
	} `json:"inputs"`
	Params bool `json:"params"`
}

// stepValue is a step's reply value.
type stepValue struct {
	Session int                     `json:"session"`
	Backend string                  `json:"backend"`
	Loss    float32                 `json:"loss"`
	Params  map[string]gpucc.Tensor `json:"params,omitempty"`
	Timings gpucc.Timings           `json:"timings"`
}

// session is one trainer of an engine; mu serialises its steps.
type session struct {
	mu      sync.Mutex
	backend string
	tr      *gpucc.Trainer
	closed  bool
}

// sessions is an adapter's training state.
type sessions struct {
	mu       sync.Mutex
	next     int
	byID     map[int]*session
	running  int                       // steps admitted and not finished
	runtimes map[string]*gpucc.Runtime // per backend
}

// step admits one gpu.step request, or returns why not.
func (a *adapter) step(raw string, allowSoftware bool, send func([]byte)) error {
	if !a.allow {
		return ir.Errorf(ir.CodeNotGranted, -1, "", "engine %s is not granted execution", a.client.ID())
	}
	var p stepPayload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return ir.Errorf(ir.CodeInvalidInput, -1, "", "gpu.step's payload is not {backend, session, graph, loss, lr, inputs, params}: %v", err)
	}
	s := &a.train
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running+a.client.Pending() >= a.maxPending {
		return ir.Errorf(ir.CodeBusy, -1, "", "engine %s has %d pending requests, its cap", a.client.ID(), a.maxPending)
	}
	var sess *session
	var g *ir.Graph
	if p.Session == 0 {
		graph := []byte(p.Graph)
		var text string
		if json.Unmarshal(graph, &text) == nil {
			graph = []byte(text)
		}
		var err error
		if g, err = ir.DecodeBytes(graph, ir.Limits{}); err != nil { // before anything is allocated
			return err
		}
		if p.Loss == "" {
			p.Loss = "loss"
		}
		backend := a.backend
		if p.Backend != "" && p.Backend != "auto" {
			backend = p.Backend
		}
		s.next++
		sess = &session{backend: backend}
		if s.byID == nil {
			s.byID = map[int]*session{}
		}
		s.byID[s.next] = sess
		p.Session = s.next
	} else if sess = s.byID[p.Session]; sess == nil {
		return ir.Errorf(ir.CodeInvalidInput, -1, "session", "no training session %d on engine %s", p.Session, a.client.ID())
	}
	batch := gpucc.Inputs{}
	for name, in := range p.Inputs {
		batch[name] = gpucc.NewTensor(ir.Shape(in.Shape), in.Data)
	}
	s.running++
	go func() {
		defer func() { s.mu.Lock(); s.running--; s.mu.Unlock() }()
		send(a.runStep(sess, g, p, batch, allowSoftware))
	}()
	return nil
}

// runStep makes the session's trainer on its first step, runs one step
// and returns the reply's JSON.
func (a *adapter) runStep(sess *session, g *ir.Graph, p stepPayload, batch gpucc.Inputs, allowSoftware bool) []byte {
	fail := func(err error) []byte { raw, _ := json.Marshal(server.Failed(err)); return raw }
	sess.mu.Lock()
	defer sess.mu.Unlock()
	ctx := context.Background()
	if sess.closed || a.gone.Load() {
		return fail(ir.Errorf(ir.CodeDisposed, -1, "", "the engine was disposed"))
	}
	if sess.tr == nil {
		rt, err := a.runtime(sess.backend, allowSoftware)
		if err != nil {
			return fail(err)
		}
		if sess.tr, err = rt.NewTrainer(ctx, g, p.Loss, p.LR); err != nil {
			return fail(err)
		}
		sess.backend = rt.Backend()
	}
	r, err := sess.tr.Step(ctx, batch)
	if err != nil {
		return fail(err)
	}
	v := stepValue{Session: p.Session, Backend: sess.backend, Loss: r.Loss, Timings: r.Timings}
	if p.Params {
		if v.Params, err = sess.tr.Params(ctx); err != nil {
			return fail(err)
		}
	}
	raw, err := json.Marshal(struct {
		OK    bool      `json:"ok"`
		Value stepValue `json:"value"`
	}{true, v})
	if err != nil {
		return fail(err)
	}
	return raw
}

// runtime returns the adapter's runtime of backend, opening it once.
func (a *adapter) runtime(backend string, allowSoftware bool) (*gpucc.Runtime, error) {
	s := &a.train
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt := s.runtimes[backend]; rt != nil {
		return rt, nil
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, AllowSoftware: allowSoftware})
	if err != nil {
		return nil, err
	}
	if s.runtimes == nil {
		s.runtimes = map[string]*gpucc.Runtime{}
	}
	s.runtimes[backend] = rt
	return rt, nil
}

// closeSessions closes every session once its running step is done, then
// the runtimes: the engine was disposed.
func (a *adapter) closeSessions() {
	s := &a.train
	s.mu.Lock()
	list := make([]*session, 0, len(s.byID))
	for _, sess := range s.byID {
		list = append(list, sess)
	}
	s.byID = nil
	s.mu.Unlock()
	for _, sess := range list {
		sess.mu.Lock()
		sess.closed = true
		if sess.tr != nil {
			sess.tr.Close()
		}
		sess.mu.Unlock()
	}
	s.mu.Lock()
	for _, rt := range s.runtimes {
		rt.Close()
	}
	s.runtimes = nil
	s.mu.Unlock()
}
