# seedkeeper — build, test and demo.
#
#   make demo    run seedkeeper against the simulated SmartOS host (no root)
#   make test    install missing test tools (as root) and run every test
#   make build   build the static binary into bin/
#   make package build the .deb and .rpm into bin/pkg/ (nfpm, a Go tool in tools/)
#   make deb     build the .deb alone (what the systemd-booted test guest installs)
#   make e2e     the full matrix of the systemd-booted guests (test/vm, root, QEMU)
#   make cross   build the binary for linux/amd64, linux/arm64, freebsd/amd64
#                and windows/amd64 into bin/cross/
#   make bench   Go benchmarks + the whole-process harness → BENCHMARKS.md
#   make faults  the full fault matrix → BENCHMARKS.md
#   make bench-hostile  peak RSS over the hostile-input corpus → BENCHMARKS.md

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/seedkeeper/seedkeeper/internal/version.stamp=$(VERSION)
BIN       := bin
TOOLS     := mdata-get mdata-put mdata-delete mdata-list
TESTFLAGS ?= -race -count=1 -timeout 85m

.PHONY: all build demo test test-deps vet unit bench bench-report bench-hostile faults skbench fuzz clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/seedkeeper ./cmd/seedkeeper
	@for t in $(TOOLS); do ln -sf seedkeeper $(BIN)/$$t; done

demo: build
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/seedkeeper-demo ./cmd/seedkeeper-demo
	$(BIN)/seedkeeper-demo --bin $(BIN) --testdata testdata --drop-in packaging/95-seedkeeper.cfg

test-deps:
	@sh scripts/test-deps.sh

vet:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) vet ./...

test: test-deps vet
	$(GO) test $(TESTFLAGS) ./...

unit:
	$(GO) test -short $(TESTFLAGS) ./...

# The Go benchmarks beside the code, then the harness (bench/cmd/skbench),
# which compares whole processes against cloud-init, isoinfo and mtools on
# one simulated host and writes the figures into BENCHMARKS.md. Run as root
# (network namespaces), one at a time: the machine is small.
bench: skbench
	$(GO) test -run '^$$' -bench . -benchmem ./... > $(BIN)/gobench.txt || { cat $(BIN)/gobench.txt; exit 1; }
	@cat $(BIN)/gobench.txt
	$(BIN)/skbench bench --bin $(BIN)/seedkeeper --gobench $(BIN)/gobench.txt

# The harness alone (it runs only the mdata, hotplug and netcfg/apply
# integration benchmarks).
bench-report: skbench
	$(BIN)/skbench bench --bin $(BIN)/seedkeeper

# The full fault matrix (the short form runs in make test as
# TestIntegrationFaultMatrix).
faults: skbench
	$(BIN)/skbench faults --bin $(BIN)/seedkeeper

# Peak RSS of fetch and boot over the hostile-input corpus (testdata/hostile)
# against SECURITY.md's 64 MiB budget. Run as root, like the corpus tests.
bench-hostile: skbench
	$(BIN)/skbench hostile --bin $(BIN)/seedkeeper

skbench: build
	$(GO) build -o $(BIN)/skbench ./bench/cmd/skbench

clean:
	rm -rf $(BIN)

# Packages (.deb and .rpm, for the host's GOARCH). The package version is
# made from VERSION by packaging/pkgversion.sh.
PKGDIR      := $(BIN)/pkg
MANDIR      := $(BIN)/man
COMPDIR     := $(BIN)/completion
PKG_VERSION ?= $(shell sh packaging/pkgversion.sh '$(VERSION)')
PKG_ARCH    ?= $(shell $(GO) env GOARCH)
NFPM        := $(GO) tool -modfile=tools/go.mod nfpm

.PHONY: package deb cross e2e pkgdoc completion

# The shell completion scripts the packages ship, made by the built binary
# from its command table.
completion:
	@mkdir -p $(COMPDIR)
	@for s in bash zsh fish; do $(BIN)/seedkeeper completion $$s > $(COMPDIR)/seedkeeper.$$s || exit 1; done

