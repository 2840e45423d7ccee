"""Generates librpma's manual pages from the headers' documentation comments.

    gen_man_pages.py --librpma-h H --ext-h H --version-script librpma.map \
        --overview librpma.7.in --example example.c --out DIR

writes DIR/share/man/man3/<function>.3 for every documented function of
librpma.h and rpma_ext.h, and DIR/share/man/man7/librpma.7 from the overview
source, whose @ERROR_CODES@ and @FUNCTIONS@ lines are filled in from the
header and @EXAMPLE@ from the example program (which the build compiles). The comments are the single source: a page cannot disagree with the
prototype or the error list it documents.
"""

import argparse
import os
import re
import sys

import header_doc

SOURCE = "rpma_core"
MANUAL = "librpma Programming Manual"
# Usable columns at MANWIDTH=80 (man indents by 7); wider prototypes wrap.
SYNOPSIS_WIDTH = 72
# Functions whose SYNOPSIS also shows a type their prototype uses.
EXTRA_DECLARATIONS = {"rpma_log_set_function": ["rpma_log_function"]}
EXTENSION_HEADER = "rpma_ext.h"


def escape(text):
    return text.replace("\\", "\\e")


def line(text):
    """A text line that troff cannot mistake for a request."""
    return "\\&" + text if text[:1] in (".", "'") else text


_TOKEN = re.compile(r"\b[A-Za-z_]\w*(?:\(\d?\))?")


def markup(text, params, pages):
    """Escaped text with function references bold, constants bold and the
    function's parameters italic, as man-pages(7) asks."""
    def replace(m):
        token = m.group(0)
        before = text[m.start() - 1] if m.start() > 0 else ""
        after = text[m.end():m.end() + 1]
        ref = re.match(r"^(\w+)\((\d?)\)$", token)
        if ref:
            name, section = ref.groups()
            if name in pages or section or name.startswith(("rpma_", "ibv_", "rdma_")):
                return "\\fB%s\\fP(%s)" % (name, section)
            return token
        if re.match(r"^(?:RPMA|IBV|RDMA)_[A-Z0-9_]+$|^O_NONBLOCK$", token):
            return "\\fB%s\\fP" % token
        if token in params and before not in (".", ">", "_") and after != "(":
            return "\\fI%s\\fP" % token
        return token

    return _TOKEN.sub(replace, escape(text))


def sentence(text, capitalize=False):
    """text ending in a period; capitalized on request (never for text that
    starts with an identifier, whose case matters)."""
    if capitalize and re.match(r"^[a-z]+\b(?!_)", text):
        text = text[0].upper() + text[1:]
    return text if text.rstrip(")").endswith(".") else text + "."


def synopsis_lines(return_type, name, params):
    """The prototype in nofill lines no wider than SYNOPSIS_WIDTH: types bold,
    parameter names italic, continuation lines aligned after "(" (or, when
    the name is too long for that, indented by 8 below it).
    """
    head = "%s%s(" % (return_type, name)
    pieces = []  # [(plain width, troff text)] of each parameter with its separator
    for i, p in enumerate(params):
        sep = ");" if i == len(params) - 1 else ","
        if p.name:
            troff = "\\fB%s\\fP\\fI%s\\fP\\fB%s%s\\fP" % (escape(p.type), p.name, p.suffix, sep)
        else:
            troff = "\\fB%s%s\\fP" % (escape(p.type), sep)
        pieces.append((len(p.type + p.name + p.suffix + sep), troff))
    out, current, width = [], "\\fB%s\\fP" % escape(head), len(head)
    indent = " " * len(head)
    if len(head) + pieces[0][0] > SYNOPSIS_WIDTH:
        out.append(current)
        indent = " " * 8
        current, width = "", 0
    for plain, troff in pieces:
        if width > len(indent) and width + 1 + plain > SYNOPSIS_WIDTH:
            out.append(current)
            current, width = "", 0
        if width == 0:
            current, width = "\\fB%s\\fP" % indent, len(indent)
        elif not current.endswith("(\\fP"):
            current, width = current + " ", width + 1
        current, width = current + troff, width + plain
    out.append(current)
    return out


def see_also(fn, pages):
    text = " ".join([fn.summary, fn.returns] + fn.description + [t for _, t in fn.errors])
    refs = set()
    for name, section in re.findall(r"\b(\w+)\((\d?)\)", text):
        if name != fn.name and name in pages:
            refs.add((name, "3"))
        elif section:
            refs.add((name, section))
    refs.add(("librpma", "7"))
    ordered = sorted(refs, key=lambda r: (r[0] != "librpma", r[1], r[0]))
    return [".BR %s (%s)%s" % (n, s, "," if i < len(ordered) - 1 else "")
            for i, (n, s) in enumerate(ordered)]


def version_nodes(script):
    """{function: version node} of a GNU ld version script."""
    nodes = {}
    for node, body in re.findall(r"^([\w.]+) \{(.*?)\}", script, re.M | re.S):
        for name in re.findall(r"^\s*(\w+);", body, re.M):
            nodes[name] = node
    return nodes


