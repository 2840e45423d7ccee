#include "tests/integration/rpmad_harness.h"

#include <poll.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "util/connect_channel.h"
#include "util/host_port.h"

namespace rpma::testing {
namespace {

constexpr size_t kDataSize = 1 << 20;
constexpr size_t kSendOffset = kDataSize;
// Message slots: kMaxFlushesInFlight requests, then as many responses.
constexpr size_t kRecvOffset =
    kSendOffset + rpmad::wire::kMaxFlushesInFlight * rpmad::wire::kFlushRequestSize;
constexpr size_t kBufferSize =
    kRecvOffset + rpmad::wire::kMaxFlushesInFlight * rpmad::wire::kFlushResponseSize;
constexpr auto kStartTimeout = std::chrono::seconds(20);

bool WaitReadable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
}

std::span<const std::byte> Bytes(const std::string &s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace

std::vector<std::byte> Pattern(size_t size, uint8_t seed) {
    std::vector<std::byte> bytes(size);
    for (size_t i = 0; i < size; ++i)
        bytes[i] = static_cast<std::byte>(seed + i);
    return bytes;
}

std::unique_ptr<Rpmad> Rpmad::Start(const RpmadOptions &options, std::string *error) {
    const int control_port = options.control_port != 0 ? options.control_port : FreePort();
    const int data_port = options.data_port != 0 ? options.data_port : FreePort();
    std::vector<std::string> argv = {
        Runfile("daemon/rpmad"),
        "--pool-dir",
        options.pool_dir,
        "--listen",
        "127.0.0.1:" + std::to_string(control_port),
        "--data-listen",
        util::JoinHostPort(options.data_host, std::to_string(data_port)),
        "--provider",
        "tcp"};
    std::string config_path;
    if (!options.config_yaml.empty()) {
        config_path = TempPath("rpmad.yaml");
        std::ofstream(config_path) << options.config_yaml;
        argv.insert(argv.begin() + 1, {"--config", config_path});
    }
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    std::unique_ptr<Rpmad> rpmad(new Rpmad());
    rpmad->config_path_ = config_path;
    rpmad->process_ = Process::Start(argv, options.env, error);
    if (rpmad->process_ == nullptr)
        return nullptr;
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (line.rfind("rpmad: ready:", 0) != 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || !rpmad->process_->ReadLine(&line, left)) {
            rpmad->process_->Wait(std::chrono::milliseconds(2000));
            *error = "rpmad did not report ready: " + rpmad->process_->Describe();
            return nullptr;
        }
    }
    // "rpmad: ready: control A data B provider P[ metrics M]"
    constexpr std::string_view kMetrics = " metrics ";
    if (const size_t at = line.find(kMetrics); at != std::string::npos)
        rpmad->metrics_ = line.substr(at + kMetrics.size());
    rpmad->control_ = "127.0.0.1:" + std::to_string(control_port);
    rpmad->control_port_ = control_port;
    rpmad->data_port_ = data_port;
    rpmad->channel_ = rpmad->ChannelWith(grpc::InsecureChannelCredentials());
    return rpmad;
}

std::string StartEach(std::span<std::unique_ptr<Rpmad>> daemons, const std::string &pool_prefix) {
    for (size_t i = 0; i < daemons.size(); ++i) {
        RpmadOptions options;
        options.pool_dir = TempPath(pool_prefix + std::to_string(i));
        std::string error;
        daemons[i] = Rpmad::Start(options, &error);
        if (daemons[i] == nullptr)
            return error;
    }
    return "";
}

std::unique_ptr<v1::RegionService::Stub> Rpmad::Regions() const {
    return v1::RegionService::NewStub(channel_);
}
std::unique_ptr<v1::SessionService::Stub> Rpmad::Sessions() const {
    return v1::SessionService::NewStub(channel_);
}
std::unique_ptr<v1::DaemonService::Stub> Rpmad::Daemon() const {
    return v1::DaemonService::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Rpmad::Context(const std::string &admin_token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!admin_token.empty())
        context->AddMetadata("authorization", "Bearer " + admin_token);
    return context;
}

grpc::Status Rpmad::CreateRegion(const std::string &name, uint64_t size, v1::Region *out,
                                 const std::string &admin_token) const {
    v1::CreateRegionRequest request;
    request.set_name(name);
    request.set_size(size);
    v1::Region region;
    return Regions()->CreateRegion(Context(admin_token).get(), request, out ? out : &region);
}

grpc::Status Rpmad::OpenSession(const std::string &region, v1::OpenSessionResponse *out) const {
    v1::OpenSessionRequest request;
    request.set_region(region);
    return Sessions()->OpenSession(Context().get(), request, out);
}

std::unique_ptr<SessionClient> SessionClient::Connect(
    const v1::OpenSessionResponse &session, rpma_conn_event *event,
    std::optional<std::vector<std::byte>> private_data) {
    *event = RPMA_CONN_UNDEFINED;
    std::unique_ptr<SessionClient> client(new SessionClient());
    auto peer = Peer::ForAddress(session.data_address(), RPMA_UTIL_IBV_CONTEXT_REMOTE);
    if (!peer.ok())
        return nullptr;
    client->peer_.emplace(std::move(*peer));
    client->buffer_.resize(kBufferSize);
    auto mr = MemoryRegion::Register(
        *client->peer_, client->buffer_,
        RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV);
    if (!mr.ok())
        return nullptr;
    client->buffer_mr_.emplace(std::move(*mr));
    // Queues for kMaxFlushesInFlight requests and their answers at once.
    auto cfg = ConnCfg::New();
    if (!cfg.ok() || !cfg->SetSqSize(2 * rpmad::wire::kMaxFlushesInFlight).ok() ||
        !cfg->SetRqSize(rpmad::wire::kMaxFlushesInFlight).ok() ||
        !cfg->SetCqSize(4 * rpmad::wire::kMaxFlushesInFlight).ok())
        return nullptr;
    auto request = ConnReq::New(*client->peer_, session.data_address(), session.data_port(), &*cfg);
    if (!request.ok())
        return nullptr;
    // A GPSPM answer can come back only into a posted receive.
    rpma_conn_req_recv(request->get(), client->buffer_mr_->get(), kRecvOffset,
                       rpmad::wire::kFlushResponseSize, nullptr);
    std::vector<std::byte> pdata;
    if (private_data) {
        pdata = *private_data;
    } else {
        const auto token = rpmad::wire::DecodeToken(Bytes(session.token()));
        if (!token)
            return nullptr;
        const auto encoded = rpmad::wire::EncodeConnectRequest(*token);
        pdata = std::vector<std::byte>(
            reinterpret_cast<const std::byte *>(encoded.data()),
            reinterpret_cast<const std::byte *>(encoded.data()) + encoded.size());
    }
    auto conn = std::move(*request).Connect(pdata);
    if (!conn.ok())
        return nullptr;
    client->conn_.emplace(std::move(*conn));
    *event = client->WaitEvent(10000);
    if (*event != RPMA_CONN_ESTABLISHED)
        return nullptr;
    auto accept_data = client->conn_->PrivateData();
    if (!accept_data.ok())
        return nullptr;
    auto accept = rpmad::wire::DecodeConnectAccept(*accept_data);
    if (!accept)
        return nullptr;
    client->accept_ = *accept;
    auto region = RemoteMemory::FromDescriptor(accept->region_descriptor);
    auto peer_cfg = PeerCfg::FromDescriptor(accept->peer_cfg_descriptor);
    if (!region.ok() || !peer_cfg.ok() || !client->conn_->ApplyRemotePeerCfg(*peer_cfg).ok())
        return nullptr;
    client->region_.emplace(std::move(*region));
    return client;
}

SessionClient::~SessionClient() {
    if (conn_)
        Disconnect();
}

rpma_conn_event SessionClient::WaitEvent(int timeout_ms) {
    auto fd = conn_->EventFd();
    if (!fd.ok() || !WaitReadable(*fd, timeout_ms))
        return RPMA_CONN_UNDEFINED;
    auto event = conn_->NextEvent();
    if (!event.ok())
        return RPMA_CONN_UNDEFINED;
    ended_ |= *event == RPMA_CONN_CLOSED || *event == RPMA_CONN_LOST;
    return *event;
}

bool SessionClient::Disconnect() {
    if (!conn_)
        return true;
    bool closed = conn_->Disconnect().ok();
    if (closed && !ended_) {
        const rpma_conn_event event = WaitEvent(5000);
        closed = event == RPMA_CONN_CLOSED || event == RPMA_CONN_LOST;
    }
    conn_.reset();
    return closed;
}

ibv_wc_status SessionClient::Complete() {
    CompletionQueue cq = conn_->Cq();
    for (int i = 0; i < 2; ++i) {
        if (!cq.Wait().ok())
            return IBV_WC_GENERAL_ERR;
        auto wc = cq.GetCompletion();
        if (wc.ok())
            return wc->status;
    }
    return IBV_WC_GENERAL_ERR;
}

ibv_wc_status SessionClient::Write(uint64_t offset, const std::vector<std::byte> &bytes,
                                   RemoteMemory *target) {
    std::memcpy(buffer_.data(), bytes.data(), bytes.size());
    auto posted = conn_->Write(target ? *target : *region_, offset, *buffer_mr_, 0, bytes.size(),
                               RPMA_F_COMPLETION_ALWAYS, nullptr);
    return posted.ok() ? Complete() : IBV_WC_GENERAL_ERR;
}

ibv_wc_status SessionClient::Read(uint64_t offset, size_t length, std::vector<std::byte> *out,
                                  RemoteMemory *target) {
    auto posted = conn_->Read(*buffer_mr_, 0, target ? *target : *region_, offset, length,
                              RPMA_F_COMPLETION_ALWAYS, nullptr);
    const ibv_wc_status status = posted.ok() ? Complete() : IBV_WC_GENERAL_ERR;
    if (status == IBV_WC_SUCCESS)
        out->assign(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(length));
    return status;
}

ibv_wc_status SessionClient::Flush(uint64_t offset, size_t length, int type, RemoteMemory *target) {
    auto posted =
        conn_->Flush(target ? *target : *region_, offset, length,
                     static_cast<rpma_flush_type>(type), RPMA_F_COMPLETION_ALWAYS, nullptr);
    return posted.ok() ? Complete() : IBV_WC_GENERAL_ERR;
}

std::optional<std::vector<std::byte>> SessionClient::SendRaw(const std::vector<std::byte> &bytes) {
    std::memcpy(buffer_.data() + kSendOffset, bytes.data(), bytes.size());
    if (!conn_->Send(*buffer_mr_, kSendOffset, bytes.size(), RPMA_F_COMPLETION_ALWAYS, nullptr)
             .ok())
        return std::nullopt;
    // Two completions: the send's and the answer's receive, in either order.
    CompletionQueue cq = conn_->Cq();
    bool answered = false;
    for (int seen = 0; seen < 2;) {
        if (!cq.Wait().ok())
            return std::nullopt;
        ibv_wc wc[2];
        auto n = cq.Poll(wc);
        if (!n.ok())
            return std::nullopt;
        for (int i = 0; i < *n; ++i, ++seen) {
            if (wc[i].status != IBV_WC_SUCCESS)
                return std::nullopt;
            answered |= wc[i].opcode == IBV_WC_RECV;
        }
    }
    std::vector<std::byte> answer(buffer_.begin() + kRecvOffset,
                                  buffer_.begin() + kRecvOffset + rpmad::wire::kFlushResponseSize);
    if (!answered ||
        !conn_->Recv(*buffer_mr_, kRecvOffset, rpmad::wire::kFlushResponseSize, nullptr).ok())
        return std::nullopt;
    return answer;
}

std::optional<rpmad::wire::FlushResponse> SessionClient::GpspmFlush(uint64_t offset,
                                                                    uint64_t length) {
    std::vector<std::byte> request(rpmad::wire::kFlushRequestSize);
    rpmad::wire::EncodeFlushRequest(
        {next_request_id_++, offset, length},
        std::span<std::byte, rpmad::wire::kFlushRequestSize>(request.data(), request.size()));
    auto answer = SendRaw(request);
    if (!answer)
        return std::nullopt;
    return rpmad::wire::DecodeFlushResponse(*answer);
}

}  // namespace rpma::testing

