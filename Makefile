# seedkeeper — build, test and demo.
#
#   make demo    run seedkeeper against the simulated SmartOS host (no root)
#   make check   gofmt, go vet and the -short tests: run before every commit
#   make test    install missing test tools (as root) and run every test
#   make build   build the static binary into bin/
#   make package build the .deb and .rpm into bin/pkg/ (nfpm, a Go tool in tools/)
#   make release RELEASE=X.Y.Z  the release commit (with its API in api/), its tag vX.Y.Z and its
#                packages (scripts/release.sh, then make package)
#   make deb     build the .deb alone (what the systemd-booted test guest installs)
#   make api     every change of the stable packages' API since the last
#                release (api/), and whether CHANGELOG declares the breaking ones
#   make e2e     the full matrix of the systemd-booted guests (test/vm, root, QEMU)
#   make cross   build the binary for linux/amd64, linux/arm64, freebsd/amd64
#                and windows/amd64 into bin/cross/
#   make bench   Go benchmarks + the whole-process harness → BENCHMARKS.md
#   make faults  the full fault matrix → BENCHMARKS.md
#   make bench-hostile  peak RSS over the hostile-input corpus → BENCHMARKS.md

GO        ?= go
# The version of this tree, as "git describe" spells it at a release tag
# but counted without tags (packaging/pkgversion.sh): the release in
# internal/version, and after it the commits since the release commit.
ifndef VERSION
VERSION   := $(shell sh packaging/pkgversion.sh --describe || echo dev)
endif
# Every file the packages hold is dated by the last commit, so that two
# builds of one commit are the same bytes (nfpm reads SOURCE_DATE_EPOCH).
ifndef SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
endif
export SOURCE_DATE_EPOCH
LDFLAGS   := -s -w -X github.com/seedkeeper/seedkeeper/internal/version.stamp=$(VERSION)
BIN       := bin
TOOLS     := mdata-get mdata-put mdata-delete mdata-list
# The timeout is a bound for a hung test, per package: more than twice
# what test/vm, the longest, takes on a loaded machine (its guests took
# 24 minutes on a quiet 2-core one, and take up to twice that beside
# other work).
TESTFLAGS ?= -race -count=1 -timeout 150m

.PHONY: all build demo check test test-deps vet api unit bench bench-report bench-hostile faults skbench fuzz clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/seedkeeper ./cmd/seedkeeper
	@for t in $(TOOLS); do ln -sf seedkeeper $(BIN)/$$t; done

demo: build
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/seedkeeper-demo ./cmd/seedkeeper-demo
	$(BIN)/seedkeeper-demo --bin $(BIN) --testdata testdata --drop-in packaging/95-seedkeeper.cfg

test-deps:
	@sh scripts/test-deps.sh

# vet checks what ships, the static build, with its flags: what it
# compiles is then in the build cache for every static build after it
# (make build, make package, the tests' binary), where a plain vet's is
# not.
vet:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting" >&2; exit 1; }
	CGO_ENABLED=0 $(GO) vet -trimpath ./...

# The loop before every commit, about a minute on a quiet machine: what
# needs root, namespaces, ptys, seed images, package tools, QEMU or real
# protocol timeouts (every TestIntegration... test, and the oracle runs over
# corpora) is skipped under -short, and make test runs it.
check: vet
	$(GO) test -short -count=1 ./...

# test/vm's guest images are built while the other packages' tests run,
# and its guests boot after them (scripts/test.sh says why).
test: test-deps vet
	@GO=$(GO) sh scripts/test.sh $(TESTFLAGS)

api:
	$(GO) test -count=1 -v -run 'TestAPICompat$$' ./test/apicompat

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

# Peak RSS and time of fetch, boot, status, image check and image seal over
# the hostile-input corpus (testdata/hostile) and at every documented limit
# and one past it, against SECURITY.md's 64 MiB budget (exits 1 over it).
# Run as root, like the corpus tests.
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

.PHONY: package deb cross e2e pkgdoc man release completion

# The shell completion scripts the packages ship, made by the built binary
# from its command table.
completion: build
	@rm -rf $(COMPDIR) && mkdir -p $(COMPDIR)
	@for s in bash zsh fish; do $(BIN)/seedkeeper completion $$s > $(COMPDIR)/seedkeeper.$$s || exit 1; done

