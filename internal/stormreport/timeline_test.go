package stormreport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestNiceStep(t *testing.T) {
	tests := map[float64]float64{0: 1, 0.5: 1, 1: 1, 3: 5, 7: 10, 13: 20, 450: 500, 1280: 2000, 60_000: 100_000}
	for raw, want := range tests {
		assert.InDelta(t, want, niceStep(raw), 0, "raw %v", raw)
	}
}

func TestTickLabel(t *testing.T) {
	assert.Equal(t, "0", tickLabel(0, 200))
	assert.Equal(t, "400 ms", tickLabel(400, 200))
	assert.Equal(t, "1.2 s", tickLabel(1200, 200))
	assert.Equal(t, "4 s", tickLabel(4000, 2000))
	assert.Equal(t, "2 min", tickLabel(120_000, 60_000))
}

// exampleStorm is call span_19 of the per-attempt example (testdata/README.md,
// attempt_record.json): attempts at 0, 4080 and 6080 ms after the first start.
func exampleStorm() stormrecord.Record {
	r := storm("span_19", "charge_card", "transient_dependency", "timeout", "error", "ok")
	r.MS = 7680
	r.Timeline = []stormrecord.AttemptTime{
		{StartMSOffset: 0, DurationMS: 4000, Status: "timeout", Layer: "executor", Attempt: 1},
		{StartMSOffset: 4080, DurationMS: 1900, Status: "error", Layer: "executor", Attempt: 2},
		{StartMSOffset: 6080, DurationMS: 1600, Status: "ok", Layer: "transport", Attempt: 3},
	}
	return r
}

func TestTimelinePlacesAttemptsOnTheSharedAxis(t *testing.T) {
	r := exampleStorm()
	view := newTimeline(&r)
	require.True(t, view.Timed)
	require.Len(t, view.Rows, 3)

	var labels []string
	for _, tick := range view.Ticks {
		labels = append(labels, tick.Label)
	}
	assert.Equal(t, []string{"0", "2 s", "4 s", "6 s", "8 s"}, labels)
	assert.InDelta(t, view.PlotX0, view.Ticks[0].X, 0.05)
	assert.InDelta(t, view.PlotX1, view.Ticks[len(view.Ticks)-1].X, 0.05)

	scale := (view.PlotX1 - view.PlotX0) / 8000
	for i, a := range r.Timeline {
		bar := view.Rows[i]
		assert.InDelta(t, view.PlotX0+float64(a.StartMSOffset)*scale, bar.X, 0.1, "attempt %d start", a.Attempt)
		assert.InDelta(t, float64(a.DurationMS)*scale, bar.W, 0.1, "attempt %d duration", a.Attempt)
		assert.Equal(t, a.Attempt, bar.Attempt)
		assert.Equal(t, statusStyle[a.Status].fill, bar.Fill)
		assert.Greater(t, bar.Y, view.AxisY)
	}
	assert.Equal(t, "4.00 s · timeout", view.Rows[0].Label)
	assert.Equal(t, "transport", view.Rows[2].Layer)
	assert.Greater(t, view.Rows[1].Y, view.Rows[0].Y, "one row per attempt")
}

func TestTimelineWithoutTimingStillDrawsEveryAttempt(t *testing.T) {
	r := storm("k", "tool", "", "error", "mystery")
	r.Timeline, r.Attempts = nil, 3 // three attempts, two statuses known
	view := newTimeline(&r)
	assert.False(t, view.Timed)
	assert.Empty(t, view.Ticks)
	require.Len(t, view.Rows, 3)
	for i, bar := range view.Rows {
		assert.Equal(t, i+1, bar.Attempt)
		assert.InDelta(t, view.Rows[0].W, bar.W, 0.1, "equal slots")
		assert.Contains(t, bar.Label, "duration unknown")
	}
	assert.Equal(t, statusStyle["unknown"].fill, view.Rows[1].Fill, "an unexpected status is drawn as unknown")
	assert.Equal(t, "unknown", view.Rows[2].Status)
}

func TestLabelsStayInsideThePlot(t *testing.T) {
	r := storm("k", "tool", "", "error", "ok")
	r.Timeline = []stormrecord.AttemptTime{
		{StartMSOffset: 0, DurationMS: 10, Status: "error", Attempt: 1},
		{StartMSOffset: 10, DurationMS: 9990, Status: "ok", Attempt: 2},      // reaches the end: label inside
		{StartMSOffset: 9990, DurationMS: 10, Status: "timeout", Attempt: 3}, // thin at the end: label left
	}
	view := newTimeline(&r)
	assert.Equal(t, "start", view.Rows[0].LabelAnchor)
	assert.Equal(t, "end", view.Rows[1].LabelAnchor)
	assert.Equal(t, statusStyle["ok"].text, view.Rows[1].LabelFill)
	assert.Equal(t, "end", view.Rows[2].LabelAnchor)
	assert.Less(t, view.Rows[2].LabelX, view.Rows[2].X)
	for _, bar := range view.Rows {
		assert.GreaterOrEqual(t, bar.W, minBarWidth)
		assert.Equal(t, "layer unknown", bar.Layer)
	}
}

func TestTimelineBoundsRunawayStorms(t *testing.T) {
	untimed := storm("k", "tool", "exhausted", "error")
	untimed.Timeline, untimed.Attempts = nil, 1_000_000_000
	view := newTimeline(&untimed)
	assert.Len(t, view.Rows, maxBars)
	assert.Equal(t, 1_000_000_000-maxBars, view.HiddenBars)

	timed := storm("k", "tool", "exhausted")
	for i := range 250 {
		timed.Timeline = append(timed.Timeline, stormrecord.AttemptTime{StartMSOffset: int64(i) * 10, DurationMS: 5, Status: "error", Attempt: i + 1})
	}
	view = newTimeline(&timed)
	assert.Len(t, view.Rows, maxBars)
	assert.Equal(t, 150, view.HiddenBars)
}

func TestTimelineClampsCorruptTimes(t *testing.T) {
	r := storm("k", "tool", "exhausted", "error", "error")
	r.Timeline[0].StartMSOffset, r.Timeline[1].DurationMS = -5000, -10
	view := newTimeline(&r)
	assert.InDelta(t, view.PlotX0, view.Rows[0].X, 0.05)
	assert.InDelta(t, minBarWidth, view.Rows[1].W, 0.05)
}
