// Helpers for the tcp provider's tests: two CmIds connected over 127.0.0.1
// through the provider interface, registered buffers, and bounded waits on
// the provider's fds (never sleeps).
#ifndef TESTS_UNIT_PROVIDER_TCP_TCP_TEST_SUPPORT_H
#define TESTS_UNIT_PROVIDER_TCP_TCP_TEST_SUPPORT_H

#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"

namespace rpma::provider::tcp::testing {

// Generous: only a broken provider ever waits this long.
inline constexpr int kTimeoutMs = 5000;

inline bool WaitReadable(int fd, int timeout_ms = kTimeoutMs) {
    pollfd pfd{fd, POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN);
}

// Readable, or reset: a reset may be reported as POLLERR before the
// socket's state says POLLIN (tcp_reset sets the error first), so a
// wait for the close takes any event and lets recv() tell which.
inline bool WaitReadableOrFailed(int fd, int timeout_ms = kTimeoutMs) {
    pollfd pfd{fd, POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) == 1 && pfd.revents != 0;
}

inline std::optional<CmEvent> WaitEvent(provider::CmId &id, int timeout_ms = kTimeoutMs) {
    if (!WaitReadable(id.EventFd(), timeout_ms))
        return std::nullopt;
    CmEvent event;
    if (id.NextEvent(&event) != 0)
        return std::nullopt;
    return event;
}

inline std::optional<CmEventType> WaitEventType(provider::CmId &id, int timeout_ms = kTimeoutMs) {
    auto event = WaitEvent(id, timeout_ms);
    if (!event)
        return std::nullopt;
    return event->type;
}

// Sets a test binary's liveness bound (RPMA_TCP_TIMEOUT_MS) before any
// connection reads it, unless the environment sets one already (with
// RPMA_TCP_TIMEOUT_MS=0, no liveness, a test shows what it catches).
// Register it once per binary: ::testing::AddGlobalTestEnvironment(new
// RequestTimeoutEnvironment(ms)).
class RequestTimeoutEnvironment : public ::testing::Environment {
  public:
    explicit RequestTimeoutEnvironment(int milliseconds) : milliseconds_(milliseconds) {}
    void SetUp() override {
        setenv(kRequestTimeoutVariable, std::to_string(milliseconds_).c_str(), /*overwrite=*/0);
    }

  private:
    const int milliseconds_;
};

// Page-aligned anonymous memory, registered in `pd`.
class Buffer {
  public:
    Buffer(provider::ProtectionDomain &pd, size_t size, int access) : size_(size) {
        void *mapped =
            mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(mapped, MAP_FAILED);
        data_ = static_cast<uint8_t *>(mapped);
        memset(data_, 0, size);
        EXPECT_EQ(pd.RegisterMemory(data_, size, access, &mr_), 0);
    }
    ~Buffer() {
        mr_.reset();
        munmap(data_, size_);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    uint8_t *data() { return data_; }
    size_t size() const { return size_; }
    uint64_t addr(size_t offset = 0) const { return reinterpret_cast<uintptr_t>(data_) + offset; }
    uint32_t lkey() const { return mr_->Lkey(); }
    uint32_t rkey() const { return mr_->Rkey(); }
    provider::MemoryRegion &mr() { return *mr_; }
    void Deregister() { mr_.reset(); }
    ibv_sge Sge(size_t offset, uint32_t length) const {
        return ibv_sge{addr(offset), length, mr_ ? mr_->Lkey() : 0};
    }

  private:
    uint8_t *data_ = nullptr;
    size_t size_;
    std::unique_ptr<provider::MemoryRegion> mr_;
};

constexpr int kRemoteAll =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// A CQ with its own completion channel, so tests wait on an fd.
struct CompletionSink {
    std::unique_ptr<provider::CompletionChannel> channel;
    std::unique_ptr<provider::CompletionQueue> cq;

    void Create(provider::Device &device, int capacity) {
        // The CQ before the channel it uses (as with verbs, the provider
        // refuses to destroy a channel a CQ still uses).
        cq.reset();
        ASSERT_EQ(device.CreateCompletionChannel(&channel), 0);
        ASSERT_EQ(device.CreateCq(capacity, channel.get(), &cq), 0);
    }

