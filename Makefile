# retrystorm: the README's two commands are `make run` and `make test`.
GO       ?= go
PKGS     := ./...

.PHONY: test vet fmtcheck unit browser

test: fmtcheck vet browser unit

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
