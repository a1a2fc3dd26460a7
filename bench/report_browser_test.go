package bench

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const chromium = "/usr/bin/chromium"

// TestReportRendersInChromium opens report.html in headless Chromium,
// counts what the charts drew and checks that the screenshot is not blank.
func TestReportRendersInChromium(t *testing.T) {
	if _, err := exec.LookPath(chromium); err != nil {
		if os.Getenv("GPUCC_REQUIRE_BROWSER") != "" {
			t.Fatalf("GPUCC_REQUIRE_BROWSER is set but %s is missing: %v", chromium, err)
		}
		t.Skipf("no browser: %v", err)
	}
	_, dir := runTiny(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	type counts struct{ Svgs, Rects, Paths, Circles int }
	url := "file://" + filepath.Join(dir, "report.html")
	err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("svg.lines"))
	var got counts
	if err == nil {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[counts](`({Svgs: document.querySelectorAll("svg").length,
			Rects: document.querySelectorAll("svg.bars rect").length,
			Paths: document.querySelectorAll("svg.lines path").length,
			Circles: document.querySelectorAll("svg.lines circle").length})`))
	}
	var shot []byte
	if err == nil {
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(90))
	}
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	// Two workloads: a line chart and a bar chart each; bars for every
	// stage that took time; lines and points for each backend.
	if got.Svgs != 4 || got.Rects < 8 || got.Paths < 4 || got.Circles < 4 {
		t.Errorf("charts drew %+v", got)
	}
	img, _, err := image.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colors := map[uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 3 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>11<<10|g>>11<<5|b>>11] = true
		}
	}
	if len(colors) < 8 {
		t.Errorf("screenshot has %d colours: the page looks blank", len(colors))
	}
	os.WriteFile(filepath.Join(dir, "report.jpeg"), shot, 0o644)
}
