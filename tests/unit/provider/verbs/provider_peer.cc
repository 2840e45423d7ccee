// One side of a connection made with this project's verbs provider; the
// other side is librpma_peer.c on the reference librpma. See there.
//
//   provider_peer server ADDR PORT   accept, hand out a region, check it
//   provider_peer client ADDR PORT   connect, write/flush/atomic-write/read
//
// The memory descriptor is encoded here by hand, in librpma's format
// (little-endian u64 address, u64 length, u32 rkey, u8 usage), so librpma's
// decoder checks the format itself, not our API layer's encoder.
#include <endian.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "librpma.h"
#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "tests/unit/provider/verbs/vm_waits.h"

namespace rpma::provider::verbs {
namespace {

constexpr size_t kRegionSize = 4096;
constexpr size_t kAtomicOffset = 64;
constexpr size_t kReadBackOffset = 512;
constexpr size_t kDescriptorSize = 21;
const char kClientHello[] = "hello from the client";
const char kWritten[] = "written by peer!";  // 16 bytes are sent, without the NUL
const char kAtomic[] = "ATOMIC!!";           // 8 bytes

int failures = 0;

void Result(const char *check, bool ok, const std::string &detail) {
    printf("RESULT %s %s %s\n", check, ok ? "PASS" : "FAIL", detail.c_str());
    failures += ok ? 0 : 1;
}

// Ends the program when a step that everything after it needs failed.
void Require(const char *what, int err) {
    if (err == 0)
        return;
    printf("RESULT %s FAIL %s\n", what, strerror(err));
    exit(1);
}

const char *EventName(CmEventType type) {
    switch (type) {
        case CmEventType::kEstablished:
            return "established";
        case CmEventType::kDisconnected:
            return "disconnected";
        case CmEventType::kRejected:
            return "rejected";
        default:
            return "another event";
    }
}

void ExpectEvent(CmId &id, CmEventType expected, CmEvent *event) {
    Require("connection event", testing::WaitEvent(id, event));
    Result("event", event->type == expected, EventName(event->type));
}

void ExpectCompletion(CompletionQueue &cq, ibv_wc_opcode opcode, uint64_t wr_id) {
    ibv_wc wc{};
    Require("completion", testing::WaitCompletion(cq, &wc));
    Result("completion", wc.status == IBV_WC_SUCCESS && wc.opcode == opcode && wc.wr_id == wr_id,
           std::string("status=") + ibv_wc_status_str(wc.status) +
               " opcode=" + std::to_string(wc.opcode) + " wr_id=" + std::to_string(wc.wr_id));
}

struct Endpoint {
    Device *device = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<char> memory = std::vector<char>(kRegionSize, 0);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionChannel> channel;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<CmId> id;
};

void SetUp(const char *addr, bool local, int access, Endpoint *end) {
    ibv_context *ctx = nullptr;
    Require("LookupDevice", LookupDevice(addr, local, &ctx));
    end->device = DeviceFor(ctx);
    Require("AllocPd", end->device->AllocPd(&end->pd));
    Require("RegisterMemory",
            end->pd->RegisterMemory(end->memory.data(), kRegionSize, access, &end->mr));
    Require("CreateCompletionChannel", end->device->CreateCompletionChannel(&end->channel));
    Require("CreateCq", end->device->CreateCq(16, end->channel.get(), &end->cq));
}

QueuePairInit InitFor(Endpoint &end) {
    QueuePairInit init;
    init.send_cq = end.cq.get();
    init.recv_cq = end.cq.get();
    init.sq_size = 16;
    init.rq_size = 16;
    return init;
}

std::vector<uint8_t> Descriptor(const MemoryRegion &mr, uint8_t usage) {
    std::vector<uint8_t> desc(kDescriptorSize);
    uint64_t addr = htole64(reinterpret_cast<uintptr_t>(mr.Addr()));
    uint64_t length = htole64(mr.Length());
    uint32_t rkey = htole32(mr.Rkey());
    memcpy(&desc[0], &addr, 8);
    memcpy(&desc[8], &length, 8);
    memcpy(&desc[16], &rkey, 4);
    desc[20] = usage;
    return desc;
}

int Server(const char *addr, const char *port) {
    Endpoint end;
    SetUp(addr, true, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
          &end);
    std::unique_ptr<Listener> listener;
    Require("Listen", end.device->Listen(addr, port, &listener));
    Require("NextRequest", testing::WaitRequest(*listener, &end.id));
    const std::vector<uint8_t> &hello = end.id->RequestPrivateData();
    Result("request_private_data",
           hello.size() >= sizeof(kClientHello) &&
               memcmp(hello.data(), kClientHello, sizeof(kClientHello)) == 0,
           "len=" + std::to_string(hello.size()));
    Require("CreateQp", end.id->CreateQp(*end.pd, InitFor(end)));
    std::vector<uint8_t> desc =
        Descriptor(*end.mr, RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                                RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    Require("Accept", end.id->Accept(desc.data(), static_cast<uint8_t>(desc.size())));
    CmEvent event;
    ExpectEvent(*end.id, CmEventType::kEstablished, &event);
    ExpectEvent(*end.id, CmEventType::kDisconnected, &event);
    Result("written", memcmp(end.memory.data(), kWritten, 16) == 0, "16 bytes by RDMA WRITE");
    Result("atomic_written", memcmp(end.memory.data() + kAtomicOffset, kAtomic, 8) == 0,
           "8 bytes by librpma's atomic write");
    Require("Disconnect", end.id->Disconnect());
    return failures == 0 ? 0 : 1;
}

int Client(const char *addr, const char *port) {
    Endpoint end;
    SetUp(addr, false, IBV_ACCESS_LOCAL_WRITE, &end);
    Require("Resolve", end.device->Resolve(addr, port, 1000, &end.id));
    Require("CreateQp", end.id->CreateQp(*end.pd, InitFor(end)));
    Require("Connect", end.id->Connect(kClientHello, sizeof(kClientHello), 1000));
    CmEvent established;
    ExpectEvent(*end.id, CmEventType::kEstablished, &established);

    // librpma's descriptor, decoded by hand.
    const std::vector<uint8_t> &desc = established.private_data;
    if (desc.size() < kDescriptorSize)
        Require("descriptor", EPROTO);
    uint64_t remote_addr, remote_length;
    uint32_t rkey;
    memcpy(&remote_addr, &desc[0], 8);
    memcpy(&remote_length, &desc[8], 8);
    memcpy(&rkey, &desc[16], 4);
    remote_addr = le64toh(remote_addr);
    remote_length = le64toh(remote_length);
    rkey = le32toh(rkey);
    Result("descriptor",
           remote_length == kRegionSize &&
               desc[20] == (RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                            RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY),
           "len=" + std::to_string(desc.size()) + " usage=" + std::to_string(desc[20]));

    QueuePair &qp = *end.id->Qp();
    memcpy(end.memory.data(), kWritten, 16);
    ibv_sge sge{reinterpret_cast<uintptr_t>(end.memory.data()), 16, end.mr->Lkey()};
    ibv_send_wr write{};
    write.sg_list = &sge;
    write.num_sge = 1;
    write.opcode = IBV_WR_RDMA_WRITE;
    write.wr.rdma.remote_addr = remote_addr;
    write.wr.rdma.rkey = rkey;
    Require("PostSend(write)", qp.PostSend(write));
    Require("PostFlush", qp.PostFlush(remote_addr, rkey, 16, FlushType::kVisibility, true, 1));
    ExpectCompletion(*end.cq, IBV_WC_RDMA_READ, 1);
    Require("PostAtomicWrite",
            qp.PostAtomicWrite(remote_addr + kAtomicOffset, rkey, kAtomic, true, 2));
    ExpectCompletion(*end.cq, IBV_WC_RDMA_WRITE, 2);

    ibv_sge back{reinterpret_cast<uintptr_t>(end.memory.data()) + kReadBackOffset, 16,
                 end.mr->Lkey()};
    ibv_send_wr read = write;
    read.wr_id = 3;
    read.sg_list = &back;
    read.opcode = IBV_WR_RDMA_READ;
    read.send_flags = IBV_SEND_SIGNALED;
    Require("PostSend(read)", qp.PostSend(read));
    ExpectCompletion(*end.cq, IBV_WC_RDMA_READ, 3);
    Result("read_back", memcmp(end.memory.data() + kReadBackOffset, kWritten, 16) == 0,
           "16 bytes by RDMA READ");

    Require("Disconnect", end.id->Disconnect());
    CmEvent closed;
    ExpectEvent(*end.id, CmEventType::kDisconnected, &closed);
    return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace rpma::provider::verbs

int main(int argc, char *argv[]) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "server") == 0)
        return rpma::provider::verbs::Server(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "client") == 0)
        return rpma::provider::verbs::Client(argv[2], argv[3]);
    fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
    return 2;
}
