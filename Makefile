# xcc-dns build, test and lab entry points. Run "make help" for the list.
#
# Tools are built from Go modules at pinned versions into bin/ (git-ignored)
# once, and rebuilt only when a pinned version changes: each tool's file name
# carries its version.

SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN            := $(CURDIR)/bin
GO             ?= go
GOTEST_FLAGS   ?= -count=1

ETCD_VERSION          := v3.7.3
GOLANGCI_LINT_VERSION := v2.15.0
HELM_VERSION          := v4.3.1
KUBERNETES_VERSION    := v1.36.3
CONTROLLER_GEN_VERSION:= v0.20.1

ETCDCTL        := $(BIN)/etcdctl-$(ETCD_VERSION)
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM           := $(BIN)/helm-$(HELM_VERSION)

export PATH := $(BIN):$(PATH)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_.-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: xcc-syncer coredns ## Build bin/xcc-syncer and bin/coredns.

.PHONY: xcc-syncer
xcc-syncer: ## Build bin/xcc-syncer.
	$(GO) build -o $(BIN)/xcc-syncer ./cmd/xcc-syncer

.PHONY: coredns
coredns: ## Build bin/coredns (stock CoreDNS with the plugins in cmd/coredns).
	$(GO) build -o $(BIN)/coredns ./cmd/coredns

# Versioned tool binaries: built once, and again only when the version changes.
$(ETCDCTL):
	@echo ">> building etcdctl $(ETCD_VERSION) into bin/"
	GOBIN=$(BIN) $(GO) install go.etcd.io/etcd/etcdctl/v3@$(ETCD_VERSION)
	mv $(BIN)/etcdctl $@ && ln -sf $(notdir $@) $(BIN)/etcdctl

$(GOLANGCI_LINT):
	@echo ">> building golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (a few minutes, once)"
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@ && ln -sf $(notdir $@) $(BIN)/golangci-lint

.PHONY: tools
tools: $(ETCDCTL) ## Build the pinned tools the unit and integration tests use.

.PHONY: test
test: tools unit ## Run every test: unit, integration, chart and end-to-end.

.PHONY: unit
unit: tools ## Unit and integration tests of the main module (embedded etcd, in-process CoreDNS).
	$(GO) vet ./...
	$(GO) test $(GOTEST_FLAGS) ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet and golangci-lint (pinned).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
