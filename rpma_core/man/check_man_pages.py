"""The generated manual pages, checked as a reader sees them.

    check_man_pages.py PAGES_DIR LIBRPMA_H RPMA_EXT_H LIBRPMA_SO SOURCE...

- every function the built librpma.so.0 exports (its dynamic symbol table,
  both version nodes) has a page in man3, and there is no page for anything
  else: the linker script is not the truth, since GNU ld lets it name a
  function the library does not define; librpma.h's functions are in
  LIBRPMA_1.0 and rpma_ext.h's in an RPMA_CORE_EXT_1.x node, the one their
  page's NOTES names (a node is never reused for a later function);
- every page has librpma's sections, in its order (NAME, SYNOPSIS,
  DESCRIPTION, RETURN VALUE, ERRORS, SEE ALSO; NOTES before SEE ALSO on the
  extensions' pages);
- every page renders at 80 columns with `man --warnings` printing nothing,
  no line wider than 80, and a NAME line lexgrog (lintian's whatis check)
  reads;
- every page's SYNOPSIS, as rendered, is the header's #include lines and
  the header's prototype (whitespace aside), read from the header here with
  a regular expression of its own rather than the generator's parser;
- every page's ERRORS lists exactly the RPMA_E_* entries of the header's
  Errors: list for that function;
- librpma(7) renders as cleanly and covers what it must, ENVIRONMENT naming
  every variable rpma_core's sources read (any "RPMA_*" string literal, and
  any literal getenv() argument), so that a new knob cannot go undocumented.
"""

import os
import re
import subprocess
import sys

import header_doc

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def render(page):
    """(text, warnings) of a page at 80 columns."""
    env = dict(os.environ, MANWIDTH="80")
    done = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", page], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail("%s: man exited with %d" % (page, done.returncode))
    return done.stdout, done.stderr


def section(text, title):
    """The lines of one section of rendered text (its heading excluded)."""
    m = re.search(r"^%s\n(.*?)(?=^\S)" % re.escape(title), text, re.M | re.S)
    return m.group(1) if m else None


def exported_functions(library):
    """{name: version node} of the functions library defines and exports."""
    done = subprocess.run(["objdump", "-T", library], capture_output=True, text=True)
    if done.returncode != 0:
        fail("objdump -T %s: %s" % (library, done.stderr.strip()))
    # "000000000000f345 g    DF .text  00000000000000b9  LIBRPMA_1.0 rpma_err_2str"
    return {m.group(2): m.group(1) for m in re.finditer(
        r"^\S+ [gw] +DF (?!\*UND\*)\S+\s+\S+\s+(?:\(?(\S+?)\)?\s+)(\w+)$",
        done.stdout, re.M)}


def header_prototype(text, name):
    """The prototype of name as the header spells it, one line."""
    m = re.search(r"^((?:const )?\w+ \*?%s\([^;]*\);)" % name, text, re.M)
    return header_doc.normalize(m.group(1)) if m else None


LIBRPMA_NODE = "LIBRPMA_1.0"
EXTENSION_NODE = re.compile(r"^RPMA_CORE_EXT_1\.\d+$")
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS", "SEE ALSO"]
EXTENSION_SECTIONS = SECTIONS[:-1] + ["NOTES"] + SECTIONS[-1:]


def check_page(path, name, headers, documented):
    text, warnings = render(path)
    if warnings.strip():
        fail("%s: man --warnings:\n%s" % (path, warnings))
    headings = re.findall(r"^([A-Z][A-Z ]*[A-Z])$", text, re.M)
    want = EXTENSION_SECTIONS if name.startswith("rpma_ext_") else SECTIONS
    if headings != want:
        fail("%s: sections are %s, librpma's layout is %s" % (path, headings, want))
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > 80:
            fail("%s: rendered line %d is %d columns wide: %s" % (path, n, len(line), line))
    whatis = subprocess.run(["lexgrog", path], capture_output=True, text=True)
    if whatis.returncode != 0 or ('"%s - ' % name) not in whatis.stdout:
        fail("%s: lexgrog cannot read its NAME line: %s" % (path, whatis.stdout.strip()))

    header = "rpma_ext.h" if name.startswith("rpma_ext_") else "librpma.h"
    prototype = header_prototype(headers[header], name)
    if prototype is None:
        fail("%s: no prototype of %s in %s" % (path, name, header))
        return
    synopsis = section(text, "SYNOPSIS")
    if synopsis is None:
        fail("%s: no SYNOPSIS" % path)
        return
    synopsis = header_doc.normalize(synopsis)
    includes = "#include <librpma.h>" + (" #include <rpma_ext.h>" if header == "rpma_ext.h"
                                         else "")
    if not synopsis.startswith(includes + " ") or not synopsis.endswith(" " + prototype):
        fail("%s: SYNOPSIS is\n    %s\n  but the header says\n    %s %s" %
             (path, synopsis, includes, prototype))
    else:
        # Anything between the includes and the prototype must be a
        # declaration the header makes too (e.g. rpma_log_function).
        middle = synopsis[len(includes):-len(prototype)].strip()
        if middle and middle not in header_doc.normalize(headers[header]):
            fail("%s: SYNOPSIS declares something the header does not: %s" % (path, middle))

    errors = section(text, "ERRORS")
    if errors is None:
        fail("%s: no ERRORS section" % path)
        return
    listed = re.findall(r"^ {7}(RPMA_E_\w+)\s*$", errors, re.M)
    expected = [code for code, _ in documented[name].errors]
    if sorted(listed) != sorted(expected):
        fail("%s: ERRORS lists %s, the header's Errors: list %s" % (path, listed, expected))


