#!/usr/bin/env bash
# tests/plugins/run.sh — plugins (crates/reef-plugin, reef_plugin.h): the
# example plugins of examples/plugins built with -Wall -Wextra -Werror and
# run by the reef binary, their results compared with references computed
# by babeltrace2 and its Python bindings (check.py): a filter (reef print
# --plugin-filter against babeltrace2's lines of the events bt2 says it
# keeps), a sink (counts per name), an analysis (latency statistics and
# histogram, also against `reef activities`); the search path; and every
# way a plugin can go wrong (fault.c): a clear message and exit status 1;
# lttng-analyses' lttng-cputop-mi (0.6.1, PyPI) registered as an external
# analysis gives the tables of `reef cputop --lami`.
#
#   REEF_BIN=/path/to/target/release/reef tests/plugins/run.sh [TEST-NAME-SUBSTRING...]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/plugins
REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
CONF=$ROOT/../shared/conformance
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-plugin-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FILTERS=("$@")
TESTS=(list search filter-equals-bt2 filter-everywhere sink-equals-bt2 analysis-equals external faults misuse
	source-c source-faults source-python python-faults)
want() {
	local f
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do case "$1" in *"$f"*) return 0 ;; esac; done
	return 1
}
selected=0
for t in "${TESTS[@]}"; do want "$t" && selected=$((selected + 1)); done
[ "$selected" -gt 0 ] || { echo "plugins: no test matches: $*"; exit 1; }
/usr/bin/python3 -c 'import bt2' 2>/dev/null || { echo "plugins: python3-bt2 is not installed (scripts/install-deps.sh)"; exit 1; }
command -v babeltrace2 >/dev/null || { echo "plugins: babeltrace2 is not installed (scripts/install-deps.sh)"; exit 1; }
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
CC=(gcc -shared -fPIC -O2 -Wall -Wextra -Werror -I "$ROOT/crates/reef-capi/include")
for p in latency field count binlog; do
	"${CC[@]}" "$ROOT/examples/plugins/$p.c" -o "$WORK/$p.so" || { echo "FAIL building examples/plugins/$p.c"; exit 1; }
done
KTRACES=("$CONF/kernel-traces/bug446190" "$CONF/kernel-traces/uneven-streams")

# Runs reef with a fault plugin built with -D$1 and checks its exit status
# (1) and that stderr holds $3; $2 is the command's arguments.
fault() {
	local def=$1 args=$2 expect=$3 so=$WORK/fault-$1.so
	"${CC[@]}" -D"$def" "$HERE/fault.c" -o "$so" || { fail "building fault.c -D$def"; return; }
	# shellcheck disable=SC2086
	"$REEF_BIN" ${args//@SO@/$so} > "$WORK/fault.out" 2> "$WORK/fault.err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$expect" "$WORK/fault.err" && ! grep -q "panicked" "$WORK/fault.err"; then
		echo "ok   $def: exit 1, $(head -c 160 "$WORK/fault.err" | tr '\n' ' ')"
	else
		fail "$def: exit $rc, stderr: $(cat "$WORK/fault.err"), wanted '$expect'"
	fi
}

if want list; then
	echo "== list: reef plugins shows each plugin's name, version and kinds"
	out=$("$REEF_BIN" plugins --plugin "$WORK/latency.so" --plugin "$WORK/field.so" --plugin "$WORK/count.so")
	for l in "latency 0.1.0 [analysis]" "field 0.1.0 [filter]" "count 0.1.0 [sink]"; do
		grep -qxF "$l" <<<"$out" || fail "list: no line '$l' in: $out"
	done
	n=$("$REEF_BIN" plugins --json --plugin "$WORK/count.so" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["plugins"]))')
	[ "$n" = 1 ] && echo "ok   3 plugins listed; --json: $n" || fail "list --json: $n plugins"
fi

