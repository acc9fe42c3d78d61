#!/usr/bin/env python3
"""Run the runnable shell blocks of the documentation (tests/docs/run.sh).

A runnable block is a fenced code block whose info string is `sh runnable`
(or `bash runnable`), in README.md or docs/*.md, at any indentation (a
block inside a list item is fine). Each block runs with bash under
`set -eo pipefail` in a temporary directory of its own, with `reef` on
PATH (REEF_BIN) and the fixtures below; the first command that exits
non-zero fails the block, reported as FILE:LINE: the command, its exit
status and the block's last lines of output.

Fixtures in each block's directory: `trace` and `examples/build/trace`,
copies of the demo trace (examples/demo.c recorded as scripts/demo.sh
records it); `examples/build/demo`, the demo program; `kernel`, an LTTng
kernel trace of ../shared/conformance; `examples/plugins` and
`crates/reef-capi/include`, linked from the repository.

  rundocs.py --root ROOT [--docs FILE...] [--fixture DIR] [--no-selftest] [NAME...]

NAME: run only the blocks whose name (FILE:LINE) contains one of them.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")
RUNNABLE = {("sh", "runnable"), ("bash", "runnable")}
BLOCK_TIMEOUT = 120
SELFTEST_MARK = "# the broken command"


def blocks_of(path, rel):
    """Yield (name, fence_line, lines) for each runnable block of a file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).split()
        start = i
        body = []
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group(2).startswith(fence[0]) and len(c.group(2)) >= len(fence) and not c.group(3):
                break
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        else:
            raise SystemExit(f"{rel}:{start + 1}: a code block is never closed")
        i += 1
        if tuple(info[:2]) in RUNNABLE:
            yield f"{rel}:{start + 1}", start + 1, body


def make_fixture(root, reef, base):
    """Record the demo trace as scripts/demo.sh does, into base/demo-trace."""
    build = os.path.join(base, "build")
    env = dict(os.environ)
    trace = os.path.join(base, "demo-trace")
    steps = [["make", "-s", "-C", os.path.join(root, "examples"), f"REEF={reef}", f"BUILD={build}"],
             [os.path.join(build, "demo")]]
    for cmd in steps:
        if cmd[0] != "make":
            env["REEF_OUTPUT"] = trace
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise SystemExit(f"docs: recording the demo trace failed: {' '.join(cmd)} "
                             f"(exit status {p.returncode}):\n{p.stdout.decode('utf-8', 'replace')}")
    return base


