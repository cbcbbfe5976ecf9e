package metadatatest

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeRow is one row of a README's telemetry table, cells by lowercased header.
type readmeRow map[string]string

// readmeAttribute is one attribute of a row: `name` or `name`: `value`, `value`.
type readmeAttribute struct {
	name   string
	values []string
}

// CheckReadme compares the first table under the README's "## Telemetry" heading with
// md's metrics: the same metrics (prefix is what the metric column leaves out of each
// name), and for each the type, unit, description and attributes with their values.
func (md Metadata) CheckReadme(t testing.TB, path, prefix string) {
	t.Helper()
	rows := telemetryTable(t, path)
	seen := map[string]bool{}
	for _, row := range rows {
		name := prefix + strings.Trim(row["metric"], "`")
		key, _ := strings.CutPrefix(name, "otelcol_")
		m, ok := md.Telemetry.Metrics[key]
		if !ok {
			t.Errorf("README metric %s: not in metadata.yaml", name)
			continue
		}
		if seen[name] {
			t.Errorf("README metric %s: listed twice", name)
		}
		seen[name] = true
		if row["type"] != m.kind() {
			t.Errorf("README metric %s: type %q, metadata.yaml says %q", name, row["type"], m.kind())
		}
		if unit := strings.Trim(row["unit"], "`"); unit != m.Unit {
			t.Errorf("README metric %s: unit %q, metadata.yaml %q", name, unit, m.Unit)
		}
		if row["description"] != m.Description {
			t.Errorf("README metric %s: description %q, metadata.yaml %q", name, row["description"], m.Description)
		}
		md.checkReadmeAttributes(t, name, m, parseAttributes(row["attributes"]))
	}
	for _, key := range slices.Sorted(maps.Keys(md.Telemetry.Metrics)) {
		if !seen["otelcol_"+key] {
			t.Errorf("metric otelcol_%s: in metadata.yaml, not in the README's telemetry table", key)
		}
	}
}

func (md Metadata) checkReadmeAttributes(t testing.TB, name string, m Metric, got []readmeAttribute) {
	t.Helper()
	var want []readmeAttribute
	for _, key := range m.Attributes {
		a := md.Attributes[key]
		want = append(want, readmeAttribute{name: a.name(key), values: a.Enum})
	}
	if len(got) != len(want) {
		t.Errorf("README metric %s: attributes %v, metadata.yaml %v", name, got, want)
		return
	}
	for i := range want {
		if got[i].name != want[i].name || !slices.Equal(got[i].values, want[i].values) {
			t.Errorf("README metric %s: attribute %s with values %v, metadata.yaml has %s with %v",
				name, got[i].name, got[i].values, want[i].name, want[i].values)
		}
	}
}

// CheckReadmeStability compares the README's Stability row ("[alpha]: traces") with md.
func (md Metadata) CheckReadmeStability(t testing.TB, path string) {
	t.Helper()
	var want []string
	for _, level := range slices.Sorted(maps.Keys(md.Status.Stability)) {
		want = append(want, "["+level+"]: "+strings.Join(md.Status.Stability[level], ", "))
	}
	for line := range strings.Lines(readFile(t, path)) {
		cells := splitRow(line)
		if len(cells) >= 2 && cells[0] == "Stability" {
			if cells[1] != strings.Join(want, "; ") {
				t.Errorf("README stability %q, metadata.yaml %q", cells[1], strings.Join(want, "; "))
			}
			return
		}
	}
	t.Errorf("README %s has no Stability row", path)
}

// telemetryTable reads the first table after the "## Telemetry" heading.
func telemetryTable(t testing.TB, path string) []readmeRow {
	t.Helper()
	var header []string
	var rows []readmeRow
	inSection := false
	for line := range strings.Lines(readFile(t, path)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = line == "## Telemetry"
			continue
		case !inSection:
			continue
		case !strings.HasPrefix(line, "|"):
			if header != nil {
				return rows
			}
			continue
		}
		cells := splitRow(line)
		switch {
		case header == nil:
			for _, c := range cells {
				header = append(header, strings.ToLower(c))
			}
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// the separator row
		default:
			row := readmeRow{}
			for i, c := range cells {
				if i < len(header) {
					row[header[i]] = c
				}
			}
			rows = append(rows, row)
		}
	}
	require.NotEmpty(t, rows, "%s has no table under ## Telemetry", path)
	return rows
}

// splitRow returns the trimmed cells of a Markdown table row.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// parseAttributes reads "`a`: `x`, `y`; `b`".
func parseAttributes(cell string) []readmeAttribute {
	var out []readmeAttribute
	for _, group := range strings.Split(cell, ";") {
		if strings.TrimSpace(group) == "" {
			continue
		}
		name, values, _ := strings.Cut(group, ":")
		a := readmeAttribute{name: strings.Trim(strings.TrimSpace(name), "`")}
		for _, v := range strings.Split(values, ",") {
			if v = strings.Trim(strings.TrimSpace(v), "`"); v != "" {
				a.values = append(a.values, v)
			}
		}
		out = append(out, a)
	}
	return out
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
