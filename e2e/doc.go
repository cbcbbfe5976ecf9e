// Package e2e tests the built otelcol-retrystorm distribution. Its tests carry the e2e
// build tag and need the binary: `make e2e` builds it and runs them.
package e2e
