#include "rpma_core/src/provider/verbs/verbs_address.h"

#include <netdb.h>

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::verbs {

int AddressInfoError(int ret, int saved_errno) {
    switch (ret) {
        case 0:
            return 0;
        case -1:
            // librdmacm's ERR(): errno is set. (EAI_BADFLAGS is -1 too, but
            // the hints used here are always valid.)
            return saved_errno != 0 ? saved_errno : EINVAL;
        case EAI_SYSTEM:
            return saved_errno != 0 ? saved_errno : EIO;
        case EAI_MEMORY:
            return ENOMEM;
        default:
            // EAI_NONAME, EAI_AGAIN, EAI_FAIL, EAI_SERVICE, ...: the name
            // does not lead to a usable address.
            return EADDRNOTAVAIL;
    }
}

int ResolveAddress(const char *addr, const char *port, AddressSide side,
                   Owned<rdma_addrinfo> *info) {
    rdma_addrinfo hints{};
    hints.ai_flags = side == AddressSide::kPassive ? RAI_PASSIVE : 0;
    hints.ai_qp_type = IBV_QPT_RC;
    hints.ai_port_space = RDMA_PS_TCP;
    rdma_addrinfo *found = nullptr;
    errno = 0;
    int ret = rdma_getaddrinfo(addr, port, &hints, &found);
    int err = AddressInfoError(ret, errno);
    if (err == 0) {
        info->reset(found);
        return 0;
    }
    const char *why = ret == -1 || ret == EAI_SYSTEM ? strerror(err) : gai_strerror(ret);
    if (err == EADDRNOTAVAIL)
        RPMA_LOG_ERROR(
            "cannot resolve address '%s' port '%s': %s (give an IP address or a "
            "host name this host can resolve, and a port number)",
            addr, port ? port : "(none)", why);
    else
        RPMA_LOG_ERROR("rdma_getaddrinfo('%s', '%s') failed: %s", addr, port ? port : "(none)",
                       why);
    return err;
}

}  // namespace rpma::provider::verbs
