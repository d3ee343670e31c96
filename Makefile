# krm-fn-runtime: wrapper-server, runner-client and their shared library.
#
#   make          build build/bin/wrapper-server and build/bin/runner-client
#   make test     unit + integration tests, again under ASan+UBSan, then a short
#                 run of every libFuzzer target (make fuzz: the long run)
#   make demo     evaluate a sample package through the wrapper server
#   make e2e      end-to-end tests on a real Kubernetes cluster (scripts/e2e.sh)
#   make help     every target, one line each
#
# BUILD selects the output tree; SAN=1 builds with AddressSanitizer and
# UndefinedBehaviorSanitizer (make test uses BUILD=build/asan SAN=1 for that).
# V=1 prints the full commands instead of `CC file` lines.

BUILD ?= build
SAN   ?=
CC    ?= cc

PKGS     := libprotobuf-c libnghttp2 yaml-0.1
CPPFLAGS := -D_GNU_SOURCE -Ilib -I$(BUILD)/gen
# No -DNDEBUG, in any build (the static release included): assert() guards
# invariants whose breach would otherwise go on as a use after free or a
# count gone wrong; an abort names the line instead (docs/internals.md).
# -Wpedantic: ISO C17 as written (no `return f();` in a void function);
# string literals longer than C99's 4095 required characters (help texts)
# are fine for every compiler we build with.
CFLAGS   := -std=c17 -O2 -g -Wall -Wextra -Wpedantic -Wno-overlength-strings -Werror -Wshadow \
            -Wstrict-prototypes -Wno-missing-field-initializers -fno-strict-aliasing
LDLIBS    = $(shell pkg-config --libs $(PKGS))
# runner-client alone talks HTTPS to registries (lib/oci/registry*.c): libcurl
# (OpenSSL flavour) and OpenSSL's libcrypto for sha256; and sandboxes its
# functions (lib/runtime/sandbox*.c): libseccomp builds the system call
# filter. wrapper-server and copier never link them.
RC_PKGS   := libcurl libcrypto libseccomp
RC_LDLIBS  = $(shell pkg-config --libs $(RC_PKGS))
# STATIC_PREFIX: build fully static with musl-gcc against the libraries that
# scripts/static-build.sh compiled from Debian's source packages into it.
ifneq ($(STATIC_PREFIX),)
CC       := musl-gcc
CPPFLAGS += -I$(STATIC_PREFIX)/include
CFLAGS   := $(filter-out -O2 -g,$(CFLAGS)) -Os -ffunction-sections -fdata-sections
LDFLAGS  += -static -Wl,--gc-sections
LDLIBS    = -L$(STATIC_PREFIX)/lib -lnghttp2 -lyaml -lprotobuf-c
# STATIC_CLIENT_PREFIX: runner-client too, against the libcurl and OpenSSL
# that scripts/static-build.sh built there (and libseccomp, in
# STATIC_PREFIX); STATIC_KHDR holds the Linux UAPI headers the sandbox needs
# (musl-gcc does not search /usr/include).
ifneq ($(STATIC_CLIENT_PREFIX),)
CPPFLAGS += -I$(STATIC_CLIENT_PREFIX)/include -idirafter $(STATIC_KHDR)
RC_LDLIBS = -L$(STATIC_CLIENT_PREFIX)/lib -lcurl -lnghttp2 -lssl -lcrypto -lseccomp
endif
endif
ifeq ($(SAN),1)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
# each unit test's body followed by a leak check (tests/unit/leak_check.c)
UNIT_LDFLAGS := -Wl,--wrap=criterion_internal_test_main
endif

