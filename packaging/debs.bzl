"""debian_packages: the Debian packages of rpma, from the targets it builds.

What an operator installs is built optimized whatever the command line says:
the programs and the library reach the packaging through a transition to
`-c opt` (a plain `bazel build` is fastbuild, unoptimized). The package
version comes from the flag `--//packaging:version=V` (default in BUILD).
"""

load("//:version.bzl", "VERSION")

# The packages' version unless --//packaging:version says otherwise (an
# upgrade test builds a newer one; the programs inside keep VERSION).
DEFAULT_VERSION = VERSION

VersionInfo = provider(
    doc = "The Debian version the packages are built with.",
    fields = ["value"],
)

def _version_impl(ctx):
    return VersionInfo(value = ctx.build_setting_value)

version_flag = rule(
    implementation = _version_impl,
    build_setting = config.string(flag = True),
)

def _optimized_impl(_ctx):
    return []

optimized_flag = rule(
    implementation = _optimized_impl,
    build_setting = config.bool(flag = True),
)

# The programs are built optimized, and with the version flag at its default:
# the binaries do not depend on it, and a build of another version then
# reuses them instead of rebuilding the whole tree in a new configuration.
# With --//packaging:optimized=false (what .bazelrc sets for `bazel test`)
# they are built as the command line says instead: the tests check the
# packages' contents, and a second, optimized tree of every program would
# cost CI a third of its build.
def _opt_impl(settings, _attr):
    optimized = settings["//packaging:optimized"]
    return {
        "//command_line_option:compilation_mode": "opt" if optimized else settings["//command_line_option:compilation_mode"],
        "//packaging:version": DEFAULT_VERSION,
    }

_opt_transition = transition(
    implementation = _opt_impl,
    inputs = [
        "//command_line_option:compilation_mode",
        "//packaging:optimized",
    ],
    outputs = [
        "//command_line_option:compilation_mode",
        "//packaging:version",
    ],
)

def _one_file(target):
    files = target[DefaultInfo].files.to_list()
    if len(files) != 1:
        fail("%s: expected one file, got %d" % (target.label, len(files)))
    return files[0]

def _files(flag, targets, transitioned = False):
    """(flag, file) pairs for the build_debs.sh command line."""
    pairs = []
    for t in targets:
        pairs.append((flag, _one_file(t[0] if transitioned else t)))
    return pairs

def _debian_packages_impl(ctx):
    version = ctx.attr.version[VersionInfo].value
    arch = ctx.attr.architecture
    a = ctx.attr
    pairs = (
        _files("--rpmad", [a.rpmad], True) +
        _files("--library", [a.library], True) +
        _files("--client-library", [a.client_library], True) +
        _files("--client-pc-in", [a.client_pkg_config]) +
        [("--client-header", f) for t in a.client_headers for f in t[DefaultInfo].files.to_list()] +
        _files("--unit", [a.unit]) +
        _files("--config", [a.config]) +
        _files("--pc-in", [a.pkg_config]) +
        _files("--sysusers", [a.sysusers]) +
        _files("--tmpfiles", [a.tmpfiles]) +
        _files("--copyright", [a.copyright]) +
        _files("--changelog", [a.changelog]) +
        _files("--rpmad-script", a.rpmad_scripts) +
        _files("--rpmad-man", a.rpmad_man) +
        _files("--header", a.headers) +
        _files("--cpp-header", a.cpp_headers) +
        _files("--dev-man-tree", a.dev_man)
    )
    packages = ["rpmad", a.library_package, a.dev_package, a.client_package]
    if a.rpmactl:
        pairs += _files("--rpmactl", [a.rpmactl], True) + _files("--rpmactl-man", a.rpmactl_man)
        if a.rpmactl_completion:
            pairs += _files("--rpmactl-completion", [a.rpmactl_completion])
        packages.append("rpmactl")

    args = ctx.actions.args()
    for flag, f in pairs:
        # A tree (the manual pages) is passed as its directory.
        args.add(flag, f.path if f.is_directory else f)
    args.add("--version", version)
    args.add("--arch", arch)
    args.add("--maintainer", a.maintainer)
    args.add("--library-package", a.library_package)
    args.add("--dev-package", a.dev_package)
    args.add("--client-package", a.client_package)
    outs = []
    for p in packages:
        out = ctx.actions.declare_file("%s_%s_%s.deb" % (p, version, arch))
        args.add("--out", out)
        outs.append(out)

    ctx.actions.run(
        executable = ctx.executable._build_debs,
        arguments = [args],
        inputs = [f for _, f in pairs],
        outputs = outs,
        mnemonic = "DebianPackages",
        progress_message = "Packaging %s %s" % (", ".join(packages), version),
        # dpkg-deb, dpkg-shlibdeps, strip and gzip are the host's.
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

debian_packages = rule(
    implementation = _debian_packages_impl,
    doc = "rpmad, the librpma.so.0 and librpma_client.so.1 libraries, their -dev and (when given) rpmactl as .debs.",
    attrs = {
        "version": attr.label(mandatory = True, providers = [VersionInfo]),
        "architecture": attr.string(default = "amd64"),
        "maintainer": attr.string(mandatory = True),
        "library_package": attr.string(mandatory = True),
        "dev_package": attr.string(mandatory = True),
        "rpmad": attr.label(mandatory = True, cfg = _opt_transition),
        "library": attr.label(mandatory = True, cfg = _opt_transition),
        # The client library (librpma_client.so.1), its package, and what
        # its -dev part installs: headers under include/ as they are laid
        # out in client/include, and rpma-client.pc.
        "client_library": attr.label(mandatory = True, cfg = _opt_transition),
        "client_package": attr.string(mandatory = True),
        "client_headers": attr.label_list(allow_files = True),
        "client_pkg_config": attr.label(mandatory = True, allow_single_file = True),
        "rpmactl": attr.label(cfg = _opt_transition),
        "rpmactl_man": attr.label_list(allow_files = True),
        "rpmactl_completion": attr.label(allow_single_file = True),
        "unit": attr.label(mandatory = True, allow_single_file = True),
        "config": attr.label(mandatory = True, allow_single_file = True),
        "pkg_config": attr.label(mandatory = True, allow_single_file = True),
        "sysusers": attr.label(mandatory = True, allow_single_file = True),
        "tmpfiles": attr.label(mandatory = True, allow_single_file = True),
        "copyright": attr.label(mandatory = True, allow_single_file = True),
        "changelog": attr.label(mandatory = True, allow_single_file = True),
        "rpmad_scripts": attr.label_list(allow_files = True),
        "rpmad_man": attr.label_list(allow_files = True),
        # librpma's manual pages: a tree share/man/man{3,7} (//rpma_core/man:pages).
        "dev_man": attr.label_list(allow_files = True),
        "headers": attr.label_list(allow_files = True),
        "cpp_headers": attr.label_list(allow_files = True),
        "_build_debs": attr.label(
            default = "//packaging:build_debs",
            executable = True,
            cfg = "exec",
        ),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)