if want search; then
	echo "== search: plugins found in \$REEF_PLUGIN_PATH and the per-user directory, broken ones reported"
	mkdir -p "$WORK/path" "$WORK/data/reef/plugins"
	cp "$WORK/field.so" "$WORK/path/"
	cp "$WORK/count.so" "$WORK/data/reef/plugins/"
	echo "not an ELF" > "$WORK/path/junk.so"
	T=${KTRACES[0]}
	out=$(REEF_PLUGIN_PATH=$WORK/path XDG_DATA_HOME=$WORK/data "$REEF_BIN" plugins 2>"$WORK/search.err")
	grep -q "^field " <<<"$out" && grep -q "^count " <<<"$out" && grep -q "junk.so" "$WORK/search.err" \
		|| fail "search: $out / $(cat "$WORK/search.err")"
	a=$(REEF_PLUGIN_PATH=$WORK/path "$REEF_BIN" stats --json --plugin-filter 'field=payload.irq>=20' "$T" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	b=$(/usr/bin/python3 "$HERE/check.py" keep "$T" payload irq '>=' 20 | wc -l)
	[ "$a" = "$b" ] && [ "$a" -gt 0 ] && echo "ok   found by search path; $a events kept" || fail "search: kept $a, bt2 $b"
fi

if want filter-equals-bt2; then
	echo "== filter-equals-bt2: reef print --plugin-filter = babeltrace2's lines of the events bt2 keeps"
	for T in "${KTRACES[@]}"; do
		conds=('ret != 0' 'prev_prio < 120')
		[ "$(basename "$T")" = bug446190 ] && conds+=('irq >= 20') || conds+=('len > 100')
		for cond in "${conds[@]}"; do
			read -r f op v <<<"$cond"
			/usr/bin/python3 "$HERE/check.py" keep "$T" payload "$f" "$op" "$v" > "$WORK/keep.idx"
			babeltrace2 --no-delta "$T" > "$WORK/bt.txt" 2>/dev/null
			awk 'NR==FNR { k[$1+1] = 1; next } (FNR in k)' "$WORK/keep.idx" "$WORK/bt.txt" > "$WORK/want.txt"
			"$REEF_BIN" print --no-delta --plugin "$WORK/field.so" --plugin-filter "field=payload.$f$op$v" "$T" > "$WORK/got.txt"
			rc=$?
			n=$(wc -l < "$WORK/want.txt")
			if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && cmp -s "$WORK/want.txt" "$WORK/got.txt"; then
				echo "ok   $(basename "$T") payload.$f$op$v: $n events, byte for byte"
			else
				fail "$(basename "$T") payload.$f$op$v (rc $rc, $n wanted, $(wc -l < "$WORK/got.txt") got)"
				diff "$WORK/want.txt" "$WORK/got.txt" | head -5
			fi
		done
	done
fi

if want filter-everywhere; then
	echo "== filter-everywhere: a plugin filter applies wherever --filter does"
	T=${KTRACES[0]}
	P=(--plugin "$WORK/field.so" --plugin-filter 'field=payload.irq>=20')
	want_n=$(/usr/bin/python3 "$HERE/check.py" keep "$T" payload irq '>=' 20 | wc -l)
	stats=$("$REEF_BIN" stats --json "${P[@]}" "$T" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	"$REEF_BIN" convert "${P[@]}" "$T" -o "$WORK/conv" > /dev/null 2>&1
	conv=$(babeltrace2 "$WORK/conv" 2>/dev/null | wc -l)
	both=$("$REEF_BIN" stats --json "${P[@]}" --filter '$evt.cpu_id == 0' "$T" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	want_both=$(/usr/bin/python3 - "$T" <<'PY'
import bt2, sys
n = 0
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is bt2._EventMessageConst:
        e = m.event
        p = e.payload_field
        if "irq" in p and int(p["irq"]) >= 20 and int(e.packet.context_field["cpu_id"]) == 0:
            n += 1
print(n)
PY
)
	if [ "$stats" = "$want_n" ] && [ "$conv" = "$want_n" ] && [ "$both" = "$want_both" ] && [ "$want_both" -gt 0 ]; then
		echo "ok   stats $stats, convert (read by babeltrace2) $conv, with --filter $both (bt2: $want_n, $want_both)"
	else
		fail "filter-everywhere: bt2 $want_n/$want_both; stats $stats, convert $conv, with --filter $both"
	fi
fi

if want sink-equals-bt2; then
	echo "== sink-equals-bt2: the count sink's counts = bt2's"
	for T in "${KTRACES[@]}" "$CONF/babeltrace-traces/succeed/succeed1" "$CONF/babeltrace-traces/succeed/ev-disc-no-ts-begin-end"; do
		/usr/bin/python3 "$HERE/check.py" count "$T" > "$WORK/want.cnt"
		"$REEF_BIN" sink "count=$WORK/got.cnt" --plugin "$WORK/count.so" "$T"
		rc=$?
		if [ $rc -eq 0 ] && cmp -s "$WORK/want.cnt" "$WORK/got.cnt"; then
			echo "ok   $(basename "$T"): $(grep '^total' "$WORK/got.cnt"), $(grep '^notices' "$WORK/got.cnt")"
		else
			fail "sink $(basename "$T") (rc $rc)"; diff "$WORK/want.cnt" "$WORK/got.cnt" | head -5
		fi
	done
fi

if want analysis-equals; then
	echo "== analysis-equals: latency.c's tables = bt2's pairing and reef activities"
	# trace, begin, end, key field (none: per stream)
	cases=("bug446190 irq_handler_entry irq_handler_exit -" "bug446190 irq_handler_entry irq_handler_exit irq"
		"uneven-streams syscall_entry_ioctl syscall_exit_ioctl -" "uneven-streams timer_hrtimer_start timer_hrtimer_cancel hrtimer")
	for c in "${cases[@]}"; do
		read -r t b e key <<<"$c"
		[ "$key" = - ] && key=
		T=$CONF/kernel-traces/$t
		{
			args="begin=$b,end=$e${key:+,key=payload.$key}"
			/usr/bin/python3 "$HERE/check.py" latency "$T" "$b" "$e" $key > "$WORK/want.json"
			"$REEF_BIN" analyse "latency=$args" --lami --plugin "$WORK/latency.so" "$T" > "$WORK/got.json"
			rc=$?
			"$REEF_BIN" analyse "latency=$args" --plugin "$WORK/latency.so" "$T" > "$WORK/got.txt"
			"$REEF_BIN" activities --begin "\$evt.\$name == \"$b\"" --end "\$evt.\$name == \"$e\"" \
				${key:+--key "$key"} --stats --json "$T" > "$WORK/act.json"
			/usr/bin/python3 - "$WORK/want.json" "$WORK/got.json" "$WORK/act.json" "$WORK/got.txt" "$rc" "$t $b/$e key=${key:-stream}" <<'PY' || fail "analysis $t $b/$e key=${key:-stream}"
import json, sys
want = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
act = json.load(open(sys.argv[3]))["stats"][0]
text = open(sys.argv[4]).read()
assert int(sys.argv[5]) == 0, "exit status %s" % sys.argv[5]
stats, hist = got["results"]
row = stats["data"][0]
v = lambda c: c["value"]
g = {"count": v(row[2]), "min": v(row[3]), "mean": v(row[4]), "max": v(row[5]), "unmatched": v(row[6]), "unfinished": v(row[7])}
for k in g:
    if k == "mean":
        assert abs(g[k] - want[k]) < 1e-3 * max(1, want[k]), (k, g[k], want[k])
    else:
        assert g[k] == want[k], (k, g[k], want[k])
assert [[v(c) for c in r] for r in hist["data"]] == want["histogram"], (hist["data"], want["histogram"])
assert (act["count"], act["min_ns"], act["max_ns"]) == (g["count"], g["min"], g["max"]), act
assert abs(act["avg_ns"] - g["mean"]) < 1e-3 * max(1, g["mean"]), act
assert "Latency statistics" in text and str(g["count"]) in text and "Latency histogram" in text, text
print("ok   " + sys.argv[6] + ": %d intervals, min %d, max %d, %d histogram rows; = bt2 and reef activities" % (g["count"], g["min"], g["max"], len(hist["data"])))
PY
		}
	done
fi

if want external; then
	echo "== external: lttng-cputop-mi registered as an external analysis = reef cputop --lami"
	venv=$HOME/.cache/reef/lttng-analyses-0.6.1
	if [ ! -x "$venv/bin/lttng-cputop-mi" ]; then
		/usr/bin/python3 -m venv --system-site-packages "$venv" && "$venv/bin/pip" install -q lttnganalyses==0.6.1 \
			|| { fail "external: lttnganalyses 0.6.1 did not install from PyPI"; venv=; }
	fi
	if [ -n "$venv" ]; then
		# 0.6.1 predates Python 3.10's move of collections.Mapping.
		site=$("$venv/bin/python3" -c 'import lttnganalyses, os; print(os.path.dirname(lttnganalyses.__file__))')
		{ grep -rl --include='*.py' 'collections\.Mapping' "$site" || true; } | xargs -r sed -i 's/collections\.Mapping/collections.abc.Mapping/g'
		grep -q '^import collections.abc' "$site/core/event.py" || sed -i '0,/^import collections/s//import collections.abc\nimport collections/' "$site/core/event.py"
		mkdir -p "$WORK/ext"
		printf '# lttng-analyses CPU usage\n%s\n' "$venv/bin/lttng-cputop-mi" > "$WORK/ext/cputop-mi.lami"
		for t in bug446190 uneven-streams; do
			# lttng-analyses wants a directory holding a `kernel` trace.
			mkdir -p "$WORK/la-$t" && cp -r "$CONF/kernel-traces/$t" "$WORK/la-$t/kernel"
			REEF_PLUGIN_PATH=$WORK/ext "$REEF_BIN" analyse cputop-mi --lami "$WORK/la-$t" > "$WORK/ext.json" || fail "external $t: reef analyse failed"
			REEF_PLUGIN_PATH=$WORK/ext "$REEF_BIN" analyse cputop-mi "$WORK/la-$t" > "$WORK/ext.txt" || fail "external $t: reef analyse (text) failed"
			"$REEF_BIN" cputop --lami "$WORK/la-$t" > "$WORK/own.json"
			/usr/bin/python3 - "$WORK/ext.json" "$WORK/own.json" "$WORK/ext.txt" "$t" <<'PY' || fail "external $t"
import json, sys
ext, own = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
text = open(sys.argv[3]).read()
def norm(c):
    if isinstance(c, dict) and isinstance(c.get("value"), float):
        return dict(c, value=round(c["value"], 12))
    return c
rows = 0
assert len(ext["results"]) == len(own["results"]) == 3, (len(ext["results"]), len(own["results"]))
for a, b in zip(ext["results"], own["results"]):
    assert a["class"] == b["class"], (a["class"], b["class"])
    da = [[norm(c) for c in r] for r in a["data"]]
    db = [[norm(c) for c in r] for r in b["data"]]
    assert da == db, (a["class"], da[:2], db[:2])
    rows += len(da)
assert "Per-TID top CPU usage" in text, text[:200]
print("ok   %s: %d rows in 3 tables equal reef cputop --lami; text tables shown" % (sys.argv[4], rows))
PY
		done
		out=$(REEF_PLUGIN_PATH=$WORK/ext "$REEF_BIN" plugins)
		grep -q "^cputop-mi \[external analysis\]" <<<"$out" || fail "external: reef plugins does not list it: $out"
		fault NO_FAULT_4 "analyse cputop-mi --begin 1 --lami-command cputop-mi=true $WORK/la-bug446190" "it reads the traces itself"
		fault NO_FAULT_5 "analyse bad --lami-command bad=false $WORK/la-bug446190" "\`false\` failed"
		fault NO_FAULT_6 "analyse junk --lami-command junk=echo $WORK/la-bug446190" "printed no LAMI JSON"
	fi
fi

if want faults; then
	echo "== faults: each a clear message and exit status 1"
	T=${KTRACES[0]}
	fault FAULT_NOSYM "plugins --plugin @SO@" "exports no reef_plugin_describe()"
	fault FAULT_ABI "plugins --plugin @SO@" "built for plugin ABI 99, this reef loads ABI 1"
	fault FAULT_UNDEF "plugins --plugin @SO@" "undefined symbol: reef_event_bogus"
	fault FAULT_KINDS "plugins --plugin @SO@" "kinds 0x40"
	fault FAULT_NAME "plugins --plugin @SO@" "is not letters, digits"
	fault FAULT_INIT "print --plugin @SO@ --plugin-filter fault $T" "init failed (REEF_ERR_ARG): this plugin needs a license key"
	fault FAULT_FILTER "print --plugin @SO@ --plugin-filter fault $T" "filter failed (REEF_ERR_ARG): gave up after 100 events"
	n=$(wc -l < "$WORK/fault.out")
	[ "$n" = 100 ] && echo "ok   the 100 events before the failure were printed" || fail "FAULT_FILTER printed $n events, not 100"
	fault FAULT_FILTER_VALUE "print --plugin @SO@ --plugin-filter fault $T" "filter returned 7: expected 1, 0 or a negative status"
	fault FAULT_CONSUME "sink fault --plugin @SO@ $T" "consume (message 6 at"
	fault FAULT_LAMI_CELLS "analyse fault --plugin @SO@ $T" "row 0 has 2 cells, its class 3 columns"
	fault FAULT_LAMI_JSON "analyse fault --plugin @SO@ $T" "its results are not JSON"
	fault FAULT_LAMI_NULL "analyse fault --plugin @SO@ $T" "finish gave no results"
	fault NO_FAULT "sink fault --plugin @SO@ $T" "is a filter and analysis, not a sink"
	fault NO_FAULT_2 "print --plugin-filter nosuch $T" "no plugin named \"nosuch\""
	fault NO_FAULT_3 "print --plugin /nonexistent.so --plugin-filter x $T" "/nonexistent.so: cannot be loaded"
fi

if want misuse; then
	echo "== misuse: a plugin's handle refuses reading, closing and use after its call"
	"${CC[@]}" -DFAULT_MISUSE "$HERE/fault.c" -o "$WORK/misuse.so" || fail "building fault.c -DFAULT_MISUSE"
	"$REEF_BIN" sink fault --plugin "$WORK/misuse.so" "${KTRACES[0]}" > "$WORK/misuse.out" 2>&1
	rc=$?
	want_out="next REEF_ERR_HANDLE
close REEF_ERR_HANDLE
bad-path REEF_ERR_ARG
null-out REEF_ERR_NULL
name REEF_OK
kept-handle REEF_ERR_STATE"
	if [ $rc -eq 0 ] && [ "$(cat "$WORK/misuse.out")" = "$want_out" ]; then
		echo "ok   $(tr '\n' ' ' < "$WORK/misuse.out")"
	else
		fail "misuse (rc $rc): $(cat "$WORK/misuse.out")"
	fi
fi

if want source-c; then
	echo "== source-c: binlog.c's events = what the generator wrote, read by babeltrace2 from reef convert's CTF"
	S=$WORK/src
	mkdir -p "$S"
	/usr/bin/python3 "$ROOT/examples/plugins/binlog_gen.py" "$S/server.blog" "$S/want.jsonl" 3000 11
	P=(--plugin "$WORK/binlog.so")
	# Found by its content; its file name says nothing.
	cp "$S/server.blog" "$S/server.data"
	"$REEF_BIN" print "${P[@]}" "$S/server.data" > "$S/print.txt"; rc1=$?
	"$REEF_BIN" convert "${P[@]}" "$S/server.data" -o "$S/ctf" > /dev/null 2>&1; rc2=$?
	babeltrace2 "$S/ctf" > "$S/bt.txt" 2> "$S/bt.err"; rc3=$?
	n=$(wc -l < "$S/want.jsonl")
	if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ ! -s "$S/bt.err" ] && [ "$n" -gt 6000 ] \
		&& cmp -s "$S/print.txt" "$S/bt.txt"; then
		echo "ok   reef print = babeltrace2 on reef convert's trace, no warning ($n events)"
	else
		fail "source-c print/convert (rc $rc1 $rc2 $rc3, $(wc -l < "$S/print.txt") lines, bt2 $(wc -l < "$S/bt.txt"); $(head -c 300 "$S/bt.err"))"
		diff "$S/print.txt" "$S/bt.txt" | head -5
	fi
	/usr/bin/python3 - "$S/ctf" "$S/want.jsonl" <<'PY' || fail "source-c: bt2's events differ from the generator's"
import bt2, json, sys
want = sorted((json.loads(l) for l in open(sys.argv[2])), key=lambda e: (e["thread"], e["ns"]))
got = []
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is bt2._EventMessageConst:
        e = m.event
        thread = int(e.stream.name.rsplit("thread-", 1)[1])
        got.append({"ns": m.default_clock_snapshot.ns_from_origin, "thread": thread, "name": e.name,
                    "fields": {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v)) for k, v in e.payload_field.items()}})
