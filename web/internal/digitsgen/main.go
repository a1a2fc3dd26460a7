// Command digitsgen trains the demo page's digit classifier with gpucc's
// own Trainer and writes it as a protocol v1 graph (web/static/digits-mlp.json):
// the MLP 64→128→10 of the repository's digits fixture, from the
// fixture's initial parameters, trained full-batch with SGD at the
// fixture's rate for its long run's steps on the 1437 training digits
// (the run TestDigitsAccuracy checks against PyTorch), on the cpu backend
// (every backend gives its bits). The graph takes 64 pixels (0..16) as
// input "x" [1,64] and gives the 10 class probabilities as "probs".
// With -model cnn it trains the small CNN of digits.CNNParams instead
// (static/digits-cnn.json), on digits.CNNRate, CNNSteps and CNNSeed.
//
// Run from web/ (go run ./internal/digitsgen); it needs python3-sklearn's
// digits data (or GPUCC_DIGITS_CSV) and takes about a minute. The output
// is deterministic: the same sources give the same bytes, which web's
// TestDigitsModelReproducible checks.
//
//	go run ./internal/digitsgen [-model mlp|cnn] [-o FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/gpucc/gpucc/web/internal/digits"
)

func main() {
	arch := flag.String("model", "mlp", "the classifier: mlp (static/digits-mlp.json) or cnn (static/digits-cnn.json)")
	out := flag.String("o", "", "output file (default static/digits-MODEL.json)")
	fixture := flag.String("fixture", "../testdata/fixtures/digits.json.gz", "the digits fixture")
	flag.Parse()
	if *out == "" {
		*out = "static/digits-" + *arch + ".json"
	}
	g, acc, err := digits.Train(context.Background(), *arch, *fixture, digits.CSV())
	if err != nil {
		fmt.Fprintln(os.Stderr, "digitsgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, g, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "digitsgen:", err)
		os.Exit(1)
	}
	fmt.Printf("digitsgen: wrote %s (%d bytes); held-out accuracy %s\n", *out, len(g), acc)
}
