"""libFuzzer targets, built with clang outside Bazel's gcc toolchain.

Bazel's C++ toolchain here is gcc, which has no libFuzzer, so a genrule runs
Debian's clang++ on the harness and on the sources under test.
"""

# The harness is held to the project's warning policy; the library sources
# keep gcc's (.bazelrc), so a clang-only warning there does not break this.
_SANITIZE = "-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
_CXXFLAGS = "-std=c++20 -g -O1 -fno-omit-frame-pointer -I. -Irpma_core/include " + _SANITIZE

def rpma_fuzzer(name, harness, srcs, corpus, fuzzer_args = [], linkopts = []):
    """Builds the fuzzer `name` and a test running it briefly over `corpus`.

    Args:
      name: the fuzzer binary (bazel-bin/tests/fuzz/<name>).
      harness: the .cc file defining LLVMFuzzerTestOneInput.
      srcs: the sources under test (.cc) and every header they use.
      corpus: the seed corpus directory, relative to this package.
      fuzzer_args: libFuzzer flags of the bounded test run.
      linkopts: flags for the final link after the objects, such as the
        system libraries (-lyaml-cpp) the sources under test call; those
        libraries run uninstrumented.
    """
    native.genrule(
        name = name + "_build",
        testonly = True,
        srcs = [harness, "fuzz_support.h"] + srcs,
        outs = [name],
        cmd = " && ".join([
            "objs=$$(mktemp -d)",
            "clang++ %s -Wall -Wextra -Werror -c $(location %s) -o $$objs/harness.o" % (_CXXFLAGS, harness),
            "for src in $(SRCS); do case $$src in *.cc) [ $$src = $(location %s) ] || " % harness +
            "clang++ %s -c $$src -o $$objs/$$(basename $$src .cc).o || exit 1;; esac; done" % _CXXFLAGS,
            "clang++ %s -pthread $$objs/*.o %s -o $@" % (_SANITIZE, " ".join(linkopts)),
            "rm -rf $$objs",
        ]),
        executable = True,
    )
    native.sh_test(
        name = name + "_test",
        size = "small",
        srcs = ["run_fuzzer.sh"],
        args = ["$(rootpath :%s)" % name, native.package_name() + "/" + corpus] + fuzzer_args,
        data = [":" + name] + native.glob([corpus + "/*"]),
    )
