package metadatatest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// CheckAttributeConstants compares the Attribute* string constants of the Go package in dir
// with md's enums: one constant Attribute<key><value> per enum value of each attribute, as
// mdatagen names them, and no other.
func (md Metadata) CheckAttributeConstants(t testing.TB, dir string) {
	t.Helper()
	got := attributeConstants(t, dir)
	want := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(md.Attributes)) {
		for _, v := range md.Attributes[key].Enum {
			name := "Attribute" + identifier(key) + identifier(v)
			want[name] = v
			switch value, ok := got[name]; {
			case !ok:
				t.Errorf("attribute %s: metadata.yaml has value %q, internal/metadata has no constant %s", key, v, name)
			case value != v:
				t.Errorf("attribute %s: %s is %q in internal/metadata, metadata.yaml has %q", key, name, value, v)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("constant %s = %q: in internal/metadata, no enum value of metadata.yaml", name, got[name])
		}
	}
}

// attributeConstants reads the string constants named Attribute* of the package in dir.
func attributeConstants(t testing.TB, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, path, src, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Attribute") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[name.Name], err = strconv.Unquote(lit.Value)
						require.NoError(t, err)
					}
				}
			}
		}
	}
	return consts
}

// identifier is mdatagen's Go name of a key or value: its alphanumeric runs, each
// capitalised.
func identifier(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// valueList is a description's "by <attribute> … (<value>, <value>, …)".
var valueList = regexp.MustCompile(`\bby (\w+)[^()]*\(([a-z_]+(?:, [a-z_]+)*)\)`)

// CheckDescriptions compares the values a metric's description lists for an attribute with
// that attribute's enum: a description must not drift from the values it names.
func (md Metadata) CheckDescriptions(t testing.TB) {
	t.Helper()
	for _, key := range slices.Sorted(maps.Keys(md.Telemetry.Metrics)) {
		m := md.Telemetry.Metrics[key]
		for _, match := range valueList.FindAllStringSubmatch(m.Description, -1) {
			attr, ok := md.metricAttribute(m, match[1])
			if !ok {
				t.Errorf("metric otelcol_%s: description lists values of %q, which is none of its attributes %v", key, match[1], m.Attributes)
				continue
			}
			if listed := strings.Split(match[2], ", "); !slices.Equal(listed, attr.Enum) {
				t.Errorf("metric otelcol_%s: description lists %s %v, metadata.yaml's enum is %v", key, match[1], listed, attr.Enum)
			}
		}
	}
}

// metricAttribute finds the attribute of m named name on the metric.
func (md Metadata) metricAttribute(m Metric, name string) (Attribute, bool) {
	for _, key := range m.Attributes {
		if a := md.Attributes[key]; a.name(key) == name {
			return a, true
		}
	}
	return Attribute{}, false
}