got.sort(key=lambda e: (e["thread"], e["ns"]))
assert len(got) == len(want), (len(got), len(want))
for g, w in zip(got, want):
    assert g == w, (g, w)
print("ok   bt2 reads every event as the generator wrote it: time (ns since the epoch), thread (stream), name, fields (%d)" % len(got))
PY
	# Viewed: the page in headless Chromium shows bt2's events.
	REEF_BIN=$REEF_BIN node "$ROOT/tests/view/e2e-source.mjs" binlog "$WORK/binlog.so" "$S/server.data" "$S/ctf" \
		|| fail "source-c: the viewer's page (tests/view/e2e-source.mjs)"
	# Named with -i: the file's content is not looked at.
	out=$("$REEF_BIN" stats --json -i binlog "${P[@]}" "$S/server.data" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	[ "$out" = "$n" ] && echo "ok   -i binlog: $out events" || fail "-i binlog: $out events, wanted $n"
	# Analysed: latency.c over its requests = the generator's pairs.
	"$REEF_BIN" analyse "latency=begin=request_begin,end=request_end,key=payload.id" --lami "${P[@]}" \
		--plugin "$WORK/latency.so" "$S/server.data" > "$S/lat.json"; rc=$?
	"$REEF_BIN" activities --begin '$evt.$name == "request_begin"' --end '$evt.$name == "request_end"' \
		--key id --stats --json "${P[@]}" "$S/server.data" > "$S/act.json"
	/usr/bin/python3 - "$S/lat.json" "$S/act.json" "$S/want.jsonl" "$rc" <<'PY' || fail "source-c: latency.c's table"
import json, sys
assert sys.argv[4] == "0", "exit status " + sys.argv[4]
stats = json.load(open(sys.argv[1]))["results"][0]["data"][0]
act = json.load(open(sys.argv[2]))["stats"][0]
begin, lat = {}, []
for l in open(sys.argv[3]):
    e = json.loads(l)
    if e["name"] == "request_begin":
        begin[e["fields"]["id"]] = e["ns"]
    elif e["name"] == "request_end":
        lat.append(e["ns"] - begin.pop(e["fields"]["id"]))
v = [c["value"] if isinstance(c, dict) else c for c in stats]
assert (v[2], v[3], v[5]) == (len(lat), min(lat), max(lat)), (v, len(lat), min(lat), max(lat))
assert abs(v[4] - sum(lat) / len(lat)) < 1e-3 * v[4], v
assert (act["count"], act["min_ns"], act["max_ns"]) == (len(lat), min(lat), max(lat)), act
print("ok   latency.c on binlog's requests: %d, min %d, max %d ns = the generator's pairs = reef activities" % (len(lat), min(lat), max(lat)))
PY
	# Listed; found in the search path.
	mkdir -p "$S/plugins"
	cp "$WORK/binlog.so" "$S/plugins/"
	l=$(REEF_PLUGIN_PATH=$S/plugins "$REEF_BIN" plugins | grep '^binlog ')
	m=$(REEF_PLUGIN_PATH=$S/plugins "$REEF_BIN" stats --json "$S/server.data" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	[ "$l" = "binlog 0.1.0 [source]" ] && [ "$m" = "$n" ] && echo "ok   listed ($l); from \$REEF_PLUGIN_PATH: $m events" \
		|| fail "source-c search: '$l', $m events"
	# A cut file: the records before the cut are printed, then the error.
	size=$(stat -c %s "$S/server.blog")
	head -c $((size / 2)) "$S/server.blog" > "$S/cut.blog"
	"$REEF_BIN" print "${P[@]}" "$S/cut.blog" > "$S/cut.txt" 2> "$S/cut.err"; rc=$?
	k=$(wc -l < "$S/cut.txt")
	if [ $rc -eq 1 ] && grep -q "cut.blog: at byte [0-9]*: plugin binlog .*cut short (the $k events before it were read)" "$S/cut.err" \
		&& [ "$k" -gt 1000 ] && head -n "$k" "$S/print.txt" | sort | cmp -s - <(sort "$S/cut.txt"); then
		echo "ok   a cut file: exit 1, $k events kept, $(head -c 200 "$S/cut.err")"
	else
		fail "source-c cut: rc $rc, $k lines, $(cat "$S/cut.err")"
	fi
fi

if want source-faults; then
	echo "== source-faults: a source's misuses, each a clear message and exit status 1 after the events before it"
	echo "SRCFAULT" > "$WORK/f.src"
	src_fault() { # DEFINE EVENTS-KEPT EXPECTED-MESSAGE
		local so=$WORK/sf-$1.so
		"${CC[@]}" -D"$1" "$HERE/source_fault.c" -o "$so" || { fail "building source_fault.c -D$1"; return; }
		"$REEF_BIN" print --plugin "$so" "$WORK/f.src" > "$WORK/sf.out" 2> "$WORK/sf.err"
		local rc=$? k
		k=$(wc -l < "$WORK/sf.out")
		if [ $rc -eq 1 ] && [ "$k" = "$2" ] && grep -qF -- "$3" "$WORK/sf.err" && ! grep -q panicked "$WORK/sf.err"; then
			echo "ok   $1: exit 1, $k events printed, $(head -c 200 "$WORK/sf.err")"
		else
			fail "$1: exit $rc, $k events, stderr: $(cat "$WORK/sf.err"), wanted '$3'"
		fi
	}
	src_fault SRC_TYPE 3 "f.src: at byte 77: event 3 ('line'): field 'level' is u8, given a string (the 3 events before it were read)"
	src_fault SRC_RANGE 3 "field 'level' is u8, given 300, out of its range"
	src_fault SRC_ORDER 4 "event 4: time 5 is before the previous event's (2000) in stream 'main'"
	src_fault SRC_COUNT 3 "event 3 ('line'): 1 values given for its 2 fields"
	src_fault SRC_FAIL 3 "plugin srcfault ($WORK/sf-SRC_FAIL.so): read failed (REEF_ERR_READ): the log's index is missing"
	src_fault SRC_OLD 0 "a source whose description is"
	"$REEF_BIN" print -i nosuch "$WORK/f.src" > /dev/null 2> "$WORK/sf.err"; rc=$?
	if [ $rc -eq 2 ] && grep -qF "no source named 'nosuch' (known: ctf, lttng-live, ftrace, perf)" "$WORK/sf.err"; then
		echo "ok   -i nosuch: exit 2, $(cat "$WORK/sf.err")"
	else
		fail "-i nosuch: exit $rc, $(cat "$WORK/sf.err")"
	fi
fi

# The Python plugins run in the reef Python package of python/tests/run.sh's
# venv (installed from this tree when missing).
py_env() {
	local venv=${REEF_PY_VENV:-/tmp/reef-python-venv}
	if ! "$venv/bin/python" -c 'import reef.plugin' 2>/dev/null; then
		[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
		"$venv/bin/pip" install -q --force-reinstall --no-deps "$ROOT/python" || return 1
	fi
	export REEF_PYTHON=$venv/bin/python
}

if want source-python; then
	echo "== source-python: jsonl.py's events = the generator's, read by babeltrace2 from reef convert's CTF; csvsink.py = bt2"
	S=$WORK/py
	mkdir -p "$S"
	py_env || fail "source-python: the Python package did not install"
	/usr/bin/python3 "$ROOT/examples/plugins/binlog_gen.py" "$S/gen.blog" "$S/want.jsonl" 2000 5
	# The same events as JSON lines: time, event, thread, then the fields.
	/usr/bin/python3 - "$S/want.jsonl" "$S/app.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for l in sorted(open(sys.argv[1]), key=lambda l: json.loads(l)["ns"]):
        e = json.loads(l)
        out.write(json.dumps(dict({"time": e["ns"], "event": e["name"], "thread": e["thread"]}, **e["fields"])) + "\n")
PY
	P=(--plugin "$ROOT/examples/plugins/jsonl.py")
	"$REEF_BIN" print "${P[@]}" "$S/app.jsonl" > "$S/print.txt"; rc1=$?
	"$REEF_BIN" convert "${P[@]}" "$S/app.jsonl" -o "$S/ctf" > /dev/null 2>&1; rc2=$?
	babeltrace2 "$S/ctf" > "$S/bt.txt" 2> "$S/bt.err"; rc3=$?
	n=$(wc -l < "$S/want.jsonl")
	if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ ! -s "$S/bt.err" ] && [ "$n" -gt 4000 ] \
		&& cmp -s "$S/print.txt" "$S/bt.txt"; then
		echo "ok   reef print = babeltrace2 on reef convert's trace, no warning ($n events)"
	else
		fail "source-python print/convert (rc $rc1 $rc2 $rc3, $(wc -l < "$S/print.txt") lines, bt2 $(wc -l < "$S/bt.txt"); $(head -c 300 "$S/bt.err"))"
	fi
	/usr/bin/python3 - "$S/ctf" "$S/want.jsonl" <<'PY' || fail "source-python: bt2's events differ from the generator's"
import bt2, json, sys
want = sorted((json.loads(l) for l in open(sys.argv[2])), key=lambda e: (e["thread"], e["ns"]))
got = []
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is bt2._EventMessageConst:
        e = m.event
        got.append({"ns": m.default_clock_snapshot.ns_from_origin, "thread": int(e.stream.name.rsplit("thread-", 1)[1]),
                    "name": e.name,
                    "fields": {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v)) for k, v in e.payload_field.items()}})
