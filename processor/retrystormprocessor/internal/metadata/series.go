package metadata // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// AttrOptions are the attribute sets of key's known values, made once so recording a
// series allocates nothing.
func AttrOptions(key string, values ...string) map[string]metric.AddOption {
	m := make(map[string]metric.AddOption, len(values))
	for _, v := range values {
		m[v] = metric.WithAttributeSet(attribute.NewSet(attribute.String(key, v)))
	}
	return m
}

// Add adds n to the counter's series opt (nil: the series without attributes); 0 records
// nothing.
func Add(c metric.Int64Counter, n int64, opt metric.AddOption) {
	if n == 0 {
		return
	}
	if opt == nil {
		c.Add(context.Background(), n)
		return
	}
	c.Add(context.Background(), n, opt)
}
