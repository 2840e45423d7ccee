"""Rules for librpma's manual pages.

man_pages: runs gen_man_pages.py into a directory laid out as an install
tree (share/man/man3/*.3, share/man/man7/librpma.7), so that packaging
copies it as is and `man -l` reads a page straight from bazel-bin.

sources: the source files (srcs, hdrs) of cc_library targets, for tests that
read the implementation; an aspect collects them because a rule cannot see
another package's attributes otherwise.
"""

def _man_pages_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    ctx.actions.run_shell(
        inputs = [ctx.file.librpma_h, ctx.file.ext_h, ctx.file.version_script, ctx.file.overview,
                  ctx.file.example] +
                 ctx.files.generator + ctx.files.libs,
        outputs = [out],
        # python3 comes from the host (tools/install-deps.sh); PATH finds it.
        command = 'python3 "$1" --librpma-h "$2" --ext-h "$3" --version-script "$4" ' +
                  '--overview "$5" --example "$6" --out "$7"',
        arguments = [
            ctx.file.generator.path,
            ctx.file.librpma_h.path,
            ctx.file.ext_h.path,
            ctx.file.version_script.path,
            ctx.file.overview.path,
            ctx.file.example.path,
            out.path,
        ],
        use_default_shell_env = True,
        mnemonic = "ManPages",
        progress_message = "Generating librpma's manual pages into %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

man_pages = rule(
    implementation = _man_pages_impl,
    attrs = {
        "generator": attr.label(allow_single_file = [".py"], mandatory = True),
        "libs": attr.label_list(allow_files = [".py"]),
        "librpma_h": attr.label(allow_single_file = [".h"], mandatory = True),
        "ext_h": attr.label(allow_single_file = [".h"], mandatory = True),
        # Which version node each function is exported in, for the
        # extensions' NOTES.
        "version_script": attr.label(allow_single_file = [".map"], mandatory = True),
        "overview": attr.label(allow_single_file = True, mandatory = True),
        "example": attr.label(allow_single_file = [".c"], mandatory = True),
    },
)

_SourcesInfo = provider(fields = ["files"])

def _sources_aspect_impl(target, ctx):
    files = []
    for name in ("srcs", "hdrs"):
        for dep in getattr(ctx.rule.attr, name, []):
            files.extend([f for f in dep.files.to_list() if f.is_source])
    return [_SourcesInfo(files = depset(files))]

_sources_aspect = aspect(implementation = _sources_aspect_impl)

def _sources_impl(ctx):
    files = depset(transitive = [dep[_SourcesInfo].files for dep in ctx.attr.deps])
    return [DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = files))]

sources = rule(
    implementation = _sources_impl,
    attrs = {"deps": attr.label_list(aspects = [_sources_aspect])},
)