def run_block(name, fence_line, body, fixture, root, reef, scratch):
    """Run one block; return None when it passed, else the failure text."""
    work = tempfile.mkdtemp(prefix="block.", dir=scratch)
    trace = os.path.join(fixture, "demo-trace")
    shutil.copytree(trace, os.path.join(work, "trace"))
    os.makedirs(os.path.join(work, "examples", "build"))
    shutil.copytree(trace, os.path.join(work, "examples", "build", "trace"))
    os.symlink(os.path.join(fixture, "build", "demo"), os.path.join(work, "examples", "build", "demo"))
    # Sources a block may build, at their paths in the repository.
    os.symlink(os.path.join(root, "examples", "plugins"), os.path.join(work, "examples", "plugins"))
    os.makedirs(os.path.join(work, "crates", "reef-capi"))
    os.symlink(os.path.join(root, "crates", "reef-capi", "include"), os.path.join(work, "crates", "reef-capi", "include"))
    kernel = os.path.join(root, "..", "shared", "conformance", "kernel-traces", "bug446190")
    if os.path.isdir(kernel):
        os.symlink(os.path.abspath(kernel), os.path.join(work, "kernel"))
    bindir = os.path.join(scratch, "bin")
    if not os.path.exists(bindir):
        os.makedirs(bindir)
        os.symlink(reef, os.path.join(bindir, "reef"))
    failed = os.path.join(scratch, "failed." + os.path.basename(work))
    script = os.path.join(scratch, "script." + os.path.basename(work))
    # The header is one line, so a block's line k is the script's line k + 1.
    header = ("set -Eeo pipefail; trap 'printf \"%s\\t%s\\n\" \"$LINENO\" \"$BASH_COMMAND\" > "
              + shq(failed) + "' ERR")
    with open(script, "w") as f:
        f.write(header + "\n" + "\n".join(body) + "\n")
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.pop("REEF_OUTPUT", None)
    try:
        p = subprocess.run(["bash", script], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT)
        out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        rc = None
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
        return None
    where, command = fence_line, " ".join(l.strip() for l in body if l.strip())
    if os.path.exists(failed):
        lineno, _, command = open(failed).read().rstrip("\n").partition("\t")
        if lineno.isdigit() and 2 <= int(lineno) <= len(body) + 1:
            # bash gives the first or the last line of a command continued
            # with `\`: report the whole command, at its first line.
            first = last = int(lineno) - 2
            while first > 0 and body[first - 1].rstrip().endswith("\\"):
                first -= 1
            while last + 1 < len(body) and body[last].rstrip().endswith("\\"):
                last += 1
            command = " ".join(l.strip().rstrip("\\").strip() for l in body[first:last + 1])
            where = fence_line + first + 1
    file = name.rsplit(":", 1)[0]
    status = f"timed out after {BLOCK_TIMEOUT} s" if rc is None else f"exit status {rc}"
    tail = "\n".join("    | " + l for l in out.rstrip("\n").split("\n")[-20:])
    return f"{file}:{where}: {status}: {command}\n{tail}"


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def selftest(args, fixture):
    """The harness passes on good.md and fails on broken.md at the marked line."""
    here = os.path.dirname(os.path.abspath(__file__))
    me = [sys.executable, os.path.abspath(__file__), "--root", args.root, "--fixture", fixture, "--no-selftest"]
    good = os.path.join(here, "selftest", "good.md")
    broken = os.path.join(here, "selftest", "broken.md")
    p = subprocess.run(me + ["--docs", good], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise SystemExit("docs: self-test: the harness fails on selftest/good.md:\n" + p.stdout.decode())
    mark = [i + 1 for i, l in enumerate(open(broken)) if SELFTEST_MARK in l]
    assert len(mark) == 1, "selftest/broken.md marks one line"
    p = subprocess.run(me + ["--docs", broken], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode()
    want = f"broken.md:{mark[0]}: exit status "
    if p.returncode == 0 or want not in out or "--no-such-option" not in out:
        raise SystemExit(f"docs: self-test: on selftest/broken.md the harness must fail naming "
                         f"`{want}...` and the command; it gave status {p.returncode}:\n{out}")
    print(f"docs: self-test ok: good.md passes; broken.md fails at line {mark[0]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--docs", nargs="+")
    ap.add_argument("--fixture")
    ap.add_argument("--no-selftest", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    args.root = root
    reef = os.path.abspath(os.environ.get("REEF_BIN", os.path.join(root, "target", "release", "reef")))
    if not os.access(reef, os.X_OK):
        raise SystemExit(f"docs: {reef} is not an executable (set REEF_BIN)")

    t0 = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="reef-docs.")
    try:
        fixture = args.fixture or make_fixture(root, reef, os.path.join(scratch, "fixture"))
        if not args.no_selftest:
            selftest(args, fixture)
        if args.docs:
            files = [os.path.abspath(d) for d in args.docs]
        else:
            files = [os.path.join(root, "README.md")]
            docs = os.path.join(root, "docs")
            files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
        blocks = []
        for path in files:
            rel = os.path.relpath(path, root) if path.startswith(root + os.sep) else os.path.basename(path)
            blocks += list(blocks_of(path, rel))
        if not blocks:
            raise SystemExit("docs: no runnable block found (info string `sh runnable`)")
        if args.names:
            blocks = [b for b in blocks if any(n in b[0] for n in args.names)]
            if not blocks:
                raise SystemExit("docs: no runnable block's name contains " + ", ".join(args.names))
        failures = []
        for name, line, body in blocks:
            err = run_block(name, line, body, fixture, root, reef, scratch)
            print(("FAIL " if err else "ok   ") + name, flush=True)
            if err:
                failures.append(err)
        for f in failures:
            print("\n" + f)
        print(f"\ndocs: {len(blocks) - len(failures)} of {len(blocks)} blocks passed "
              f"({time.monotonic() - t0:.1f} s)")
        sys.exit(1 if failures else 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
