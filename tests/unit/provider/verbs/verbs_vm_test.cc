// The verbs provider end to end on a real RDMA device: both sides of each
// connection in this one process, over rxe0 in the Soft-RoCE VM.
//
// Needs an RDMA device that serves $VM_IP (default 10.0.1.1); the VM
// harness (tests/vm) sets it up. Through Bazel:
//     bazel test //tests/unit/provider/verbs:verbs_vm
// By hand (one line):
//     tests/vm/run_vm.sh --case verbs 1 120 ./verbs_vm_test
//         --file bazel-bin/tests/unit/provider/verbs/verbs_vm_test
#include <endian.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "librpma.h"
#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_conn_param.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "tests/unit/provider/verbs/vm_waits.h"

namespace rpma::provider::verbs {
namespace {

constexpr size_t kRegionSize = 4096;

std::string Address() {
    const char *ip = getenv("VM_IP");
    return ip != nullptr ? ip : "10.0.1.1";
}

// The provider's own messages on the console, so that a run shows what a
// user would read (rejections, failed resolutions, ...).
void PrintLog(enum rpma_log_level level, const char *, const int, const char *, const char *format,
              ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "rpma log %d: ", level);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

class ConsoleLog : public ::testing::Environment {
  public:
    void SetUp() override {
        rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_INFO);
        rpma_log_set_function(&PrintLog);
    }
};
const auto *const console_log = ::testing::AddGlobalTestEnvironment(new ConsoleLog);

// A port no earlier test of this run used: connection ids of a finished test
// may still hold theirs.
std::string NextPort() {
    static int next = [] {
        const char *base = getenv("VMTEST_PORT");
        return (base != nullptr ? atoi(base) : 20000) + 100;
    }();
    return std::to_string(next++);
}

// A completion of `opcode` with `wr_id` that succeeded.
::testing::AssertionResult Completed(CompletionQueue &cq, ibv_wc_opcode opcode, uint64_t wr_id) {
    ibv_wc wc{};
    if (int err = testing::WaitCompletion(cq, &wc); err != 0)
        return ::testing::AssertionFailure() << "no completion: " << strerror(err);
    if (wc.status != IBV_WC_SUCCESS)
        return ::testing::AssertionFailure() << "status " << ibv_wc_status_str(wc.status);
    if (wc.opcode != opcode || wc.wr_id != wr_id)
        return ::testing::AssertionFailure() << "opcode " << wc.opcode << " wr_id " << wc.wr_id
                                             << ", expected " << opcode << " " << wr_id;
    return ::testing::AssertionSuccess();
}

bool StartsWith(const std::vector<uint8_t> &data, const std::string &prefix) {
    return data.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), data.begin());
}

ibv_sge Sge(MemoryRegion &mr, size_t offset, size_t length) {
    return ibv_sge{reinterpret_cast<uintptr_t>(mr.Addr()) + offset, static_cast<uint32_t>(length),
                   mr.Lkey()};
}

uint64_t RemoteAddr(MemoryRegion &mr, size_t offset) {
    return reinterpret_cast<uintptr_t>(mr.Addr()) + offset;
}

// One side's queues.
struct Side {
    std::unique_ptr<CompletionChannel> channel;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<CmId> id;  // after the queues: destroyed first
};

class VerbsProvider : public ::testing::Test {
  protected:
    void SetUp() override {
        ibv_context *ctx = nullptr;
        ASSERT_EQ(LookupDevice(Address().c_str(), /*local=*/true, &ctx), 0);
        device_ = DeviceFor(ctx);
        ASSERT_NE(device_, nullptr);
        ASSERT_EQ(device_->AllocPd(&pd_), 0);
        for (auto *buffer : {&server_memory_, &readonly_memory_, &client_memory_})
            buffer->assign(kRegionSize, 0);
        ASSERT_EQ(pd_->RegisterMemory(
                      server_memory_.data(), kRegionSize,
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                      &server_mr_),
                  0);
        ASSERT_EQ(pd_->RegisterMemory(readonly_memory_.data(), kRegionSize, IBV_ACCESS_REMOTE_READ,
                                      &readonly_mr_),
                  0);
        ASSERT_EQ(pd_->RegisterMemory(client_memory_.data(), kRegionSize, IBV_ACCESS_LOCAL_WRITE,
                                      &client_mr_),
                  0);
    }

