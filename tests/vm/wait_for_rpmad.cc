#include "tests/vm/wait_for_rpmad.h"

#include <chrono>

#include "proto/rpmad/v1/rpmad.grpc.pb.h"

namespace rpma::vm {

grpc::Status WaitForRpmad(const std::string &control, int timeout_s, rpmad::v1::Stats *stats) {
    grpc::ChannelArguments arguments;
    // A channel of its own: a VM rebooted on the same forwarded port is
    // reached at once, not after a shared subchannel's backoff.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 250);
    auto channel =
        grpc::CreateCustomChannel(control, grpc::InsecureChannelCredentials(), arguments);
    auto stub = rpmad::v1::DaemonService::NewStub(channel);
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
    return stub->GetStats(&context, rpmad::v1::GetStatsRequest(), stats);
}

}  // namespace rpma::vm
