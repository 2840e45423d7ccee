#include "bench/grpc_baseline.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/depth.h"
#include "bench/write_service.grpc.pb.h"
#include "util/connect_channel.h"

namespace rpma_bench {
namespace {

using v1::WriteReply;
using v1::WriteRequest;
using v1::WriteService;

[[noreturn]] void Fail(const std::string &what) {
    fprintf(stderr, "grpc baseline: %s\n", what.c_str());
    exit(1);
}

class WriteServer final : public WriteService::Service {
  public:
    explicit WriteServer(char *memory) : memory_(memory) {}

    grpc::Status Write(grpc::ServerContext *, const WriteRequest *request, WriteReply *) override {
        const std::string &data = request->data();
        if (request->offset() > kRegionSize || data.size() > kRegionSize - request->offset())
            return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "write past the region");
        memcpy(memory_ + request->offset(), data.data(), data.size());
        const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
        const uint64_t start = request->offset() / page * page;
        if (msync(memory_ + start, request->offset() + data.size() - start, MS_SYNC) != 0)
            return grpc::Status(grpc::StatusCode::INTERNAL, strerror(errno));
        return grpc::Status::OK;
    }

  private:
    char *memory_;
};

// One write outstanding on every server.
struct Slot {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<WriteReply>>> calls;
    std::vector<WriteReply> replies;
    std::vector<grpc::Status> statuses;
    size_t answered = 0;
};

class GrpcWriters : public Client {
  public:
    explicit GrpcWriters(const std::vector<uint16_t> &ports) {
        for (uint16_t port : ports)
            stubs_.push_back(WriteService::NewStub(rpma::util::ConnectChannel(
                "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(),
                grpc::ChannelArguments(), std::chrono::seconds(10))));
    }
    ~GrpcWriters() override {
        cq_.Shutdown();
        void *tag;
        bool ok;
        while (cq_.Next(&tag, &ok)) {
        }
    }

    // Post to every server, then collect answers as they arrive; the
    // completion's tag names the slot.
    DepthResult DurableWriteAtDepth(size_t size, int depth, int operations) override {
        std::vector<Slot> slots(depth);
        WriteRequest request;
        request.set_data(std::string(size, 'g'));
        return RunAtDepth(
            depth, operations,
            [&](int index) {
                Slot &slot = slots[index];
                const size_t n = stubs_.size();
                slot.contexts.clear();
                slot.calls.clear();
                slot.replies.assign(n, WriteReply());
                slot.statuses.assign(n, grpc::Status());
                slot.answered = 0;
                request.set_offset(static_cast<uint64_t>(index) * size);
                for (size_t i = 0; i < n; ++i) {
                    slot.contexts.push_back(std::make_unique<grpc::ClientContext>());
                    slot.calls.push_back(
                        stubs_[i]->AsyncWrite(slot.contexts.back().get(), request, &cq_));
                    slot.calls.back()->Finish(
                        &slot.replies[i], &slot.statuses[i],
                        reinterpret_cast<void *>(static_cast<intptr_t>(index)));
                }
            },
            [&] {
                for (;;) {
                    void *tag;
                    bool ok;
                    if (!cq_.Next(&tag, &ok) || !ok)
                        Fail("the completion queue failed");
                    const int index = static_cast<int>(reinterpret_cast<intptr_t>(tag));
                    Slot &slot = slots[index];
                    if (++slot.answered < stubs_.size())
                        continue;
                    for (const grpc::Status &status : slot.statuses)
                        if (!status.ok())
                            Fail("Write: " + status.error_message());
                    return index;
                }
            });
    }

    std::vector<uint64_t> DurableWriteLatency(size_t, int) override { Fail("not measured"); }
    uint64_t Stream(size_t, size_t) override { Fail("not measured"); }
    std::vector<uint64_t> ReadLatency(size_t, int) override { Fail("not measured"); }
    std::vector<uint64_t> PingPong(size_t, int) override { Fail("not measured"); }

  private:
    std::vector<std::unique_ptr<WriteService::Stub>> stubs_;
    grpc::CompletionQueue cq_;
};

}  // namespace

void RunGrpcWriteServer(uint16_t port, const std::string &file, int ready_fd) {
    const int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, kRegionSize) != 0)
        Fail("cannot create " + file);
    void *memory = mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED)
        Fail("cannot map " + file);
    WriteServer service(static_cast<char *>(memory));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr)
        Fail("cannot listen on port " + std::to_string(port));
    dprintf(ready_fd, "ready\n");
    server->Wait();
    Fail("the server stopped");
}

std::unique_ptr<Client> ConnectGrpcWriters(const std::vector<uint16_t> &ports) {
    return std::make_unique<GrpcWriters>(ports);
}

}  // namespace rpma_bench
