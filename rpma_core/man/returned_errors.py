"""Which RPMA_E_* codes the implementation can return from each API function.

A conservative static reading of rpma_core/src: a function can return every
RPMA_E_* code written in its body (other than in == / != comparisons), and
every code a function it calls within rpma_core/src can return, transitively.
It over-approximates (a helper's code counts even where the caller drops it),
which is the safe direction for "every code the function can return is
documented"; that the header lists nothing beyond this set is checked too,
so an over-approximation shows up as a failure to be explained below rather
than as a silently wrong manual page.

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
# A call of a free function: not a member call (".x(", "->x(").
_CALL = re.compile(r"(?<![\w.>:])(?:\w+::)*(\w+)\s*\(")


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


def function_bodies(source):
    """{name: [body, ...]} of the functions defined in one source file
    (overloads and templates of one name collected together)."""
    text = strip_comments_and_strings(source)
    bodies = {}
    for m in _DEFINITION_START.finditer(text):
        close = _matching(text, m.end() - 1, "(", ")")
        after = re.match(r"\s*(?:const\s*)?(?:noexcept\s*)?\{", text[close + 1:])
        if after is None:
            continue  # a declaration or a call at file level
        open_brace = close + after.end()
        body = text[open_brace:_matching(text, open_brace, "{", "}") + 1]
        bodies.setdefault(m.group(1), []).append(body)
    return bodies


class Analysis:
    def __init__(self, sources):
        """sources: {path: text} of rpma_core/src/*.cc and *.h."""
        self.bodies = {}
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


def check_sources(provider_sources):
    """Paths of provider files that mention RPMA_E_* (there must be none)."""
    return sorted(path for path, text in provider_sources.items()
                  if _CODE.search(strip_comments_and_strings(text)))