PROTOS    := evaluator health reflection
# The descriptors served by reflection (svc_reflection.c): every proto, the
# v1alpha reflection one too (its messages are reflection.proto's, so it
# needs no C code), embedded as a byte array by scripts/embed.sh.
DESC_PROTOS := $(PROTOS) reflection_v1alpha
# reflection_v1alpha.proto is reflection.proto under its older package name,
# made at build time rather than kept as a second copy.
V1ALPHA_PROTO = sed -e 's/^package grpc\.reflection\.v1;$$/package grpc.reflection.v1alpha;/' $< > $@
desc_srcs = $(PROTOS:%=proto/%.proto) $(1)/reflection_v1alpha.proto
GEN_SRCS  := $(PROTOS:%=$(BUILD)/gen/%.pb-c.c)
GEN_HDRS  := $(PROTOS:%=$(BUILD)/gen/%.pb-c.h)
LIB_SRCS  := $(wildcard lib/*/*.c)
ifneq ($(STATIC_PREFIX),)
ifeq ($(STATIC_CLIENT_PREFIX),)
LIB_SRCS  := $(filter-out lib/http/%.c lib/oci/registry%.c lib/kube/kube_%.c lib/runtime/ev_pod.c lib/runtime/health_check.c lib/runtime/sandbox%.c,$(LIB_SRCS))   # need libcurl, a TLS library or libseccomp: only in the static runner-client's build
endif
endif
WS_SRCS   := $(filter-out wrapper-server/main.c,$(wildcard wrapper-server/*.c))
RC_SRCS   := $(filter-out runner-client/main.c,$(wildcard runner-client/*.c runner-client/*/*.c))
UNIT_SRCS := $(wildcard tests/unit/*.c)
COPIER_SRCS := $(wildcard copier/*.c)
BENCH_SRCS  := $(wildcard bench/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
# The static build is optimised for size, except where every byte a function
# writes passes through: the output scan and the buffer code stay at -O2
# (a few KiB more, about twice as fast on a 5 MiB output).
ifneq ($(STATIC_PREFIX),)
$(call obj,lib/krm/rl_scan.c lib/core/buf.c): CFLAGS += -O2
endif
LIB_OBJS  := $(call obj,$(LIB_SRCS)) $(GEN_SRCS:.c=.o) $(BUILD)/gen/descriptor_set.o
WS_OBJS   := $(call obj,$(WS_SRCS))
RC_OBJS   := $(call obj,$(RC_SRCS))

# Short lines (`CC lib/core/loop.c`, `LD build/bin/wrapper-server`); V=1
# prints the commands instead, make -s nothing.
ifeq ($(V),1)
Q   :=
say  =
else
Q   := @
say  = $(if $(findstring s,$(firstword -$(MAKEFLAGS))),,@printf '  %-5s %s\n' '$(1)' '$(2)')
endif

BINS := $(BUILD)/bin/wrapper-server $(BUILD)/bin/runner-client
ifneq ($(COPIER_SRCS),)
BINS += $(BUILD)/bin/copier
endif

.PHONY: all deps deps-build test unit integration demo clean static images bench
.SECONDARY:   # keep generated protobuf sources
all: $(BINS)

# The Debian packages: deps for everything the tests use, deps-build for
# building and the demo only (scripts/deps.sh).
deps:
	@./scripts/deps.sh test

deps-build:
	@./scripts/deps.sh build

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	$(call say,PROTOC,$<)
	$(Q)protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -MMD -MP -c -o $@ $<

$(BUILD)/gen/reflection_v1alpha.proto: proto/reflection.proto
	@mkdir -p $(BUILD)/gen
	$(Q)$(V1ALPHA_PROTO)

$(BUILD)/gen/descriptor_set.pb: $(call desc_srcs,$(BUILD)/gen)
	@mkdir -p $(BUILD)/gen
	$(call say,PROTOC,$@)
	$(Q)protoc --proto_path=proto --proto_path=$(BUILD)/gen --include_imports --descriptor_set_out=$@ $^

$(BUILD)/gen/descriptor_set.c: $(BUILD)/gen/descriptor_set.pb scripts/embed.sh
	$(call say,EMBED,$<)
	$(Q)./scripts/embed.sh krm_descriptor_set $< > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/descriptor_set.o: $(BUILD)/gen/descriptor_set.c
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(GEN_HDRS)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/lib.a: $(LIB_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/wrapper-server: $(call obj,wrapper-server/main.c) $(WS_OBJS) $(BUILD)/lib.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bin/runner-client: $(call obj,runner-client/main.c) $(RC_OBJS) $(BUILD)/lib.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(RC_LDLIBS)

$(BUILD)/obj/copier/%.o: CPPFLAGS += -Icopier
$(BUILD)/obj/tests/%.o: CPPFLAGS += -Iwrapper-server -Irunner-client
$(BUILD)/obj/runner-client/%.o: CPPFLAGS += -Irunner-client
$(BUILD)/obj/wrapper-server/%.o: CPPFLAGS += -Iwrapper-server

$(BUILD)/bin/copier: $(call obj,$(COPIER_SRCS)) $(BUILD)/lib.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Benchmark programs: each bench/NAME.c is one program build/bin/bench-NAME.
$(BUILD)/bin/bench-%: $(BUILD)/obj/bench/%.o $(BUILD)/lib.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# bench-standing times the functions' sandbox (lib/runtime), which links libseccomp.
$(BUILD)/bin/bench-standing: LDLIBS += $(RC_LDLIBS)

# The benchmarks' Go function, built as the catalog's functions are (static,
# CGO off) from Debian's Go and yaml.v3, offline: GOPATH mode over Debian's
# /usr/share/gocode, nothing fetched.
$(BUILD)/bin/bench-fn-go: bench/gofn/main.go
	@mkdir -p $(dir $@) $(BUILD)/gocache
	$(call say,GO,$@)
	$(Q)GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(abspath $(BUILD)/gocache) \
	    GOFLAGS= CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $@ $<

# One Criterion binary holds every unit test; it links the server's, the
# client's and the copier's modules (all but their main.c) so what is tested
# is what ships.
$(BUILD)/tests/unit: $(call obj,$(UNIT_SRCS)) $(WS_OBJS) $(RC_OBJS) \
                     $(call obj,$(filter-out copier/main.c,$(COPIER_SRCS))) $(BUILD)/lib.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $(UNIT_LDFLAGS) -o $@ $^ $(LDLIBS) $(RC_LDLIBS) -lcriterion

unit: deps $(BUILD)/tests/unit
	$(BUILD)/tests/unit --jobs 2

# INTEGRATION_JOBS (default 2) pytest-xdist workers; the tests marked serial
# run after, alone (scripts/integration.sh).
integration: deps $(BINS)
	./scripts/integration.sh $(BUILD)

# make test builds each tree on BUILD_JOBS jobs (default: every CPU), then
# runs its suites, one stage at a time: a build beside the tests would load the
# cores that the tests' timings assume.
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test: deps
	$(MAKE) static
	$(MAKE) -j$(BUILD_JOBS) all $(BUILD)/tests/unit
	$(MAKE) unit integration
	$(MAKE) -j$(BUILD_JOBS) all build/asan/tests/unit BUILD=build/asan SAN=1
	$(MAKE) unit integration BUILD=build/asan SAN=1
	$(MAKE) -j$(BUILD_JOBS) fuzz-build
	$(MAKE) fuzz-smoke

# Fully static musl binaries in build/static/ (libraries built from Debian's
# source packages, cached under build/static-deps/).
static: deps
	./scripts/static-build.sh

images: static
	./images/build.sh

bench: deps all $(patsubst bench/%.c,$(BUILD)/bin/bench-%,$(BENCH_SRCS)) $(BUILD)/bin/bench-fn-go
	./bench/run.sh $(BUILD)

# Not part of make test. soak: SOAK_CALLS (default 100000) calls of every
# kind against one server; fails on an unexpected status, VmRSS growth after
# the warm-up, or children or fds left (scripts/soak.sh, bench/soak.c).
# valgrind: the integration tests with wrapper-server and runner-client under
# memcheck; fails on any error or definite leak (scripts/valgrind.sh).
.PHONY: soak valgrind
soak: deps all $(BUILD)/bin/bench-soak
	./scripts/soak.sh $(BUILD)

valgrind: deps all
	./scripts/valgrind.sh $(BUILD)

demo: deps-build all
	./scripts/demo.sh $(BUILD)

# Not part of make test: the end-to-end tests on a real Kubernetes cluster,
# by default the lab of ../shared/k8s-lab (root; its first build takes about
# 8 minutes, then it is cached), or the cluster of KUBECONFIG with REGISTRY
# (scripts/e2e.sh says more). E2E_PYTEST_ARGS passes pytest arguments.
.PHONY: e2e
e2e: deps
	BUILD=$(BUILD) ./scripts/e2e.sh

# Not part of make test: the function pods' figures (bench/pods.py) on the
# lab that scripts/e2e.sh starts and stops (or KUBECONFIG with REGISTRY).
.PHONY: bench-pods
bench-pods: deps all $(BUILD)/bin/bench-loadgen $(BUILD)/bin/bench-tcpproxy
	BUILD=$(BUILD) E2E_RUN=bench ./scripts/e2e.sh

clean:
	rm -rf build

# make install PREFIX=/opt/krm: the two commands into $(DESTDIR)$(PREFIX)/bin,
# their man pages and bash completions (generated from their --help by
# scripts/cli-docs.sh, with help2man) under share/; nothing else (the copier
# belongs in images: make images).
PREFIX ?= /usr/local
CLI_DOCS := $(BUILD)/cli-docs
.PHONY: install cli-docs
cli-docs: $(CLI_DOCS)/.done
$(CLI_DOCS)/.done: $(BUILD)/bin/wrapper-server $(BUILD)/bin/runner-client scripts/cli-docs.sh
	@echo "  DOCS  $(CLI_DOCS): man pages and bash completions from --help"
	$(Q)rm -rf $(CLI_DOCS) && ./scripts/cli-docs.sh $(BUILD) $(CLI_DOCS) && touch $@
install: $(BUILD)/bin/wrapper-server $(BUILD)/bin/runner-client $(CLI_DOCS)/.done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BUILD)/bin/wrapper-server $(BUILD)/bin/runner-client $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(CLI_DOCS)/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(CLI_DOCS)/bash-completion/* \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/

.PHONY: help
help:
	@echo 'make [V=1] [BUILD=dir] [SAN=1] TARGET'
	@echo '  all (default)  build/bin/wrapper-server, runner-client and copier'
	@echo '  install        wrapper-server and runner-client into $$(DESTDIR)$$(PREFIX)/bin (PREFIX=$(PREFIX)),'
	@echo '                 their man pages and bash completions into share/ (needs help2man)'
	@echo '  demo           start a server with a sample function and evaluate examples/package'
	@echo '  test           static build, unit + integration tests, again under ASan+UBSan, fuzz smoke'
	@echo '  unit           the Criterion unit tests'
	@echo '  integration    the pytest integration tests (tests/integration), INTEGRATION_JOBS workers'
	@echo '  static         fully static musl binaries in build/static/ (fetches Debian sources once)'
	@echo '  images         OCI images (init container, function runner), without Docker'
	@echo '  bench          the benchmarks (bench/README.md)'
	@echo '  fuzz           every libFuzzer target for FUZZ_TIME s (default 300)'
	@echo '  fuzz-smoke     every libFuzzer target for FUZZ_SMOKE_TIME s (default 5)'
	@echo '  soak           many calls of every kind against one server, checking memory and fds'
	@echo '  valgrind       the integration tests under valgrind memcheck'
	@echo '  e2e            end-to-end tests on a Kubernetes cluster (scripts/e2e.sh)'
	@echo '  bench-pods     function pod figures on the lab or a cluster (bench/pods.py)'
	@echo '  deps           install (as root) or name the Debian packages the tests need'
	@echo '  deps-build     the same for building and make demo only'
	@echo '  clean          remove build/'

-include $(shell find $(BUILD)/obj $(BUILD)/gen -name '*.d' 2>/dev/null)

# ---- Fuzzing: libFuzzer targets tests/fuzz/fuzz_NAME.c -> build/fuzz/bin/ ----
#   make fuzz-smoke   each target FUZZ_SMOKE_TIME s (default 5) over its seeds
#   make fuzz         each target FUZZ_TIME s (default 300); the corpus grows
#                     in build/fuzz/corpus/NAME
# clang with ASan+UBSan; lib/ sources are compiled again into build/fuzz/. When
# `make static` has fetched Debian's sources (build/static-deps/src), libyaml
# and protobuf-c are compiled in with coverage, so the fuzzer sees inside
# them (with ASan only: protobuf-c 1.4.1 has harmless UB, NULL + 0 and
# int shifts, that UBSan would report); otherwise the pkg-config libraries
# are linked uninstrumented.
FUZZ_CC         ?= clang
FUZZ_TIME       ?= 300
FUZZ_SMOKE_TIME ?= 5
FUZZ_DEPS_SRC   ?= build/static-deps/src
FUZZ            := build/fuzz
FUZZ_SAN        := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS     := -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_WARN       := -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-missing-field-initializers
FUZZ_NAMES      := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_EXT_SRCS   := $(wildcard $(FUZZ_DEPS_SRC)/libyaml/src/*.c \
                              $(FUZZ_DEPS_SRC)/protobuf-c/protobuf-c/protobuf-c.c)
FUZZ_OBJS       := $(patsubst %.c,$(FUZZ)/obj/%.o,lib/core/buf.c lib/core/numparse.c lib/core/duration.c lib/grpc/grpc_frame.c \
                     lib/grpc/grpc_timeout.c lib/krm/resourcelist.c lib/krm/rl_errors.c lib/krm/rl_results.c lib/krm/yaml_v3.c lib/krm/yaml_unmarshal.c \
                     lib/krm/rl_scan.c lib/krm/yaml_depth.c lib/core/utf8.c lib/core/go_quote.c lib/runtime/pb_request.c lib/grpc/grpc_status.c lib/core/json.c lib/core/json_write.c lib/core/strset.c lib/grpc/http1.c lib/core/log.c wrapper-server/cli.c \
                     lib/grpc/rpc_server.c lib/grpc/rpc_conn.c lib/grpc/rpc_call.c lib/grpc/h2_io.c lib/grpc/h2_seen.c lib/core/loop.c lib/runtime/svc_health.c lib/grpc/metrics.c \
                     lib/runtime/fn_job.c lib/runtime/fn_slots.c lib/runtime/orphans.c lib/core/spawn.c lib/core/spawn_pipes.c \
                     lib/runtime/svc_reflection.c lib/runtime/proto_index.c \
                     lib/kube/kubeconfig.c lib/kube/exec_credential.c lib/kube/pod_id.c lib/krm/yaml_node.c lib/core/base64.c \
                     lib/core/fdio.c lib/core/header_value.c lib/oci/oci_manifest.c lib/oci/www_auth.c \
                     lib/krm/rl_edit.c lib/krm/yaml_load.c lib/krm/yaml_limits.c lib/oci/image_ref.c lib/core/beneath.c \
                     lib/pkg/pipeline.c lib/pkg/kptfile_fields.c lib/pkg/rl_rewrite.c lib/core/semver.c \
                     lib/pkg/rl_writer.c lib/pkg/err_line.c lib/krm/fnconfig.c lib/krm/yaml_json.c lib/core/state_step.c \
                     lib/core/json_edit.c lib/kube/pod_from_template.c lib/kube/pod_template.c) \
                   $(PROTOS:%=$(FUZZ)/gen/%.pb-c.o) $(FUZZ)/gen/descriptor_set.o \
                   $(patsubst $(FUZZ_DEPS_SRC)/%.c,$(FUZZ)/ext/%.o,$(FUZZ_EXT_SRCS))

.PHONY: fuzz fuzz-smoke fuzz-build
fuzz-build: deps $(FUZZ_NAMES:%=$(FUZZ)/bin/fuzz_%)

fuzz-smoke: fuzz-build
	FUZZ_SMOKE_TIME=$(FUZZ_SMOKE_TIME) ./scripts/fuzz.sh smoke $(FUZZ_NAMES)

fuzz: fuzz-build
	FUZZ_TIME=$(FUZZ_TIME) ./scripts/fuzz.sh long $(FUZZ_NAMES)

$(FUZZ)/gen/%.pb-c.c $(FUZZ)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(FUZZ)/gen
	protoc-c --proto_path=proto --c_out=$(FUZZ)/gen $<

$(FUZZ)/gen/%.pb-c.o: $(FUZZ)/gen/%.pb-c.c
	$(FUZZ_CC) -I$(FUZZ)/gen $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ)/gen/reflection_v1alpha.proto: proto/reflection.proto
	@mkdir -p $(FUZZ)/gen
	$(V1ALPHA_PROTO)

$(FUZZ)/gen/descriptor_set.c: $(call desc_srcs,$(FUZZ)/gen) scripts/embed.sh
	@mkdir -p $(FUZZ)/gen
	protoc --proto_path=proto --proto_path=$(FUZZ)/gen --include_imports \
	    --descriptor_set_out=$(FUZZ)/gen/descriptor_set.pb $(call desc_srcs,$(FUZZ)/gen)
	./scripts/embed.sh krm_descriptor_set $(FUZZ)/gen/descriptor_set.pb > $@

$(FUZZ)/gen/descriptor_set.o: $(FUZZ)/gen/descriptor_set.c
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ)/obj/%.o: %.c $(PROTOS:%=$(FUZZ)/gen/%.pb-c.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -D_GNU_SOURCE -Ilib -Iwrapper-server -I$(FUZZ)/gen $(FUZZ_CFLAGS) $(FUZZ_WARN) \
	    -MMD -MP -c -o $@ $<

fuzz_yaml = $(shell pkg-config --modversion yaml-0.1)
fuzz_yaml_v = $(subst ., ,$(fuzz_yaml))
$(FUZZ)/ext/%.o: $(FUZZ_DEPS_SRC)/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fno-sanitize=undefined -w -I$(FUZZ_DEPS_SRC)/libyaml/include \
	    -DYAML_VERSION_MAJOR=$(word 1,$(fuzz_yaml_v)) -DYAML_VERSION_MINOR=$(word 2,$(fuzz_yaml_v)) \
	    -DYAML_VERSION_PATCH=$(word 3,$(fuzz_yaml_v)) \
	    -DYAML_VERSION_STRING='"$(fuzz_yaml)"' -c -o $@ $<

$(FUZZ)/lib.a: $(FUZZ_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ)/bin/fuzz_%: $(FUZZ)/obj/tests/fuzz/fuzz_%.o $(FUZZ)/lib.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(shell pkg-config --libs $(PKGS))

-include $(shell find $(FUZZ)/obj -name '*.d' 2>/dev/null)
