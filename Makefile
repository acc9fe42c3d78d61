# reef: build and install the reef binary and libreef.
#
#   make                       reef (cargo build --release), libreef.a and
#                              libreef.so (tracer/Makefile), man pages and
#                              shell completions (made by reef itself)
#   make install               all of it under PREFIX (default /usr/local);
#                              builds only what is missing (run make first)
#   make install-strip         the same with the reef binary stripped
#   make DESTDIR=/tmp/stage install     a staged install, for packaging
#   make uninstall
#
# Every directory can be set: PREFIX BINDIR LIBDIR INCLUDEDIR DATADIR MANDIR
# PKGCONFIGDIR CMAKEDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR. WEB=0 skips the
# page of `reef view` (built with npm by scripts/build-web.sh): the binary
# then serves a page that says how to build it. The CMakeLists.txt beside
# this file installs the same files from the same templates (packaging/).

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR ?= $(LIBDIR)/cmake/reef
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

CARGO ?= cargo
CC ?= cc
INSTALL ?= install
WEB ?= 1
CARGO_TARGET_DIR ?= target
REEF_BIN = $(CARGO_TARGET_DIR)/release/reef
# Generated here: the man pages and completions.
OUT = $(CARGO_TARGET_DIR)/make

VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n 1)
ABI := $(shell sed -n 's/^\#define REEF_ABI_VERSION \([0-9]*\)$$/\1/p' tracer/include/reef.h)
LIB_VERSION = $(ABI).0.0

# The man pages and completions come after cargo has run (a sub-make sees
# the new binary).
all: reef tracer
	@$(MAKE) --no-print-directory docs

# Cargo knows when the binary is up to date.
reef: $(if $(filter 1,$(WEB)),web)
	@command -v protoc >/dev/null || bash scripts/build-tools.sh
	$(CARGO) build --release -p reef-cli

# `make install` builds only what is missing, so that `make && sudo make
# install` does not run cargo as root.
$(REEF_BIN):
	$(MAKE) reef

