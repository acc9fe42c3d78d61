#!/usr/bin/env python3
"""The symbols libreef.so must export, read from its public headers.

    public-api.py reef.h reef_fast.h     one name a line, sorted

Every function declared (not defined: the `static inline` fast path is the
program's own code) and every `extern` variable at file scope. It reads the
declarations themselves, not their REEF_API marks, so a declaration that
lacks the mark shows as a symbol missing from the library, and anything the
library exports beyond this list is a leak (tests/install/run.sh).
"""

import re
import sys


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # The C++ guards (`extern "C" {` and its `}`), then every preprocessor
    # line, continuations included.
    text = re.sub(r"^#ifdef __cplusplus\n.*?^#endif[^\n]*", " ", text, flags=re.S | re.M)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return text


def drop_attributes(stmt):
    """`__attribute__((...))` with balanced parentheses, and REEF_API."""
    while True:
        i = stmt.find("__attribute__")
        if i < 0:
            break
        j = stmt.index("(", i)
        depth = 0
        for k in range(j, len(stmt)):
            depth += {"(": 1, ")": -1}.get(stmt[k], 0)
            if depth == 0:
                break
        stmt = stmt[:i] + " " + stmt[k + 1:]
    return re.sub(r"\bREEF_API\b", " ", stmt)


def statements(text):
    """File-scope statements, braced bodies reduced to `{}`; function
    definitions (a body not followed by `;`) are left out."""
    out, cur, depth = [], [], 0
    for c in text:
        if c == "{":
            if depth == 0:
                cur.append("{}")
            depth += 1
        elif c == "}":
            depth -= 1
            head = "".join(cur)[: -len("{}")]
            if depth == 0 and re.search(r"\)\s*$", drop_attributes(head)):
                cur = []  # a function definition ends here
        elif depth == 0:
            if c == ";":
                out.append(" ".join("".join(cur).split()))
                cur = []
            else:
                cur.append(c)
    return out


def exported(stmt):
    stmt = drop_attributes(stmt)
    words = re.findall(r"[A-Za-z_]\w*", stmt)
    if not words or "typedef" in words or "static" in words:
        return None
    paren = stmt.find("(")
    if paren >= 0:  # a function declaration
        m = re.search(r"([A-Za-z_]\w*)\s*$", stmt[:paren])
        return m.group(1) if m else None
    if "extern" in words:  # a variable
        return words[-1]
    return None  # a type definition, or a variable the header would define


def main():
    names = set()
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            for stmt in statements(strip(f.read())):
                name = exported(stmt)
                if name:
                    names.add(name)
    if not names:
        sys.exit("public-api.py: no declaration found")
    print("\n".join(sorted(names)))


if __name__ == "__main__":
    main()
