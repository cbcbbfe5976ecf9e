# retrystorm: the README's two commands are `make run` and `make test`.
GO       ?= go
PKGS     := ./...

.PHONY: test vet fmtcheck unit browser

test: fmtcheck vet browser unit e2e

# The stormreport page test renders in headless Chromium; install it when missing.
browser:
	@bash .ci/ensure-chromium

fmtcheck:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './_build/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

# The otelcol-retrystorm distribution, built by ocb from builder-config.yaml. Only Go and
# make are needed: `go run` fetches the builder. Rebuilt only when the manifest or a Go
# source, go.mod or go.sum of the repository (tracked or new, not ignored; tests excluded:
# they are not in the binary) is newer than the binary.
BUILDER_VERSION ?= v0.161.0
OTELCOL         := _build/otelcol-retrystorm
OTELCOL_SOURCES := $(wildcard $(shell { \
	git ls-files --cached --others --exclude-standard -- '*.go' '*go.mod' '*go.sum' 2>/dev/null || \
	find . -path ./_build -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -print; \
	} | grep -v -e '_test\.go$$' -e '^\(\./\)\?_build/'))

.PHONY: build e2e

build: $(OTELCOL)

$(OTELCOL): builder-config.yaml $(OTELCOL_SOURCES)
	$(GO) run go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION) --config builder-config.yaml
	@touch $@

# Validates every config/*.yaml with the built binary.
e2e: build
	$(GO) test -race -tags e2e -count=1 ./e2e/...

# The demo: the collector with config/demo.yaml, about 20 s of agentsim traffic, a graceful
# stop, then the stormreport summary; outputs in _run/ (see scripts/run-demo.sh).
.PHONY: run

run: build
	@GO="$(GO)" bash scripts/run-demo.sh
