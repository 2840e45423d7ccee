// rpmad under test: a real rpmad process on loopback ports of its own, its
// control plane through gRPC stubs, and SessionClient, a data-plane client
// of one session built on rpma_core (what the client library will do, in
// its simplest form, so that the tests can also misbehave on purpose).
#ifndef TESTS_INTEGRATION_RPMAD_HARNESS_H
#define TESTS_INTEGRATION_RPMAD_HARNESS_H

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proto/rpmad/v1/data_plane_wire.h"
#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma/rpma.hpp"
#include "tests/integration/process.h"

namespace rpma::testing {

namespace v1 = ::rpmad::v1;

struct RpmadOptions {
    std::string pool_dir;           // required
    std::string config_yaml;        // written to a file and passed as --config when not empty
    std::vector<std::string> args;  // more arguments
    std::vector<std::string> env;
    // 0: a free port. Give the ports of an earlier Rpmad (control_port(),
    // data_port()) to restart a daemon where its clients knew it.
    int control_port = 0;
    int data_port = 0;
    // The data plane's listen host: "::1" to serve it on IPv6 loopback only.
    std::string data_host = "127.0.0.1";
};

class Rpmad {
  public:
    // Starts rpmad and waits for its ready line; nullptr with *error (its
    // output included) when it does not come up.
    static std::unique_ptr<Rpmad> Start(const RpmadOptions &options, std::string *error);

    Process &process() { return *process_; }
    const std::string &control() const { return control_; }
    int control_port() const { return control_port_; }
    int data_port() const { return data_port_; }
    // Where its metrics listen (metrics.listen, the port as bound), as its
    // ready line says; "" without metrics.
    const std::string &metrics() const { return metrics_; }
    std::shared_ptr<grpc::Channel> channel() const { return channel_; }
    // The --config file written from RpmadOptions::config_yaml ("" if none).
    const std::string &config_path() const { return config_path_; }

    std::unique_ptr<v1::RegionService::Stub> Regions() const;
    std::unique_ptr<v1::SessionService::Stub> Sessions() const;
    std::unique_ptr<v1::DaemonService::Stub> Daemon() const;

    // Calls with a deadline of 10 s (and the admin token, when given).
    static std::unique_ptr<grpc::ClientContext> Context(const std::string &admin_token = "");

    // Convenience: create a region / open a session, asserting nothing.
    grpc::Status CreateRegion(const std::string &name, uint64_t size, v1::Region *out = nullptr,
                              const std::string &admin_token = "") const;
    grpc::Status OpenSession(const std::string &region, v1::OpenSessionResponse *out) const;

    // A new channel to the control plane with other credentials (TLS).
    std::shared_ptr<grpc::Channel> ChannelWith(
        const std::shared_ptr<grpc::ChannelCredentials> &credentials) const;

  private:
    std::unique_ptr<Process> process_;
    std::string control_;
    int control_port_ = 0;
    int data_port_ = 0;
    std::string metrics_;
    std::string config_path_;
    std::shared_ptr<grpc::Channel> channel_;
};

// Starts one rpmad with default options per element of `daemons`, each with
// a pool of its own (TempPath(pool_prefix + index)); "" when all came up,
// else why one did not.
std::string StartEach(std::span<std::unique_ptr<Rpmad>> daemons, const std::string &pool_prefix);

// A data-plane connection of one session.
class SessionClient {
  public:
    // Connects with the session's token (or with `private_data` instead,
    // when given) and waits for the outcome: the client, or the connection
    // event that ended the attempt (RPMA_CONN_REJECTED, ...) in *event.
    static std::unique_ptr<SessionClient> Connect(
        const v1::OpenSessionResponse &session, rpma_conn_event *event,
        std::optional<std::vector<std::byte>> private_data = std::nullopt);
    ~SessionClient();

    // The region as the daemon described it in the accept's private data.
    const rpmad::wire::ConnectAccept &accept() const { return accept_; }
    RemoteMemory &region() { return *region_; }

    // One-sided operations on `target` (the session's region by default);
    // each waits for its completion and returns its status.
    ibv_wc_status Write(uint64_t offset, const std::vector<std::byte> &bytes,
                        RemoteMemory *target = nullptr);
    ibv_wc_status Read(uint64_t offset, size_t length, std::vector<std::byte> *out,
                       RemoteMemory *target = nullptr);
    ibv_wc_status Flush(uint64_t offset, size_t length, int type = RPMA_FLUSH_TYPE_PERSISTENT,
                        RemoteMemory *target = nullptr);
    // GPSPM: a flush request message and its response.
    std::optional<rpmad::wire::FlushResponse> GpspmFlush(uint64_t offset, uint64_t length);
    // GPSPM: flush requests for (offset, length) ranges, all in flight at
    // once (at most kMaxFlushesInFlight), and their responses in order.
    std::optional<std::vector<rpmad::wire::FlushResponse>> GpspmFlushBatch(
        const std::vector<std::pair<uint64_t, uint64_t>> &ranges);
    // Sends raw bytes as a message and waits for the answer, if any.
    std::optional<std::vector<std::byte>> SendRaw(const std::vector<std::byte> &bytes);

    // Disconnects and waits for CLOSED.
    bool Disconnect();
    // The next connection event within `timeout_ms` (RPMA_CONN_UNDEFINED if none).
    rpma_conn_event WaitEvent(int timeout_ms);

    // Posts a read of `length` bytes (at most 1 MiB) at `offset` and does
    // not wait for it: a client that asks and then stops collecting.
    bool PostRead(uint64_t offset, size_t length);

  private:
    SessionClient() = default;
    ibv_wc_status Complete();

    std::optional<Peer> peer_;
    std::vector<std::byte> buffer_;
    std::optional<MemoryRegion> buffer_mr_;
    std::optional<Connection> conn_;
    std::optional<RemoteMemory> region_;
    rpmad::wire::ConnectAccept accept_;
    uint64_t next_request_id_ = 1;
    bool ended_ = false;  // CLOSED or LOST seen
};

// bytes[i] = seed + i, as std::byte.
std::vector<std::byte> Pattern(size_t size, uint8_t seed);

// What a process holds, from /proc: its open file descriptors (entries of
// /proc/PID/fd) and its resident set (VmRSS, KiB); -1 when unreadable.
int OpenFdCount(pid_t pid);
long ResidentKiB(pid_t pid);

// The open file descriptors of a process at rest: the count once it held
// still for a while (a closed connection's socket may outlive its count in
// the daemon's statistics by a moment), or the last count after 10 s.
int SettledFdCount(pid_t pid);
// Waits (up to 10 s) for `pid` to hold exactly `expected` descriptors;
// the last count seen.
int AwaitFdCount(pid_t pid, int expected);

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_RPMAD_HARNESS_H
