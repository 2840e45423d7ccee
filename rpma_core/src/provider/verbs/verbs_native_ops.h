// Native FLUSH and ATOMIC WRITE work requests, where this build's rdma-core
// can express them.
//
// librpma decides this at configure time by compiling a probe against
// <infiniband/verbs.h>. The names it probes are enumerators and struct
// members, which `#ifdef` cannot see, so the same question is asked here in
// C++: a requires-expression on a dependent name is false, not an error,
// when the installed headers lack that name.
//
// rdma-core 44 (Debian 12) has ibv_wr_atomic_write but neither ibv_wr_flush
// nor the device capability bit that says a device executes atomic writes,
// so both probes fail there and the provider uses librpma's fallbacks: APM
// flush reads and fenced inline writes.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_NATIVE_OPS_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_NATIVE_OPS_H

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::verbs::native {

// The value of enumerator `name` of the unscoped enum `Enum`, or 0 when the
// installed headers do not declare it. (A macro because a name cannot be a
// template argument.)
#define RPMA_VERBS_ENUMERATOR_OR_ZERO(Enum, name)  \
    ([]<typename E = Enum>() constexpr {           \
        if constexpr (requires { E::name; })       \
            return static_cast<uint64_t>(E::name); \
        else                                       \
            return uint64_t{0};                    \
    }())

inline constexpr uint64_t kDeviceCapFlushGlobal =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ib_uverbs_device_cap_flags, IB_UVERBS_DEVICE_FLUSH_GLOBAL);
inline constexpr uint64_t kDeviceCapFlushPersistent =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ib_uverbs_device_cap_flags, IB_UVERBS_DEVICE_FLUSH_PERSISTENT);
inline constexpr uint64_t kDeviceCapAtomicWrite =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ib_uverbs_device_cap_flags, IB_UVERBS_DEVICE_ATOMIC_WRITE);
inline constexpr uint64_t kSendOpsFlush =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ibv_qp_create_send_ops_flags, IBV_QP_EX_WITH_FLUSH);
inline constexpr uint64_t kSendOpsAtomicWrite =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ibv_qp_create_send_ops_flags, IBV_QP_EX_WITH_ATOMIC_WRITE);
inline constexpr uint64_t kAccessFlushGlobal =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ibv_access_flags, IBV_ACCESS_FLUSH_GLOBAL);
inline constexpr uint64_t kAccessFlushPersistent =
    RPMA_VERBS_ENUMERATOR_OR_ZERO(ibv_access_flags, IBV_ACCESS_FLUSH_PERSISTENT);

template <typename QpEx>
concept HasWrFlush = requires(QpEx *qp) {
    qp->wr_flush;
};

template <typename QpEx>
concept HasWrAtomicWrite = requires(QpEx *qp) {
    qp->wr_atomic_write;
};

// Whether this build can post the operation at all; a device must also
// report it (see Capabilities).
inline constexpr bool kBuildHasFlush = HasWrFlush<ibv_qp_ex> && kSendOpsFlush != 0 &&
                                       kAccessFlushGlobal != 0 && kAccessFlushPersistent != 0 &&
                                       kDeviceCapFlushGlobal != 0 && kDeviceCapFlushPersistent != 0;
inline constexpr bool kBuildHasAtomicWrite =
    HasWrAtomicWrite<ibv_qp_ex> && kSendOpsAtomicWrite != 0 && kDeviceCapAtomicWrite != 0;

// The IBTA FLUSH placement types and selectivity level. rdma-core >= 45
// names them IBV_FLUSH_GLOBAL, IBV_FLUSH_PERSISTENT and IBV_FLUSH_RANGE;
// older headers do not, and this file must compile against both.
inline constexpr uint8_t kPlacementGlobal = 1;
inline constexpr uint8_t kPlacementPersistent = 2;
inline constexpr uint8_t kSelectivityRange = 0;

// ibv_wr_flush of [remote_addr, +length) as librpma posts it. A template so
// that it compiles (to EOPNOTSUPP) where the headers have no wr_flush, and
// so that tests can hand it a fake QP. Returns 0 or an errno.
template <typename QpEx>
int PostFlush(QpEx *qp, uint64_t wr_id, bool signaled, uint32_t rkey, uint64_t remote_addr,
              size_t length, FlushType type) {
    if constexpr (HasWrFlush<QpEx>) {
        qp->wr_start(qp);
        qp->wr_id = wr_id;
        qp->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
        qp->wr_flush(qp, rkey, remote_addr, length,
                     type == FlushType::kPersistent ? kPlacementPersistent : kPlacementGlobal,
                     kSelectivityRange);
        return qp->wr_complete(qp);
    } else {
        return EOPNOTSUPP;
    }
}

// ibv_wr_atomic_write of the 8 bytes at `value`, as librpma posts it:
// without IBV_SEND_FENCE, which only the plain-write fallback needs.
template <typename QpEx>
int PostAtomicWrite(QpEx *qp, uint64_t wr_id, bool signaled, uint32_t rkey, uint64_t remote_addr,
                    const char value[8]) {
    if constexpr (HasWrAtomicWrite<QpEx>) {
        qp->wr_start(qp);
        qp->wr_id = wr_id;
        qp->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
        qp->wr_atomic_write(qp, rkey, remote_addr, value);
        return qp->wr_complete(qp);
    } else {
        return EOPNOTSUPP;
    }
}

}  // namespace rpma::provider::verbs::native

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_NATIVE_OPS_H
