// rpma::ConnCfg: owns an rpma_conn_cfg, the queue sizes, timeout and
// completion-channel mode of a connection. Read when a request is made
// (ConnReq::New, Endpoint::Next); it may go away afterwards. An SRQ set in it
// must outlive the connections made with it.
#ifndef RPMA_CORE_INCLUDE_RPMA_CONN_CFG_HPP
#define RPMA_CORE_INCLUDE_RPMA_CONN_CFG_HPP

#include <cstdint>
#include <string>

#include "librpma.h"
#include "rpma/error.hpp"
#include "rpma/owner.hpp"
#include "rpma/srq.hpp"

namespace rpma {

class ConnCfg {
  public:
    ConnCfg() = default;

    static Result<ConnCfg> New() {
        rpma_conn_cfg *cfg = nullptr;
        detail::Returned made = detail::Check(rpma_conn_cfg_new(&cfg));
        if (made.code != 0)
            return detail::Failure(made, "rpma_conn_cfg_new");
        return ConnCfg(cfg);
    }

    Result<void> SetTimeout(int timeout_ms) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_timeout(cfg_.get(), timeout_ms)),
                              "rpma_conn_cfg_set_timeout", std::to_string(timeout_ms) + " ms");
    }
    Result<void> SetCqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_cq_size(cfg_.get(), size)),
                              "rpma_conn_cfg_set_cq_size", std::to_string(size));
    }
    Result<void> SetRcqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_rcq_size(cfg_.get(), size)),
                              "rpma_conn_cfg_set_rcq_size", std::to_string(size));
    }
    Result<void> SetSqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_sq_size(cfg_.get(), size)),
                              "rpma_conn_cfg_set_sq_size", std::to_string(size));
    }
    Result<void> SetRqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_rq_size(cfg_.get(), size)),
                              "rpma_conn_cfg_set_rq_size", std::to_string(size));
    }
    // One channel for the CQ and the RCQ (Connection::Wait, CompletionFd).
    Result<void> SetSharedCompletionChannel(bool shared) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_compl_channel(cfg_.get(), shared)),
                              "rpma_conn_cfg_set_compl_channel");
    }
    // Receives come from srq (librpma has no way to unset it: use another
    // ConnCfg for connections without an SRQ).
    Result<void> SetSrq(const Srq &srq) {
        return detail::Status(detail::Check(rpma_conn_cfg_set_srq(cfg_.get(), srq.get())),
                              "rpma_conn_cfg_set_srq");
    }

    rpma_conn_cfg *get() const { return cfg_.get(); }

  private:
    explicit ConnCfg(rpma_conn_cfg *cfg) : cfg_(cfg) {}

    detail::Owner<rpma_conn_cfg, rpma_conn_cfg_delete> cfg_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_CONN_CFG_HPP
