// Package digits holds the demo page's digit classifier's inputs: the
// scikit-learn digits data (8×8 images, pixels 0..16, as load_digits
// gives them), the initial parameters and schedule of the repository's
// digits fixture (testdata/fixtures/digits.json.gz, the run
// TestDigitsAccuracy follows), and the graphs that train the MLP and
// classify with it. cmd digitsgen trains with them; web's tests check the
// trained model against them.
package digits

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// CSV is where Debian's python3-sklearn ships the data (BSD-licensed):
// 1797 rows of 64 pixels and a label. GPUCC_DIGITS_CSV names another copy.
func CSV() string {
	if p := os.Getenv("GPUCC_DIGITS_CSV"); p != "" {
		return p
	}
	return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
}

// Data is the data set, row-major: 64 pixels a row, each an integer in
// 0..16 (the number of set pixels of a 4×4 block of the original 32×32
// bitmap), and one label a row.
type Data struct {
	Pixels []float32
	Labels []int
}

// Row returns row i's 64 pixels.
func (d *Data) Row(i int) []float32 { return d.Pixels[64*i : 64*i+64] }

// Load reads the data at path and checks that its sha256 is sha (the
// fixture's), so that a model is trained and tested on the data it names.
func Load(path, sha string) (*Data, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != sha {
		return nil, fmt.Errorf("digits: %s has sha256 %s; the fixture was made from %s", path, got, sha)
	}
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	d := &Data{}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(fields) != 65 {
			return nil, fmt.Errorf("digits: row %d has %d fields, want 65", len(d.Labels), len(fields))
		}
		for i, s := range fields {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v > 16 || (i == 64 && v > 9) {
				return nil, fmt.Errorf("digits: row %d field %d is %q", len(d.Labels), i, s)
			}
			if i < 64 {
				d.Pixels = append(d.Pixels, float32(v))
			} else {
				d.Labels = append(d.Labels, v)
			}
		}
	}
	return d, sc.Err()
}

// Fixture is what the digits fixture says of the MLP: the data's hash
// and split, the initial parameters (PyTorch's seeded initialisation),
// the learning rate and the long run's steps, and how many of the
// held-out digits PyTorch's float64 run of that schedule classified
// right.
type Fixture struct {
	Sha256      string
	Train, Rows int
	LR          float32
	Steps       int
	Init        map[string][]float32
	Shapes      map[string]ir.Shape
	TestCorrect int
}

// LoadFixture reads testdata/fixtures/digits.json.gz at path.
func LoadFixture(path string) (*Fixture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Data struct {
			Sha256 string `json:"sha256"`
			Rows   int    `json:"rows"`
			Train  int    `json:"train"`
		} `json:"data"`
		MLP struct {
			LR        float32 `json:"lr"`
			LongSteps int     `json:"long_steps"`
			Init      map[string]struct {
				Shape []int  `json:"shape"`
				Dtype string `json:"dtype"`
				B64   string `json:"b64"`
			} `json:"init"`
			Float64 struct {
				Long struct {
					TestCorrect int `json:"test_correct"`
				} `json:"long"`
			} `json:"float64"`
		} `json:"mlp"`
	}
	if err := json.NewDecoder(z).Decode(&raw); err != nil {
		return nil, fmt.Errorf("digits: %s: %v", path, err)
	}
	fx := &Fixture{Sha256: raw.Data.Sha256, Train: raw.Data.Train, Rows: raw.Data.Rows, LR: raw.MLP.LR,
		Steps: raw.MLP.LongSteps, Init: map[string][]float32{}, Shapes: map[string]ir.Shape{},
		TestCorrect: raw.MLP.Float64.Long.TestCorrect}
	for _, name := range Params {
		a, ok := raw.MLP.Init[name]
		if !ok || a.Dtype != "float32" {
			return nil, fmt.Errorf("digits: %s: no float32 initial value of %s", path, name)
		}
		b, err := base64.StdEncoding.DecodeString(a.B64)
		s := ir.Shape(a.Shape)
		if err != nil || len(b) != 4*s.Len() {
			return nil, fmt.Errorf("digits: %s: %s%v has %d bytes (%v)", path, name, a.Shape, len(b), err)
		}
		v := make([]float32, s.Len())
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		fx.Init[name], fx.Shapes[name] = v, s
	}
	return fx, nil
}

// Params are the MLP's parameters: logits = relu(x·w1 + b1)·w2 + b2.
var Params = []string{"w1", "b1", "w2", "b2"}

// scale takes pixels (0..16) to the MLP's inputs: x = pixels/16, exact
// in float32 either way (a power of two).
const scale = 1.0 / 16

// logits builds the MLP on x (pixels, [n,64]) with params p.
func logits(b *ir.Builder, x ir.Tensor, p map[string]ir.Tensor) ir.Tensor {
	return x.MulScalar(scale).MatMul(p["w1"]).Add(p["b1"]).Relu().MatMul(p["w2"]).Add(p["b2"])
}

// TrainGraph is the training graph on rows [lo,hi) of d: the MLP with
// the trainable parameters params (their shapes from shapes) and output
// "loss", the mean cross-entropy against the labels, as digits_test.go's
// digitsModel (the graph TestDigitsAccuracy trains).
func TrainGraph(d *Data, lo, hi int, params map[string][]float32, shapes map[string]ir.Shape) (*ir.Graph, error) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{hi - lo, 64}, d.Pixels[64*lo:64*hi])
	onehot := make([]float32, 10*(hi-lo))
	for i, l := range d.Labels[lo:hi] {
		onehot[10*i+l] = 1
	}
	y := b.NamedInput("onehot", ir.Shape{hi - lo, 10}, onehot)
	p := map[string]ir.Tensor{}
	for _, name := range Params {
		p[name] = b.Param(name, shapes[name], params[name])
	}
	b.Output("loss", logits(b, x, p).CrossEntropy(y))
	return b.Build(ir.Limits{})
}

// Classifier is the page's model: input "x", n rows of 64 pixels (0..16,
// row-major 8×8), and output "probs", the softmax of the MLP's logits
// ([n,10]), with the parameters embedded.
func Classifier(n int, params map[string][]float32, shapes map[string]ir.Shape) (*ir.Graph, error) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{n, 64}, make([]float32, 64*n))
	p := map[string]ir.Tensor{}
	for _, name := range Params {
		p[name] = b.Input(shapes[name], params[name])
	}
	b.Output("probs", logits(b, x, p).Softmax(-1))
	return b.Build(ir.Limits{})
}