WEB_SOURCES = $(wildcard web/src/*) web/build.mjs web/package.json web/package-lock.json web/tsconfig.json
web: web/dist/index.html
web/dist/index.html: $(WEB_SOURCES)
	bash scripts/build-web.sh

tracer:
	$(MAKE) -C tracer

# Made by reef from its own command line, again when the binary changes.
docs: $(OUT)/docs.stamp
$(OUT)/docs.stamp: $(REEF_BIN)
	rm -rf $(OUT)/man $(OUT)/completions
	$(REEF_BIN) man $(OUT)/man
	mkdir -p $(OUT)/completions
	$(REEF_BIN) completions bash > $(OUT)/completions/reef.bash
	$(REEF_BIN) completions zsh > $(OUT)/completions/_reef
	$(REEF_BIN) completions fish > $(OUT)/completions/reef.fish
	touch $@

# Paths from the prefix (and from the CMake package's directory to the
# prefix), so that the pkg-config and CMake files name them relative to it.
rel = $(shell realpath -m --relative-to='$(2)' '$(1)')
SUBST = sed -e 's|@REEF_PREFIX@|$(PREFIX)|g' \
	-e 's|@REEF_VERSION@|$(VERSION)|g' \
	-e 's|@REEF_ABI_VERSION@|$(ABI)|g' \
	-e 's|@REEF_LIB_VERSION@|$(LIB_VERSION)|g' \
	-e 's|@REEF_BINDIR@|$(call rel,$(BINDIR),$(PREFIX))|g' \
	-e 's|@REEF_LIBDIR@|$(call rel,$(LIBDIR),$(PREFIX))|g' \
	-e 's|@REEF_INCLUDEDIR@|$(call rel,$(INCLUDEDIR),$(PREFIX))|g' \
	-e 's|@REEF_CMAKEDIR_TO_PREFIX@|$(call rel,$(PREFIX),$(CMAKEDIR))|g' \
	-e "s|@REEF_SIZEOF_VOID_P@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P -x c -)|g"

install: $(OUT)/docs.stamp
	$(MAKE) -C tracer install DESTDIR='$(DESTDIR)' LIBDIR='$(LIBDIR)' INCLUDEDIR='$(INCLUDEDIR)'
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(PKGCONFIGDIR)' \
		'$(DESTDIR)$(CMAKEDIR)' '$(DESTDIR)$(BASHCOMPDIR)' '$(DESTDIR)$(ZSHCOMPDIR)' '$(DESTDIR)$(FISHCOMPDIR)'
	$(INSTALL) -m 755 $(STRIP_FLAG) $(REEF_BIN) '$(DESTDIR)$(BINDIR)/reef'
	@# The reading API's and plugins' headers: plugins build against them.
	$(INSTALL) -m 644 crates/reef-capi/include/reef_reader.h crates/reef-capi/include/reef_plugin.h \
		'$(DESTDIR)$(INCLUDEDIR)'
	$(INSTALL) -m 644 $(OUT)/man/*.1 '$(DESTDIR)$(MANDIR)/man1'
	$(INSTALL) -m 644 $(OUT)/completions/reef.bash '$(DESTDIR)$(BASHCOMPDIR)/reef'
	$(INSTALL) -m 644 $(OUT)/completions/_reef '$(DESTDIR)$(ZSHCOMPDIR)/_reef'
	$(INSTALL) -m 644 $(OUT)/completions/reef.fish '$(DESTDIR)$(FISHCOMPDIR)/reef.fish'
	@# Filled in as they are installed: they name the install directories.
	$(SUBST) packaging/reef.pc.in > '$(DESTDIR)$(PKGCONFIGDIR)/reef.pc'
	$(SUBST) packaging/reefConfig.cmake.in > '$(DESTDIR)$(CMAKEDIR)/reefConfig.cmake'
	$(SUBST) packaging/reefConfigVersion.cmake.in > '$(DESTDIR)$(CMAKEDIR)/reefConfigVersion.cmake'
	chmod 644 '$(DESTDIR)$(PKGCONFIGDIR)/reef.pc' '$(DESTDIR)$(CMAKEDIR)/reefConfig.cmake' \
		'$(DESTDIR)$(CMAKEDIR)/reefConfigVersion.cmake'
	$(INSTALL) -m 644 packaging/ReefAddSchema.cmake '$(DESTDIR)$(CMAKEDIR)'
	@# The dynamic linker's cache, when installing for real as root.
	if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

install-strip:
	$(MAKE) install STRIP_FLAG=-s

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/reef' '$(DESTDIR)$(MANDIR)/man1/reef.1' '$(DESTDIR)$(MANDIR)/man1/'reef-*.1 \
		'$(DESTDIR)$(LIBDIR)/libreef.a' '$(DESTDIR)$(LIBDIR)/libreef.so' '$(DESTDIR)$(LIBDIR)/libreef.so.$(ABI)' \
		'$(DESTDIR)$(LIBDIR)/libreef.so.$(LIB_VERSION)' \
		'$(DESTDIR)$(INCLUDEDIR)/reef.h' '$(DESTDIR)$(INCLUDEDIR)/reef_fast.h' \
		'$(DESTDIR)$(INCLUDEDIR)/reef_reader.h' '$(DESTDIR)$(INCLUDEDIR)/reef_plugin.h' \
		'$(DESTDIR)$(PKGCONFIGDIR)/reef.pc' '$(DESTDIR)$(BASHCOMPDIR)/reef' \
		'$(DESTDIR)$(ZSHCOMPDIR)/_reef' '$(DESTDIR)$(FISHCOMPDIR)/reef.fish' \
		'$(DESTDIR)$(CMAKEDIR)/reefConfig.cmake' '$(DESTDIR)$(CMAKEDIR)/reefConfigVersion.cmake' \
		'$(DESTDIR)$(CMAKEDIR)/ReefAddSchema.cmake'
	rmdir '$(DESTDIR)$(CMAKEDIR)' 2>/dev/null || true

clean:
	$(MAKE) -C tracer clean
	rm -rf $(OUT)

.PHONY: all reef web tracer docs install install-strip uninstall clean
