// ConnectChannel: a gRPC channel whose first connection is made at once,
// and made again on a fresh channel when the attempt fails fast.
//
// gRPC 1.51 (Debian 12's) can fail a connection attempt that is only in
// progress: it reads connect(2)'s errno after other calls may have changed
// it (grpc/grpc#35064, fixed upstream at the end of 2023), and reports a stale errno ("No such
// file or directory"). A channel whose attempt failed then fails every call
// at once until its reconnect backoff ends, and pick_first stays in
// TRANSIENT_FAILURE meanwhile, so a second attempt on the same channel cannot
// be watched for. A new channel can: hence up to kConnectAttempts channels.
//
// A daemon that refuses costs kConnectAttempts refusals (microseconds on a
// LAN), and the channel returned fails its first call with the refusal, as
// before. A connection still being made when `window` ends is left to gRPC
// (a host that drops packets costs `window`, once).
#ifndef UTIL_CONNECT_CHANNEL_H
#define UTIL_CONNECT_CHANNEL_H

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

namespace rpma::util {

inline constexpr int kConnectAttempts = 3;
// The window the product's clients give a first connection (or their call
// timeout, if shorter); one still being made then is left to the first
// call.
inline constexpr std::chrono::milliseconds kConnectWindow{1000};

// `arguments` gets GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL: each channel has a
// subchannel, and a reconnect backoff, of its own.
std::shared_ptr<grpc::Channel> ConnectChannel(
    const std::string &address, const std::shared_ptr<grpc::ChannelCredentials> &credentials,
    grpc::ChannelArguments arguments, std::chrono::milliseconds window);

}  // namespace rpma::util

#endif  // UTIL_CONNECT_CHANNEL_H
