package report

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// rasterize renders an SVG chart to an image with rsvg-convert (Debian's
// librsvg2-bin), skipping the test where it is missing outside CI, where
// .ci/run installs it.
func rasterize(t *testing.T, svg []byte) image.Image {
	t.Helper()
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("rsvg-convert is missing; .ci/run installs librsvg2-bin")
		}
		t.Skip("rsvg-convert not found (apt-get install librsvg2-bin): charts not rendered")
	}
	cmd := exec.Command(bin, "--format=png")
	cmd.Stdin = bytes.NewReader(svg)
	out, err := cmd.Output()
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	return img
}

// inkOnBorder returns the first point within width pixels of the image's
// edge that is not background (white or transparent), or false.
func inkOnBorder(img image.Image, width int) (image.Point, bool) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if x >= b.Min.X+width && x < b.Max.X-width && y >= b.Min.Y+width && y < b.Max.Y-width {
				continue
			}
			// RGBA is alpha-premultiplied: a pale, half-covered pixel of
			// the white background is not ink.
			r, g, bl, a := img.At(x, y).RGBA()
			dark := func(c uint32) bool { return c < a*0xf000/0xffff }
			if a > 0x1000 && (dark(r) || dark(g) || dark(bl)) {
				return image.Point{X: x, Y: y}, true
			}
		}
	}
	return image.Point{}, false
}

// checkChart fails the test if svg, rendered, has ink near its edge: a label
// that crosses it, drawn in whatever font the renderer has (it falls back to
// a wider one where Liberation Sans is missing). With $POOLKIT_CHART_DIR set
// it keeps the PNG there, for a look.
func checkChart(t *testing.T, name string, svg []byte) {
	t.Helper()
	img := rasterize(t, svg)
	if dir := os.Getenv("POOLKIT_CHART_DIR"); dir != "" {
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, img))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), b.Bytes(), 0o644))
	}
	if p, ok := inkOnBorder(img, 3); ok {
		t.Errorf("%s: ink at %v, within 3 px of the edge of a %v image: a label crosses it", name, p, img.Bounds().Size())
	}
}

func TestChartsKeepEveryLabelInside(t *testing.T) {
	for _, in := range []string{"testdata/results.json", "testdata/e2e.json", "testdata/faults.json"} {
		f := readFixture(t, in)
		for _, c := range f.Cases {
			svg, err := chartSVG(c)
			require.NoError(t, err)
			checkChart(t, Slug(c.Name), svg)
		}
		if f.Faults != nil {
			charts, err := faultCharts(*f.Faults)
			require.NoError(t, err)
			require.NotEmpty(t, charts)
			for name, svg := range charts {
				checkChart(t, name, svg)
			}
		}
	}
}

func TestInkOnBorderFindsALabelThatCrossesTheEdge(t *testing.T) {
	c := readFixture(t, "testdata/results.json").Cases[0]
	c.Name = fmt.Sprintf("%s/%s", c.Name, bytes.Repeat([]byte("VeryLongParameter=1/"), 8))
	svg, err := chartSVG(c)
	require.NoError(t, err)
	_, ok := inkOnBorder(rasterize(t, svg), 3)
	require.True(t, ok, "a title wider than the chart crosses its edges")
}

func readFixture(t *testing.T, path string) results.File {
	t.Helper()
	file, err := os.Open(path)
	if os.IsNotExist(err) && path == "testdata/faults.json" {
		t.Skip("no faults fixture yet")
	}
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	return f
}