    void MakeQueues(Side *side) {
        ASSERT_EQ(device_->CreateCompletionChannel(&side->channel), 0);
        ASSERT_EQ(device_->CreateCq(64, side->channel.get(), &side->cq), 0);
    }

    QueuePairInit InitFor(Side &side, SharedReceiveQueue *srq = nullptr) {
        QueuePairInit init;
        init.send_cq = side.cq.get();
        init.recv_cq = side.cq.get();
        init.srq = srq;
        init.sq_size = 16;
        init.rq_size = 16;
        return init;
    }

    // Listens, connects the client with "client-hello", hands the request
    // to the server side (queue pair made, not accepted yet).
    void Request(SharedReceiveQueue *server_srq = nullptr) {
        port_ = NextPort();
        ASSERT_EQ(device_->Listen(Address().c_str(), port_.c_str(), &listener_), 0);
        MakeQueues(&client_);
        MakeQueues(&server_);
        ASSERT_EQ(device_->Resolve(Address().c_str(), port_.c_str(), 1000, &client_.id), 0);
        ASSERT_EQ(client_.id->Context(), device_->Context());
        ASSERT_EQ(client_.id->CreateQp(*pd_, InitFor(client_)), 0);
        ASSERT_NE(client_.id->Qp(), nullptr);
        const std::string hello = "client-hello";
        ASSERT_EQ(client_.id->Connect(hello.data(), static_cast<uint8_t>(hello.size()), 1000), 0);
        ASSERT_EQ(testing::WaitRequest(*listener_, &server_.id), 0);
        // Carried verbatim, at the length the CM delivers (padded).
        EXPECT_TRUE(StartsWith(server_.id->RequestPrivateData(), hello));
        ASSERT_EQ(server_.id->CreateQp(*pd_, InitFor(server_, server_srq)), 0);
    }

    // Request() and accept with "server-hello"; both sides see ESTABLISHED.
    void Connect(SharedReceiveQueue *server_srq = nullptr) {
        Request(server_srq);
        if (HasFatalFailure())
            return;
        const std::string hello = "server-hello";
        ASSERT_EQ(server_.id->Accept(hello.data(), static_cast<uint8_t>(hello.size())), 0);
        CmEvent event;
        ASSERT_EQ(testing::WaitEvent(*client_.id, &event), 0);
        ASSERT_EQ(event.type, CmEventType::kEstablished);
        EXPECT_TRUE(StartsWith(event.private_data, hello));
        accepted_private_data_ = event.private_data;
        ASSERT_EQ(testing::WaitEvent(*server_.id, &event), 0);
        ASSERT_EQ(event.type, CmEventType::kEstablished);
    }

    QueuePair &ClientQp() { return *client_.id->Qp(); }

    int Write(size_t local_offset, MemoryRegion &remote, size_t remote_offset, size_t length,
              bool signaled, uint64_t wr_id, ibv_wr_opcode opcode = IBV_WR_RDMA_WRITE) {
        ibv_sge sge = Sge(*client_mr_, local_offset, length);
        ibv_send_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = opcode;
        wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
        wr.wr.rdma.remote_addr = RemoteAddr(remote, remote_offset);
        wr.wr.rdma.rkey = remote.Rkey();
        return ClientQp().PostSend(wr);
    }

