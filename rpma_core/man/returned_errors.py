"""Which RPMA_E_* codes the implementation can return from each API function.

A conservative static reading of rpma_core/src: a function can return every
RPMA_E_* code written in its body (other than in == / != comparisons), and
every code a function it calls within rpma_core/src can return, transitively
(free, qualified, ::-qualified and member calls alike). It over-approximates
(a helper's code counts even where the caller drops it), which is the safe
direction for "every code the function can return is documented".

For the other direction, "every documented code can be returned",
returned_codes() follows the values instead: the codes in the function's
return statements, in what its returned variables are set to, and in the
same of the functions whose value it returns, so a helper's code that the
function drops does not count.

The reading is only sound for code it can see through, so it also reports
what it cannot (stray_codes, unattributed_returns), and the check fails on it:
- an RPMA_E_* code outside every function body it found (a macro, a constant,
  a table, a method defined inside its class) would return from somewhere
  the reading cannot attribute;
- a value an API function returns must be 0, a code, a choice between those
  (c ? a : b), what a function of rpma_core/src returns (itself read the same
  way), or a variable assigned only such values and handed to no call (which
  could set it through a reference); anything else (a provider's errno, -1,
  a parameter) is an error code no page can list.

The providers (src/provider/) report errno values and never RPMA_E_* codes;
the caller maps them (err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER), and
that mapping is in the caller's body. check_sources() verifies the premise.
"""

import re

_CODE = re.compile(r"\bRPMA_E_\w+\b")
_COMPARED = re.compile(r"(?:[=!]=\s*RPMA_E_\w+\b|\bRPMA_E_\w+\s*[=!]=)")
# A definition starts at column 0 (clang-format puts namespace members
# there): a return type, the name, and a parameter list followed by "{".
_DEFINITION_START = re.compile(r"^[A-Za-z][^;{}()]*?\b(\w+)\s*\(", re.M)
# A call: free (F(), ns::F(), ::F()) or of a member (x.F(), x->F()). Names
# that rpma_core/src does not define (the providers' methods, libc) are
# dropped by the callers of this pattern.
_CALL = re.compile(r"(?<!\w)(?:::)?(?:\w+::)*(\w+)\s*\(")
_RETURN = re.compile(r"\breturn\b")


def strip_comments_and_strings(source):
    """The source with comments, string and character literals blanked out,
    line breaks kept (so column-0 positions survive)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank,
                  source, flags=re.S)


def _matching(text, start, open_char, close_char):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_char:
            depth += 1
        elif text[i] == close_char:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced %s" % open_char)


def _definitions(text):
    """(name, start, end) of each function body in stripped text; text[start:end]
    is the body with its braces."""
    for m in _DEFINITION_START.finditer(text):
        close = _matching(text, m.end() - 1, "(", ")")
        after = re.match(r"\s*(?:const\s*)?(?:noexcept\s*)?\{", text[close + 1:])
        if after is None:
            continue  # a declaration or a call at file level
        open_brace = close + after.end()
        yield m.group(1), open_brace, _matching(text, open_brace, "{", "}") + 1


def function_bodies(source):
    """{name: [body, ...]} of the functions defined in one source file
    (overloads and templates of one name collected together)."""
    text = strip_comments_and_strings(source)
    bodies = {}
    for name, start, end in _definitions(text):
        bodies.setdefault(name, []).append(text[start:end])
    return bodies


def outside_bodies(source):
    """The source, stripped, with every function body blanked out."""
    text = strip_comments_and_strings(source)
    out, at = [], 0
    for _, start, end in _definitions(text):
        if start < at:
            continue  # cannot happen for column-0 definitions; be safe
        out.append(text[at:start])
        out.append(re.sub(r"[^\n]", " ", text[start:end]))
        at = end
    out.append(text[at:])
    return "".join(out)


def _expression_end(text, start):
    """Where the expression that starts at start ends: at a ; or , outside
    brackets, or at a ) closing a bracket opened before start."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c in ";," and depth == 0:
            return i
    return len(text)


def _strip_parentheses(expr):
    while expr.startswith("(") and _matching(expr, 0, "(", ")") == len(expr) - 1:
        expr = expr[1:-1].strip()
    return expr


def _ternary(expr):
    """(then, otherwise) of "c ? then : otherwise" at the top level, or None."""
    depth, question = 0, None
    nested = 0
    for i, c in enumerate(expr):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c == "?":
            if question is None:
                question = i
            else:
                nested += 1
        elif depth == 0 and c == ":" and question is not None:
            if expr[i - 1:i + 1] == "::" or expr[i:i + 2] == "::":
                continue
            if nested:
                nested -= 1
                continue
            return expr[question + 1:i].strip(), expr[i + 1:].strip()
    return None


def _called(expr):
    """The function whose result expr is ("F(...)", "ns::F(...)",
    "x->y.F(...)"), or None when expr is not a call."""
    if not expr.endswith(")"):
        return None
    depth = 0
    for i in range(len(expr) - 1, -1, -1):
        if expr[i] == ")":
            depth += 1
        elif expr[i] == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    m = re.fullmatch(r"(.*?)(\w+)\s*", expr[:i], re.S)
    if m is None or not (m.group(1) == "" or m.group(1).endswith((".", "->", "::"))):
        return None
    return m.group(2)