def environment_variables(sources):
    """{name: path} of the environment variables rpma_core's sources read."""
    found = {}
    for path, text in sources.items():
        for name in re.findall(r'"(RPMA_[A-Z0-9_]+)"', text):
            found.setdefault(name, path)
        for name in re.findall(r'\b(?:secure_)?getenv\(\s*"([^"]+)"', text):
            found.setdefault(name, path)
    return found


def check_overview(path, documented, codes, variables):
    text, warnings = render(path)
    if warnings.strip():
        fail("%s: man --warnings:\n%s" % (path, warnings))
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > 80:
            fail("%s: rendered line %d is %d columns wide: %s" % (path, n, len(line), line))
    flat = " ".join(text.split())
    for title, topics in [("OBJECTS AND THEIR LIFETIMES", ["struct rpma_peer", "struct rpma_conn"]),
                          ("PROVIDERS", ["verbs", "tcp"]),
                          ("PERSISTENCE", ["APM", "GPSPM", "Native flush"]),
                          ("THREAD SAFETY", []), ("LOGGING", ["rpma_log_set_function"]),
                          ("EXAMPLE", ["#include <librpma.h>"])]:
        body = section(text, title)
        if body is None:
            fail("%s: has no %s section" % (path, title))
            continue
        for topic in topics:
            if topic not in " ".join(body.split()):
                fail("%s: %s says nothing about %s" % (path, title, topic))
    # Each variable is a tag of its own in ENVIRONMENT (".B NAME").
    tags = set(re.findall(r"^ {7}(\S+)\s*$", section(text, "ENVIRONMENT") or "", re.M))
    for name, source in sorted(variables.items()):
        if name not in tags:
            fail("%s: ENVIRONMENT does not describe %s, which %s reads" % (path, name, source))
    for code, value, _ in codes:
        if "%s (%d)" % (code, value) not in flat:
            fail("%s: does not list the error code %s (%d)" % (path, code, value))
    see_also = " ".join((section(text, "SEE ALSO") or "").split())
    for name in documented:
        if "%s(3)" % name not in see_also:
            fail("%s: SEE ALSO does not name %s(3)" % (path, name))


def main():
    pages_dir, librpma_h, ext_h, library = sys.argv[1:5]
    sources = {}
    for path in sys.argv[5:]:
        with open(path) as f:
            sources[path] = f.read()
    headers = {}
    for path, name in ((librpma_h, "librpma.h"), (ext_h, "rpma_ext.h")):
        with open(path) as f:
            headers[name] = f.read()
    versions = exported_functions(library)
    exported = set(versions)
    # Guards the reading of objdump: both version nodes, so both headers.
    for must, node in (("rpma_conn_req_new", "LIBRPMA_1.0"),
                       ("rpma_ext_conn_req_move_to_peer", "RPMA_CORE_EXT_1.0")):
        if versions.get(must) != node:
            fail("could not read %s (%s@%s not found)" % (library, must, node))

    documented = {f.name: f for name in headers
                  for f in header_doc.parse_header(headers[name], name)}
    man3 = os.path.join(pages_dir, "share", "man", "man3")
    pages = {p[:-2] for p in os.listdir(man3) if p.endswith(".3")}
    print("== %d exported functions, %d pages" % (len(exported), len(pages)))
    for name in sorted(exported - pages):
        fail("%s is exported but has no page (document it in its header)" % name)
    for name in sorted(pages - exported):
        fail("%s has a page but %s does not export it (is it defined, and in "
             "librpma.map?)" % (name, library))

    # librpma's functions keep Debian's version node; the extensions' pages
    # promise theirs (NOTES), so that a program using one fails to load on
    # another librpma.
    for name in sorted(pages & exported):
        header = documented[name].header  # every page comes from a header's comment
        if header == "librpma.h":
            if versions[name] != LIBRPMA_NODE:
                fail("%s is exported in %s, but librpma's functions are in %s" %
                     (name, versions[name], LIBRPMA_NODE))
            continue
        if not EXTENSION_NODE.match(versions[name]):
            fail("%s is exported in %s, but rpma_ext.h's functions are in an "
                 "RPMA_CORE_EXT_1.x node" % (name, versions[name]))
        notes, _ = render(os.path.join(man3, name + ".3"))
        promised = re.search(r"version node (\S+?),", " ".join(
            (section(notes, "NOTES") or "").split()))
        if promised is None or promised.group(1) != versions[name]:
            fail("%s is exported in %s, but its page's NOTES say %s" %
                 (name, versions[name], promised.group(1) if promised else "nothing"))
    for name in sorted(pages & exported):
        check_page(os.path.join(man3, name + ".3"), name, headers, documented)
    variables = environment_variables(sources)
    # Guards the reading of the sources: the variables the issue names.
    for must in ("RPMA_PROVIDER", "RPMA_TCP_INLINE_LINGER_US"):
        if must not in variables:
            fail("no source reads %s: are rpma_core's sources among the arguments?" % must)
    check_overview(os.path.join(pages_dir, "share", "man", "man7", "librpma.7"), documented,
                   header_doc.error_codes(headers["librpma.h"]), variables)

    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