got.sort(key=lambda e: (e["thread"], e["ns"]))
assert got == want, next(((g, w) for g, w in zip(got, want) if g != w), (len(got), len(want)))
print("ok   bt2 reads every event as the generator wrote it (%d): time, thread, name, fields" % len(got))
PY
	REEF_BIN=$REEF_BIN REEF_PYTHON=$REEF_PYTHON node "$ROOT/tests/view/e2e-source.mjs" jsonl \
		"$ROOT/examples/plugins/jsonl.py" "$S/app.jsonl" "$S/ctf" \
		|| fail "source-python: the viewer's page (tests/view/e2e-source.mjs)"
	# Analysed by the C analysis: the same pairs as the generator's.
	"$REEF_BIN" analyse "latency=begin=request_begin,end=request_end,key=payload.id" --lami "${P[@]}" \
		--plugin "$WORK/latency.so" "$S/app.jsonl" > "$S/lat.json"
	/usr/bin/python3 - "$S/lat.json" "$S/want.jsonl" <<'PY' || fail "source-python: latency.c's table"
import json, sys
row = json.load(open(sys.argv[1]))["results"][0]["data"][0]
v = [c["value"] if isinstance(c, dict) else c for c in row]
begin, lat = {}, []
for l in open(sys.argv[2]):
    e = json.loads(l)
    if e["name"] == "request_begin":
        begin[e["fields"]["id"]] = e["ns"]
    elif e["name"] == "request_end":
        lat.append(e["ns"] - begin.pop(e["fields"]["id"]))
