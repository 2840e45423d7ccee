// The grpc_cc_library macro (bazel/grpc_proto.bzl) compiles a .proto with
// the system protoc and grpc_cpp_plugin into code that links and works.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "bazel/tests/echo.grpc.pb.h"
#include "bazel/tests/echo.pb.h"

namespace {

class EchoService final : public rpma::bazel_test::Echo::Service {
    grpc::Status Say(grpc::ServerContext *, const rpma::bazel_test::EchoRequest *request,
                     rpma::bazel_test::EchoResponse *response) override {
        response->set_text("echo: " + request->text());
        response->set_payload_size(request->payload().size());
        return grpc::Status::OK;
    }
};

TEST(GrpcCcLibrary, MessagesRoundTripThroughTheWireFormat) {
    rpma::bazel_test::EchoRequest request;
    request.set_text("hello");
    request.set_payload(std::string(300, '\x7f'));
    std::string wire;
    ASSERT_TRUE(request.SerializeToString(&wire));
    rpma::bazel_test::EchoRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    EXPECT_EQ(parsed.text(), "hello");
    EXPECT_EQ(parsed.payload().size(), 300u);
}

TEST(GrpcCcLibrary, GeneratedStubCallsGeneratedServiceOverLoopback) {
    EchoService service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    ASSERT_NE(server, nullptr);
    ASSERT_GT(port, 0);

    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    auto stub = rpma::bazel_test::Echo::NewStub(channel);
    grpc::ClientContext context;
    // Past a failed first connection attempt (gRPC 1.51 can fail one that
    // is only in progress: grpc/grpc#35064), to the reconnect.
    context.set_wait_for_ready(true);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    rpma::bazel_test::EchoRequest request;
    request.set_text("ping");
    request.set_payload("12345");
    rpma::bazel_test::EchoResponse response;
    grpc::Status status = stub->Say(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.text(), "echo: ping");
    EXPECT_EQ(response.payload_size(), 5u);
    server->Shutdown();
}

}  // namespace