    // Collects `count` completions, waiting at most timeout_ms overall.
    std::vector<ibv_wc> Wait(size_t count, int timeout_ms = kTimeoutMs) {
        std::vector<ibv_wc> out;
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (out.size() < count) {
            if (PollInto(&out, count))
                continue;
            cq->RequestNotify();
            if (PollInto(&out, count))
                continue;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            if (left <= 0 || !WaitReadable(channel->Fd(), static_cast<int>(left)))
                break;
            provider::CompletionQueue *fired = nullptr;
            if (channel->GetEvent(&fired) == 0)
                channel->AckEvents(fired, 1);
        }
        return out;
    }

    ibv_wc WaitOne(int timeout_ms = kTimeoutMs) {
        auto got = Wait(1, timeout_ms);
        if (got.empty()) {
            ADD_FAILURE() << "no completion within " << timeout_ms << " ms";
            ibv_wc none{};
            none.status = IBV_WC_GENERAL_ERR;
            none.wr_id = ~0ull;
            return none;
        }
        return got.front();
    }

    int PollNow() {
        ibv_wc wc[16];
        return cq->Poll(16, wc);
    }

  private:
    bool PollInto(std::vector<ibv_wc> *out, size_t count) {
        ibv_wc wc[16];
        const int n = cq->Poll(static_cast<int>(std::min<size_t>(16, count - out->size())), wc);
        if (n <= 0)
            return false;
        out->insert(out->end(), wc, wc + n);
        return true;
    }
};

struct Endpoint {
    CompletionSink send;
    CompletionSink recv;
    std::unique_ptr<provider::CmId> id;
    provider::QueuePair &qp() { return *id->Qp(); }
};

struct PairOptions {
    uint32_t sq_size = 16;
    uint32_t rq_size = 16;
    int cq_size = 256;
    provider::SharedReceiveQueue *server_srq = nullptr;
    std::vector<uint8_t> client_private_data;
    std::vector<uint8_t> server_private_data;
    const char *address = "127.0.0.1";
};

inline ibv_send_wr SendWr(ibv_wr_opcode opcode, ibv_sge *sge, uint64_t wr_id,
                          uint64_t remote_addr = 0, uint32_t rkey = 0, bool signaled = true) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.sg_list = sge;
    wr.num_sge = sge != nullptr ? 1 : 0;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

inline ibv_recv_wr RecvWr(ibv_sge *sge, uint64_t wr_id) {
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = sge != nullptr ? 1 : 0;
    return wr;
}

// Two endpoints of one connection in this process: a client (active) and a
// server (passive), each with its own protection domain and CQs.
class ConnectedPair : public ::testing::Test {
  protected:
    provider::Device &device() { return GetDevice(); }

    void SetUp() override {
        ASSERT_EQ(device().AllocPd(&client_pd), 0);
        ASSERT_EQ(device().AllocPd(&server_pd), 0);
    }

    // Listens on port 0, connects, accepts; both sides reach kEstablished.
    void Connect(const PairOptions &options = {}) {
        ASSERT_NO_FATAL_FAILURE(StartListening(options.address));
        ASSERT_NO_FATAL_FAILURE(CreateClient(options));
        ASSERT_EQ(client.id->Connect(options.client_private_data.data(),
                                     static_cast<uint8_t>(options.client_private_data.size()),
                                     kTimeoutMs),
                  0);
        ASSERT_NO_FATAL_FAILURE(TakeRequest(options));
        ASSERT_EQ(server.id->Accept(options.server_private_data.data(),
                                    static_cast<uint8_t>(options.server_private_data.size())),
                  0);
        auto established = WaitEvent(*client.id);
        ASSERT_TRUE(established.has_value());
        ASSERT_EQ(established->type, CmEventType::kEstablished);
        client_established_data = established->private_data;
        ASSERT_EQ(WaitEventType(*server.id), CmEventType::kEstablished);
    }

    void StartListening(const char *address = "127.0.0.1") {
        ASSERT_EQ(device().Listen(address, "0", &listener), 0);
        port = std::to_string(static_cast<tcp::Listener &>(*listener).Port());
        ASSERT_NE(port, "0");
    }

    void CreateClient(const PairOptions &options, const char *address = nullptr) {
        ASSERT_EQ(device().Resolve(address != nullptr ? address : options.address, port.c_str(),
                                   kTimeoutMs, &client.id),
                  0);
        ASSERT_NO_FATAL_FAILURE(CreateQp(client, *client_pd, options, nullptr));
    }

    void TakeRequest(const PairOptions &options) {
        ASSERT_TRUE(WaitReadable(listener->Fd()));
        ASSERT_EQ(listener->NextRequest(&server.id), 0);
        ASSERT_NO_FATAL_FAILURE(CreateQp(server, *server_pd, options, options.server_srq));
    }