assert (v[2], v[3], v[5]) == (len(lat), min(lat), max(lat)), (v, len(lat))
print("ok   latency.c on jsonl.py's requests: %d, min %d, max %d ns = the generator's pairs" % (len(lat), min(lat), max(lat)))
PY
	# The Python sink over a CTF trace: its rows = bt2's events.
	T=$CONF/kernel-traces/bug446190
	"$REEF_BIN" sink "csv=$S/k.csv" --plugin "$ROOT/examples/plugins/csvsink.py" "$T"; rc=$?
	/usr/bin/python3 - "$T" "$S/k.csv" "$rc" <<'PY' || fail "source-python: csvsink.py's rows"
import bt2, csv, sys
assert sys.argv[3] == "0", "exit status " + sys.argv[3]
rows = list(csv.reader(open(sys.argv[2])))
want = []
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is bt2._EventMessageConst:
        want.append((m.default_clock_snapshot.ns_from_origin, m.event.name, len(m.event.payload_field)))
got = [(int(r[0]), r[1], len(r) - 2) for r in rows if not r[0].startswith("#")]
assert got == want, next(((g, w) for g, w in zip(got, want) if g != w), (len(got), len(want)))
assert rows[-1][0] == "#notices", rows[-1]
print("ok   csvsink.py over bug446190: %d rows = bt2's events (time, name, payload size)" % len(got))
PY
	l=$("$REEF_BIN" plugins "${P[@]}" --plugin "$ROOT/examples/plugins/csvsink.py" | grep -c '^\(jsonl 0.1.0 \[source, python\]\|csv 0.1.0 \[sink, python\]\)$')
	[ "$l" = 2 ] && echo "ok   reef plugins lists jsonl [source, python] and csv [sink, python]" || fail "source-python list: $l lines"