def function_page(fn, typedefs, pages, node):
    params = {p.name for p in fn.params if p.name}
    extension = fn.header == EXTENSION_HEADER
    title = "%s extensions" % SOURCE if extension else MANUAL
    if 2 * len(fn.name + "(3)") + len(title) + 4 > 80:
        title = ""  # it would overprint the page names in the header line
    out = [
        '.\\" Generated from %s by rpma_core/man/gen_man_pages.py; edit the header.' % fn.header,
        # Long identifiers stay whole (no hyphenation, which the man macros
        # would turn back on after some macros unless HY says so) and lines
        # ragged (justifying around them fails: "cannot adjust line").
        ".nr HY 0",
        '.TH %s 3 "" "%s" "%s"' % (fn.name.upper(), SOURCE, title),
        ".nh",
        ".ad l",
        ".SH NAME",
        "%s \\- %s" % (fn.name, escape(fn.summary.rstrip("."))),
        ".SH SYNOPSIS",
        ".nf",
        "\\fB#include <librpma.h>\\fP",
    ]
    if extension:
        out.append("\\fB#include <%s>\\fP" % EXTENSION_HEADER)
    out.append("")
    for extra in EXTRA_DECLARATIONS.get(fn.name, []):
        head, _, extra_params = header_doc.declaration(typedefs[extra])
        out.extend(synopsis_lines(head, extra, extra_params))
        out.append("")
    out.extend(synopsis_lines(fn.return_type, fn.name, fn.params))
    out.append(".fi")

    out.append(".SH DESCRIPTION")
    paragraphs = fn.description or [sentence(fn.summary, capitalize=True)]
    for i, paragraph in enumerate(paragraphs):
        if i > 0:
            out.append(".PP")
        out.append(line(markup(paragraph, params, pages)))

    out.append(".SH RETURN VALUE")
    out.append(line(markup(sentence(fn.returns, capitalize=True), params, pages)))

    out.append(".SH ERRORS")
    if fn.errors:
        out.append(line("\\fB%s\\fP() can fail with the following errors:" % fn.name))
        for code, text in fn.errors:
            out.extend([".TP", ".B %s" % code, line(markup(sentence(text), params, pages))])
    else:
        out.append(line("\\fB%s\\fP() does not fail." % fn.name))

    if extension:
        out.append(".SH NOTES")
        out.append(
            line("\\fB%s\\fP() is an extension of rpma_core, declared in \\fI<%s>\\fP; it is "
                 "not part of librpma. It is exported in the version node "
                 "\\fB%s\\fP, so a program that uses it fails to load "
                 "on another librpma instead of misbehaving." % (fn.name, EXTENSION_HEADER, node)))

    out.append(".SH SEE ALSO")
    out.extend(see_also(fn, pages))
    return "\n".join(out) + "\n"


def overview_page(template, codes, functions, example):
    error_lines = []
    for code, value, meaning in codes:
        error_lines += [".TP", ".BR %s \" (%d)\"" % (code, value),
                        line(sentence(escape(meaning), capitalize=True))]
    names = sorted(f.name for f in functions)
    function_lines = [".BR %s (3)%s" % (n, "," if i < len(names) - 1 else "")
                      for i, n in enumerate(names)]
    out = []
    for text in template.splitlines():
        if text == "@ERROR_CODES@":
            out.extend(error_lines)
        elif text == "@EXAMPLE@":
            out.extend(line(escape(l)) for l in example.rstrip("\n").split("\n"))
        elif text == "@FUNCTIONS@":
            out.extend(function_lines)
        else:
            out.append(text)
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--librpma-h", required=True)
    parser.add_argument("--ext-h", required=True)
    parser.add_argument("--version-script", required=True)
    parser.add_argument("--overview", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    with open(args.librpma_h) as f:
        librpma_h = f.read()
    with open(args.ext_h) as f:
        ext_h = f.read()
    with open(args.version_script) as f:
        nodes = version_nodes(f.read())
    with open(args.overview) as f:
        template = f.read()
    with open(args.example) as f:
        example = f.read()
    try:
        functions = (header_doc.parse_header(librpma_h, "librpma.h") +
                     header_doc.parse_header(ext_h, EXTENSION_HEADER))
        typedefs = {name: header_doc.typedef(librpma_h, name)
                    for names in EXTRA_DECLARATIONS.values() for name in names}
    except header_doc.DocError as e:
        sys.exit("gen_man_pages: %s" % e)

    pages = {f.name for f in functions}
    man3 = os.path.join(args.out, "share", "man", "man3")
    man7 = os.path.join(args.out, "share", "man", "man7")
    os.makedirs(man3, exist_ok=True)
    os.makedirs(man7, exist_ok=True)
    for fn in functions:
        if fn.name not in nodes:
            sys.exit("gen_man_pages: %s is not in %s: export it in a version node" %
                     (fn.name, args.version_script))
        with open(os.path.join(man3, fn.name + ".3"), "w") as f:
            f.write(function_page(fn, typedefs, pages, nodes[fn.name]))
    with open(os.path.join(man7, "librpma.7"), "w") as f:
        f.write(overview_page(template, header_doc.error_codes(librpma_h), functions,
                                example))


if __name__ == "__main__":
    main()
