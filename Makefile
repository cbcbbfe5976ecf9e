# retrystorm: the README's two commands are `make run` and `make test`.
GO       ?= go
PKGS     := ./...

.PHONY: test vet fmtcheck unit browser python alert-rules

test: fmtcheck vet browser python alert-rules unit e2e

# The stormreport page test renders in headless Chromium; install it when missing.
browser:
	@bash .ci/ensure-chromium

# The attemptlog test compares with the per-attempt Python scanner; install python3 when missing.
python:
	@bash .ci/ensure-python3

# The Prometheus alerting rules and their unit tests (config/alerting), and every query of
# the Grafana dashboard (config/grafana/retrystorm.json) checked as PromQL by promtool;
# installs promtool when missing.
alert-rules: python
	@bash .ci/ensure-prometheus
	promtool check rules config/alerting/retrystorm.rules.yml
	promtool test rules config/alerting/retrystorm.rules.test.yml
	@tmp="$$(mktemp -d)" && trap 'rm -rf "$$tmp"' EXIT && \
	python3 config/alerting/dashboard_test.py config/grafana/retrystorm.json "$$tmp/dashboard.rules.yml" && \
	promtool check rules "$$tmp/dashboard.rules.yml"

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

# Validates every config/*.yaml with the built binary; the alerting and dashboard tests run a
# real Prometheus, installed when missing. The suite runs past go test's default 10-minute
# bound on two cores with -race.
e2e: build
	@bash .ci/ensure-prometheus
	$(GO) test -race -tags e2e -count=1 -timeout 30m ./e2e/...

# The demo: the collector with config/demo.yaml, about 20 s of agentsim traffic, a graceful
# stop, then the stormreport summary; outputs in _run/ (see scripts/run-demo.sh).
.PHONY: run

run: build
	@GO="$(GO)" bash scripts/run-demo.sh

# Benchmarks (BENCHMARKS.md). `make bench` runs the in-process comparison (cmd/stormbench) of
# retry_storm with tail_sampling, the floors and two tail_sampling stacks (then the
# retry_storm policy and processor; then the contrib redaction processor) and ends with one
# `ratio …` line per target;
# `make bench-e2e` builds both collectors and drives them over OTLP gRPC (agentsim, then a replay).
STORMBENCH_FLAGS     ?=
STORMBENCH_E2E_FLAGS ?=
TAILSAMPLING         := _build/otelcol-tailsampling
AGENTSIM_BIN         := _build/agentsim

.PHONY: bench bench-build bench-e2e

bench:
	$(GO) run ./cmd/stormbench $(STORMBENCH_FLAGS)

# stormreport scan over 1 GiB of per-attempt JSONL beside the per-attempt Python scanner on the
# same file, and over 1 GiB of OTLP/JSON (BENCHMARKS.md); needs python3.
STORMBENCH_SCAN_FLAGS ?=
.PHONY: bench-scan
bench-scan:
	$(GO) run ./cmd/stormbench scan $(STORMBENCH_SCAN_FLAGS)

$(TAILSAMPLING): bench/builder-tailsampling.yaml
	$(GO) run go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION) --config bench/builder-tailsampling.yaml
	cp _build/tailsampling/otelcol-tailsampling $@

bench-build: $(OTELCOL) $(TAILSAMPLING)
	$(GO) build -o $(AGENTSIM_BIN) ./cmd/agentsim

# Twice: agentsim (spans built through the OTel SDK, as the issue asks; it saturates before
# the collectors do), then a replay of the same generator's pre-encoded requests, which can.
bench-e2e: bench-build
	$(GO) run ./cmd/stormbench e2e --driver agentsim --rates 100,200,400,600 \
		--retry-storm-bin $(OTELCOL) --tail-sampling-bin $(TAILSAMPLING) --agentsim-bin $(AGENTSIM_BIN) $(STORMBENCH_E2E_FLAGS)
	$(GO) run ./cmd/stormbench e2e --driver replay --rates 1000,2000,3000,4000 --duration 20s \
		--retry-storm-bin $(OTELCOL) --tail-sampling-bin $(TAILSAMPLING) $(STORMBENCH_E2E_FLAGS)
