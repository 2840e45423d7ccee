// The tcp provider's receive path, one connection per input: the harness is
// the peer on a loopback socket, the provider a passive connection of a real
// listener (or, for one input in two, an active one that connects to the
// harness) that serves a registered region between PROT_NONE guard pages.
//
// The input is a script, not a byte stream (see Script below): each step is
// one message of the wire format (every opcode, with fields chosen by the
// input: sequence right or wrong, rkey of the region, of a region without
// remote access or random, addresses inside, at the edges of and outside
// the region, lengths up to 2^32 - 1, flags), a free-form header, raw bytes,
// or an action of the provider's application (post a work request towards
// the peer, disconnect, deregister the region). Each step's bytes go out in
// pieces the input chooses, and the next piece leaves only once the
// provider read the last one (its socket's FIONREAD is 0, or it stopped
// reading), so that a message split across reads reaches the provider split.
//
// What must hold:
//  - nothing outside the registered regions is touched (guard pages; ASan);
//  - what the provider sends parses as the wire format;
//  - while the script was one a correct peer could send, every ACK names a
//    request sent, READ_RESPONSEs answer the READs in order with the
//    region's bytes, receives complete in order with each SEND's bytes and
//    immediate (a WRITE_WITH_IMM's length and immediate), and once the
//    final ACK_REQUEST is answered the region holds exactly what the WRITEs
//    and ATOMIC_WRITEs put there;
//  - after the script the connection answers an ACK_REQUEST or ends (NAK,
//    REJECT, DISCONNECT, an error event, end of stream) within kBoundMs;
//  - after the peer's end of stream and the application dropping its id,
//    the provider closes the socket within kBoundMs.
// A violation aborts with "invariant violated"; a hang is reported the same.
//
// Seeds: run with TCP_CONNECTION_FUZZER_WRITE_SEEDS=<dir> to write the
// structured seeds of corpus/tcp_connection/ and exit.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace provider = rpma::provider;
namespace tcp = rpma::provider::tcp;
namespace wire = rpma::provider::tcp::wire;

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
    Process() {
        rpma_fuzz::RouteLoggingToNowhere();
        tcp::Device &tcp_device = tcp::GetDevice();
        tcp_device.SetReceiverNotReadyTimeout(kReceiverNotReady);
        device = &tcp_device;
        FUZZ_CHECK(device->AllocPd(&pd) == 0);
        FUZZ_CHECK(device->Listen("127.0.0.1", "0", &listener) == 0);
        port = static_cast<tcp::Listener &>(*listener).Port();
        peer_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        FUZZ_CHECK(bind(peer_listener, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ==
                   0);
        FUZZ_CHECK(listen(peer_listener, 16) == 0);
        socklen_t length = sizeof(address);
        FUZZ_CHECK(getsockname(peer_listener, reinterpret_cast<sockaddr *>(&address), &length) ==
                   0);
        peer_port = ntohs(address.sin_port);
    }
};

// Deterministic filler for payloads, so that a short input carries long ones.
void FillPattern(uint8_t *out, size_t length, uint32_t seed) {
    uint32_t state = seed * 2654435761u + 1;
    for (size_t i = 0; i < length; ++i) {
        state = state * 1103515245u + 12345u;
        out[i] = static_cast<uint8_t>(state >> 24);
    }
}

// ---------------------------------------------------------------------------
// The script: the input read front to back; past its end every field is 0.

enum Step : uint8_t {
    kStepConnectRequest,
    kStepReadyToUse,
    kStepWrite,
    kStepWriteWithImm,
    kStepReadRequest,
    kStepAtomicWrite,
    kStepFlush,
    kStepSend,
    kStepSendWithImm,
    kStepAck,
    kStepNak,
    kStepReadResponse,
    kStepAckRequest,
    kStepDisconnect,
    kStepRawBytes,
    kStepFreeHeader,
    kStepProviderPost,
    kStepProviderDisconnect,
    kStepDeregister,
    kStepDestroyQp,
    kStepCount,
};

class Script {
  public:
    Script(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool Done() const { return offset_ >= size_; }
    uint8_t U8() { return offset_ < size_ ? data_[offset_++] : 0; }
    uint16_t U16() { return static_cast<uint16_t>(U8() | U8() << 8); }
    uint32_t U32() { return static_cast<uint32_t>(U16() | static_cast<uint32_t>(U16()) << 16); }

  private:
    const uint8_t *data_;
    size_t size_;
    size_t offset_ = 0;
};

// The encoder of the same format, for the seeds.
class ScriptWriter {
  public:
    ScriptWriter &U8(uint8_t v) {
        bytes_.push_back(v);
        return *this;
    }
    ScriptWriter &U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
    ScriptWriter &U32(uint32_t v) { return U16(v & 0xffff).U16(v >> 16); }
    const std::vector<uint8_t> &Bytes() const { return bytes_; }

  private:
    std::vector<uint8_t> bytes_;
};

// ---------------------------------------------------------------------------
// One connection.

class Session {
  public:
    explicit Session(Process &process) : p_(process) {}
    ~Session() { TearDown(); }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    void Run(Script &script);

  private:
    struct OutstandingRead {
        uint64_t sequence;
        uint32_t length;
        std::vector<uint8_t> expected;
        bool tainted;  // a later WRITE may have changed the bytes before they left
    };
    // What a receive completes with, in order: a SEND's payload, or a
    // WRITE_WITH_IMM's length (its payload went to the region).
    struct ExpectedReceive {
        wire::Opcode opcode;
        uint32_t length;
        uint32_t imm;
        std::vector<uint8_t> payload;
    };
    struct ProviderRequest {
        uint64_t sequence;
        wire::Opcode opcode;
        uint32_t length;
    };

    // Setup.
    void RegisterRegions();
    void ConnectSocket();
    void ConnectFromProvider();
    void CreateQp();
    int FindProviderSocket() const;
    bool IsProviderSocket(int fd) const;

    // Steps.
    void RunStep(Script &script);
    void SendConnectRequest(Script &script);
    void SendRequest(Script &script, wire::Opcode opcode);
    void SendAnswer(Script &script, wire::Opcode opcode);
    void SendRawBytes(Script &script);
    void SendFreeHeader(Script &script);
    void ProviderPost(Script &script);
    void SendHeaderOnly(Script &script, wire::Opcode opcode);

