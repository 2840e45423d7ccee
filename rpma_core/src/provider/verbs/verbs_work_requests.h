// The work requests librpma builds for itself rather than for the caller:
// the fallbacks for FLUSH and ATOMIC WRITE where those are not native.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_WORK_REQUESTS_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_WORK_REQUESTS_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace rpma::provider::verbs {

// How much an APM flush reads (librpma's RAW_SIZE).
inline constexpr size_t kApmReadLength = 8;
// What an atomic write stores; also the inline data every QP must take.
inline constexpr size_t kAtomicWriteLength = 8;

// APM (appliance persistency method) flush: an RDMA READ returns only after
// the responder has placed every earlier RDMA WRITE of the connection, so
// reading kApmReadLength bytes from the start of the flushed range (as
// librpma does, whatever the range's length, 0 included) makes those writes
// visible, and persistent when the target writes straight into its
// persistence domain. `sge` describes the QP's own landing buffer and must
// outlive the post; the completion reports IBV_WC_RDMA_READ with `wr_id`.
ibv_send_wr ApmFlushRead(uint64_t remote_addr, uint32_t rkey, ibv_sge *sge, bool signaled,
                         uint64_t wr_id);

// Atomic write without the native operation (librpma's fallback): an RDMA
// WRITE of 8 bytes to an 8-byte aligned address, which the API layer has
// checked. IBV_SEND_FENCE keeps it behind earlier
// READs (APM flushes), so a flag written this way cannot become visible
// before the data it vouches for is flushed; IBV_SEND_INLINE copies `value`
// at post time, so it needs no registration. `sge` is filled in and must
// outlive the post; the completion reports IBV_WC_RDMA_WRITE.
ibv_send_wr FencedInlineWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                              ibv_sge *sge, bool signaled, uint64_t wr_id);

// Logs a failed ibv_post_* (`err` != 0) with what to do about it, and
// returns `err`. `what` names the request ("a send", "a receive", ...).
int ReportPostFailure(int err, const char *what);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_WORK_REQUESTS_H
