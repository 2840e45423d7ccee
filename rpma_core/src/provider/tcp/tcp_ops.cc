#include "rpma_core/src/provider/tcp/tcp_ops.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"

namespace rpma::provider::tcp {
namespace {

// One device serves every address the host can bind (local) or resolve
// (remote).
int Lookup(const char *addr, bool local, ibv_context **ctx) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = local ? AI_PASSIVE : 0;
    addrinfo *found = nullptr;
    const int err = getaddrinfo(addr, nullptr, &hints, &found);
    if (err != 0) {
        RPMA_LOG_ERROR("cannot resolve address '%s': %s", addr, gai_strerror(err));
        return err == EAI_MEMORY ? ENOMEM : EHOSTUNREACH;
    }
    bool serves = !local;
    for (addrinfo *ai = found; ai != nullptr && !serves; ai = ai->ai_next) {
        const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        serves = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(found);
    if (!serves) {
        RPMA_LOG_ERROR("address '%s' is not an address of this host", addr);
        return EADDRNOTAVAIL;
    }
    *ctx = GetDevice().Context();
    return 0;
}

provider::Device *DeviceOf(ibv_context *ctx) {
    return OwnsContext(ctx) ? &GetDevice() : nullptr;
}

// The target persists every flushed range itself (tcp_persist.h), and
// registering pins nothing: any mapping, DAX file systems' included, works.
constexpr Ops kOps = {"tcp", Lookup, DeviceOf, /*flush_persists=*/true,
                      /*pins_fsdax_pages=*/true};

}  // namespace

const Ops *ProviderOps() {
    return &kOps;
}

}  // namespace rpma::provider::tcp
