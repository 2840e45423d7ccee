#include "util/connect_channel.h"

namespace rpma::util {
namespace {

// Whether the channel's first connection attempt failed before `until`;
// false once it is connected, or when it is still being made at `until`.
bool FirstAttemptFailed(grpc::Channel &channel, std::chrono::system_clock::time_point until) {
    grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
    while (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
        if (!channel.WaitForStateChange(state, until))
            return false;
        state = channel.GetState(/*try_to_connect=*/true);
    }
    return state == GRPC_CHANNEL_TRANSIENT_FAILURE;
}

}  // namespace

std::shared_ptr<grpc::Channel> ConnectChannel(
    const std::string &address, const std::shared_ptr<grpc::ChannelCredentials> &credentials,
    grpc::ChannelArguments arguments, std::chrono::milliseconds window) {
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    const auto until = std::chrono::system_clock::now() + window;
    std::shared_ptr<grpc::Channel> channel;
    for (int attempt = 1; attempt <= kConnectAttempts; ++attempt) {
        channel = grpc::CreateCustomChannel(address, credentials, arguments);
        if (!FirstAttemptFailed(*channel, until))
            break;
    }
    return channel;
}

}  // namespace rpma::util