    Device *device_ = nullptr;
    std::unique_ptr<ProtectionDomain> pd_;
    std::vector<char> server_memory_, readonly_memory_, client_memory_;
    std::unique_ptr<MemoryRegion> server_mr_, readonly_mr_, client_mr_;
    std::unique_ptr<SharedReceiveQueue> srq_;
    std::string port_;
    std::unique_ptr<Listener> listener_;
    std::vector<uint8_t> accepted_private_data_;  // from the client's ESTABLISHED
    Side client_, server_;
};

TEST_F(VerbsProvider, LookupFindsTheSameDeviceForLocalAndRemoteAddresses) {
    ibv_context *local = nullptr, *remote = nullptr;
    ASSERT_EQ(LookupDevice(Address().c_str(), true, &local), 0);
    ASSERT_EQ(LookupDevice(Address().c_str(), false, &remote), 0);
    EXPECT_EQ(local, remote);
    EXPECT_EQ(DeviceFor(local), device_);
    EXPECT_STREQ(ibv_get_device_name(local->device), "rxe0");
}

TEST_F(VerbsProvider, LookupOfAnAddressOfNoLocalInterfaceFails) {
    ibv_context *ctx = nullptr;
    EXPECT_EQ(LookupDevice("10.0.1.200", /*local=*/true, &ctx), EADDRNOTAVAIL);
    EXPECT_EQ(ctx, nullptr);
}

TEST_F(VerbsProvider, SoftRoceOn61UsesBothFallbacks) {
    EXPECT_FALSE(device_->Caps().native_flush);
    EXPECT_FALSE(device_->Caps().native_atomic_write);
    EXPECT_FALSE(device_->Caps().iwarp);
    RecordProperty("odp", device_->IsOdpCapable() ? "yes" : "no");
}

TEST_F(VerbsProvider, PrivateDataTravelsBothWaysPaddedByTheCm) {
    ASSERT_NO_FATAL_FAILURE(Connect());  // checks the bytes both ways
    // The IB CM pads private data to its message fields; like librpma, the
    // provider hands on what the CM delivers.
    EXPECT_EQ(server_.id->RequestPrivateData().size(), size_t{kMaxRequestPrivateData});
    EXPECT_EQ(accepted_private_data_.size(), size_t{kMaxReplyPrivateData});
}

TEST_F(VerbsProvider, WrittenBytesLandAndReadBack) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    memcpy(client_memory_.data(), "one-sided write!", 16);
    ASSERT_EQ(Write(0, *server_mr_, 100, 16, true, 1), 0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_WRITE, 1));
    EXPECT_EQ(memcmp(server_memory_.data() + 100, "one-sided write!", 16), 0);

    memcpy(server_memory_.data() + 200, "read me back ...", 16);
    ASSERT_EQ(Write(512, *server_mr_, 200, 16, true, 2, IBV_WR_RDMA_READ), 0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_READ, 2));
    EXPECT_EQ(memcmp(client_memory_.data() + 512, "read me back ...", 16), 0);
}

TEST_F(VerbsProvider, ApmFlushCompletesAsTheCallersRead) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_EQ(Write(0, *server_mr_, 0, 64, /*signaled=*/false, 10), 0);
    ASSERT_EQ(ClientQp().PostFlush(RemoteAddr(*server_mr_, 0), server_mr_->Rkey(), 64,
                                   FlushType::kPersistent, true, 11),
              0);
    // The unsignaled write leaves no completion; the flush read does.
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_READ, 11));
    // A zero-length flush still reads (as librpma's APM does).
    ASSERT_EQ(ClientQp().PostFlush(RemoteAddr(*server_mr_, 8), server_mr_->Rkey(), 0,
                                   FlushType::kVisibility, true, 12),
              0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_READ, 12));
}

TEST_F(VerbsProvider, AtomicWriteStoresEightBytesAsAFencedWrite) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    const char value[8] = {'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'};
    ASSERT_EQ(ClientQp().PostFlush(RemoteAddr(*server_mr_, 0), server_mr_->Rkey(), 8,
                                   FlushType::kVisibility, false, 20),
              0);
    ASSERT_EQ(ClientQp().PostAtomicWrite(RemoteAddr(*server_mr_, 64), server_mr_->Rkey(), value,
                                         true, 21),
              0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_WRITE, 21));
    EXPECT_EQ(memcmp(server_memory_.data() + 64, value, 8), 0);
}

