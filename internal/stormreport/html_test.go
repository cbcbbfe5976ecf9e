package stormreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// pageRecords are the records the page tests draw: three storms (one without timing, one
// with a hostile call key), a failure and a clean call.
func pageRecords() []stormrecord.Record {
	example := exampleStorm()
	example.TraceURL = ptr("http://localhost:16686/trace/ab12?call=span_19")
	exhausted := storm("call_88", "search_flights", "exhausted", "error", "error", "error", "error", "error")
	exhausted.Findings = []stormrecord.Finding{{Kind: "unrecovered_failure", Detail: "agent answered OK over a failed call"}}
	untimed := storm(`<script>alert(1)</script>`, "get_weather", "changed_arguments", "error", "ok")
	untimed.Timeline = nil
	failure := storm("single", "lookup_order", "", "error")
	failure.Storm = false
	return []stormrecord.Record{example, exhausted, untimed, failure}
}

// pageTimelines maps each storm-timeline element's call key to its attempt-bar count.
func pageTimelines(t *testing.T, doc *html.Node) (map[string]int, []string) {
	t.Helper()
	bars := map[string]int{}
	var order []string
	for node := range doc.Descendants() {
		if attr(node, "data-role") != "storm-timeline" {
			continue
		}
		key := attr(node, "data-call-key")
		order = append(order, key)
		for child := range node.Descendants() {
			if attr(child, "data-role") == "attempt-bar" {
				bars[key]++
			}
		}
	}
	return bars, order
}

func attr(node *html.Node, name string) string {
	if node.Type != html.ElementNode {
		return ""
	}
	for _, a := range node.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func renderPage(t *testing.T, records []stormrecord.Record, top int) string {
	t.Helper()
	return renderInput(t, &Input{Records: records}, top)
}

// pageInput is pageRecords with two finding records: an answer citing two assets nothing
// read (one with a hostile name) and one citing one.
func pageInput() *Input {
	return &Input{Records: pageRecords(), Findings: []stormrecord.FindingRecord{
		citation("ab12", "a1", "2025-09-09T02:40:09Z", "kb/refunds", "kb/<script>"),
		citation("ab13", "a2", "2025-09-09T02:41:09Z", "kb/fees"),
	}}
}

func renderInput(t *testing.T, input *Input, top int) string {
	t.Helper()
	var out bytes.Buffer
	input.Files = []string{"/var/lib/retrystorm/storms.jsonl"}
	require.NoError(t, WriteHTML(&out, input, BuildFrom(input, top)))
	return out.String()
}

func TestPageHasOneTimelinePerStormWithOneBarPerAttempt(t *testing.T) {
	page := renderPage(t, pageRecords(), 20)
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)

	bars, order := pageTimelines(t, doc)
	assert.Equal(t, []string{"call_88", "span_19", "<script>alert(1)</script>"}, order, "storms ranked by attempts")
	assert.Equal(t, map[string]int{"call_88": 5, "span_19": 3, "<script>alert(1)</script>": 2}, bars)

	for node := range doc.Descendants() {
		assert.False(t, node.Type == html.ElementNode && node.Data == "script", "no script element, even from a hostile call key")
		if attr(node, "data-role") == "trace-link" {
			assert.Equal(t, "http://localhost:16686/trace/ab12?call=span_19", attr(node, "href"))
		}
	}
	assert.NotContains(t, page, "ZgotmplZ", "every value fits its context")
	for _, want := range []string{"4.00 s · timeout", "#3", "transport", "agent answered OK over a failed call",
		"no per-attempt timing", "lookup_order", "Storms by class", "Findings by kind", "Calls by tool"} {
		assert.Contains(t, page, want)
	}
	for _, external := range []string{"<link", " src=", "url(", "@import", "<script"} {
		assert.NotContains(t, page, external, "self-contained: nothing loaded from elsewhere")
	}
}

func TestPageSaysHowManyStormsItLeftOut(t *testing.T) {
	page := renderPage(t, pageRecords(), 1)
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	_, order := pageTimelines(t, doc)
	assert.Equal(t, []string{"call_88"}, order)
	assert.Contains(t, page, "2 more storms not shown")
}

func TestPageWithoutStorms(t *testing.T) {
	page := renderPage(t, nil, 20)
	assert.Contains(t, page, "No storms in these files.")
}

// A record of part of a trace (a provisional decision) says so on its storm's card, and
// only there.
func TestPageMarksPartialRecords(t *testing.T) {
	records := pageRecords()
	records[1].Partial = true
	doc, err := html.Parse(strings.NewReader(renderPage(t, records, 20)))
	require.NoError(t, err)
	var marked []string
	for node := range doc.Descendants() {
		if attr(node, "data-role") != "storm-timeline" {
			continue
		}
		for child := range node.Descendants() {
			if attr(child, "data-role") == "partial" {
				marked = append(marked, attr(node, "data-call-key"))
			}
		}
	}
	assert.Equal(t, []string{records[1].CallKey}, marked)
}
