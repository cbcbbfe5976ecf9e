package stormreport

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// chromiumPath finds the browser the page test renders in: $CHROMIUM, else the Debian
// package's binary. Missing is a failure, not a skip: the page is only proven by a browser.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("headless Chromium not found at %s (%v): run .ci/ensure-chromium as root, or set CHROMIUM to a Chromium binary", path, err)
	}
	return path
}

// chromium runs headless Chromium on the page with the given extra arguments and returns
// its standard output.
func chromium(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--force-color-profile=srgb", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=2000",
	}
	cmd := exec.CommandContext(ctx, chromiumPath(t), append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoErrorf(t, cmd.Run(), "chromium failed: %s", stderr.String())
	return stdout.Bytes()
}

func TestPageRendersInHeadlessChromium(t *testing.T) {
	page := filepath.Join(t.TempDir(), "storms.html")
	require.NoError(t, os.WriteFile(page, []byte(renderInput(t, pageInput(), 20)), 0o600))

	dom := chromium(t, page, "--dump-dom")
	doc, err := html.Parse(bytes.NewReader(dom))
	require.NoError(t, err)
	bars, order := pageTimelines(t, doc)
	require.Equal(t, []string{"call_88", "span_19", "<script>alert(1)</script>"}, order, "one timeline per storm, as rendered")
	assert.Equal(t, map[string]int{"call_88": 5, "span_19": 3, "<script>alert(1)</script>": 2}, bars, "one bar per attempt, as rendered")
	assert.Contains(t, string(dom), "Retry storms")
	kinds := 0
	for node := range doc.Descendants() {
		if attr(node, "data-role") == "trace-finding" {
			assert.Equal(t, "unbacked_citation", attr(node, "data-kind"))
			kinds++
		}
	}
	assert.Equal(t, 3, kinds, "one row per trace-level finding, as rendered")
	for node := range doc.Descendants() {
		if attr(node, "data-role") == "attempt-bar" {
			assert.Equal(t, "svg", node.Namespace, "bars are SVG elements in the rendered DOM")
		}
	}

	shot := filepath.Join(t.TempDir(), "storms.png")
	chromium(t, page, "--window-size=1280,1600", "--screenshot="+shot)
	assertPainted(t, shot)
}

// assertPainted fails on a blank or broken render: the screenshot must show bars in each
// status colour of the page.
func assertPainted(t *testing.T, shot string) {
	t.Helper()
	file, err := os.Open(shot)
	require.NoError(t, err)
	defer file.Close()
	img, err := png.Decode(file)
	require.NoError(t, err)

	want := map[string]color.RGBA{}
	for _, status := range []string{"ok", "error", "timeout"} {
		want[status] = hexColor(t, statusStyle[status].fill)
	}
	found := map[string]int{}
	distinct := map[color.RGBA]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			distinct[c] = true
			for status, w := range want {
				if near(c, w) {
					found[status]++
				}
			}
		}
	}
	assert.Greater(t, len(distinct), 50, "the page is not blank")
	for status := range want {
		assert.Greaterf(t, found[status], 400, "bars coloured %s (%s) are painted", status, statusStyle[status].fill)
	}
}

func hexColor(t *testing.T, hex string) color.RGBA {
	t.Helper()
	var c color.RGBA
	c.A = 0xff
	for i, dst := range []*uint8{&c.R, &c.G, &c.B} {
		var v uint8
		for _, ch := range strings.ToLower(hex[1+2*i : 3+2*i]) {
			v <<= 4
			switch {
			case ch >= '0' && ch <= '9':
				v |= uint8(ch - '0')
			default:
				v |= uint8(ch-'a') + 10
			}
		}
		*dst = v
	}
	return c
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= 6 && d(a.G, b.G) <= 6 && d(a.B, b.B) <= 6
}