# The packages' changelogs: CHANGELOG.md as the upstream changelog, and a
# one-entry Debian changelog for this build's version (dated by the last
# commit, so that the same sources give the same package).
DOCDIR      := $(BIN)/pkgdoc
PKG_DATE    ?= $(shell git log -1 --format=%cD 2>/dev/null || date -R)
# The packages' maintainer (the control field, the rpm's Packager and the
# Debian changelog's trailer). .invalid never delivers: set the project's
# real address here when it has one.
PKG_MAINTAINER ?= seedkeeper developers <seedkeeper@seedkeeper.invalid>
pkgdoc:
	rm -rf $(DOCDIR) && mkdir -p $(DOCDIR)
	gzip -9n < CHANGELOG.md > $(DOCDIR)/changelog.gz
	printf 'seedkeeper (%s-1) unstable; urgency=medium\n\n  * Built from the seedkeeper sources, version %s.\n  * The changes are in /usr/share/doc/seedkeeper/changelog.gz.\n\n -- %s  %s\n' \
		'$(PKG_VERSION)' '$(VERSION)' '$(PKG_MAINTAINER)' '$(PKG_DATE)' | gzip -9n > $(DOCDIR)/changelog.Debian.gz

package: build pkgdoc
	rm -rf $(MANDIR) $(PKGDIR) $(COMPDIR)
	$(GO) run ./packaging/genman -bin $(BIN)/seedkeeper -out $(MANDIR)
	$(MAKE) --no-print-directory completion
	@mkdir -p $(PKGDIR)
	@for p in deb rpm; do \
		SEEDKEEPER_VERSION='$(PKG_VERSION)' SEEDKEEPER_BIN='$(BIN)/seedkeeper' SEEDKEEPER_COMPLETION='$(COMPDIR)' \
		SEEDKEEPER_MAN='$(MANDIR)' SEEDKEEPER_ARCH='$(PKG_ARCH)' SEEDKEEPER_DOC='$(DOCDIR)' SEEDKEEPER_MAINTAINER='$(PKG_MAINTAINER)' \
		$(NFPM) package -f packaging/nfpm.yaml -p $$p -t $(PKGDIR)/ || exit 1; \
	done

deb: build pkgdoc
	rm -rf $(MANDIR) $(PKGDIR) $(COMPDIR)
	$(GO) run ./packaging/genman -bin $(BIN)/seedkeeper -out $(MANDIR)
	$(MAKE) --no-print-directory completion
	@mkdir -p $(PKGDIR)
	SEEDKEEPER_VERSION='$(PKG_VERSION)' SEEDKEEPER_BIN='$(BIN)/seedkeeper' SEEDKEEPER_COMPLETION='$(COMPDIR)' \
	SEEDKEEPER_MAN='$(MANDIR)' SEEDKEEPER_ARCH='$(PKG_ARCH)' SEEDKEEPER_DOC='$(DOCDIR)' SEEDKEEPER_MAINTAINER='$(PKG_MAINTAINER)' \
	$(NFPM) package -f packaging/nfpm.yaml -p deb -t $(PKGDIR)/

# The systemd-booted guests (test/vm/systemd_test.go): every scenario on
# every network stack. `make test` runs the networkd scenarios (with the
# template scenarios, test/vm/systemd_templates_test.go)
# and the short form of the others; this runs them all. Root, QEMU and mmdebstrap
# (scripts/test-deps.sh); the root filesystems are cached by their inputs
# under /var/cache/seedkeeper-test/rootfs.
e2e: test-deps
	SEEDKEEPER_VM_MATRIX=full $(GO) test -count=1 -timeout 240m -v -run 'TestIntegrationSystemd' ./test/vm/

# Cross-builds: the whole binary on Linux; elsewhere the mdata tools over the
# serial port, and honest "not supported" errors for the rest.
CROSS := linux/amd64 linux/arm64 freebsd/amd64 windows/amd64

cross:
	@for t in $(CROSS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "cross: $$t"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o $(BIN)/cross/seedkeeper-$$os-$$arch$$ext ./cmd/seedkeeper || exit 1; \
	done
