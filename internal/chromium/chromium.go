// Package chromium starts headless Chromium for gpucc's browser tests,
// with the flags that give it WebGPU (SwiftShader) and WebGL2 on a machine
// without a display or a network (see shared/browser.md).
package chromium

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is where the tests expect Chromium (Debian's package).
const Path = "/usr/bin/chromium"

// Open starts Chromium and navigates to url. It skips the test when
// Chromium is missing, unless GPUCC_REQUIRE_BROWSER is set; the browser
// stops when the test ends or after timeout.
func Open(t testing.TB, url string, timeout time.Duration) context.Context {
	t.Helper()
	if _, err := exec.LookPath(Path); err != nil {
		if os.Getenv("GPUCC_REQUIRE_BROWSER") != "" {
			t.Fatalf("%s not found and GPUCC_REQUIRE_BROWSER is set", Path)
		}
		t.Skipf("%s not found", Path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.WindowSize(1280, 800),
	}
	for _, f := range []string{"no-first-run", "disable-background-networking", "disable-component-update",
		"disable-sync", "enable-unsafe-webgpu", "enable-unsafe-swiftshader"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	opts = append(opts, chromedp.Flag("enable-features", "Vulkan"), chromedp.Flag("use-angle", "swiftshader"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	return ctx
}
