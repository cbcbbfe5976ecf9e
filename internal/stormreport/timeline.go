package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"fmt"
	"math"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// Geometry of one storm's timeline, in SVG user units (the SVG scales to its card).
const (
	timelineWidth  = 960.0
	gutterWidth    = 132.0
	plotRightPad   = 24.0
	axisTop        = 30.0
	rowHeight      = 32.0
	barHeight      = 20.0
	bottomPad      = 8.0
	minBarWidth    = 3.0
	labelGap       = 6.0
	labelCharWidth = 6.8 // average width of a 12px label glyph
	targetTicks    = 6
	// maxBars bounds the bars of one storm: a runaway loop of thousands of attempts must
	// not make the page unusable (or a corrupt record make it huge).
	maxBars = 100
)

// statusStyle colours each normalised status; text is the label colour on top of the fill.
var statusStyle = map[string]struct{ fill, text string }{
	"ok":      {fill: "#1f9d61", text: "#ffffff"},
	"error":   {fill: "#e04848", text: "#ffffff"},
	"timeout": {fill: "#f0a020", text: "#3d2800"},
	"unknown": {fill: "#8b95a7", text: "#ffffff"},
}

type timelineView struct {
	Width, Height  float64
	PlotX0, PlotX1 float64
	AxisY          float64
	Timed          bool
	Ticks          []tickView
	Rows           []barView
	// HiddenBars counts attempts beyond maxBars that are not drawn.
	HiddenBars int
}

type tickView struct {
	X     float64
	Label string
}

type barView struct {
	Attempt        int
	Status, Layer  string
	Fill, TextFill string
	RowY           float64
	TextY          float64
	X, Y, W, H     float64
	Duration       string
	Label          string
	LabelX         float64
	LabelAnchor    string
	LabelFill      string
	Tooltip        string
}

// attemptsOf returns the attempts to draw (at most maxBars) and how many more there are:
// the record's timeline, or, when the record has none, one untimed entry per attempt so
// every attempt still gets its bar.
func attemptsOf(r *stormrecord.Record) ([]stormrecord.AttemptTime, int, bool) {
	if len(r.Timeline) > 0 {
		drawn := r.Timeline[:min(len(r.Timeline), maxBars)]
		return drawn, len(r.Timeline) - len(drawn), true
	}
	total := max(r.Attempts, len(r.Statuses))
	attempts := make([]stormrecord.AttemptTime, 0, min(total, maxBars))
	for i := range min(total, maxBars) {
		status := "unknown"
		if i < len(r.Statuses) {
			status = r.Statuses[i]
		}
		attempts = append(attempts, stormrecord.AttemptTime{Status: status, Layer: r.Layer, Attempt: i + 1})
	}
	return attempts, total - len(attempts), false
}

// newTimeline lays the attempts of one storm on a shared time axis: one row per attempt,
// bars placed by start offset and sized by duration.
func newTimeline(r *stormrecord.Record) timelineView {
	attempts, hidden, timed := attemptsOf(r)
	view := timelineView{
		HiddenBars: hidden,
		Width:      timelineWidth,
		Height:     axisTop + 4 + float64(len(attempts))*rowHeight + bottomPad,
		PlotX0:     gutterWidth,
		PlotX1:     timelineWidth - plotRightPad,
		AxisY:      axisTop,
		Timed:      timed,
	}
	span := float64(r.MS)
	for _, a := range attempts {
		span = math.Max(span, float64(max(a.StartMSOffset, 0))+float64(max(a.DurationMS, 0)))
	}
	step := niceStep(span / targetTicks)
	domain := math.Max(math.Ceil(span/step)*step, step)
	scale := (view.PlotX1 - view.PlotX0) / domain
	if timed {
		for t := 0.0; t <= domain+step/2; t += step {
			view.Ticks = append(view.Ticks, tickView{X: round1(view.PlotX0 + t*scale), Label: tickLabel(t, step)})
		}
	}
	slot := (view.PlotX1 - view.PlotX0) / float64(max(len(attempts), 1))
	for i, a := range attempts {
		bar := newBar(a, i, timed)
		if timed {
			// A negative offset or duration is corrupt data: draw it at the axis start, thin.
			bar.X = view.PlotX0 + float64(max(a.StartMSOffset, 0))*scale
			bar.W = math.Max(float64(max(a.DurationMS, 0))*scale, minBarWidth)
		} else {
			bar.X = view.PlotX0 + float64(i)*slot + 2
			bar.W = math.Max(slot-4, minBarWidth)
		}
		placeLabel(&bar, view.PlotX1)
		bar.X, bar.W = round1(bar.X), round1(bar.W)
		view.Rows = append(view.Rows, bar)
	}
	return view
}

func newBar(a stormrecord.AttemptTime, row int, timed bool) barView {
	style, ok := statusStyle[a.Status]
	if !ok {
		style = statusStyle["unknown"]
	}
	top := axisTop + 4 + float64(row)*rowHeight
	duration := "duration unknown"
	if timed {
		duration = FormatDuration(a.DurationMS)
	}
	layer := a.Layer
	if layer == "" {
		layer = "layer unknown"
	}
	return barView{
		Attempt: a.Attempt, Status: a.Status, Layer: string(layer),
		Fill: style.fill, TextFill: style.text,
		RowY: top, TextY: top + rowHeight/2 + 4,
		Y: top + (rowHeight-barHeight)/2, H: barHeight,
		Duration: duration,
		Label:    fmt.Sprintf("%s · %s", duration, a.Status),
		Tooltip: fmt.Sprintf("attempt %d · %s · %s · %s, starts at +%s", a.Attempt, a.Status, duration, layer,
			FormatDuration(a.StartMSOffset)),
	}
}

// placeLabel puts the label right of the bar when it fits, else inside the bar, else left
// of it, so it never runs off the plot.
func placeLabel(bar *barView, plotX1 float64) {
	width := float64(len([]rune(bar.Label))) * labelCharWidth
	switch {
	case bar.X+bar.W+labelGap+width <= plotX1:
		bar.LabelX, bar.LabelAnchor, bar.LabelFill = bar.X+bar.W+labelGap, "start", "#334155"
	case bar.W >= width+2*labelGap:
		bar.LabelX, bar.LabelAnchor, bar.LabelFill = bar.X+bar.W-labelGap, "end", bar.TextFill
	default:
		bar.LabelX, bar.LabelAnchor, bar.LabelFill = bar.X-labelGap, "end", "#334155"
	}
	bar.LabelX = round1(bar.LabelX)
}

// niceStep rounds a raw tick interval up to 1, 2 or 5 times a power of ten milliseconds.
func niceStep(raw float64) float64 {
	if raw <= 1 {
		return 1
	}
	magnitude := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*magnitude {
			return m * magnitude
		}
	}
	return 10 * magnitude
}

func tickLabel(ms, step float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case step < 60_000 || ms < 60_000:
		return fmt.Sprintf("%g s", ms/1000)
	default:
		return fmt.Sprintf("%g min", ms/60_000)
	}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
