#include "rpma_core/src/devices.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"

namespace {

enum class ProviderChoice { kAuto, kVerbs, kTcp, kInvalid };

ProviderChoice ChosenProvider() {
    const char *env = getenv("RPMA_PROVIDER");
    std::string_view value = env ? env : "auto";
    if (value == "auto" || value.empty())
        return ProviderChoice::kAuto;
    if (value == "verbs")
        return ProviderChoice::kVerbs;
    if (value == "tcp")
        return ProviderChoice::kTcp;
    return ProviderChoice::kInvalid;
}

// The tcp provider serves an address it can bind (local) or resolve (remote).
bool TcpServes(const char *addr, enum rpma_util_ibv_context_type type) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = type == RPMA_UTIL_IBV_CONTEXT_LOCAL ? AI_PASSIVE : 0;
    addrinfo *found = nullptr;
    int err = getaddrinfo(addr, nullptr, &hints, &found);
    if (err != 0) {
        RPMA_LOG_ERROR("cannot resolve address '%s': %s", addr, gai_strerror(err));
        return false;
    }
    bool serves = type == RPMA_UTIL_IBV_CONTEXT_REMOTE;
    for (addrinfo *ai = found; ai != nullptr && !serves; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        serves = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(found);
    if (!serves)
        RPMA_LOG_ERROR("address '%s' is not an address of this host", addr);
    return serves;
}

}  // namespace

namespace rpma {

int LookupContext(const char *addr, enum rpma_util_ibv_context_type type, ibv_context **ctx) {
    ProviderChoice choice = ChosenProvider();
    switch (choice) {
        case ProviderChoice::kInvalid:
            RPMA_LOG_ERROR("RPMA_PROVIDER='%s' is not one of auto, verbs, tcp",
                           getenv("RPMA_PROVIDER"));
            return RPMA_E_INVAL;
        case ProviderChoice::kVerbs:
        case ProviderChoice::kAuto: {
            int err = provider::verbs::LookupDevice(addr, type == RPMA_UTIL_IBV_CONTEXT_LOCAL, ctx);
            if (err == 0)
                return 0;
            // auto falls back to tcp only when no RDMA device serves the
            // address; a device that fails is an error worth seeing.
            if (err != ENODEV || choice == ProviderChoice::kVerbs) {
                RPMA_LOG_ERROR("no RDMA device can be used for '%s'%s", addr,
                               choice == ProviderChoice::kVerbs
                                   ? " (RPMA_PROVIDER=verbs; unset it to fall back to tcp)"
                                   : "");
                return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
            }
            break;
        }
        case ProviderChoice::kTcp:
            break;
    }
    if (!TcpServes(addr, type))
        return RPMA_E_PROVIDER;
    *ctx = provider::tcp::GetDevice().Context();
    return 0;
}

provider::Device *FindDevice(ibv_context *ctx) {
    if (provider::tcp::OwnsContext(ctx))
        return &provider::tcp::GetDevice();
    return provider::verbs::DeviceFor(ctx);
}

}  // namespace rpma
