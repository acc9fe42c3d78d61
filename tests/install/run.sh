#!/usr/bin/env bash
# tests/install/run.sh — what `make install` and `cmake --install` put in
# place, used as a project would use it.
#
# Installs into a DESTDIR staging tree (PREFIX=/usr/local) with the
# top-level Makefile, then: the installed files; libreef.so's soname and
# exported symbols (exactly the public API read from the headers by
# public-api.py, with negative controls: a leaked internal symbol and a
# declaration without REEF_API are both caught); the man pages (one per
# subcommand, `man reef-print` renders); the completions (bash loads and
# completes); examples/cmake through find_package(reef) (shared and static)
# and examples/make through pkg-config (shared and static), each running
# `reef gen` at build time; their traces read by the installed `reef print`
# and by babeltrace2, which must print the same bytes; a schema edit
# regenerating the header in the CMake build (and nothing regenerated when
# nothing changed); a plugin using libreef loaded with dlopen(); and the
# same tree from CMakeLists.txt's `cmake --install`; `make uninstall`.
#
# Needs cmake, pkg-config, man-db, babeltrace2 (scripts/install-deps.sh),
# cargo and a C compiler. The reef binary is built with cargo if needed
# (scripts/test.sh has built it already), in $CARGO_TARGET_DIR when set:
# the binary under test is the installed one, built from this tree.
#
#   tests/install/run.sh [TEST-NAME-SUBSTRING...]
#
# The tests after the installed files, symbols, man pages and completions
# (always checked) are "examples/cmake", "examples/make", "dlopen" and
# "cmake --install"; with arguments, only those whose name contains one of
# them run.
set -euo pipefail
FILTERS=("$@")
want() {
	local f
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		case "$1" in *"$f"*) return 0 ;; esac
	done
	return 1
}

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-install-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export LC_ALL=C

