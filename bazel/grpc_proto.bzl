"""grpc_cc_library: compiles a .proto with the system protoc and grpc_cpp_plugin.

Native proto_library would need a protobuf repository downloaded from the
internet; the Debian packages protobuf-compiler and protobuf-compiler-grpc
produce the same code offline.
"""

def grpc_cc_library(name, src, deps = [], imports = [], visibility = None):
    """Generates <stem>.pb.{h,cc} and <stem>.grpc.pb.{h,cc} from `src` and wraps them.

    Args:
      name: the cc_library to create.
      src: one .proto file in this package; imports resolve from the workspace root.
      deps: other grpc_cc_library targets whose protos `src` imports.
      imports: those .proto files themselves (labels), which protoc reads.
      visibility: of the cc_library.
    """
    stem = src[:-len(".proto")]
    outs = [stem + ext for ext in [".pb.h", ".pb.cc", ".grpc.pb.h", ".grpc.pb.cc"]]
    native.genrule(
        name = name + "_codegen",
        srcs = [src] + imports,
        outs = outs,
        cmd = ("protoc --proto_path=. --cpp_out=$(GENDIR) --grpc_out=$(GENDIR)" +
               " --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin)" +
               " $(location %s)") % src,
    )
    native.cc_library(
        name = name,
        srcs = [stem + ".pb.cc", stem + ".grpc.pb.cc"],
        hdrs = [stem + ".pb.h", stem + ".grpc.pb.h"],
        # Generated code is not ours to fix: it trips -Wunused-parameter.
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["@grpcpp"],
        visibility = visibility,
    )
