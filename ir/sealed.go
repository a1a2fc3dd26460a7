package ir

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// Sealed is a Program that passed ValidateProgram (and, when it has rows
// kernels, whose unfused form did too), with the facts that code
// generators and backends read of it decoded once: its structure key
// (Key) and its unfused form (Unfused). Only Seal makes one, so whoever
// holds a Sealed trusts it without checking it again.
//
// A Sealed is immutable: Seal takes ownership of the Program, and the
// Program that Program returns is for reading; nothing may modify it.
type Sealed struct {
	p       *Program
	key     []byte
	unfused *Sealed // itself when p has no rows kernel
}

// Seal validates p (ValidateProgram, and its unfused form's when it has
// rows kernels) and returns it sealed. p must not be modified afterwards.
func Seal(p *Program) (*Sealed, error) {
	programChecks.Add(1)
	if err := validateProgram(p); err != nil {
		return nil, err
	}
	s := &Sealed{p: p, key: p.Key()}
	s.unfused = s
	if p.hasRows() {
		u := p.Unfused()
		if err := validateProgram(u); err != nil {
			return nil, fmt.Errorf("the unfused program: %w", err)
		}
		s.unfused = &Sealed{p: u, key: u.Key()}
		s.unfused.unfused = s.unfused
	}
	return s, nil
}

// Program returns the sealed program, for reading only.
func (s *Sealed) Program() *Program { return s.p }

// Key returns the program's structure key (Program.Key), computed once by
// Seal. Callers must not modify it.
func (s *Sealed) Key() []byte { return s.key }

// Unfused returns the sealed program with each rows kernel replaced by
// its parts (Program.Unfused): s itself when it has none.
func (s *Sealed) Unfused() *Sealed { return s.unfused }

// WithoutData returns s with the Data of every input buffer dropped: the
// same structure and key, which ValidateProgram does not read data for,
// so it is sealed as s is. Caches that compile once for many inputs hold
// it, so that a cached executable does not keep the first run's data.
func (s *Sealed) WithoutData() *Sealed {
	strip := func(p *Program) *Program {
		q := *p
		q.Buffers = slices.Clone(p.Buffers)
		for i := range q.Buffers {
			q.Buffers[i].Data = nil
		}
		return &q
	}
	t := &Sealed{p: strip(s.p), key: s.key}
	t.unfused = t
	if s.unfused != s {
		t.unfused = &Sealed{p: strip(s.unfused.p), key: s.unfused.key}
		t.unfused.unfused = t.unfused
	}
	return t
}

// graphChecks and programChecks count the graphs Validate has checked
// and the programs Seal and ValidateProgram have (see Checks).
var graphChecks, programChecks atomic.Int64

// Checks returns how many graphs Validate has checked and how many
// programs Seal and ValidateProgram have, in this process so far. Tests
// read it to hold the compiler and runtime to checking each graph and
// program once: a compile validates the graph once and seals its Program
// once, and running a sealed plan checks nothing again. (The passes'
// check of the graph they rewrote, before lowering it, is theirs:
// ValidateStructure, not counted here.)
func Checks() (graphs, programs int64) { return graphChecks.Load(), programChecks.Load() }

// String returns the program's text form (Program.String).
func (s *Sealed) String() string { return s.p.String() }
