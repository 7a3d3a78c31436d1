#!/bin/sh
# mkman.sh TOOL OUT VERSION - a man page (section 1) made from TOOL --help.
#
# The first "Usage:" lines become SYNOPSIS, the first line after them the
# NAME line's description, and the rest DESCRIPTION, kept as the help lays it
# out (.nf): the help is written for an 80-column terminal already.  Our own
# small script instead of help2man, so `make install` needs nothing extra.
set -eu
tool=$1
out=$2
name=$(basename "$tool")
version=$3
help=$("$tool" --help)
# roff: a backslash is \e; a line starting with . or ' needs \& in front
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/-/\\-/g'; }
# the NAME line: the first sentence of the first paragraph after the usage lines
summary=$(printf '%s\n' "$help" | awk '
    /^[Uu]sage:/ { u = 1; next }
    u == 1 && /^       / { next }
    u == 1 && NF == 0 { if (p != "") exit; next }
    u == 1 { sub(/^ +/, ""); p = p (p == "" ? "" : " ") $0; next }
    END { n = index(p, ". "); if (n) p = substr(p, 1, n); sub(/\.$/, "", p); print p }')
[ -n "$summary" ] || summary="part of swapadvisor"
tmp="$out.tmp.$$"
{
    printf '.TH %s 1 "" "swapadvisor %s" "User Commands"\n' "$(printf '%s' "$name" | tr a-z A-Z)" "$version"
    printf '.SH NAME\n%s \\- %s\n' "$name" "$(printf '%s' "$summary" | esc)"
    printf '.SH SYNOPSIS\n.nf\n'
    printf '%s\n' "$help" | awk '/^[Uu]sage:/ {u = 1; sub(/^[Uu]sage: */, ""); print; next}
                                 u && /^       / {sub(/^ */, ""); print; next} u {exit}' | esc
    printf '.fi\n.SH DESCRIPTION\n.nf\n'
    printf '%s\n' "$help" | awk 'u && !/^       / {b = 1} b {print; next} /^[Uu]sage:/ {u = 1}' | esc
    printf '.fi\n.SH SEE ALSO\n'
    printf 'The documentation in share/doc/swapadvisor and the project'"'"'s docs/ folder:\n'
    printf 'docs/formats.md (the graph, device profile and plan documents), docs/emit.md.\n'
} > "$tmp"
mv "$tmp" "$out"
