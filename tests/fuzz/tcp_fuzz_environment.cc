// The process-wide environment of the tcp connection fuzzer (see
// tcp_fuzz_environment.h): its one-time setup and the payload filler.

#include "tests/fuzz/tcp_fuzz_environment.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"

namespace tcp_fuzz {

namespace tcp = rpma::provider::tcp;

Process::Process() {
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
    FUZZ_CHECK(bind(peer_listener, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0);
    FUZZ_CHECK(listen(peer_listener, 16) == 0);
    socklen_t length = sizeof(address);
    FUZZ_CHECK(getsockname(peer_listener, reinterpret_cast<sockaddr *>(&address), &length) == 0);
    peer_port = ntohs(address.sin_port);
}

void FillPattern(uint8_t *out, size_t length, uint32_t seed) {
    uint32_t state = seed * 2654435761u + 1;
    for (size_t i = 0; i < length; ++i) {
        state = state * 1103515245u + 12345u;
        out[i] = static_cast<uint8_t>(state >> 24);
    }
}

}  // namespace tcp_fuzz
