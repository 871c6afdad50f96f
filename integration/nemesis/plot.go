package nemesis

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
)

// A small hand-written line chart (image/png, no plotting dependency):
// stacked panels sharing the x axis (minutes), a 3x5 bitmap font scaled 2x
// for labels.

const (
	panelHeight = 230
	titleHeight = 34
	marginLeft  = 80
	marginRight = 20
	marginBelow = 28
	marginAbove = 26
	fontScale   = 2
)

var (
	colBackground = color.RGBA{255, 255, 255, 255}
	colAxis       = color.RGBA{60, 60, 60, 255}
	colGrid       = color.RGBA{225, 225, 225, 255}
	colText       = color.RGBA{20, 20, 20, 255}
	palette       = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255}, {148, 103, 189, 255}}
)

type chart struct {
	img    *image.RGBA
	width  int
	panels int
}

func newChart(width, panels int, title string) *chart {
	h := titleHeight + panels*panelHeight
	img := image.NewRGBA(image.Rect(0, 0, width, h))
	for y := 0; y < h; y++ {
		for x := 0; x < width; x++ {
			img.SetRGBA(x, y, colBackground)
		}
	}
	ch := &chart{img: img, width: width, panels: panels}
	ch.text(marginLeft, 10, strings.ToUpper(title), colText)
	return ch
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func label(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	}
}

// panel draws series (each aligned with xs) in panel i.
func (ch *chart) panel(i int, title string, xs []float64, series [][]float64) {
	top := titleHeight + i*panelHeight + marginAbove
	bottom := titleHeight + (i+1)*panelHeight - marginBelow
	left, right := marginLeft, ch.width-marginRight
	ch.text(left, top-18, title, colText)
	ymax := 0.0
	for _, s := range series {
		for _, v := range s {
			ymax = math.Max(ymax, v)
		}
	}
	ymax = niceMax(ymax * 1.05)
	xmax := 0.0
	for _, x := range xs {
		xmax = math.Max(xmax, x)
	}
	xmax = niceMax(xmax)
	px := func(x float64) int { return left + int(math.Round(x/xmax*float64(right-left))) }
	py := func(y float64) int { return bottom - int(math.Round(y/ymax*float64(bottom-top))) }
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		y := py(v)
		ch.hline(left, right, y, colGrid)
		s := label(v)
		ch.text(left-8-textWidth(s), y-5, s, colText)
	}
	for k := 0; k <= 5; k++ {
		v := xmax * float64(k) / 5
		x := px(v)
		ch.vline(x, top, bottom, colGrid)
		s := label(v)
		ch.text(x-textWidth(s)/2, bottom+8, s, colText)
	}
	ch.hline(left, right, bottom, colAxis)
	ch.vline(left, top, bottom, colAxis)
	for si, s := range series {
		col := palette[si%len(palette)]
		for k := 1; k < len(s) && k < len(xs); k++ {
			ch.line(px(xs[k-1]), py(s[k-1]), px(xs[k]), py(s[k]), col)
		}
		if len(series) > 1 {
			name := fmt.Sprintf("NODE %d", si)
			ch.text(right-(len(series)-si)*90, top-18, name, col)
		}
	}
}

func (ch *chart) hline(x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		ch.img.SetRGBA(x, y, c)
	}
}

func (ch *chart) vline(x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		ch.img.SetRGBA(x, y, c)
	}
}

// line is Bresenham's, two pixels thick.
func (ch *chart) line(x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		ch.img.SetRGBA(x0, y0, c)
		ch.img.SetRGBA(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

func textWidth(s string) int { return len(s) * 4 * fontScale }

func (ch *chart) text(x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g, ok := glyphs[r]
		if !ok {
			g = glyphs['?']
		}
		for row := 0; row < 5; row++ {
			for col := 0; col < 3; col++ {
				if g[row][col] == '1' {
					for dy := 0; dy < fontScale; dy++ {
						for dx := 0; dx < fontScale; dx++ {
							ch.img.SetRGBA(x+col*fontScale+dx, y+row*fontScale+dy, c)
						}
					}
				}
			}
		}
		x += 4 * fontScale
	}
}

func (ch *chart) writePNG(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("soak plot: %w", err)
	}
	if err := png.Encode(f, ch.img); err != nil {
		f.Close()
		return fmt.Errorf("soak plot: %w", err)
	}
	return f.Close()
}

// glyphs is a 3x5 font: five rows of three pixels.
var glyphs = map[rune][5]string{
	'0': {"111", "101", "101", "101", "111"}, '1': {"010", "110", "010", "010", "111"},
	'2': {"111", "001", "111", "100", "111"}, '3': {"111", "001", "111", "001", "111"},
	'4': {"101", "101", "111", "001", "001"}, '5': {"111", "100", "111", "001", "111"},
	'6': {"111", "100", "111", "101", "111"}, '7': {"111", "001", "001", "010", "010"},
	'8': {"111", "101", "111", "101", "111"}, '9': {"111", "101", "111", "001", "111"},
	'A': {"010", "101", "111", "101", "101"}, 'B': {"110", "101", "110", "101", "110"},
	'C': {"011", "100", "100", "100", "011"}, 'D': {"110", "101", "101", "101", "110"},
	'E': {"111", "100", "110", "100", "111"}, 'F': {"111", "100", "110", "100", "100"},
	'G': {"011", "100", "101", "101", "011"}, 'H': {"101", "101", "111", "101", "101"},
	'I': {"111", "010", "010", "010", "111"}, 'J': {"001", "001", "001", "101", "010"},
	'K': {"101", "101", "110", "101", "101"}, 'L': {"100", "100", "100", "100", "111"},
	'M': {"101", "111", "111", "101", "101"}, 'N': {"110", "101", "101", "101", "101"},
	'O': {"010", "101", "101", "101", "010"}, 'P': {"110", "101", "110", "100", "100"},
	'Q': {"010", "101", "101", "110", "011"}, 'R': {"110", "101", "110", "101", "101"},
	'S': {"011", "100", "010", "001", "110"}, 'T': {"111", "010", "010", "010", "010"},
	'U': {"101", "101", "101", "101", "111"}, 'V': {"101", "101", "101", "101", "010"},
	'W': {"101", "101", "111", "111", "101"}, 'X': {"101", "101", "010", "101", "101"},
	'Y': {"101", "101", "010", "010", "010"}, 'Z': {"111", "001", "010", "100", "111"},
	'.': {"000", "000", "000", "000", "010"}, '-': {"000", "000", "111", "000", "000"},
	'/': {"001", "001", "010", "100", "100"}, ':': {"000", "010", "000", "010", "000"},
	'=': {"000", "111", "000", "111", "000"}, '%': {"101", "001", "010", "100", "101"},
	'(': {"010", "100", "100", "100", "010"}, ')': {"010", "001", "001", "001", "010"},
	',': {"000", "000", "000", "010", "100"}, ' ': {"000", "000", "000", "000", "000"},
	'?': {"111", "001", "010", "000", "010"}, '+': {"000", "010", "111", "010", "000"},
}
