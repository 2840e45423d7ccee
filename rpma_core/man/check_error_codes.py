"""Each function's documented Errors: list against the codes its code returns.

    check_error_codes.py LIBRPMA_H RPMA_EXT_H SOURCE...

SOURCE is every source file of rpma_core (src/*.cc, src/*.h, providers
included). For every documented function that returns int, the set of
RPMA_E_* codes its Errors: list names must equal the set returned_errors.py
finds in its implementation: a code the code can return but the header does
not list (codes(), which over-approximates) is a manual page that lies by
omission; a listed code that reaches none of its return statements
(returned_codes()) is one that lies outright. Fix the header's comment (or the
code), not this test, unless the difference is explained below. The reading
must also see everything: every value the function returns is 0, a code or
what a function of rpma_core/src returns, and no code sits where it cannot
be attributed to a function (returned_errors.py says why).
"""

import sys

import header_doc
import returned_errors

# Differences the static reading cannot see through, each with its reason:
#   function name -> {"unlisted": {codes the code returns that are not
#   documented}, "unreturned": {documented codes the reading does not find}}
# Today the reading and the header agree on every function.
EXPLAINED = {}


def main():
    librpma_h, ext_h = sys.argv[1:3]
    sources = {}
    for path in sys.argv[3:]:
        with open(path) as f:
            sources[path] = f.read()
    core = {p: t for p, t in sources.items() if "/src/provider/" not in p}
    providers = {p: t for p, t in sources.items() if "/src/provider/" in p}
    failures = 0

    # The premise of the reading: providers speak errno, only the API
    # objects in src/ turn it into RPMA_E_* codes.
    for path in returned_errors.check_sources(providers):
        print("FAIL: %s uses RPMA_E_* codes; the reading of returned codes assumes providers "
              "return errno values (map them in src/, or teach returned_errors.py)" % path)
        failures += 1
    if len(core) < 10 or len(providers) < 10:
        print("FAIL: expected rpma_core's sources, got %d API and %d provider files" %
              (len(core), len(providers)))
        failures += 1

    analysis = returned_errors.Analysis(core)
    # What the reading cannot attribute to a function would make its answer
    # wrong without a word: refuse it.
    for path, line, code in analysis.stray_codes():
        print("FAIL: %s:%d: %s outside every function body the reading found (a macro, a "
              "constant, a method defined in its class?); return it from a function" %
              (path, line, code))
        failures += 1
    functions = []
    for path, name in ((librpma_h, "librpma.h"), (ext_h, "rpma_ext.h")):
        with open(path) as f:
            functions += header_doc.parse_header(f.read(), name)

    checked = 0
    for fn in functions:
        if fn.return_type.strip() != "int":
            continue  # returns a string, never a code
        try:
            returned = analysis.codes(fn.name)
        except KeyError as e:
            print("FAIL: %s" % e)
            failures += 1
            continue
        for where, problem in analysis.unattributed_returns(fn.name):
            print("FAIL: %s: %s %s; map it to an RPMA_E_* code" % (fn.name, where, problem))
            failures += 1
        explained = EXPLAINED.get(fn.name, {})
        unlisted = returned - fn.error_codes - explained.get("unlisted", set())
        # A listed code must reach a return statement, not merely be written
        # in a helper whose result this function drops.
        reaching = analysis.returned_codes(fn.name)
        unreturned = fn.error_codes - reaching - explained.get("unreturned", set())
        for code in sorted(unlisted):
            print("FAIL: %s can return %s, but its Errors: list in %s does not say when" %
                  (fn.name, code, fn.header))
        for code in sorted(unreturned):
            print("FAIL: %s's Errors: list in %s names %s, which its implementation never "
                  "returns" % (fn.name, fn.header, code))
        failures += len(unlisted) + len(unreturned)
        checked += 1

    print("== %d functions checked against their implementation" % checked)
    if failures:
        print("%d failures" % failures)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
