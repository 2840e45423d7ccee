"""The documentation comments of librpma.h and rpma_ext.h, read as data.

Every API function in those headers is preceded by a comment of one shape:

    /*
     * rpma_name -- one-line summary (may wrap onto more lines).
     *
     * Description paragraphs, separated by blank comment lines.
     *
     * Returns: what the function returns.
     * Errors:
     *   RPMA_E_CODE - when it happens
     *                 (continuation lines indented further)
     */
    int rpma_name(...);

The manual pages are generated from these comments, so anything that does
not fit the shape is an error here rather than a page that silently drops
text.
"""

import re
from dataclasses import dataclass, field

# A doc comment directly followed by the declaration it documents.
_DOC_COMMENT = re.compile(
    r"/\*\n \* (?P<name>\w+) -- (?P<first>.*)\n(?P<body>(?: \*.*\n)*?) \*/\n(?P<decl>[^;#/]*;)")
_PROTOTYPE = re.compile(r"^(?P<ret>.*?)\b(?P<name>rpma_\w+)\((?P<params>.*)\);$", re.S)
_ERROR_ITEM = re.compile(r"^  (?P<code>RPMA_E_\w+)\s+- (?P<text>.*)$")
_ERROR_CODE_DEFINE = re.compile(
    r"^#define (?P<code>RPMA_E_\w+) \((?P<value>-\d+)\)\s*/\* (?P<text>.*?) \*/$", re.M)


class DocError(Exception):
    """A comment that does not have the documented shape."""


@dataclass
class Param:
    type: str  # "struct rpma_conn *", "const char ", "size_t "
    name: str  # "conn"; empty for "..."
    suffix: str = ""  # "[8]"


@dataclass
class Function:
    name: str
    header: str  # "librpma.h" or "rpma_ext.h"
    return_type: str  # "int", "const char *"
    params: list
    summary: str
    description: list = field(default_factory=list)  # paragraphs
    returns: str = ""
    errors: list = field(default_factory=list)  # (code, text), in header order

    @property
    def prototype(self):
        """The declaration as one line, e.g. "int rpma_x(struct rpma_y *y);"."""
        params = ", ".join(p.type + p.name + p.suffix for p in self.params)
        return "%s%s(%s);" % (self.return_type, self.name, params)

    @property
    def error_codes(self):
        return {code for code, _ in self.errors}


def normalize(text):
    """One space between words, none inside parentheses or before , ; [."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\( ", "(", text)
    text = re.sub(r" ([),;\[])", r"\1", text)
    return text


def _split_params(params):
    out = []
    for raw in params.split(","):
        raw = normalize(raw)
        if raw == "...":
            out.append(Param(type="...", name=""))
            continue
        m = re.match(r"^(?P<type>.*?[\s*])(?P<name>\w+)(?P<suffix>\[\d*\])?$", raw)
        if m is None:
            raise DocError("cannot read the parameter %r" % raw)
        out.append(Param(m.group("type"), m.group("name"), m.group("suffix") or ""))
    return out


def declaration(decl):
    """(head, name, [Param]) of a function declaration or function typedef;
    head is everything before the name ("int ", "typedef void ")."""
    m = _PROTOTYPE.match(normalize(decl))
    if m is None:
        raise DocError("cannot read the declaration %r" % decl)
    return m.group("ret"), m.group("name"), _split_params(m.group("params"))


def _comment_lines(body):
    # " * text" -> "text"; " *" -> ""
    return [re.sub(r"^ \*(?: |$)", "", line) for line in body.split("\n") if line]


def _paragraphs(lines):
    paragraphs, current = [], []
    for line in lines:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def _parse_function(name, first, body, decl, header):
    m = _PROTOTYPE.match(normalize(decl))
    if m is None or m.group("name") != name:
        raise DocError("%s: the comment for %s is not followed by its prototype" %
                       (header, name))
    ret = m.group("ret")
    if ret.startswith("typedef"):
        raise DocError("%s: %s is a typedef, not a function" % (header, name))
    lines = [first] + _comment_lines(body)
    try:
        returns_at = next(i for i, l in enumerate(lines) if l.startswith("Returns:"))
    except StopIteration:
        raise DocError("%s: %s has no 'Returns:' line" % (header, name))
    paragraphs = _paragraphs(lines[:returns_at])
    if not paragraphs:
        raise DocError("%s: %s has no summary" % (header, name))
    fn = Function(name=name, header=header, return_type=ret,
                  params=_split_params(m.group("params")), summary=paragraphs[0],
                  description=paragraphs[1:])

    rest = lines[returns_at:]
    errors_at = next((i for i, l in enumerate(rest) if l.startswith("Errors:")), len(rest))
    fn.returns = " ".join(l.strip() for l in rest[:errors_at])[len("Returns:"):].strip()
    for line in rest[errors_at + 1:]:
        item = _ERROR_ITEM.match(line)
        if item:
            fn.errors.append((item.group("code"), item.group("text").strip()))
        elif fn.errors and re.match(r"^ {4,}\S", line):
            code, text = fn.errors[-1]
            fn.errors[-1] = (code, text + " " + line.strip())
        elif line.strip():
            raise DocError("%s: %s: unexpected line in Errors: %r" % (header, name, line))
    if errors_at < len(rest) and not fn.errors:
        raise DocError("%s: %s has an empty Errors: list" % (header, name))
    return fn


def parse_header(text, header):
    """The documented functions of one header, in header order."""
    functions = []
    for m in _DOC_COMMENT.finditer(text):
        functions.append(_parse_function(m.group("name"), m.group("first"), m.group("body"),
                                         m.group("decl"),
                                         header))
    return functions


def error_codes(text):
    """[(code, value, meaning)] of the RPMA_E_* definitions in librpma.h."""
    return [(m.group("code"), int(m.group("value")), m.group("text"))
            for m in _ERROR_CODE_DEFINE.finditer(text)]


def typedef(text, name):
    """The whitespace-normalized typedef of a function type, e.g. rpma_log_function."""
    m = re.search(r"typedef [^;]*\b%s\([^;]*\);" % re.escape(name), text)
    if m is None:
        raise DocError("no typedef of %s" % name)
    return normalize(m.group(0))
