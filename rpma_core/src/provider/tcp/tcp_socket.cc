#include "rpma_core/src/provider/tcp/tcp_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

struct AddrinfoDeleter {
    void operator()(addrinfo *info) const { freeaddrinfo(info); }
};

}  // namespace

std::string SocketAddress::ToString() const {
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (Family() == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&storage);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    if (Family() == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&storage);
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    return "[" + std::string(host) + "]:" + std::to_string(port);
}

int ResolveAddresses(const char *addr, const char *port, bool passive,
                     std::vector<SocketAddress> *addresses) {
    if (addr == nullptr || port == nullptr) {
        RPMA_LOG_ERROR("cannot resolve: address and port are required");
        return EINVAL;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo *raw = nullptr;
    const int rc = getaddrinfo(addr, port, &hints, &raw);
    std::unique_ptr<addrinfo, AddrinfoDeleter> result(raw);
    if (rc != 0) {
        RPMA_LOG_ERROR("cannot resolve %s port %s: %s", addr, port, gai_strerror(rc));
        switch (rc) {
            case EAI_NONAME:
            case EAI_AGAIN:
            case EAI_FAIL:
#ifdef EAI_NODATA
            case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
            case EAI_ADDRFAMILY:
#endif
                return EHOSTUNREACH;
            case EAI_MEMORY:
                return ENOMEM;
            default:
                return EINVAL;
        }
    }
    addresses->clear();
    for (const addrinfo *info = result.get(); info != nullptr; info = info->ai_next) {
        if (info->ai_addrlen > sizeof(sockaddr_storage))
            continue;
        SocketAddress address;
        memcpy(&address.storage, info->ai_addr, info->ai_addrlen);
        address.length = info->ai_addrlen;
        addresses->push_back(address);
    }
    if (addresses->empty()) {
        RPMA_LOG_ERROR("cannot resolve %s port %s: no TCP address", addr, port);
        return EHOSTUNREACH;
    }
    return 0;
}

int SetNoDelay(int fd) {
    const int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        return errno;
    return 0;
}

int OpenStreamSocket(int family, UniqueFd *socket_fd) {
    UniqueFd fd(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
    if (!fd.Valid()) {
        const int err = errno;
        RPMA_LOG_ERROR("cannot create a TCP socket: %s", strerror(err));
        return err;
    }
    if (const int err = SetNoDelay(fd.Get()); err != 0) {
        RPMA_LOG_ERROR("cannot set TCP_NODELAY: %s", strerror(err));
        return err;
    }
    *socket_fd = std::move(fd);
    return 0;
}

uint16_t LocalPort(int fd) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&storage), &length) != 0)
        return 0;
    if (storage.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(&storage)->sin_port);
    if (storage.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&storage)->sin6_port);
    return 0;
}

}  // namespace rpma::provider::tcp