    void CreateQp(Endpoint &endpoint, provider::ProtectionDomain &pd, const PairOptions &options,
                  provider::SharedReceiveQueue *srq) {
        ASSERT_NO_FATAL_FAILURE(endpoint.send.Create(device(), options.cq_size));
        ASSERT_NO_FATAL_FAILURE(endpoint.recv.Create(device(), options.cq_size));
        QueuePairInit init;
        init.send_cq = endpoint.send.cq.get();
        init.recv_cq = endpoint.recv.cq.get();
        init.srq = srq;
        init.sq_size = options.sq_size;
        init.rq_size = options.rq_size;
        ASSERT_EQ(endpoint.id->CreateQp(pd, init), 0);
    }

    // Another connection through the same listener (after Connect or
    // StartListening).
    void ConnectAnother(Endpoint &c, Endpoint &s, const PairOptions &options) {
        ASSERT_EQ(device().Resolve(options.address, port.c_str(), kTimeoutMs, &c.id), 0);
        ASSERT_NO_FATAL_FAILURE(CreateQp(c, *client_pd, options, nullptr));
        ASSERT_EQ(c.id->Connect(nullptr, 0, kTimeoutMs), 0);
        ASSERT_TRUE(WaitReadable(listener->Fd()));
        ASSERT_EQ(listener->NextRequest(&s.id), 0);
        ASSERT_NO_FATAL_FAILURE(CreateQp(s, *server_pd, options, options.server_srq));
        ASSERT_EQ(s.id->Accept(nullptr, 0), 0);
        ASSERT_EQ(WaitEventType(*c.id), CmEventType::kEstablished);
        ASSERT_EQ(WaitEventType(*s.id), CmEventType::kEstablished);
    }

    // Both ends report the connection lost.
    void ExpectBroken() {
        EXPECT_EQ(WaitEventType(*client.id), CmEventType::kConnectError);
        EXPECT_EQ(WaitEventType(*server.id), CmEventType::kConnectError);
    }

    std::unique_ptr<provider::ProtectionDomain> client_pd;
    std::unique_ptr<provider::ProtectionDomain> server_pd;
    std::unique_ptr<provider::Listener> listener;
    std::string port;
    // Declared after the PDs and the listener: destroyed first.
    Endpoint client;
    Endpoint server;
    std::vector<uint8_t> client_established_data;
};

// Scenarios that may hang or exhaust the process run in a death test's
// child. InChild bounds the child by an alarm; gtest prints nothing there,
// so ExitChild hands the failures to the parent's report through stderr,
// which the parent captures.
inline void InChild(unsigned alarm_seconds) {
    alarm(alarm_seconds);
}
[[noreturn]] inline void ExitChild() {
    const ::testing::TestResult *result =
        ::testing::UnitTest::GetInstance()->current_test_info()->result();
    for (int i = 0; i < result->total_part_count(); ++i) {
        const ::testing::TestPartResult &part = result->GetTestPartResult(i);
        if (part.failed())
            fprintf(stderr, "%s:%d: %s\n", part.file_name(), part.line_number(), part.message());
    }
    _exit(::testing::Test::HasFailure() ? 1 : 0);
}

// A file of `size` bytes in the test's directory (unlinked), mapped shared,
// every page dirty: a persistent flush of it is an msync.
class SharedFile {
  public:
    explicit SharedFile(size_t size) : size_(size) {
        const char *dir = getenv("TEST_TMPDIR");
        std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/sharedXXXXXX";
        const int fd = mkstemp(path.data());
        EXPECT_GE(fd, 0) << strerror(errno);
        unlink(path.c_str());
        EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
        void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        EXPECT_NE(mapped, MAP_FAILED) << strerror(errno);
        data_ = static_cast<uint8_t *>(mapped);
        memset(data_, 0x5a, size);
    }
    ~SharedFile() { munmap(data_, size_); }
    SharedFile(const SharedFile &) = delete;
    SharedFile &operator=(const SharedFile &) = delete;
    uint8_t *data() const { return data_; }

  private:
    uint8_t *data_ = nullptr;
    size_t size_;
};

// Every completion `cq` holds now.
template <typename Cq>
std::vector<ibv_wc> DrainCompletions(Cq &cq) {
    std::vector<ibv_wc> all;
    ibv_wc wc[16];
    for (int n; (n = cq.Poll(16, wc)) > 0;)
        all.insert(all.end(), wc, wc + n);
    return all;
}

}  // namespace rpma::provider::tcp::testing

#endif  // TESTS_UNIT_PROVIDER_TCP_TCP_TEST_SUPPORT_H