class Analysis:
    def __init__(self, sources):
        """sources: {path: text} of rpma_core/src/*.cc and *.h."""
        self.bodies = {}
        self.sources = sources
        for text in sources.values():
            for name, bodies in function_bodies(text).items():
                self.bodies.setdefault(name, []).extend(bodies)

    def direct_codes(self, name):
        codes = set()
        for body in self.bodies.get(name, []):
            codes |= set(_CODE.findall(_COMPARED.sub(" ", body)))
        return codes

    def callees(self, name):
        called = set()
        for body in self.bodies.get(name, []):
            called |= {c for c in _CALL.findall(body) if c in self.bodies and c != name}
        return called

    def codes(self, name):
        """Every RPMA_E_* code name can return, through its helpers too."""
        if name not in self.bodies:
            raise KeyError("no definition of %s in rpma_core/src" % name)
        seen, todo, codes = set(), [name], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            codes |= self.direct_codes(current)
            todo.extend(self.callees(current))
        return codes

    def stray_codes(self):
        """[(path, line, code)] of RPMA_E_* codes outside every function body
        (librpma.h's definitions of the codes aside)."""
        found = []
        for path, text in sorted(self.sources.items()):
            outside = re.sub(r"^(\s*#\s*define\s+)(RPMA_E_\w+)",
                             lambda m: m.group(1) + " " * len(m.group(2)), outside_bodies(text),
                             flags=re.M)
            for m in _CODE.finditer(outside):
                found.append((path, text.count("\n", 0, m.start()) + 1, m.group(0)))
        return found

    def _value_problems(self, expr, body, chain, codes, variables=()):
        """Why expr, returned from body, may be something other than 0 or an
        RPMA_E_* code; the codes it may be are added to codes, and the
        functions of rpma_core/src whose value it may be to chain."""
        expr = _strip_parentheses(" ".join(expr.split()))
        if expr == "0":
            return []
        if re.fullmatch(r"RPMA_E_\w+", expr):
            codes.add(expr)
            return []
        branches = _ternary(expr)
        if branches is not None:
            return (self._value_problems(branches[0], body, chain, codes, variables) +
                    self._value_problems(branches[1], body, chain, codes, variables))
        callee = _called(expr)
        if callee is not None:
            if callee in self.bodies:
                chain.add(callee)
                return []
            return ["returns what %s() returns, which is not a function of rpma_core/src "
                    "(a provider's errno?)" % callee]
        if re.fullmatch(r"\w+", expr) and expr not in variables:
            return self._variable_problems(expr, body, chain, codes, variables + (expr,))
        return ["returns %r, which is neither 0, an RPMA_E_* code nor what a function of "
                "rpma_core/src returns" % expr]

    def _variable_problems(self, name, body, chain, codes, variables):
        if re.search(r"(?<![&\w])&\s*%s\b" % name, body):
            return ["returns %s, whose address is taken (set by a callee?)" % name]
        if re.search(r"[(,]\s*%s\s*[,)]" % name, body):
            return ["returns %s, which it passes to a call (that may set it through a "
                    "reference)" % name]
        problems, assigned = [], False
        for m in re.finditer(r"(?<![\w.>])%s\s*((?:[-+*/%%&|^]|<<|>>)?)=(?!=)" % name, body):
            assigned = True
            if m.group(1):
                problems.append("returns %s, which is computed with %s=" % (name, m.group(1)))
                continue
            value = body[m.end():_expression_end(body, m.end())]
            problems += self._value_problems(value, body, chain, codes, variables)
        if not assigned:
            return ["returns %s, which the function does not set (a parameter?)" % name]
        return problems

    def _follow_returns(self, name):
        """(codes, problems): the codes name's return statements and those of
        the functions whose value it returns can yield, and why some returned
        value may not be 0 or a code, as [(function, problem)]."""
        seen, chain, codes, problems = set(), {name}, set(), []
        while chain - seen:
            current = sorted(chain - seen)[0]
            seen.add(current)
            for body in self.bodies.get(current, []):
                for m in _RETURN.finditer(body):
                    expr = body[m.end():_expression_end(body, m.end())]
                    for problem in self._value_problems(expr, body, chain, codes):
                        problems.append((current, problem))
        return codes, problems

    def unattributed_returns(self, name):
        """[(function, problem)], empty when every value name returns is
        accounted for (see _follow_returns)."""
        return self._follow_returns(name)[1]

    def returned_codes(self, name):
        """The codes that reach name's return statements: a subset of codes(),
        without the codes of helpers whose result name drops or compares.
        Exact as far as unattributed_returns() finds nothing, except that a
        returned variable a callee sets through a reference is not followed,
        which is why codes(), not this, decides what must be documented."""
        if name not in self.bodies:
            raise KeyError("no definition of %s in rpma_core/src" % name)
        return self._follow_returns(name)[0]


def check_sources(provider_sources):
    """Paths of provider files that mention RPMA_E_* (there must be none)."""
    return sorted(path for path, text in provider_sources.items()
                  if _CODE.search(strip_comments_and_strings(text)))
