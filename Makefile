# seedkeeper — build, test and demo.
#
#   make demo    run seedkeeper against the simulated SmartOS host (no root)
#   make test    install missing test tools (as root) and run every test
#   make build   build the static binary into bin/

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin
TOOLS     := mdata-get mdata-put mdata-delete mdata-list
TESTFLAGS ?= -race -count=1 -timeout 30m

.PHONY: all build demo test test-deps vet unit bench fuzz clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/seedkeeper ./cmd/seedkeeper
	@for t in $(TOOLS); do ln -sf seedkeeper $(BIN)/$$t; done

demo: build
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/seedkeeper-demo ./cmd/seedkeeper-demo
	$(BIN)/seedkeeper-demo --bin $(BIN) --testdata testdata

test-deps:
	@sh scripts/test-deps.sh

vet:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) vet ./...

test: test-deps vet
	$(GO) test $(TESTFLAGS) ./...

unit:
	$(GO) test -short $(TESTFLAGS) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