# What the packages carry besides the binary and the man pages, in
# $(DOCDIR): CHANGELOG.md as the upstream changelog; the README,
# SECURITY.md and docs/ for /usr/share/doc/seedkeeper; a one-entry
# changelog of this build's version (chglog's format: nfpm makes the
# .deb's changelog.Debian.gz and the .rpm's %changelog of it), dated by
# the last commit; and the nfpm configuration (packaging/nfpmconfig.sh).
DOCDIR      := $(BIN)/pkgdoc
PKG_DATE    := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
# The packages' maintainer (the control field, the rpm's Packager and the
# changelogs' trailer). .invalid never delivers: set the project's
# real address here when it has one.
PKG_MAINTAINER ?= seedkeeper developers <seedkeeper@seedkeeper.invalid>
NFPM_ENV = SEEDKEEPER_VERSION='$(PKG_VERSION)' SEEDKEEPER_BIN='$(BIN)/seedkeeper' \
	SEEDKEEPER_MAN='$(MANDIR)' SEEDKEEPER_ARCH='$(PKG_ARCH)' SEEDKEEPER_DOC='$(DOCDIR)' \
	SEEDKEEPER_MAINTAINER='$(PKG_MAINTAINER)' SEEDKEEPER_COMPLETION='$(COMPDIR)'
pkgdoc:
	rm -rf $(DOCDIR) && mkdir -p $(DOCDIR)/share/docs
	gzip -9n < CHANGELOG.md > $(DOCDIR)/changelog.gz
	cp README.md SECURITY.md $(DOCDIR)/share/
	cp docs/*.md $(DOCDIR)/share/docs/
	printf -- '- semver: "%s-1"\n  date: %s\n  packager: "%s"\n  deb:\n    urgency: medium\n    distributions: [unstable]\n  changes:\n    - note: "Built from the seedkeeper sources, version %s."\n    - note: "The changes are in /usr/share/doc/seedkeeper/changelog.gz."\n' \
		'$(PKG_VERSION)' '$(PKG_DATE)' '$(PKG_MAINTAINER)' '$(VERSION)' > $(DOCDIR)/changelog.yml

# man pages: genman writes them from the binary's --help, and fails when
# a page cites a file the packages do not install.
man: build
	rm -rf $(MANDIR)
	$(GO) run ./packaging/genman -bin $(BIN)/seedkeeper -out $(MANDIR) -src .

package: build pkgdoc man completion
	sh packaging/nfpmconfig.sh $(DOCDIR) $(MANDIR) > $(DOCDIR)/nfpm.yaml
	rm -rf $(PKGDIR) && mkdir -p $(PKGDIR)
	$(NFPM_ENV) $(NFPM) package -f $(DOCDIR)/nfpm.yaml -p deb -t $(PKGDIR)/
	$(NFPM_ENV) $(NFPM) package -f $(DOCDIR)/nfpm.yaml -p rpm -t $(PKGDIR)/

# The release of version RELEASE: scripts/release.sh writes the CHANGELOG
# section and internal/version's Release, commits and tags them; the
# packages are then built from the release commit (a new make, which
# reads the new version).
release:
	@test -n '$(RELEASE)' || { echo 'usage: make release RELEASE=X.Y.Z' >&2; exit 2; }
	sh scripts/release.sh '$(RELEASE)'
	$(MAKE) --no-print-directory package SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct)

deb: build pkgdoc man completion
	sh packaging/nfpmconfig.sh $(DOCDIR) $(MANDIR) > $(DOCDIR)/nfpm.yaml
	rm -rf $(PKGDIR) && mkdir -p $(PKGDIR)
	$(NFPM_ENV) $(NFPM) package -f $(DOCDIR)/nfpm.yaml -p deb -t $(PKGDIR)/

# The systemd-booted guests (test/vm/systemd_test.go): every scenario on
# every network stack and release. `make test` boots each check once,
# folded into chains; this adds the boots that repeat one of them on
# another image or a second boot (test/vm's package doc says which and
# why). Root, QEMU and mmdebstrap (scripts/test-deps.sh); the root
# filesystems are cached by their inputs under
# /var/cache/seedkeeper-test/rootfs. The timeout, a bound for a hang, is
# twice what the run takes on a loaded machine.
e2e: test-deps
	SEEDKEEPER_VM_MATRIX=full $(GO) test -count=1 -timeout 480m -v -run 'TestIntegrationSystemd' ./test/vm/

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
