//go:build !js

package tune

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// Entry is a tuned tile for one device, mode and shape class.
type Entry struct {
	Tile   ir.Tile `json:"tile"`
	Shape  string  `json:"shape"`  // the shape it was tuned on
	TFLOPS float64 `json:"tflops"` // measured there
	Date   string  `json:"date"`
}

// Table maps Key(adapter, mode, class) to the winning tile.
type Table struct {
	Version int              `json:"version"`
	Entries map[string]Entry `json:"entries"`
}

// Key names a table entry: the adapter's name, driver and backend, the
// mode (exact or fast) and the shape class.
func Key(info gpu.AdapterInfo, fast bool, class string) string {
	mode := "exact"
	if fast {
		mode = "fast"
	}
	return strings.Join([]string{info.Name, info.Driver, info.Backend, mode, class}, "|")
}

//go:embed tables
var builtin embed.FS

// tableFile is the table's path under the cache directory, and
// maxTableBytes the most a table file may hold: a table has an entry per
// device, mode and shape class, a few hundred bytes each.
const (
	tableFile     = "tune/matmul.json"
	maxTableBytes = 4 << 20
)

// PathIn is the table's path under the cache directory dir: tune/matmul.json
// ("" when dir is, a memory-only cache).
func PathIn(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, filepath.FromSlash(tableFile))
}

// builtinTable returns the tables built into gpucc.
func builtinTable() (*Table, error) {
	t := &Table{Version: 1, Entries: map[string]Entry{}}
	files, _ := fs.Glob(builtin, "tables/*.json")
	for _, f := range files {
		b, err := builtin.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := t.merge(b); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Load reads the table in the file at path, a file the user named (an
// empty table if it does not exist), over the tables built into gpucc: the
// file's entries win. Only a regular file of at most 4 MiB is read; a FIFO
// or a device (a link to /dev/zero) is refused without blocking.
func Load(path string) (*Table, error) {
	t, err := builtinTable()
	if err != nil || path == "" {
		return t, err
	}
	b, err := cache.ReadRegular(path, maxTableBytes, true)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	return t, t.merge(b)
}

// LoadCache reads the table c keeps in its directory (tune/matmul.json,
// written by SaveCache) over the tables built into gpucc. That file is
// sealed like the cache's entries (cache.ReadSealed): one gpucc did not
// write, or that is not a regular file, is refused, so a planted table
// cannot choose the tiles. No file, or a memory-only cache, gives the
// built-in tables.
func LoadCache(c *cache.Cache) (*Table, error) {
	t, err := builtinTable()
	if err != nil {
		return nil, err
	}
	b, err := c.ReadSealed(tableFile, maxTableBytes)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, cache.ErrNoDir) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	return t, t.merge(b)
}

// SaveCache writes the table into c's directory, sealed, where LoadCache
// and the webgpu backend read it.
func (t *Table) SaveCache(c *cache.Cache) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return c.WriteSealed(tableFile, append(b, '\n'))
}

func (t *Table) merge(b []byte) error {
	var o Table
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	for k, e := range o.Entries {
		t.Entries[k] = e
	}
	return nil
}

// Save writes the table to path atomically (a temporary file renamed).
func (t *Table) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".matmul-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// TileFor returns a passes.Options.TileFor for info's device: the tuned
// tile of a matmul kernel's shape class, or nil (the tiling pass's rule).
func (t *Table) TileFor(info gpu.AdapterInfo, fast bool) passes.TileChooser {
	return chooser{t, info, fast}
}

type chooser struct {
	t    *Table
	info gpu.AdapterInfo
	fast bool
}

func (c chooser) TileFor(k *ir.Kernel) *ir.Tile {
	// a transposed operand's class is its own (Class: -ta, -tb): a tile
	// tuned on plain operands is not taken for it
	s := Shape{M: k.M, K: k.K, N: k.N, TA: k.Inputs[0].MatrixTransposed(), TB: k.Inputs[1].MatrixTransposed()}
	e, ok := c.t.Entries[Key(c.info, c.fast, Class(s))]
	if !ok {
		return nil
	}
	tile := e.Tile
	return &tile
}

// ShapeReport is what Run found for one shape: the tiling pass's own tile
// and the best exact (and, when asked, fast) candidates.
type ShapeReport struct {
	Shape   string   `json:"shape"`
	Class   string   `json:"class"`
	Default Result   `json:"default"`
	Exact   *Result  `json:"exact,omitempty"`
	Fast    *Result  `json:"fast,omitempty"`
	Tried   int      `json:"tried"`
	Failed  []Result `json:"failed,omitempty"` // candidates that failed their check or errored
}

// Run tunes every shape on dev (exact mode, and fast mode too when fast),
// records the winners in t, one per shape class: the first shape of a
// class is searched, and later shapes of that class only measure its
// winner (Result.Tried is 0 for them). It returns a report per shape.
func Run(ctx context.Context, dev *gpu.Device, t *Table, shapes []Shape, fast bool, o Options) ([]ShapeReport, error) {
	var out []ShapeReport
	date := time.Now().UTC().Format(time.DateOnly)
	info := dev.Info()
	tuned := map[string]bool{} // classes searched in this run
	for _, s := range shapes {
		rep := ShapeReport{Shape: s.String(), Class: Class(s)}
		pr, err := newProblem(s)
		if err != nil {
			return out, err
		}
		def, err := pr.measureTile(dev, nil, false, o.Reps)
		if err != nil {
			return out, err
		}
		rep.Default = def
		modes := []bool{false}
		if fast {
			modes = append(modes, true)
		}
		for _, m := range modes {
			mo := o
			mo.Fast = m
			key := Key(info, m, rep.Class)
			if tuned[key] {
				w := t.Entries[key].Tile
				r, err := pr.measureTile(dev, &w, m, o.Reps)
				if err != nil {
					return out, err
				}
				if m {
					rep.Fast = &r
				} else {
					rep.Exact = &r
				}
				if !r.OK || r.Err != "" {
					rep.Failed = append(rep.Failed, r)
				}
				continue
			}
			all, best, err := pr.search(ctx, dev, mo)
			rep.Tried += len(all)
			for _, r := range all {
				if !r.OK || r.Err != "" {
					rep.Failed = append(rep.Failed, r)
				}
			}
			if best >= 0 {
				w := all[best]
				if m {
					rep.Fast = &w
				} else {
					rep.Exact = &w
				}
				t.Entries[key] = Entry{Tile: w.Tile, Shape: s.String(), TFLOPS: w.TFLOPS, Date: date}
				tuned[key] = true
			}
			if err != nil {
				out = append(out, rep)
				return out, err
			}
		}
		out = append(out, rep)
		if o.Progress != nil {
			o.Progress(rep)
		}
	}
	return out, nil
}