    // Transport.
    void Deliver(const std::vector<uint8_t> &bytes, uint8_t first_piece, uint8_t other_pieces);
    bool SendPiece(const uint8_t *bytes, size_t length);
    bool ProviderHasUnread() const;
    bool WaitUntil(const std::function<bool()> &done, int bound_ms);
    void Pump();
    void ReadFromProvider();
    void OnProviderMessage(const wire::Header &header, const std::vector<uint8_t> &payload);
    void TakeRequest();
    void HandleEvents();
    void DrainCompletions();
    void PostReceive(uint64_t index);
    void RepostReceives();
    void CheckReceive(const ibv_wc &wc);

    // Ending.
    void Finish();
    void TearDown();
    bool Ended() const { return closed_ || provider_ended_; }
    void Unpredictable() {
        predictable_ = false;
        reads_.clear();
        receives_expected_.clear();
    }

    Process &p_;
    std::unique_ptr<provider::MemoryRegion> target_mr_;
    std::unique_ptr<provider::MemoryRegion> local_mr_;
    std::vector<uint8_t> shadow_;  // what the target region must hold

    int socket_ = -1;
    sockaddr_in local_address_{};
    sockaddr_in peer_address_{};
    int provider_socket_ = -1;
    std::vector<uint8_t> inbox_;
    bool closed_ = false;          // end of stream or reset from the provider
    bool provider_ended_ = false;  // it said NAK, REJECT or DISCONNECT, or reported an error
    bool stalled_ = false;         // it stopped reading; the script is abandoned
    bool deregister_next_ = false;
    bool destroy_qp_next_ = false;

    // The provider's side, driven as an application would.
    bool active_ = false;  // it connects; the harness sends ACCEPT, not READY_TO_USE
    bool reject_ = false;
    uint32_t receives_ = kReceives;
    // Receives completed and not posted again yet: a wait that does not end
    // at once posts them, so that a SEND sometimes finds none and waits.
    std::vector<uint64_t> free_receives_;
    std::unique_ptr<provider::CompletionQueue> send_cq_;
    std::unique_ptr<provider::CompletionQueue> recv_cq_;
    std::unique_ptr<provider::CmId> id_;
    bool qp_ready_ = false;
    uint64_t next_wr_id_ = 1;

