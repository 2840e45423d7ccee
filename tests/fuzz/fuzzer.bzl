"""libFuzzer targets, built with clang outside Bazel's gcc toolchain.

Bazel's C++ toolchain here is gcc, which has no libFuzzer, so a genrule runs
Debian's clang++ on the harness and on the sources under test.
"""

# The harness is held to the project's warning policy; the library sources
# keep gcc's (.bazelrc), so a clang-only warning there does not break this.
_SANITIZE = "-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
_CXXFLAGS = "-std=c++20 -g -O1 -fno-omit-frame-pointer -I. -Irpma_core/include " + _SANITIZE

_LibrarySourcesInfo = provider(fields = ["files"])

def _library_sources_aspect_impl(target, ctx):
    files = []
    if not target.label.workspace_name:  # system libraries stay uninstrumented
        for attr in ["srcs", "hdrs", "textual_hdrs"]:
            files += getattr(ctx.rule.files, attr, [])
    return [_LibrarySourcesInfo(files = depset(files, transitive = [
        dep[_LibrarySourcesInfo].files
        for dep in getattr(ctx.rule.attr, "deps", [])
        if _LibrarySourcesInfo in dep
    ]))]

_library_sources_aspect = aspect(
    implementation = _library_sources_aspect_impl,
    attr_aspects = ["deps"],
)

def _library_sources_impl(ctx):
    return [DefaultInfo(files = depset(transitive = [
        library[_LibrarySourcesInfo].files
        for library in ctx.attr.libraries
    ]))]

# The sources and headers of cc_library targets and of the libraries of this
# workspace they depend on, so that a fuzzer compiles a whole library with
# clang and follows the files it gains or loses without a list to keep in
# step (and reaches private headers its package cannot name).
_library_sources = rule(
    implementation = _library_sources_impl,
    attrs = {"libraries": attr.label_list(aspects = [_library_sources_aspect])},
)

def rpma_fuzzer(name, harness, srcs, corpus, fuzzer_args = [], linkopts = [], libraries = [],
                timeout = None, harness_srcs = []):
    """Builds the fuzzer `name` and a test running it briefly over `corpus`.

    Args:
      name: the fuzzer binary (bazel-bin/tests/fuzz/<name>).
      harness: the .cc file defining LLVMFuzzerTestOneInput.
      harness_srcs: the harness's other files (.cc and .h), held to the
        same warning policy as `harness`.
      srcs: the sources under test (.cc) and every header they use.
      corpus: the seed corpus directory, relative to this package.
      fuzzer_args: libFuzzer flags of the bounded test run.
      linkopts: flags for the final link after the objects, such as the
        system libraries (-lyaml-cpp) the sources under test call; those
        libraries run uninstrumented.
      libraries: cc_library targets compiled whole, in addition to `srcs`,
        with every library of this workspace they depend on.
      timeout: the test's Bazel timeout, when the default of a small test
        is too short for the run in `fuzzer_args`.
    """
    library_srcs = []
    if libraries:
        _library_sources(
            name = name + "_library_sources",
            testonly = True,
            libraries = libraries,
        )
        library_srcs = [":" + name + "_library_sources"]
    native.genrule(
        name = name + "_build",
        testonly = True,
        srcs = [harness, "fuzz_support.h"] + harness_srcs + srcs + library_srcs,
        outs = [name],
        cmd = " && ".join([
            "objs=$$(mktemp -d)",
            "clang++ %s -Wall -Wextra -Werror -c $(location %s) -o $$objs/harness.o" % (_CXXFLAGS, harness),
        ] + [
            "clang++ %s -Wall -Wextra -Werror -c $(location %s) -o $$objs/harness_%s.o" % (
                _CXXFLAGS,
                src,
                src.rpartition("/")[2].rpartition(".")[0],
            )
            for src in harness_srcs
            if src.endswith(".cc")
        ] + [
            "for src in $(SRCS); do case $$src in *.cc) case \" %s \" in *\" $$src \"*) ;; *) " % " ".join(
                ["$(location %s)" % src for src in [harness] + harness_srcs if src.endswith(".cc")],
            ) +
            "clang++ %s -c $$src -o $$objs/$$(basename $$src .cc).o || exit 1;; esac;; esac; done" % _CXXFLAGS,
            "clang++ %s -pthread $$objs/*.o %s -o $@" % (_SANITIZE, " ".join(linkopts)),
            "rm -rf $$objs",
        ]),
        executable = True,
    )
    native.sh_test(
        name = name + "_test",
        size = "small",
        timeout = timeout,
        srcs = ["run_fuzzer.sh"],
        args = ["$(rootpath :%s)" % name, native.package_name() + "/" + corpus] + fuzzer_args,
        data = [":" + name] + native.glob([corpus + "/*"]),
    )