fi

if want python-faults; then
	echo "== python-faults: a Python plugin's exception: its traceback, the position, exit status 1"
	S=$WORK/pyf
	mkdir -p "$S"
	py_env || fail "python-faults: the Python package did not install"
	printf '%s\n' '{"time": 10, "event": "a", "x": 1}' '{"time": 20, "event": "a", "x": 2}' 'not json' '{"time": 30, "event": "a", "x": 3}' > "$S/bad.jsonl"
	"$REEF_BIN" print --plugin "$ROOT/examples/plugins/jsonl.py" "$S/bad.jsonl" > "$S/out" 2> "$S/err"; rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l < "$S/out")" = 2 ] && grep -q "Traceback" "$S/err" && grep -q 'jsonl.py", line' "$S/err" \
		&& grep -qF "bad.jsonl: at byte 70: source jsonl: ValueError: line 3: expected an object with" "$S/err"; then
		echo "ok   a source's exception: exit 1, 2 events printed, traceback, $(tail -1 "$S/err" | head -c 200)"
	else
		fail "python source exception: rc $rc, $(wc -l < "$S/out") events, $(cat "$S/err")"
	fi
	printf '%s\n' '{"time": 10, "event": "a", "x": 1}' '{"time": 20, "event": "a", "x": "two"}' > "$S/type.jsonl"
	"$REEF_BIN" print --plugin "$ROOT/examples/plugins/jsonl.py" "$S/type.jsonl" > "$S/out" 2> "$S/err"; rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l < "$S/out")" = 1 ] && grep -qF "event 1 ('a'): field 'x' is s64, given a string (the 1 events before it were read)" "$S/err"; then
		echo "ok   an event not matching its class: exit 1, 1 event printed, $(tail -1 "$S/err" | head -c 200)"
	else
		fail "python source mismatch: rc $rc, $(cat "$S/err")"
	fi
	printf 'import reef.plugin\nclass Broken(reef.plugin.Source:\n' > "$S/syntax.py"
	"$REEF_BIN" plugins --plugin "$S/syntax.py" > /dev/null 2> "$S/err"; rc=$?
	if [ $rc -eq 1 ] && grep -qF "syntax.py: describing it failed" "$S/err" && grep -q "SyntaxError" "$S/err"; then
		echo "ok   a plugin file that does not load: exit 1, $(head -c 200 "$S/err" | tr '\n' ' ')"
	else
		fail "python syntax error: rc $rc, $(cat "$S/err")"
	fi
	cat > "$S/sinkfail.py" <<'PYS'
import reef.plugin
class Fails(reef.plugin.Sink):
    name = "fails"
    def consume(self, m):
        if m.name == "sched_switch":
            raise RuntimeError("no room left")
PYS
	"$REEF_BIN" sink fails --plugin "$S/sinkfail.py" "$CONF/kernel-traces/bug446190" > /dev/null 2> "$S/err"; rc=$?
	if [ $rc -eq 1 ] && grep -q "Traceback" "$S/err" && grep -qE "sink fails, message [0-9]+: RuntimeError: no room left" "$S/err"; then
		echo "ok   a sink's exception: exit 1, $(tail -1 "$S/err" | head -c 200)"
	else
		fail "python sink exception: rc $rc, $(cat "$S/err")"
	fi
fi

echo "plugins: $fails failure(s)"
[ "$fails" -eq 0 ]