for tool in cmake pkg-config man babeltrace2 nm readelf cc; do
	command -v "$tool" >/dev/null || { echo "install tests: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }
# check DESCRIPTION COMMAND...: the command's success is the check.
check() {
	local what=$1
	shift
	if "$@" >"$WORK/check.out" 2>&1; then ok "$what"; else fail "$what"; sed 's/^/    /' "$WORK/check.out" | tail -20; fi
}

STAGE=$WORK/stage
P=$STAGE/usr/local
echo "== make WEB=0 && make install DESTDIR=$STAGE"
{ make -s -C "$ROOT" WEB=0 && make -s -C "$ROOT" install DESTDIR="$STAGE"; } >"$WORK/make-install.log" 2>&1 ||
	{ cat "$WORK/make-install.log"; echo "make install failed"; exit 1; }
REEF=$P/bin/reef

# --- the installed files ----------------------------------------------------
missing=
for f in bin/reef include/reef.h include/reef_fast.h include/reef_reader.h include/reef_plugin.h lib/libreef.a lib/libreef.so.1.0.0 \
	lib/pkgconfig/reef.pc lib/cmake/reef/reefConfig.cmake lib/cmake/reef/reefConfigVersion.cmake \
	lib/cmake/reef/ReefAddSchema.cmake share/man/man1/reef.1 share/man/man1/reef-print.1 \
	share/bash-completion/completions/reef share/zsh/site-functions/_reef \
	share/fish/vendor_completions.d/reef.fish; do
	[ -s "$P/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "every file is installed under PREFIX=/usr/local"; else fail "missing or empty:$missing"; fi
check "libreef.so -> libreef.so.1 -> libreef.so.1.0.0" \
	test "$(readlink "$P/lib/libreef.so")" = libreef.so.1 -a "$(readlink "$P/lib/libreef.so.1")" = libreef.so.1.0.0
soname=$(readelf -d "$P/lib/libreef.so.1.0.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "soname is libreef.so.1 (readelf -d: '$soname')" test "$soname" = libreef.so.1

# --- exported symbols: exactly the public API -------------------------------
python3 "$ROOT/tests/install/public-api.py" "$P/include/reef.h" "$P/include/reef_fast.h" >"$WORK/api.txt"
# exports LIB: the defined dynamic symbols, without symbol versions.
exports() { nm -D --defined-only "$1" | awk '{print $NF}' | sed 's/@.*//' | sort -u; }
same_as_api() { exports "$1" >"$WORK/exports.txt"; diff "$WORK/api.txt" "$WORK/exports.txt"; }
check "nm -D --defined-only libreef.so = the $(wc -l <"$WORK/api.txt") symbols the headers declare" \
	same_as_api "$P/lib/libreef.so.1.0.0"
# Negative controls, linked like the real library: an internal function
# compiled without the hidden default must show as a leak, and a library
# built with REEF_API empty must show its public functions as missing.
mkdir -p "$WORK/neg/objs"
printf 'int reef__leaked_helper(void);\nint reef__leaked_helper(void) { return 1; }\n' >"$WORK/neg/leak.c"
cc -fPIC -c "$WORK/neg/leak.c" -o "$WORK/neg/leak.o"
cc -shared -Wl,--version-script="$ROOT/tracer/libreef.map" -o "$WORK/neg/leaky.so" \
	"$ROOT"/tracer/build/*.o "$WORK/neg/leak.o" -pthread
for src in "$ROOT"/tracer/src/*.c; do
	cc -std=c11 -O1 -fPIC -fvisibility=hidden -DREEF_API= -I"$ROOT/tracer/include" -c "$src" \
		-o "$WORK/neg/objs/$(basename "$src" .c).o"
done
cc -shared -Wl,--version-script="$ROOT/tracer/libreef.map" -o "$WORK/neg/unmarked.so" "$WORK"/neg/objs/*.o -pthread
if same_as_api "$WORK/neg/leaky.so" >"$WORK/neg/out" 2>&1; then
	fail "the symbol check misses a leaked reef__leaked_helper"
elif grep -q '^> reef__leaked_helper$' "$WORK/neg/out"; then
	ok "the symbol check catches a leaked internal symbol (negative control)"
else
	fail "the symbol check fails the leaky library for another reason"; cat "$WORK/neg/out"
fi
if same_as_api "$WORK/neg/unmarked.so" >"$WORK/neg/out" 2>&1; then
	fail "the symbol check misses declarations without REEF_API"
elif grep -q '^< reef_init$' "$WORK/neg/out"; then
	ok "the symbol check catches public functions left unexported (negative control)"
else
	fail "the symbol check fails the unmarked library for another reason"; cat "$WORK/neg/out"
fi

# --- man pages and completions ------------------------------------------------
"$REEF" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && $1 != "Commands:" && $1 != "help" {print $1}' >"$WORK/subcommands.txt"
nosub=
while read -r sub; do [ -s "$P/share/man/man1/reef-$sub.1" ] || nosub="$nosub $sub"; done <"$WORK/subcommands.txt"
if [ -z "$nosub" ] && [ "$(wc -l <"$WORK/subcommands.txt")" -ge 20 ]; then
	ok "a man page for each of the $(wc -l <"$WORK/subcommands.txt") subcommands of reef --help"
else
	fail "subcommands without a man page:${nosub:- (only $(wc -l <"$WORK/subcommands.txt") subcommands found)}"
fi
MANPATH=$P/share/man MANWIDTH=80 man -P cat reef-print >"$WORK/man.txt" 2>"$WORK/man.err" || true
if grep -q '^NAME' "$WORK/man.txt" && grep -q 'reef-print' "$WORK/man.txt" && grep -q -- '--clock-seconds' "$WORK/man.txt" &&
	! [ -s "$WORK/man.err" ]; then
	ok "MANPATH=<stage>/share/man man reef-print renders ($(wc -l <"$WORK/man.txt") lines, no warning)"
else
	fail "man reef-print"; head -5 "$WORK/man.txt" "$WORK/man.err"
fi
warned=
for page in "$P"/share/man/man1/*.1; do
	[ -z "$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)" ] || warned="$warned $(basename "$page")"
done
if [ -z "$warned" ]; then ok "every page renders without groff warnings"; else fail "groff warnings:$warned"; fi
bashcomp=$P/share/bash-completion/completions/reef
check "bash -n accepts the bash completion" bash -n "$bashcomp"
# shellcheck disable=SC2016 # expanded by the inner bash
check "the bash completion completes 'reef pri' and 'reef print --clock-s'" bash -c '
	source "$1"
	COMP_WORDS=(reef pri); COMP_CWORD=1; _reef reef pri reef
	[ "${COMPREPLY[*]}" = print ] || exit 1
	COMP_WORDS=(reef print --clock-s); COMP_CWORD=2; _reef reef --clock-s print
	[ "${COMPREPLY[*]}" = --clock-seconds ]' _ "$bashcomp"
names_print() { grep -q "'print:" "$1" && grep -q '"print"' "$2"; }
check "the zsh and fish completions name the subcommands" \
	names_print "$P/share/zsh/site-functions/_reef" "$P/share/fish/vendor_completions.d/reef.fish"

# A plugin built against the installed headers alone, run by the installed
# reef (which provides the reading API's functions).
plugin_runs() {
	cc -shared -fPIC -O2 -Wall -Wextra -Werror -I "$P/include" "$ROOT/examples/plugins/count.c" -o "$WORK/count.so" &&
		"$REEF" sink "count=$WORK/counts" --plugin "$WORK/count.so" "$ROOT/../shared/conformance/kernel-traces/bug446190" &&
		grep -qx 'total 31556' "$WORK/counts"
}
check "a plugin built against the installed headers runs in the installed reef" plugin_runs

# --- the examples, built against the staging tree ---------------------------
cp -r "$ROOT/examples/cmake" "$ROOT/examples/make" "$WORK/"
WARN="-std=c11 -pedantic -Wall -Wextra -Werror"
export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$STAGE
unset PKG_CONFIG_LIBDIR

# traced NAME COMMAND...: runs the program, then compares the installed
# reef print with babeltrace2 on its trace, and the event count with what
# the program says it traced ("..., N events, ...").
traced() {
	local name=$1 trace=$WORK/trace-$1
	shift
	if ! REEF_OUTPUT="$trace" "$@" >"$WORK/$name.out" 2>&1; then
		fail "$name: the program failed"; cat "$WORK/$name.out"; return
	fi
	local events
	events=$(sed -n 's/.*, \([0-9]*\) events, .*/\1/p' "$WORK/$name.out")
	"$REEF" print "$trace" >"$WORK/$name.reef" 2>&1 || true
	babeltrace2 "$trace" >"$WORK/$name.bt2" 2>&1 || true
	if [ -n "$events" ] && [ "$events" -gt 0 ] && cmp -s "$WORK/$name.reef" "$WORK/$name.bt2" &&
		[ "$(wc -l <"$WORK/$name.reef")" -eq "$events" ]; then
		ok "$name: runs; reef print = babeltrace2, $events events as traced"
	else
		fail "$name: trace (the program says ${events:-?} events; reef print $(wc -l <"$WORK/$name.reef") lines, babeltrace2 $(wc -l <"$WORK/$name.bt2"))"
		diff "$WORK/$name.reef" "$WORK/$name.bt2" | head -5
	fi
}
needs_libreef_so() { readelf -d "$1" | grep -q 'NEEDED.*\[libreef\.so\.1\]'; }
no_libreef_so() { ! readelf -d "$1" | grep -q 'NEEDED.*libreef'; }

if want "examples/cmake"; then
echo "== examples/cmake: find_package(reef), reef_add_schema"
for link in shared static; do
	b=$WORK/build-cmake-$link
	flag=OFF
	[ $link = static ] && flag=ON
	if cmake -S "$WORK/cmake" -B "$b" -DCMAKE_PREFIX_PATH="$P" -DLINK_STATIC=$flag \
		-DCMAKE_C_FLAGS="$WARN" >"$WORK/cmake-$link.log" 2>&1 &&
		cmake --build "$b" >>"$WORK/cmake-$link.log" 2>&1 && [ -f "$b/reef/jobs/jobs.h" ]; then
		ok "examples/cmake ($link) builds; jobs.h generated at build time"
	else
		fail "examples/cmake ($link) build"; tail -20 "$WORK/cmake-$link.log"; continue
	fi
	if [ $link = shared ]; then
		check "cmake shared: NEEDED libreef.so.1, resolved in the staging tree" \
			bash -c 'readelf -d "$1" | grep -q "NEEDED.*\[libreef\.so\.1\]" && ldd "$1" | grep -q "libreef.so.1 => $2/lib/libreef.so.1"' _ "$b/jobs" "$P"
		traced cmake-shared "$b/jobs"
	else
		check "cmake static (reef::reef_static): no libreef.so needed" no_libreef_so "$b/jobs"
		traced cmake-static "$b/jobs"
	fi
done

b=$WORK/build-cmake-shared
if [ -x "$b/jobs" ]; then
	cp "$b/reef/jobs/jobs.h" "$WORK/jobs.h.before"
	cmake --build "$b" >"$WORK/rebuild.log" 2>&1
	check "cmake: an up-to-date build runs no reef gen" bash -c '! grep -q "reef gen" "$1"' _ "$WORK/rebuild.log"
	# The schema gains an event: the build must run reef gen again.
	sed -i 's/^subsystem queue {$/subsystem queue {\n    event PAUSED "Added by the test" (u32 ms);/' "$WORK/cmake/jobs.reef"
	cmake --build "$b" >"$WORK/rebuild.log" 2>&1
	if grep -q "reef gen" "$WORK/rebuild.log" && grep -q 'TRACE_EVENT_QUEUE_PAUSED' "$b/reef/jobs/jobs.h" &&
		! grep -q 'TRACE_EVENT_QUEUE_PAUSED' "$WORK/jobs.h.before"; then
		ok "cmake: editing jobs.reef regenerates jobs.h at the next build"
	else
		fail "cmake: schema edit not regenerated"; cat "$WORK/rebuild.log"
	fi
	traced cmake-regenerated "$b/jobs"
fi

fi # examples/cmake

if want "examples/make" || want dlopen; then
echo "== examples/make: pkg-config"
for link in shared static; do
	b=$WORK/build-make-$link
	if make -C "$WORK/make" BUILD="$b" LINK=$link CFLAGS="-O2 $WARN" >"$WORK/make-$link.log" 2>&1 &&
		[ -f "$b/sensor.h" ]; then
		ok "examples/make ($link) builds; sensor.h generated at build time"
	else
		fail "examples/make ($link) build"; tail -20 "$WORK/make-$link.log"; continue
	fi
	if [ $link = shared ]; then
		check "make shared: NEEDED libreef.so.1" needs_libreef_so "$b/sensor"
		traced make-shared env LD_LIBRARY_PATH="$P/lib" "$b/sensor"
	else
		check "make static (libreef.a): no libreef.so needed" no_libreef_so "$b/sensor"
		traced make-static "$b/sensor"
	fi
done
b=$WORK/build-make-shared
if [ -x "$b/sensor" ]; then
	sleep 1
	touch "$WORK/make/sensor.reef"
	check "make: a newer sensor.reef runs reef gen again" \
		bash -c 'make -C "$1" BUILD="$2" 2>&1 | grep -q " gen sensor.reef"' _ "$WORK/make" "$b"
fi

fi # examples/make

if want dlopen; then
echo "== dlopen: a plugin that traces, loaded after start"
cat >"$WORK/plugin.c" <<'EOF'
#include "sensor.h"
void plugin_run(void);
void plugin_run(void)
{
	for (unsigned ch = 0; ch < 10; ch++)
		reef_sensor_read(ch, 1.5 * ch);
	reef_shutdown();
}
EOF
cat >"$WORK/host.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	((void (*)(void))dlsym(h, "plugin_run"))();
	printf("host: plugin run, 10 events, traced by the plugin\n");
	return 0;
}
EOF
# shellcheck disable=SC2046 # pkg-config's flags are words
if cc -std=c11 -fPIC -shared -I"$WORK/build-make-shared" $(pkg-config --cflags reef) \
	"$WORK/plugin.c" $(pkg-config --libs reef) -o "$WORK/plugin.so" && cc "$WORK/host.c" -o "$WORK/host" -ldl; then
	check "dlopen: the host does not link libreef" no_libreef_so "$WORK/host"
	traced dlopen env LD_LIBRARY_PATH="$P/lib" "$WORK/host" "$WORK/plugin.so"
else
	fail "dlopen: building the plugin"
fi

fi # dlopen

if want "cmake --install"; then
echo "== cmake --install: the same tree"
# (cargo's target directory: the one this run uses, not CMake's default.)
if cmake -S "$ROOT" -B "$WORK/build-top" -DREEF_BUILD_WEB=OFF \
	-DREEF_CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}" >"$WORK/top.log" 2>&1 &&
	cmake --build "$WORK/build-top" >>"$WORK/top.log" 2>&1 &&
	DESTDIR="$WORK/stage-cmake" cmake --install "$WORK/build-top" >>"$WORK/top.log" 2>&1; then
	(cd "$STAGE" && find . | sort) >"$WORK/tree-make.txt"
	(cd "$WORK/stage-cmake" && find . | sort) >"$WORK/tree-cmake.txt"
	check "cmake --install installs the files make install does ($(wc -l <"$WORK/tree-make.txt") paths)" \
		diff "$WORK/tree-make.txt" "$WORK/tree-cmake.txt"
	check "the same reef.pc and CMake package files" diff -r \
		--exclude='*.a' --exclude='*.so*' "$P/lib" "$WORK/stage-cmake/usr/local/lib"
	check "cmake's libreef.so exports the public API too" same_as_api "$WORK/stage-cmake/usr/local/lib/libreef.so.1.0.0"
else
	fail "cmake -S . && cmake --build && cmake --install"; tail -20 "$WORK/top.log"
fi
fi # cmake --install

make -s -C "$ROOT" uninstall DESTDIR="$STAGE" >"$WORK/uninstall.log" 2>&1 || cat "$WORK/uninstall.log"
check "make uninstall leaves no file" test -z "$(find "$STAGE" -type f -o -type l)"

echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
