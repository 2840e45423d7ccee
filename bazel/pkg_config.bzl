"""Exposes an installed (Debian) library as @<name>//:<name> through pkg-config.

Bazel 4.2.3 cannot download anything here, so every third-party dependency is
a system package. `defines` propagate to dependents (spdlog needs
SPDLOG_COMPILED_LIB and SPDLOG_FMT_EXTERNAL in every user); other compiler
flags stay on the library.
"""

def _pkg_config_query(rctx, pkg_config, flag):
    result = rctx.execute([pkg_config, flag] + rctx.attr.modules)
    if result.return_code != 0:
        fail("pkg-config %s %s failed: %s\nRun tools/install-deps.sh first." %
             (flag, " ".join(rctx.attr.modules), result.stderr))
    return [f for f in result.stdout.strip().split(" ") if f]

def _pkg_config_impl(rctx):
    pkg_config = rctx.which("pkg-config")
    if pkg_config == None:
        fail("pkg-config not found: run tools/install-deps.sh")
    cflags = _pkg_config_query(rctx, pkg_config, "--cflags")
    rctx.file("BUILD.bazel", """cc_library(
    name = "{name}",
    defines = {defines},
    copts = {copts},
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
""".format(
        name = rctx.name,
        defines = [f[2:] for f in cflags if f.startswith("-D")],
        copts = [f for f in cflags if not f.startswith("-D")],
        linkopts = _pkg_config_query(rctx, pkg_config, "--libs"),
    ))

pkg_config = repository_rule(
    implementation = _pkg_config_impl,
    attrs = {"modules": attr.string_list(mandatory = True)},
    local = True,
    environ = ["PKG_CONFIG_PATH"],
)
