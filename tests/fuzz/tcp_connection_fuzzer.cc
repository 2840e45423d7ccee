// The tcp provider's receive path, one connection per input: the harness is
// the peer on a loopback socket, the provider a passive connection of a real
// listener (or, for one input in two, an active one that connects to the
// harness) that serves a registered region between PROT_NONE guard pages.
//
// The input is a script, not a byte stream (see tcp_fuzz_script.h): each step is
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
//
// The harness's parts: tcp_fuzz_script.{h,cc} (the input format and the
// seeds), tcp_fuzz_environment.{h,cc} (the process-wide device, listener
// and guarded memory), tcp_fuzz_session.h (one connection) with
// tcp_fuzz_steps.cc, tcp_fuzz_transport.cc and tcp_fuzz_checks.cc. This
// file sets a connection up and tears it down, and is libFuzzer's entry.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tcp_fuzz_session.h"

namespace tcp_fuzz {

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

}  // namespace tcp_fuzz

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    if (const char *dir = getenv("TCP_CONNECTION_FUZZER_WRITE_SEEDS")) {
        tcp_fuzz::WriteSeeds(dir);
        exit(0);
    }
    tcp_fuzz::Process::Get();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tcp_fuzz::Script script(data, size);
    tcp_fuzz::Session session(tcp_fuzz::Process::Get());
    session.Run(script);
    return 0;
}
