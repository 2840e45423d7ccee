"""What every example's BUILD shares: a server.c and a client.c, plain librpma programs.

Each builds against this project's //rpma_core; examples that the VM tier also runs
against Debian's librpma 1.2 (interop, tests/vm:examples_verbs_test) get a `_librpma`
twin of each program and library, built from the same sources.
"""

# The shared helpers that have a twin built against Debian's librpma.
_LIBRPMA_TWINS = {
    "//examples/common:completions": "//examples/common:completions_librpma",
    "//examples/common:example_conn": "//examples/common:example_conn_librpma",
}

def _librpma_twin(dep):
    if dep in _LIBRPMA_TWINS:
        return _LIBRPMA_TWINS[dep]
    if dep.startswith(":") and dep != ":protocol":
        return dep + "_librpma"  # a library of this example, declared with example_library
    return dep

def _with_twin(rule, name, deps, librpma, **kwargs):
    rule(name = name, deps = deps, **kwargs)
    if librpma:
        rule(name = name + "_librpma", deps = [_librpma_twin(d) for d in deps], **kwargs)

def example_library(name, srcs, hdrs, deps, librpma = False):
    """A library of one example; with librpma, also `<name>_librpma`."""
    _with_twin(native.cc_library, name, deps, librpma, srcs = srcs, hdrs = hdrs)

def example_programs(server_deps, client_deps = None, protocol = True, librpma = False):
    """`server` (server.c) and `client` (client.c).

    Args:
      server_deps: what the server links.
      client_deps: what the client links (default: server_deps).
      protocol: declare `protocol` (protocol.h: what server and client agree on, which
        the tests check results against too) and link both programs with it.
      librpma: also `server_librpma` and `client_librpma`, the same sources built against
        Debian's librpma (see //examples/common:example_conn_librpma).
    """
    extra = []
    if protocol:
        native.cc_library(name = "protocol", hdrs = ["protocol.h"])
        extra = [":protocol"]
    if client_deps == None:
        client_deps = server_deps
    _with_twin(native.cc_binary, "server", extra + server_deps, librpma, srcs = ["server.c"])
    _with_twin(native.cc_binary, "client", extra + client_deps, librpma, srcs = ["client.c"])