namespace rpma::testing {

std::shared_ptr<grpc::Channel> Rpmad::ChannelWith(
    const std::shared_ptr<grpc::ChannelCredentials> &credentials) const {
    // A subchannel of its own (ConnectChannel): gRPC otherwise shares one per
    // address across the process, and a daemon restarted on the address of a
    // killed one would inherit its reconnect backoff (calls failing fast
    // meanwhile). Connected now, past a spurious first failure.
    return rpma::util::ConnectChannel(control_, credentials, grpc::ChannelArguments(),
                                      std::chrono::seconds(10));
}

bool SessionClient::PostRead(uint64_t offset, size_t length) {
    if (length > kDataSize)
        return false;
    return conn_->Read(*buffer_mr_, 0, *region_, offset, length, RPMA_F_COMPLETION_ALWAYS, nullptr)
        .ok();
}

int OpenFdCount(pid_t pid) {
    std::error_code error;
    std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", error);
    if (error)
        return -1;
    int count = 0;
    for (; it != std::filesystem::directory_iterator(); it.increment(error)) {
        if (error)
            return -1;
        ++count;
    }
    return count;
}

int SettledFdCount(pid_t pid) {
    constexpr int kStillReads = 5;  // 100 ms without a change
    int last = OpenFdCount(pid);
    int still = 0;
    for (int i = 0; i < 500 && still < kStillReads; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const int now = OpenFdCount(pid);
        still = now == last ? still + 1 : 0;
        last = now;
    }
    return last;
}

int AwaitFdCount(pid_t pid, int expected) {
    int now = OpenFdCount(pid);
    for (int i = 0; i < 500 && now != expected; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        now = OpenFdCount(pid);
    }
    return now;
}

long ResidentKiB(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return -1;
}

std::optional<std::vector<rpmad::wire::FlushResponse>> SessionClient::GpspmFlushBatch(
    const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
    namespace wire = rpmad::wire;
    const size_t n = ranges.size();
    if (n == 0 || n > wire::kMaxFlushesInFlight)
        return std::nullopt;
    // One receive is always posted (slot 0); the others join it now.
    for (size_t slot = 1; slot < n; ++slot)
        if (!conn_
                 ->Recv(*buffer_mr_, kRecvOffset + slot * wire::kFlushResponseSize,
                        wire::kFlushResponseSize, nullptr)
                 .ok())
            return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
        const size_t offset = kSendOffset + i * wire::kFlushRequestSize;
        wire::EncodeFlushRequest({next_request_id_++, ranges[i].first, ranges[i].second},
                                 std::span<std::byte, wire::kFlushRequestSize>(
                                     buffer_.data() + offset, wire::kFlushRequestSize));
        if (!conn_
                 ->Send(*buffer_mr_, offset, wire::kFlushRequestSize, RPMA_F_COMPLETION_ALWAYS,
                        nullptr)
                 .ok())
            return std::nullopt;
    }
    // Receives complete in the order they were posted: slot by slot.
    CompletionQueue cq = conn_->Cq();
    size_t received = 0;
    for (size_t seen = 0; seen < 2 * n;) {
        if (!cq.Wait().ok())
            return std::nullopt;
        ibv_wc wc[2 * wire::kMaxFlushesInFlight];
        auto count = cq.Poll(std::span(wc, 2 * n - seen));
        if (!count.ok())
            return std::nullopt;
        for (int i = 0; i < *count; ++i, ++seen) {
            if (wc[i].status != IBV_WC_SUCCESS)
                return std::nullopt;
            received += wc[i].opcode == IBV_WC_RECV;
        }
    }
    std::vector<wire::FlushResponse> responses;
    for (size_t slot = 0; slot < received; ++slot) {
        auto response = wire::DecodeFlushResponse(
            std::span(buffer_.data() + kRecvOffset + slot * wire::kFlushResponseSize,
                      wire::kFlushResponseSize));
        if (!response)
            return std::nullopt;
        responses.push_back(*response);
    }
    if (received != n ||
        !conn_->Recv(*buffer_mr_, kRecvOffset, wire::kFlushResponseSize, nullptr).ok())
        return std::nullopt;
    return responses;
}

}  // namespace rpma::testing