TEST_F(VerbsProvider, SendIsReceivedIntoAPostedBuffer) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ibv_sge recv_sge = Sge(*server_mr_, 1024, 64);
    ibv_recv_wr recv{};
    recv.wr_id = 30;
    recv.sg_list = &recv_sge;
    recv.num_sge = 1;
    ASSERT_EQ(server_.id->Qp()->PostRecv(recv), 0);

    memcpy(client_memory_.data() + 64, "ping", 4);
    ASSERT_EQ(Write(64, *server_mr_, 0, 4, true, 31, IBV_WR_SEND), 0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_SEND, 31));
    ibv_wc wc{};
    ASSERT_EQ(testing::WaitCompletion(*server_.cq, &wc), 0);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.wr_id, 30u);
    EXPECT_EQ(wc.byte_len, 4u);
    EXPECT_EQ(memcmp(server_memory_.data() + 1024, "ping", 4), 0);
}

TEST_F(VerbsProvider, WriteWithImmediateConsumesAReceive) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ibv_recv_wr recv{};
    recv.wr_id = 40;
    ASSERT_EQ(server_.id->Qp()->PostRecv(recv), 0);
    ibv_sge sge = Sge(*client_mr_, 0, 8);
    ibv_send_wr wr{};
    wr.wr_id = 41;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htobe32(0xc0ffee);
    wr.wr.rdma.remote_addr = RemoteAddr(*server_mr_, 0);
    wr.wr.rdma.rkey = server_mr_->Rkey();
    ASSERT_EQ(ClientQp().PostSend(wr), 0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_WRITE, 41));
    ibv_wc wc{};
    ASSERT_EQ(testing::WaitCompletion(*server_.cq, &wc), 0);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(be32toh(wc.imm_data), 0xc0ffeeu);
}

TEST_F(VerbsProvider, SharedReceiveQueueFeedsTheConnection) {
    ASSERT_EQ(pd_->CreateSrq(16, &srq_), 0);
    ASSERT_NO_FATAL_FAILURE(Connect(srq_.get()));
    ibv_sge recv_sge = Sge(*server_mr_, 2048, 64);
    ibv_recv_wr recv{};
    recv.wr_id = 50;
    recv.sg_list = &recv_sge;
    recv.num_sge = 1;
    ASSERT_EQ(srq_->PostRecv(recv), 0);
    memcpy(client_memory_.data(), "via srq", 7);
    ASSERT_EQ(Write(0, *server_mr_, 0, 7, true, 51, IBV_WR_SEND), 0);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_SEND, 51));
    ASSERT_TRUE(Completed(*server_.cq, IBV_WC_RECV, 50));
    EXPECT_EQ(memcmp(server_memory_.data() + 2048, "via srq", 7), 0);
}

TEST_F(VerbsProvider, ArmedQueueWakesItsCompletionChannel) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_EQ(client_.cq->RequestNotify(), 0);
    ASSERT_EQ(Write(0, *server_mr_, 0, 8, true, 60), 0);
    ASSERT_TRUE(testing::WaitReadable(client_.channel->Fd(), testing::kVmWaitMs));
    CompletionQueue *fired = nullptr;
    ASSERT_EQ(client_.channel->GetEvent(&fired), 0);
    EXPECT_EQ(fired, client_.cq.get());
    client_.channel->AckEvents(fired, 1);
    ASSERT_TRUE(Completed(*client_.cq, IBV_WC_RDMA_WRITE, 60));
}

