#!/usr/bin/env python3
"""api_names.py DIR - fails when a header in DIR declares a name without the
library's prefix: every macro, type, tag, enum constant and function a public
header declares starts with sa_, SA_ or SWAPADVISOR_, so that a program
embedding the library cannot collide with it.  Prints one line per offender."""
import os
import re
import sys

TOK = re.compile(r'(?P<com>/\*.*?\*/|//[^\n]*)|(?P<str>"(?:\\.|[^"\\\n])*")|(?P<id>[A-Za-z_]\w*)|(?P<ws>\s+)|(?P<p>.)', re.S)
KEYWORDS = set("auto break case char const continue default do double else enum extern float for goto if inline int "
               "long register restrict return short signed sizeof static struct switch typedef union unsigned void "
               "volatile while bool _Bool".split())


def declared(text):
    """Names declared at file scope, struct and enum tags, enum constants and macros."""
    names = set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.M))
    text = re.sub(r"^\s*#.*$", "", re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S), flags=re.M)
    toks = [m.group() for m in TOK.finditer(text) if m.lastgroup in ("id", "p", "str")]
    depth, par, enum_stack = 0, 0, []
    for i, v in enumerate(toks):
        prev = toks[i - 1] if i else ""
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if v == "{":
            enum_stack.append("enum" in toks[max(0, i - 2):i])
            depth += 1
        elif v == "}":
            depth -= 1
            enum_stack.pop()
        elif v in "()":
            par += 1 if v == "(" else -1
        elif re.match(r"[A-Za-z_]", v) and v not in KEYWORDS:
            if prev in ("struct", "enum") or (prev == "}" and depth == 0):
                names.add(v)
            elif depth == 0 and par == 1 and prev == "*" and toks[i - 2] == "(" and nxt == ")":
                names.add(v)
            elif depth == 0 and par == 0 and nxt in ("(", ";", "[", ","):
                names.add(v)
            elif depth >= 1 and enum_stack and enum_stack[-1] and prev in ("{", ","):
                names.add(v)
    return {n for n in names if not n.startswith("__")}


def main():
    bad = 0
    for f in sorted(os.listdir(sys.argv[1])):
        if f.endswith(".h"):
            for n in sorted(declared(open(os.path.join(sys.argv[1], f)).read())):
                if not n.startswith(("sa_", "SA_", "SWAPADVISOR_")):
                    print("api_names: %s declares %s without the sa_ prefix" % (f, n))
                    bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
