// The harness's environment: what lives as long as the fuzzer process (the
// tcp device, a listener on 127.0.0.1, the harness's own listening socket
// for active connections, a protection domain), the guard-paged memory the
// regions are registered on, and the bounds every wait uses.

#ifndef TESTS_FUZZ_TCP_FUZZ_ENVIRONMENT_H_
#define TESTS_FUZZ_TCP_FUZZ_ENVIRONMENT_H_

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "tests/fuzz/fuzz_support.h"

namespace tcp_fuzz {

namespace provider = rpma::provider;

// Any wait for the provider. Generous: only a broken provider waits this
// long, and it must exceed the receiver-not-ready bound below.
constexpr int kBoundMs = 10000;
// A SEND that finds no posted receive fails after this; short, so that a
// script without receives does not take seconds.
constexpr std::chrono::milliseconds kReceiverNotReady{300};
// How long the harness waits for the provider to read a piece before it
// sends the next one anyway (the provider may rightly stop reading).
constexpr int kConsumeMs = 1000;

constexpr size_t kPage = 4096;
// The target region: what the peer's one-sided requests address.
// 256 KiB: larger than what a persistent flush msyncs inline (64 KiB), so
// that a flush of it runs on the provider's persist workers.
constexpr size_t kTargetSize = 256 << 10;
// The application's local buffers, registered without remote access:
// destinations of the provider's READs, sources of its WRITEs and SENDs
// (first half), and its receive buffers (second half).
constexpr size_t kLocalSize = 64 << 10;
constexpr size_t kReceiveSize = 4096;
constexpr size_t kReceives = (kLocalSize / 2) / kReceiveSize;
// Payloads longer than this are cut short (the stream is then mid-message).
constexpr size_t kMaxPayloadSent = kTargetSize + (64 << 10);
constexpr uint32_t kQueueDepth = 16;
constexpr int kCqSize = 256;

// Memory with a PROT_NONE page on each side: any access past the ends
// faults (and ASan reports it) instead of passing unnoticed. Anonymous, or a
// shared mapping of a memfd: a file in the page cache, which the provider
// msyncs for a persistent flush (on its flush workers) as it would a file
// on disk.
class GuardedMemory {
  public:
    enum class Kind { kAnonymous, kFile };
    GuardedMemory(size_t size, Kind kind) : size_(size) {
        void *mapped =
            mmap(nullptr, size + 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        FUZZ_CHECK(mapped != MAP_FAILED);
        base_ = static_cast<uint8_t *>(mapped);
        if (kind == Kind::kAnonymous) {
            FUZZ_CHECK(mprotect(base_ + kPage, size, PROT_READ | PROT_WRITE) == 0);
            return;
        }
        const int fd = memfd_create("tcp_connection_fuzzer", MFD_CLOEXEC);
        FUZZ_CHECK(fd >= 0);
        FUZZ_CHECK(ftruncate(fd, static_cast<off_t>(size)) == 0);
        FUZZ_CHECK(mmap(base_ + kPage, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                        0) == base_ + kPage);
        close(fd);  // the mapping keeps the file
    }
    ~GuardedMemory() { munmap(base_, size_ + 2 * kPage); }
    GuardedMemory(const GuardedMemory &) = delete;
    GuardedMemory &operator=(const GuardedMemory &) = delete;

    uint8_t *data() const { return base_ + kPage; }
    size_t size() const { return size_; }
    uint64_t addr(size_t offset = 0) const { return reinterpret_cast<uintptr_t>(data()) + offset; }

  private:
    uint8_t *base_;
    size_t size_;
};

// What lives as long as the process: the device (never destroyed anyway),
// one listener on 127.0.0.1, a protection domain and the guarded memory.
// The regions are registered per input, so that deregistration is a step.
struct Process {
    provider::Device *device = nullptr;
    std::unique_ptr<provider::ProtectionDomain> pd;
    std::unique_ptr<provider::Listener> listener;
    uint16_t port = 0;
    // Where an active provider connection connects to: the harness's own.
    int peer_listener = -1;
    uint16_t peer_port = 0;
    GuardedMemory target{kTargetSize, GuardedMemory::Kind::kFile};
    GuardedMemory local{kLocalSize, GuardedMemory::Kind::kAnonymous};

    static Process &Get() {
        static Process *process = new Process();  // outlives every input, as the device
        return *process;
    }

  private:
    Process();
};

// Deterministic filler for payloads, so that a short input carries long ones.
void FillPattern(uint8_t *out, size_t length, uint32_t seed);

}  // namespace tcp_fuzz

#endif  // TESTS_FUZZ_TCP_FUZZ_ENVIRONMENT_H_