TEST_F(VerbsProvider, FullReceiveQueueReportsEnomem) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ibv_recv_wr recv{};
    int err = 0;
    int posted = 0;
    while (err == 0 && posted < 100000) {
        err = server_.id->Qp()->PostRecv(recv);
        posted += err == 0;
    }
    EXPECT_EQ(err, ENOMEM);
    EXPECT_GE(posted, 16);
}

TEST_F(VerbsProvider, WriteWithoutRemoteWriteAccessFailsAtTheInitiator) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_EQ(Write(0, *readonly_mr_, 0, 8, true, 70), 0);
    ibv_wc wc{};
    ASSERT_EQ(testing::WaitCompletion(*client_.cq, &wc), 0);
    EXPECT_EQ(wc.wr_id, 70u);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(readonly_memory_[0], 0);
}

TEST_F(VerbsProvider, DisconnectReachesBothSides) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    ASSERT_EQ(client_.id->Disconnect(), 0);
    CmEvent event;
    ASSERT_EQ(testing::WaitEvent(*server_.id, &event), 0);
    EXPECT_EQ(event.type, CmEventType::kDisconnected);
    // The IB CM answers the disconnect request only once this side
    // disconnects too (librpma's server does so on RPMA_CONN_CLOSED); then
    // the side that started gets its event.
    ASSERT_EQ(server_.id->Disconnect(), 0);
    ASSERT_EQ(testing::WaitEvent(*client_.id, &event), 0);
    EXPECT_EQ(event.type, CmEventType::kDisconnected);
}

TEST_F(VerbsProvider, RejectedRequestIsReportedAsRejected) {
    ASSERT_NO_FATAL_FAILURE(Request());
    ASSERT_EQ(server_.id->Reject(), 0);
    CmEvent event;
    ASSERT_EQ(testing::WaitEvent(*client_.id, &event), 0);
    EXPECT_EQ(event.type, CmEventType::kRejected);
}

TEST_F(VerbsProvider, ConnectingWhereNobodyListensIsRejected) {
    MakeQueues(&client_);
    const std::string port = NextPort();
    ASSERT_EQ(device_->Resolve(Address().c_str(), port.c_str(), 1000, &client_.id), 0);
    ASSERT_EQ(client_.id->CreateQp(*pd_, InitFor(client_)), 0);
    ASSERT_EQ(client_.id->Connect(nullptr, 0, 1000), 0);
    CmEvent event;
    ASSERT_EQ(testing::WaitEvent(*client_.id, &event), 0);
    EXPECT_EQ(event.type, CmEventType::kRejected);
}

TEST_F(VerbsProvider, NoEventPendingIsEagain) {
    ASSERT_NO_FATAL_FAILURE(Connect());
    CmEvent event;
    EXPECT_EQ(client_.id->NextEvent(&event), EAGAIN);
    std::unique_ptr<CmId> none;
    EXPECT_EQ(listener_->NextRequest(&none), EAGAIN);
}

TEST_F(VerbsProvider, AdviceNeedsOnDemandPaging) {
    if (device_->IsOdpCapable())
        GTEST_SKIP() << "this device pages on demand";
    EXPECT_EQ(client_mr_->Advise(client_memory_.data(), 64, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                                 IBV_ADVISE_MR_FLAG_FLUSH),
              EOPNOTSUPP);
}

TEST_F(VerbsProvider, ResolvingAnAddressWithoutARouteFails) {
    std::unique_ptr<CmId> id;
    // The VM routes only rxe0's subnet.
    int err = device_->Resolve("192.0.2.1", "7", 500, &id);
    EXPECT_NE(err, 0);
    EXPECT_EQ(id, nullptr);
    RecordProperty("resolve_errno", strerror(err));
    ibv_context *ctx = nullptr;
    err = LookupDevice("192.0.2.1", /*local=*/false, &ctx);
    EXPECT_NE(err, 0);
    EXPECT_EQ(ctx, nullptr);
    RecordProperty("lookup_errno", strerror(err));
}

}  // namespace
}  // namespace rpma::provider::verbs
