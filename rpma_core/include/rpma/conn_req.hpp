// rpma::ConnReq: owns an rpma_conn_req, outgoing (New) or incoming
// (Endpoint::Next), until Connect turns it into a Connection. Its Peer must
// outlive it. The destructor deletes it: an incoming request is rejected.
#ifndef RPMA_CORE_INCLUDE_RPMA_CONN_REQ_HPP
#define RPMA_CORE_INCLUDE_RPMA_CONN_REQ_HPP

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "librpma.h"
#include "rpma/conn.hpp"
#include "rpma/conn_cfg.hpp"
#include "rpma/error.hpp"
#include "rpma/mr.hpp"
#include "rpma/owner.hpp"
#include "rpma/peer.hpp"
#include "rpma_ext.h"

namespace rpma {

class ConnReq {
  public:
    ConnReq() = default;
    // Takes ownership of req.
    explicit ConnReq(rpma_conn_req *req) : req_(req) {}

    // An outgoing request to addr:port; Connect sends it.
    static Result<ConnReq> New(Peer &peer, const std::string &addr, const std::string &port,
                               const ConnCfg *cfg = nullptr) {
        rpma_conn_req *req = nullptr;
        detail::Returned made = detail::Check(rpma_conn_req_new(
            peer.get(), addr.c_str(), port.c_str(), cfg ? cfg->get() : nullptr, &req));
        if (made.code != 0)
            return detail::Failure(made, "rpma_conn_req_new", addr + ":" + port);
        return ConnReq(req);
    }

    // What the client sent with an incoming request; valid as long as the
    // request. Empty for an outgoing one.
    Result<std::span<const std::byte>> PrivateData() const {
        rpma_conn_private_data pdata{};
        detail::Returned got = detail::Check(rpma_conn_req_get_private_data(req_.get(), &pdata));
        if (got.code != 0)
            return detail::Failure(got, "rpma_conn_req_get_private_data");
        return std::span<const std::byte>(static_cast<const std::byte *>(pdata.ptr), pdata.len);
    }

    // A receive posted before the connection exists.
    Result<void> Recv(MemoryRegion &dst, size_t offset, size_t len, const void *op_context) {
        return detail::Status(
            detail::Check(rpma_conn_req_recv(req_.get(), dst.get(), offset, len, op_context)),
            "rpma_conn_req_recv");
    }

    // rpma_ext_conn_req_move_to_peer (rpma_ext.h): an incoming request's
    // queue pair is made again in peer's protection domain, so that the
    // connection reaches only memory registered with peer. peer must then
    // outlive the connection.
    // Where the request came from, as "address:port" ("[v6]:port").
    Result<std::string> PeerAddress() const {
        sockaddr_storage address;
        const auto returned = detail::Check(rpma_ext_conn_req_get_peer_addr(req_.get(), &address));
        if (returned.code != 0)
            return detail::Failure(returned, "rpma_ext_conn_req_get_peer_addr");
        char host[INET6_ADDRSTRLEN] = "?";
        uint16_t port = 0;
        if (address.ss_family == AF_INET) {
            const auto &in = reinterpret_cast<const sockaddr_in &>(address);
            inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
            port = ntohs(in.sin_port);
            return std::string(host) + ":" + std::to_string(port);
        }
        const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(address);
        inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
        port = ntohs(in6.sin6_port);
        return "[" + std::string(host) + "]:" + std::to_string(port);
    }

    Result<void> MoveToPeer(Peer &peer) {
        return detail::Status(detail::Check(rpma_ext_conn_req_move_to_peer(req_.get(), peer.get())),
                              "rpma_ext_conn_req_move_to_peer");
    }

    // Connects (outgoing) or accepts (incoming), sending private_data (at
    // most 255 bytes; the transport may allow fewer). The request is consumed
    // whatever the result; wait for RPMA_CONN_ESTABLISHED before using the
    // connection.
    Result<Connection> Connect(std::span<const std::byte> private_data = {}) {
        if (private_data.size() > UINT8_MAX) {
            (void)req_.reset();  // consumed, as rpma_conn_req_connect would
            return Error(RPMA_E_INVAL,
                         "rpma_conn_req_connect: " + std::to_string(private_data.size()) +
                             " bytes of private data (at most 255)");
        }
        rpma_conn_private_data pdata{const_cast<std::byte *>(private_data.data()),
                                     static_cast<uint8_t>(private_data.size())};
        rpma_conn *conn = nullptr;
        detail::Returned connected = detail::Check(
            rpma_conn_req_connect(req_.slot(), private_data.empty() ? nullptr : &pdata, &conn));
        (void)req_.reset();  // rpma_conn_req_connect consumed it; a no-op then
        if (connected.code != 0)
            return detail::Failure(connected, "rpma_conn_req_connect");
        return Connection(conn);
    }

    rpma_conn_req *get() const { return req_.get(); }

  private:
    detail::Owner<rpma_conn_req, rpma_conn_req_delete> req_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_CONN_REQ_HPP
