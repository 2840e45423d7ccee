#include "tests/support/free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>

namespace rpma::testing {
namespace {

// The lowest port of the kernel's ephemeral range; Linux's default when the
// setting cannot be read.
uint16_t EphemeralLow() {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    unsigned low = 0;
    if (!(range >> low) || low < 2048 || low > 65535)
        return 32768;
    return static_cast<uint16_t>(low);
}

// Whether a socket can bind `port` on every address (no SO_REUSEADDR: a
// connection in TIME_WAIT there counts as taken).
bool Bindable(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    const bool bound = bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof(address)) == 0;
    close(fd);
    return bound;
}

}  // namespace

uint16_t FreePort() {
    static std::mutex mutex;
    static std::set<uint16_t> handed_out;
    static std::mt19937 random{std::random_device{}()};
    std::lock_guard lock(mutex);
    // The upper half below the range: the lower ports are where services
    // and defaults live (rpmad's 7300 and 7301, etcd's 2379).
    const uint16_t low = EphemeralLow();
    std::uniform_int_distribution<unsigned> draw(low / 2u, low - 1u);
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const auto port = static_cast<uint16_t>(draw(random));
        if (handed_out.count(port) == 0 && Bindable(port)) {
            handed_out.insert(port);
            return port;
        }
    }
    return 0;
}

}  // namespace rpma::testing