    // The model of a correct peer's conversation.
    bool predictable_ = true;
    bool request_sent_ = false;
    bool request_seen_ = false;  // active: the provider's CONNECT_REQUEST
    bool accept_seen_ = false;
    bool handshake_done_ = false;
    uint32_t declared_depth_ = kQueueDepth;
    uint64_t next_sequence_ = 1;
    uint64_t acked_ = 0;  // by ACKs and SENDs that carry one
    uint64_t last_ack_message_ = 0;
    uint64_t ack_messages_ = 0;
    size_t provider_messages_ = 0;
    std::deque<OutstandingRead> reads_;
    std::deque<ExpectedReceive> receives_expected_;
    std::vector<ProviderRequest> provider_requests_;
};

void Session::Run(Script &script) {
    const uint8_t setup = script.U8();
    // 1 in 16 inputs has the connection refused; 1 in 8 posts no receive at
    // all (every SEND then waits for one in vain), 1 in 8 a single one (a
    // SEND waits until the harness posts it again). The top bit makes the
    // provider the active side.
    reject_ = (setup & 0x0f) == 0x0f;
    const uint8_t receives = setup & 0x70;
    receives_ = receives == 0x70 ? 0 : receives == 0x60 ? 1 : kReceives;
    active_ = setup & 0x80;
    FillPattern(p_.target.data(), p_.target.size(), setup);
    shadow_.assign(p_.target.data(), p_.target.data() + p_.target.size());
    RegisterRegions();
    if (receives_ == 0)
        Unpredictable();  // a SEND then fails after the RNR bound
    if (active_)
        ConnectFromProvider();
    else
        ConnectSocket();
    while (!script.Done() && !closed_ && !stalled_)
        RunStep(script);
    Finish();
}

void Session::RegisterRegions() {
    constexpr int kRemote =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    FUZZ_CHECK(p_.pd->RegisterMemory(p_.target.data(), p_.target.size(), kRemote, &target_mr_) ==
               0);
    FUZZ_CHECK(p_.pd->RegisterMemory(p_.local.data(), p_.local.size(), IBV_ACCESS_LOCAL_WRITE,
                                     &local_mr_) == 0);
}

void Session::ConnectSocket() {
    socket_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(socket_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(p_.port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    FUZZ_CHECK(connect(socket_, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0);
    const int one = 1;
    setsockopt(socket_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    socklen_t length = sizeof(local_address_);
    FUZZ_CHECK(getsockname(socket_, reinterpret_cast<sockaddr *>(&local_address_), &length) == 0);
    peer_address_ = address;
    // The provider's end, found among this process's fds once its listener
    // accepted it: reading its FIONREAD tells when a piece was consumed.
    FUZZ_CHECK(WaitUntil([&] { return (provider_socket_ = FindProviderSocket()) >= 0; }, kBoundMs));
}

// The application connects; the harness takes the connection on its own
// listening socket.
void Session::ConnectFromProvider() {
    const std::string port = std::to_string(p_.peer_port);
    FUZZ_CHECK(p_.device->Resolve("127.0.0.1", port.c_str(), kBoundMs, &id_) == 0);
    CreateQp();
    const uint8_t private_data[] = {'f', 'u', 'z', 'z'};
    FUZZ_CHECK(id_->Connect(private_data, sizeof(private_data), kBoundMs) == 0);
    FUZZ_CHECK(WaitUntil(
        [&] { return (socket_ = accept4(p_.peer_listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; },
        kBoundMs));
    const int one = 1;
    setsockopt(socket_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    socklen_t length = sizeof(local_address_);
    FUZZ_CHECK(getsockname(socket_, reinterpret_cast<sockaddr *>(&local_address_), &length) == 0);
    length = sizeof(peer_address_);
    FUZZ_CHECK(getpeername(socket_, reinterpret_cast<sockaddr *>(&peer_address_), &length) == 0);
    FUZZ_CHECK(WaitUntil([&] { return (provider_socket_ = FindProviderSocket()) >= 0; }, kBoundMs));
}

bool Session::IsProviderSocket(int fd) const {
    sockaddr_in peer{};
    sockaddr_in self{};
    socklen_t peer_length = sizeof(peer);
    socklen_t self_length = sizeof(self);
    return fd != socket_ &&
           getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peer_length) == 0 &&
           peer.sin_family == AF_INET && peer.sin_port == local_address_.sin_port &&
           peer.sin_addr.s_addr == local_address_.sin_addr.s_addr &&
           getsockname(fd, reinterpret_cast<sockaddr *>(&self), &self_length) == 0 &&
           self.sin_port == peer_address_.sin_port &&
           self.sin_addr.s_addr == peer_address_.sin_addr.s_addr;
}

int Session::FindProviderSocket() const {
    // New fds take the lowest free numbers: the provider's is near ours.
    for (int fd = 3; fd < socket_ + 256; ++fd)
        if (IsProviderSocket(fd))
            return fd;
    return -1;
}

// ---------------------------------------------------------------------------
// Steps.

void Session::RunStep(Script &script) {
    switch (script.U8() % kStepCount) {
        case kStepConnectRequest:
            return SendConnectRequest(script);
        case kStepReadyToUse:
            return SendHeaderOnly(script, wire::Opcode::kReadyToUse);
        case kStepWrite:
            return SendRequest(script, wire::Opcode::kWrite);
        case kStepWriteWithImm:
            return SendRequest(script, wire::Opcode::kWriteWithImm);
        case kStepReadRequest:
            return SendRequest(script, wire::Opcode::kReadRequest);
        case kStepAtomicWrite:
            return SendRequest(script, wire::Opcode::kAtomicWrite);
        case kStepFlush:
            return SendRequest(script, wire::Opcode::kFlush);
        case kStepSend:
            return SendRequest(script, wire::Opcode::kSend);
        case kStepSendWithImm:
            return SendRequest(script, wire::Opcode::kSendWithImm);
        case kStepAck:
            return SendAnswer(script, wire::Opcode::kAck);
        case kStepNak:
            return SendAnswer(script, wire::Opcode::kNak);
        case kStepReadResponse:
            return SendAnswer(script, wire::Opcode::kReadResponse);
        case kStepAckRequest:
            return SendHeaderOnly(script, wire::Opcode::kAckRequest);
        case kStepDisconnect:
            return SendHeaderOnly(script, wire::Opcode::kDisconnect);
        case kStepRawBytes:
            return SendRawBytes(script);
        case kStepFreeHeader:
            return SendFreeHeader(script);
        case kStepProviderPost:
            return ProviderPost(script);
        case kStepProviderDisconnect:
            if (id_)
                id_->Disconnect();
            Unpredictable();  // the provider ends the conversation
            return;
        case kStepDeregister:
            // After the next message's first piece: a payload may be
            // arriving into the region.
            deregister_next_ = true;
            Unpredictable();  // requests to the region now fail
            return;
        case kStepDestroyQp:
            // The same, for the application destroying its queue pair: a
            // READ_RESPONSE arriving then has no WR and no memory to go to.
            destroy_qp_next_ = true;
            Unpredictable();  // the connection is cut
            return;
    }
}

std::vector<uint8_t> Encode(const wire::Header &header) {
    const wire::EncodedHeader encoded = wire::EncodeHeader(header);
    return std::vector<uint8_t>(encoded.begin(), encoded.end());
}

// Fields: depth, private data length, corruption, pieces (2). The
// handshake message this side sends: CONNECT_REQUEST to a passive provider;
// ACCEPT (or REJECT, when the setup says so) to an active one.
void Session::SendConnectRequest(Script &script) {
    const uint8_t depth = script.U8();
    const uint8_t private_length = script.U8() % 72;  // beyond 56 is too long
    const uint8_t corruption = script.U8() % 8;
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::HandshakePrefix prefix;
    prefix.send_queue_depth = depth == 255 ? UINT32_MAX : depth;
    if (corruption == 5)
        prefix.magic ^= 1u << (depth % 32);
    if (corruption == 6)
        prefix.version = static_cast<uint16_t>(wire::kVersion + 1 + depth);
    uint8_t encoded_prefix[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded_prefix);
    std::vector<uint8_t> payload(encoded_prefix, encoded_prefix + sizeof(encoded_prefix));
    payload.resize(payload.size() + private_length);
    FillPattern(payload.data() + sizeof(encoded_prefix), private_length, depth);

    wire::Header header;
    header.opcode = active_ ? wire::Opcode::kAccept : wire::Opcode::kConnectRequest;
    header.length = static_cast<uint32_t>(payload.size());
    if (corruption == 7)
        header.length = depth;  // the payload that follows is not what it says
    if (active_ && reject_)
        header = wire::Header{.opcode = wire::Opcode::kReject};
    std::vector<uint8_t> bytes = Encode(header);
    if (header.opcode != wire::Opcode::kReject)
        bytes.insert(bytes.end(), payload.begin(), payload.end());

    if (active_ && predictable_ && !Ended()) {
        // The application's Connect sent its request at once.
        FUZZ_CHECK(WaitUntil([&] { return request_seen_ || Ended(); }, kBoundMs));
    }
    const bool correct = corruption < 5 && private_length <= wire::kMaxPrivateData && depth > 0 &&
                         header.opcode != wire::Opcode::kReject;
    const size_t expected_messages = active_ ? 1 : 0;
    if (!correct || request_sent_ || provider_messages_ != expected_messages)
        Unpredictable();
    request_sent_ = true;
    declared_depth_ = std::min<uint32_t>(prefix.send_queue_depth, kQueueDepth);
    Deliver(bytes, first_piece, other_pieces);
    if (active_) {
        handshake_done_ = true;  // the provider answers with READY_TO_USE
    } else if (predictable_ && !Ended()) {
        // A correct request is answered: the application takes it at once.
        FUZZ_CHECK(WaitUntil([&] { return accept_seen_ || Ended(); }, kBoundMs));
    }
}

// Fields: pieces (2). READY_TO_USE, ACK_REQUEST and DISCONNECT.
void Session::SendHeaderOnly(Script &script, wire::Opcode opcode) {
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    wire::Header header;
    header.opcode = opcode;
    if (opcode == wire::Opcode::kReadyToUse) {
        if (active_ || !accept_seen_ || handshake_done_)
            Unpredictable();
        handshake_done_ = true;
    } else if (opcode == wire::Opcode::kDisconnect) {
        Unpredictable();
    } else if (!handshake_done_) {
        Unpredictable();
    }
    Deliver(Encode(header), first_piece, other_pieces);
}

uint64_t TargetAddress(const GuardedMemory &target, uint8_t mode, uint16_t offset, uint64_t length,
                       uint32_t raw) {
    const uint64_t start = target.addr();
    const uint64_t end = target.addr(target.size());
    switch (mode % 8) {
        case 4:  // ending exactly at the end
            return end - std::min<uint64_t>(length, target.size());
        case 5:  // ending just past the end
            return end - std::min<uint64_t>(length, target.size()) + 1 + offset % 8;
        case 6:  // starting just before the start
            return start - 1 - offset % 64;
        case 7:  // anywhere, wrap-around included
            return (static_cast<uint64_t>(raw) << 32 | offset) ^ (raw & 1 ? start : ~0ull);
        default:
            return start + (mode % 8 < 2 ? offset : offset * 4ull) % target.size();
    }
}

uint32_t RequestLength(wire::Opcode opcode, uint8_t mode, uint16_t raw) {
    if (opcode == wire::Opcode::kAtomicWrite && mode % 8 < 6)
        return wire::kAtomicWriteSize;
    if ((opcode == wire::Opcode::kSend || opcode == wire::Opcode::kSendWithImm) && mode % 8 < 6)
        return raw % (2 * kReceiveSize);
    switch (mode % 8) {
        case 4:
            return 0;
        case 5:
            return 8;
        case 6:
            return kTargetSize;
        case 7: {
            constexpr uint32_t kLarge[] = {kTargetSize + 1, 1u << 31, (1u << 31) + 1, UINT32_MAX};
            return kLarge[raw % 4];
        }
        default:
            return (mode % 8 < 2 ? raw : raw * 4u) % (kTargetSize + 1);
    }
}

// Fields: sequence mode, raw sequence (2), key mode, raw key (4), address
// mode, offset (2), length mode, raw length (2), flags, immediate (4),
// payload seed, pieces (2).
void Session::SendRequest(Script &script, wire::Opcode opcode) {
    const uint8_t sequence_mode = script.U8();
    const uint16_t raw_sequence = script.U16();
    const uint8_t key_mode = script.U8();
    const uint32_t raw_key = script.U32();
    const uint8_t address_mode = script.U8();
    const uint16_t offset = script.U16();
    const uint8_t length_mode = script.U8();
    const uint16_t raw_length = script.U16();
    const uint8_t flags = script.U8();
    const uint32_t imm = script.U32();
    const uint8_t payload_seed = script.U8();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::Header header;
    header.opcode = opcode;
    header.imm = imm;
    if (sequence_mode < 224) {
        header.sequence = next_sequence_;
    } else {
        const uint64_t wrong[] = {next_sequence_ + 1, next_sequence_ - 1, 0, raw_sequence};
        header.sequence = wrong[sequence_mode % 4];
    }
    const uint32_t target_rkey = target_mr_ ? target_mr_->Rkey() : raw_key;
    header.rkey = key_mode < 208 ? target_rkey : key_mode < 232 ? local_mr_->Rkey() : raw_key;
    header.length = RequestLength(opcode, length_mode, raw_length);
    const bool sends = opcode == wire::Opcode::kSend || opcode == wire::Opcode::kSendWithImm;
    header.remote_addr =
        sends ? 0 : TargetAddress(p_.target, address_mode, offset, header.length, raw_key);

    // Flags: what the opcode allows, else (1 in 8) anything.
    bool flags_correct = true;
    if ((flags & 0x70) == 0x70) {
        header.flags = static_cast<uint8_t>(raw_key >> 8);
        flags_correct = false;
    } else {
        header.flags = flags & wire::kAckRequested;
        if (opcode == wire::Opcode::kFlush) {
            constexpr uint8_t kTypes[] = {wire::kFlushPersistent, wire::kFlushVisibility, 0, 3};
            header.flags |= kTypes[(flags >> 1) % 4];
            flags_correct = (flags >> 1) % 4 < 2;
        }
        if (sends && (flags & 0x08)) {
            header.flags |= wire::kCarriesAck;
            header.remote_addr =
                provider_requests_.empty() ? raw_sequence : provider_requests_.back().sequence;
            flags_correct = false;  // whether it acknowledges well is the provider's to judge
        }
    }

    // Would a correct target apply it? Anything unsure ends the model.
    const uint64_t start = p_.target.addr();
    const bool in_region = header.remote_addr >= start && header.length > 0 &&
                           header.remote_addr - start <=
                               kTargetSize - std::min<uint64_t>(header.length, kTargetSize) &&
                           header.length <= kTargetSize;
    bool valid = handshake_done_ && header.sequence == next_sequence_ && flags_correct;
    switch (opcode) {
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            valid = valid && header.length <= kReceiveSize;
            break;
        case wire::Opcode::kAtomicWrite:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_ &&
                    header.length == wire::kAtomicWriteSize && header.remote_addr % 8 == 0;
            break;
        case wire::Opcode::kReadRequest:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_ &&
                    reads_.size() < declared_depth_;
            break;
        default:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_;
            break;
    }
    if (opcode == wire::Opcode::kWriteWithImm)
        valid = valid && receives_ > 0;
    if (header.sequence == next_sequence_)
        ++next_sequence_;
    if (!valid)
        Unpredictable();

    std::vector<uint8_t> bytes = Encode(header);
    const uint32_t payload_length = wire::PayloadLength(header);
    const size_t sent_payload = std::min<size_t>(payload_length, kMaxPayloadSent);
    if (sent_payload < payload_length)
        Unpredictable();
    const size_t header_end = bytes.size();
    bytes.resize(header_end + sent_payload);
    FillPattern(bytes.data() + header_end, sent_payload, payload_seed);

    if (predictable_) {
        const size_t at = header.remote_addr - start;
        if (opcode == wire::Opcode::kWrite || opcode == wire::Opcode::kWriteWithImm ||
            opcode == wire::Opcode::kAtomicWrite) {
            memcpy(shadow_.data() + at, bytes.data() + header_end, header.length);
            for (OutstandingRead &read : reads_)
                read.tainted = true;  // answered from memory as the queue gets to it
        } else if (opcode == wire::Opcode::kReadRequest) {
            reads_.push_back(
                {header.sequence, header.length,
                 std::vector<uint8_t>(shadow_.begin() + at, shadow_.begin() + at + header.length),
                 false});
        }
        if (opcode != wire::Opcode::kWrite && opcode != wire::Opcode::kAtomicWrite &&
            opcode != wire::Opcode::kReadRequest && opcode != wire::Opcode::kFlush) {
            const bool with_payload = opcode != wire::Opcode::kWriteWithImm;
            receives_expected_.push_back(
                {opcode, header.length, header.imm,
                 with_payload ? std::vector<uint8_t>(bytes.begin() + header_end, bytes.end())
                              : std::vector<uint8_t>()});
        }
    }
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: sequence mode, raw (4), pieces (2). ACK, NAK and READ_RESPONSE
// answer the provider's own requests (ProviderPost).
void Session::SendAnswer(Script &script, wire::Opcode opcode) {
    const uint8_t mode = script.U8();
    const uint32_t raw = script.U32();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::Header header;
    header.opcode = opcode;
    const ProviderRequest *oldest_read = nullptr;
    for (const ProviderRequest &request : provider_requests_)
        if (request.opcode == wire::Opcode::kReadRequest) {
            oldest_read = &request;
            break;
        }
    const uint64_t last = provider_requests_.empty() ? 0 : provider_requests_.back().sequence;
    const uint64_t right = opcode == wire::Opcode::kReadResponse && oldest_read != nullptr
                               ? oldest_read->sequence
                               : last;
    header.sequence = mode < 192 ? right : mode % 2 ? right + 1 + raw % 4 : raw;
    if (opcode == wire::Opcode::kNak)
        header.rkey = raw % (IBV_WC_TM_RNDV_INCOMPLETE + 2);  // the status to report
    if (opcode == wire::Opcode::kReadResponse) {
        const uint32_t length = oldest_read != nullptr ? oldest_read->length : raw % 256;
        header.length = mode % 8 == 7   ? length + 1
                        : mode % 8 == 6 ? raw % (kLocalSize + 2)
                                        : length;
    }
    if (opcode == wire::Opcode::kAck) {
        // The provider's requests it answers are done; READs stay until
        // their responses come.
        std::erase_if(provider_requests_, [&](const ProviderRequest &request) {
            return request.sequence <= header.sequence &&
                   request.opcode != wire::Opcode::kReadRequest;
        });
    } else if (opcode == wire::Opcode::kReadResponse && oldest_read != nullptr &&
               header.sequence == oldest_read->sequence) {
        provider_requests_.erase(provider_requests_.begin() +
                                 (oldest_read - provider_requests_.data()));
    }
    if (!handshake_done_)
        Unpredictable();

    std::vector<uint8_t> bytes = Encode(header);
    const size_t payload = std::min<size_t>(wire::PayloadLength(header), kMaxPayloadSent);
    const size_t header_end = bytes.size();
    bytes.resize(header_end + payload);
    FillPattern(bytes.data() + header_end, payload, raw);
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: length, bytes, pieces (2).
void Session::SendRawBytes(Script &script) {
    std::vector<uint8_t> bytes(script.U8());
    for (uint8_t &byte : bytes)
        byte = script.U8();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    Unpredictable();
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: opcode, flags, length (4), address (8 as 2 x 4), rkey (4), imm
// (4), sequence (4), reserved byte index and value, payload length, pieces
// (2). Whatever ParseHeader makes of it.
void Session::SendFreeHeader(Script &script) {
    wire::Header header;
    header.opcode = static_cast<wire::Opcode>(script.U8());
    header.flags = script.U8();
    header.length = script.U32();
    header.remote_addr = script.U32() | static_cast<uint64_t>(script.U32()) << 32;
    header.rkey = script.U32();
    header.imm = script.U32();
    header.sequence = script.U32();
    const uint8_t reserved_index = script.U8();
    const uint8_t reserved_value = script.U8();
    const uint16_t payload = script.U16();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    std::vector<uint8_t> bytes = Encode(header);
    if (reserved_index % 16 == 0)  // a reserved byte (2, 3 or 32..63) set
        bytes[reserved_index % 2 == 0 ? 2 + reserved_value % 2 : 32 + reserved_value % 32] =
            reserved_value | 1;
    const size_t header_end = bytes.size();
    bytes.resize(header_end + payload);
    FillPattern(bytes.data() + header_end, payload, header.rkey);
    Unpredictable();
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: kind, offset, length (2), signaled. The application posts a work
// request towards the peer from its local buffers; the peer's answers are
// the ACK, NAK and READ_RESPONSE steps.
void Session::ProviderPost(Script &script) {
    const uint8_t kind = script.U8();
    const uint8_t offset = script.U8();
    const uint16_t raw_length = script.U16();
    const bool signaled = script.U8() & 1;
    if (!id_ || id_->Qp() == nullptr)
        return;
    provider::QueuePair &qp = *id_->Qp();
    const size_t at = static_cast<size_t>(offset) * 64;
    const uint32_t length = static_cast<uint32_t>(raw_length % (kLocalSize / 2 - at + 1));
    ibv_sge sge{p_.local.addr(at), length, local_mr_->Lkey()};
    ibv_send_wr wr{};
    wr.wr_id = next_wr_id_++;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = 0x1000 + raw_length;
    wr.wr.rdma.rkey = 0x5eed;
    switch (kind % 6) {
        case 0:
            wr.opcode = IBV_WR_RDMA_READ;
            break;
        case 1:
            wr.opcode = IBV_WR_RDMA_WRITE;
            break;
        case 2:
            wr.opcode = IBV_WR_SEND;
            break;
        case 3:
            wr.opcode = IBV_WR_SEND_WITH_IMM;
            break;
        case 4:
            qp.PostFlush(
                0x1000, 0x5eed, length,
                kind & 0x80 ? provider::FlushType::kPersistent : provider::FlushType::kVisibility,
                signaled, wr.wr_id);
            return;
        case 5: {
            const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
            qp.PostAtomicWrite(0x1000, 0x5eed, value, signaled, wr.wr_id);
            return;
        }
    }
    qp.PostSend(wr);  // may rightly fail: queue full, not connected
}

// ---------------------------------------------------------------------------
// Transport: pieces, waits, and the provider's side of the conversation.

// The pieces: the first `first_piece` bytes (0: all at once), then pieces of
// other_pieces * 16 + 1 bytes, at most eight in all. A connection reads
// each piece before the next leaves, so that it sees the message split
// that way; the listener only peeks at a request until it is whole (the
// bytes stay unread), so before the application took the request the
// harness only gives the progress thread a moment.
void Session::Deliver(const std::vector<uint8_t> &bytes, uint8_t first_piece,
                      uint8_t other_pieces) {
    size_t sent = 0;
    size_t piece = first_piece == 0 ? bytes.size() : first_piece;
    bool provider_reads = true;
    for (int pieces = 1; sent < bytes.size() && !closed_ && !stalled_; ++pieces) {
        const size_t length =
            pieces == 8 ? bytes.size() - sent : std::min(piece, bytes.size() - sent);
        if (!SendPiece(bytes.data() + sent, length))
            return;
        sent += length;
        piece = static_cast<size_t>(other_pieces) * 16 + 1;
        if (std::exchange(deregister_next_, false))
            target_mr_.reset();
        if (std::exchange(destroy_qp_next_, false) && id_) {
            id_->DestroyQp();
            qp_ready_ = false;  // the CQs stay, with nothing feeding them
            free_receives_.clear();
        }
        if (provider_reads) {
            // A provider that stops reading (for want of a receive, or after
            // an error) gets the rest of the message at once.
            provider_reads =
                WaitUntil([&] { return Ended() || !ProviderHasUnread(); }, id_ ? kConsumeMs : 2);
        }
    }
}

bool Session::SendPiece(const uint8_t *bytes, size_t length) {
    while (length > 0) {
        const ssize_t sent = send(socket_, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent > 0) {
            bytes += sent;
            length -= static_cast<size_t>(sent);
            continue;
        }
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            closed_ = true;  // reset by the provider
            return false;
        }
        const bool writable = WaitUntil(
            [&] {
                pollfd out{socket_, POLLOUT, 0};
                return closed_ || (poll(&out, 1, 0) == 1 && (out.revents & POLLOUT));
            },
            kConsumeMs);
        if (!writable || closed_) {
            // The provider does not read (it may rightly hold a message for
            // want of a receive): the rest of the script is dropped.
            stalled_ = true;
            Unpredictable();
            return false;
        }
    }
    return true;
}

bool Session::ProviderHasUnread() const {
    if (provider_socket_ < 0 || !IsProviderSocket(provider_socket_))
        return false;  // closed (its number may already serve another fd)
    int unread = 0;
    return ioctl(provider_socket_, FIONREAD, &unread) == 0 && unread > 0;
}

// Pumps until `done` or for at most bound_ms; never sleeps: it spins a
// little, then blocks in poll on the fds that announce progress.
bool Session::WaitUntil(const std::function<bool()> &done, int bound_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
    for (int round = 0;; ++round) {
        Pump();
        if (done())
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        if (round >= 8)
            RepostReceives();
        if (round < 64) {
            std::this_thread::yield();
            continue;
        }
        pollfd fds[3] = {{socket_, POLLIN, 0}, {p_.listener->Fd(), POLLIN, 0}, {-1, POLLIN, 0}};
        if (id_)
            fds[2].fd = id_->EventFd();
        poll(fds, 3, 1);
    }
}

void Session::Pump() {
    ReadFromProvider();
    TakeRequest();
    HandleEvents();
    DrainCompletions();
}

void Session::ReadFromProvider() {
    if (closed_ || socket_ < 0)
        return;
    uint8_t buffer[64 << 10];
    for (;;) {
        const ssize_t got = recv(socket_, buffer, sizeof(buffer), MSG_DONTWAIT);
        if (got > 0) {
            inbox_.insert(inbox_.end(), buffer, buffer + got);
            continue;
        }
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            closed_ = true;
        break;
    }
    // Whole messages only; whatever the provider sends must parse.
    size_t at = 0;
    while (inbox_.size() - at >= wire::kHeaderSize) {
        uint8_t raw[wire::kHeaderSize];
        memcpy(raw, inbox_.data() + at, sizeof(raw));
        wire::Header header;
        const wire::ParseError error = wire::ParseHeader(raw, &header);
        if (error != wire::ParseError::kNone)
            fprintf(stderr, "the provider sent a header that does not parse: %s\n",
                    wire::ParseErrorString(error));
        FUZZ_CHECK(error == wire::ParseError::kNone);
        const size_t length = wire::PayloadLength(header);
        if (inbox_.size() - at - wire::kHeaderSize < length)
            break;
        const uint8_t *payload = inbox_.data() + at + wire::kHeaderSize;
        OnProviderMessage(header, std::vector<uint8_t>(payload, payload + length));
        at += wire::kHeaderSize + length;
    }
    inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(at));
}

void Session::OnProviderMessage(const wire::Header &header, const std::vector<uint8_t> &payload) {
    ++provider_messages_;
    if (predictable_ && provider_messages_ == 1) {
        // An active side speaks first to ask, a passive one to answer.
        if (active_)
            FUZZ_CHECK(header.opcode == wire::Opcode::kConnectRequest);
        else
            FUZZ_CHECK(header.opcode == wire::Opcode::kAccept ||
                       header.opcode == wire::Opcode::kReject);
    }
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            request_seen_ = true;
            if (predictable_) {
                wire::HandshakePrefix prefix;
                FUZZ_CHECK(wire::ParseHandshakePrefix(payload.data(), payload.size(), &prefix));
            }
            return;
        case wire::Opcode::kAccept:
            accept_seen_ = true;
            if (predictable_) {
                wire::HandshakePrefix prefix;
                FUZZ_CHECK(wire::ParseHandshakePrefix(payload.data(), payload.size(), &prefix));
            }
            return;
        case wire::Opcode::kReject:
        case wire::Opcode::kNak:
        case wire::Opcode::kDisconnect:
            provider_ended_ = true;
            return;
        case wire::Opcode::kAck:
            ++ack_messages_;
            if (predictable_) {
                FUZZ_CHECK(header.sequence < next_sequence_);      // names a request sent
                FUZZ_CHECK(header.sequence >= last_ack_message_);  // cumulative
            }
            last_ack_message_ = header.sequence;
            acked_ = std::max(acked_, header.sequence);
            return;
        case wire::Opcode::kReadResponse:
            if (predictable_) {
                // Answers the oldest READ, with the region's bytes.
                FUZZ_CHECK(!reads_.empty());
                const OutstandingRead &read = reads_.front();
                FUZZ_CHECK(header.sequence == read.sequence);
                FUZZ_CHECK(payload.size() == read.length);
                if (!read.tainted)
                    FUZZ_CHECK(memcmp(payload.data(), read.expected.data(), read.length) == 0);
                reads_.pop_front();
            }
            return;
        default:
            break;
    }
    if (wire::IsSend(header.opcode) && (header.flags & wire::kCarriesAck)) {
        if (predictable_)
            FUZZ_CHECK(header.remote_addr < next_sequence_);
        acked_ = std::max(acked_, header.remote_addr);
    }
    if (wire::IsRequest(header.opcode))
        provider_requests_.push_back({header.sequence, header.opcode, header.length});
}

void Session::TakeRequest() {
    std::unique_ptr<provider::CmId> id;
    if (p_.listener->NextRequest(&id) != 0)
        return;
    // A request whose peer is not this input's socket was completed by an
    // earlier input's after that one ended: refused, as it is nobody's.
    sockaddr_storage peer{};
    const auto *peer_in = reinterpret_cast<const sockaddr_in *>(&peer);
    if (active_ || id->PeerAddress(&peer) != 0 || peer.ss_family != AF_INET ||
        peer_in->sin_port != local_address_.sin_port ||
        peer_in->sin_addr.s_addr != local_address_.sin_addr.s_addr) {
        id->Reject();
        return;
    }
    if (id_) {
        FUZZ_CHECK(!predictable_);  // one connection, one request
        id->Reject();
        return;
    }
    id_ = std::move(id);
    if (reject_) {
        id_->Reject();
        Unpredictable();
        return;
    }
    CreateQp();
    const uint8_t private_data[] = {'f', 'u', 'z', 'z'};
    id_->Accept(private_data, sizeof(private_data));
}

void Session::CreateQp() {
    FUZZ_CHECK(p_.device->CreateCq(kCqSize, nullptr, &send_cq_) == 0);
    FUZZ_CHECK(p_.device->CreateCq(kCqSize, nullptr, &recv_cq_) == 0);
    provider::QueuePairInit init;
    init.send_cq = send_cq_.get();
    init.recv_cq = recv_cq_.get();
    init.sq_size = kQueueDepth;
    init.rq_size = kReceives;
    FUZZ_CHECK(id_->CreateQp(*p_.pd, init) == 0);
    for (uint64_t i = 0; i < receives_; ++i)
        PostReceive(i);
    qp_ready_ = true;
}

void Session::PostReceive(uint64_t index) {
    ibv_sge sge{p_.local.addr(kLocalSize / 2 + index * kReceiveSize), kReceiveSize,
                local_mr_->Lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    id_->Qp()->PostRecv(wr);
}

// Messages arrive in order, each where its receive's buffer is, whole.
void Session::CheckReceive(const ibv_wc &wc) {
    FUZZ_CHECK(!receives_expected_.empty());
    const ExpectedReceive &expected = receives_expected_.front();
    FUZZ_CHECK(wc.byte_len == expected.length);
    const bool with_imm = expected.opcode != wire::Opcode::kSend;
    FUZZ_CHECK(((wc.wc_flags & IBV_WC_WITH_IMM) != 0) == with_imm);
    if (with_imm)
        FUZZ_CHECK(wc.imm_data == expected.imm);
    if (expected.opcode == wire::Opcode::kWriteWithImm) {
        FUZZ_CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    } else {
        FUZZ_CHECK(wc.opcode == IBV_WC_RECV);
        const uint8_t *buffer = p_.local.data() + kLocalSize / 2 + wc.wr_id * kReceiveSize;
        FUZZ_CHECK(expected.length == 0 ||
                   memcmp(buffer, expected.payload.data(), expected.length) == 0);
    }
    receives_expected_.pop_front();
}

void Session::RepostReceives() {
    if (!qp_ready_)
        return;
    for (const uint64_t index : free_receives_)
        PostReceive(index);
    free_receives_.clear();
}

void Session::HandleEvents() {
    if (!id_)
        return;
    provider::CmEvent event;
    while (id_->NextEvent(&event) == 0) {
        if (event.type == provider::CmEventType::kEstablished)
            continue;
        // Lost, disconnected or refused: as librpma's rpma_conn_disconnect.
        provider_ended_ = true;
        if (event.type == provider::CmEventType::kDisconnected ||
            event.type == provider::CmEventType::kConnectError)
            id_->Disconnect();
    }
}

void Session::DrainCompletions() {
    if (!qp_ready_)
        return;
    ibv_wc wc[16];
    while (send_cq_->Poll(16, wc) > 0) {
    }
    for (int n; (n = recv_cq_->Poll(16, wc)) > 0;) {
        for (int i = 0; i < n; ++i) {
            FUZZ_CHECK(wc[i].wr_id < kReceives);
            if (wc[i].status == IBV_WC_SUCCESS) {
                // A message fits its buffer (a WRITE_WITH_IMM's length is
                // the write's, not the buffer's).
                FUZZ_CHECK(wc[i].opcode != IBV_WC_RECV || wc[i].byte_len <= kReceiveSize);
                if (predictable_)
                    CheckReceive(wc[i]);
                free_receives_.push_back(wc[i].wr_id);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Ending: the connection answers or ends, then closes once the peer leaves.

void Session::Finish() {
    if (predictable_ && handshake_done_ && !Ended() && !stalled_) {
        // A correct conversation so far: an ACK_REQUEST is answered with an
        // ACK of every request, or the connection ends.
        wire::Header header;
        header.opcode = wire::Opcode::kAckRequest;
        const std::vector<uint8_t> bytes = Encode(header);
        const uint64_t before = ack_messages_;
        if (SendPiece(bytes.data(), bytes.size())) {
            const bool answered = WaitUntil(
                [&] { return Ended() || (ack_messages_ > before && acked_ + 1 >= next_sequence_); },
                kBoundMs);
            if (!answered)
                fprintf(stderr, "no ACK and no end within %d ms after an ACK_REQUEST\n", kBoundMs);
            FUZZ_CHECK(answered);
            if (predictable_ && !Ended())
                FUZZ_CHECK(memcmp(p_.target.data(), shadow_.data(), shadow_.size()) == 0);
        }
    }
    // The peer leaves; the provider must close its socket.
    shutdown(socket_, SHUT_WR);
    if (!WaitUntil([&] { return closed_; }, kBoundMs) && id_) {
        // Established: the application drops its id, which cuts it.
        id_.reset();
        WaitUntil([&] { return closed_; }, kBoundMs);
    }
    if (!closed_)
        fprintf(stderr, "the provider kept the socket after the peer and the application left\n");
    FUZZ_CHECK(closed_);
    if (getenv("TCP_CONNECTION_FUZZER_VERBOSE") != nullptr)
        fprintf(stderr,
                "conversation: %s, handshake %s, %llu requests, acked %llu, %zu messages from "
                "the provider%s%s\n",
                predictable_ ? "correct" : "not a correct peer's",
                handshake_done_ ? "done" : "not done",
                static_cast<unsigned long long>(next_sequence_ - 1),
                static_cast<unsigned long long>(acked_), provider_messages_,
                provider_ended_ ? ", the provider ended it" : "", stalled_ ? ", stalled" : "");
}

void Session::TearDown() {
    // The id first: it owns the QP, which uses the CQs.
    id_.reset();
    std::unique_ptr<provider::CmId> late;
    while (p_.listener->NextRequest(&late) == 0)
        late.reset();
    send_cq_.reset();
    recv_cq_.reset();
    target_mr_.reset();
    local_mr_.reset();
    if (socket_ >= 0)
        close(socket_);
}

// ---------------------------------------------------------------------------
// Seeds: each a conversation that reaches a different part of the receive
// path when whole, for mutations to start from.

ScriptWriter &Pieces(ScriptWriter &w, uint8_t first = 0, uint8_t others = 0) {
    return w.U8(first).U8(others);
}

// Passive: CONNECT_REQUEST, READY_TO_USE. Active: ACCEPT.
ScriptWriter Handshake(uint8_t first_piece = 0, bool active = false, uint8_t setup = 0) {
    ScriptWriter w;
    w.U8(setup | (active ? 0x80 : 0));  // 0: accept, every receive posted
    w.U8(kStepConnectRequest).U8(16).U8(8).U8(0);
    Pieces(w, first_piece, 1);
    if (!active) {
        w.U8(kStepReadyToUse);
        Pieces(w);
    }
    return w;
}

// Length mode 0 takes raw_length % (64 KiB + 1); address mode 0 an offset,
// 4 the end of the region less the length.
ScriptWriter &Request(ScriptWriter &w, Step step, uint16_t offset, uint16_t length,
                      uint8_t flags = 0x80, uint8_t first_piece = 0, uint8_t address_mode = 0) {
    w.U8(step).U8(0).U16(0).U8(0).U32(0).U8(address_mode).U16(offset).U8(0).U16(length);
    w.U8(flags);
    w.U32(0x11223344).U8(7);
    return Pieces(w, first_piece, 3);
}

void WriteSeed(const char *dir, const char *name, const ScriptWriter &w) {
    const std::string path = std::string(dir) + "/" + name;
    FILE *file = fopen(path.c_str(), "wb");
    FUZZ_CHECK(file != nullptr);
    FUZZ_CHECK(fwrite(w.Bytes().data(), 1, w.Bytes().size(), file) == w.Bytes().size());
    FUZZ_CHECK(fclose(file) == 0);
}

void WriteSeeds(const char *dir) {
    WriteSeed(dir, "handshake_only", Handshake());
    WriteSeed(dir, "handshake_split", Handshake(5));
    WriteSeed(dir, "active_handshake_split", Handshake(70, true));
    {
        ScriptWriter w = Handshake(0, true);
        Request(w, kStepWrite, 256, 1000);
        Request(w, kStepSend, 0, 64);
        w.U8(kStepProviderPost).U8(0).U8(0).U16(128).U8(1);  // RDMA READ
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 64, 0);
        WriteSeed(dir, "active_requests", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0, 4096);
        Request(w, kStepReadRequest, 0, 4096);
        Request(w, kStepWriteWithImm, 8192, 100, 0x80, 30);
        Request(w, kStepAtomicWrite, 64, 8);
        Request(w, kStepFlush, 0, 8192, 0x80 | 0x02);  // visibility
        Request(w, kStepFlush, 0, 8192, 0x80);         // persistent
        Request(w, kStepSend, 0, 300);
        Request(w, kStepSendWithImm, 0, 4096, 0x80, 64);
        w.U8(kStepAckRequest);
        Pieces(w);
        WriteSeed(dir, "every_request", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0, 0x1234, 0x80, 1, 4);  // up to the region's last byte
        Request(w, kStepReadRequest, 0, 0x1234, 0x80, 7, 4);
        Request(w, kStepWrite, 0, 0x20, 0x80, 0, 5);  // a byte past it
        WriteSeed(dir, "edges_split", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(512).U8(1);  // RDMA READ
        w.U8(kStepProviderPost).U8(1).U8(8).U16(100).U8(1);  // RDMA WRITE
        w.U8(kStepProviderPost).U8(2).U8(0).U16(64).U8(1);   // SEND
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 10, 2);
        w.U8(kStepAck).U8(0).U32(0);
        Pieces(w);
        WriteSeed(dir, "provider_requests_answered", w);
    }
    {
        // The application destroys its QP while the READ's response is
        // arriving (issue #13: once, the progress thread then spun).
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(4096).U8(1);
        w.U8(kStepDestroyQp);
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 100, 40);
        WriteSeed(dir, "qp_destroyed_during_read_response", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(512).U8(1);
        w.U8(kStepNak).U8(0).U32(IBV_WC_REM_ACCESS_ERR);
        Pieces(w);
        WriteSeed(dir, "provider_read_naked", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0x1000, 0x2000);
        // A persistent flush of the whole region (length mode 6): msync on
        // a persist worker, then the WRITE behind it.
        w.U8(kStepFlush).U8(0).U16(0).U8(0).U32(0).U8(0).U16(0).U8(6).U16(0).U8(0x80);
        w.U32(0).U8(0);
        Pieces(w, 0, 0);
        Request(w, kStepWrite, 0x3000, 0x100);
        WriteSeed(dir, "large_persistent_flush", w);
    }
    {
        ScriptWriter w = Handshake(0, false, 0x60);  // a single receive
        Request(w, kStepSend, 0, 2000);
        Request(w, kStepSendWithImm, 0, 10, 0x80, 70);
        Request(w, kStepWriteWithImm, 0, 3000);
        Request(w, kStepSend, 0, 4096);
        WriteSeed(dir, "sends_wait_for_a_receive", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepFlush, 0, 0xffff, 0x80);  // persistent: msync
        w.U8(kStepDeregister);
        Request(w, kStepWrite, 0, 0x8000, 0x80, 100);
        WriteSeed(dir, "deregistered_during_a_write", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepDisconnect);
        Pieces(w);
        WriteSeed(dir, "peer_disconnects", w);
    }
    {
        ScriptWriter w;
        w.U8(0).U8(kStepRawBytes).U8(18);
        for (const char c : std::string("GET / HTTP/1.1\r\n\r\n"))
            w.U8(static_cast<uint8_t>(c));
        Pieces(w, 3, 0);
        WriteSeed(dir, "not_rpma", w);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    if (const char *dir = getenv("TCP_CONNECTION_FUZZER_WRITE_SEEDS")) {
        WriteSeeds(dir);
        exit(0);
    }
    Process::Get();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Script script(data, size);
    Session session(Process::Get());
    session.Run(script);
    return 0;
}
