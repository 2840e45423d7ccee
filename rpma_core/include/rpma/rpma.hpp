// The C++ layer over librpma (librpma.h) and rpma_core's extensions
// (rpma_ext.h): one RAII owner per C object, move-only, errors as values
// (error.hpp). It wraps the C calls one to one; get() on every object gives
// the C pointer for calls it does not cover.
//
// Lifetimes follow the C API: a Peer outlives its MemoryRegions, Srqs,
// Endpoints, ConnReqs and Connections; a Connection outlives the views of its
// CompletionQueues; memory an operation uses outlives its completion.
#ifndef RPMA_CORE_INCLUDE_RPMA_RPMA_HPP
#define RPMA_CORE_INCLUDE_RPMA_RPMA_HPP

#include "rpma/conn.hpp"
#include "rpma/conn_cfg.hpp"
#include "rpma/conn_req.hpp"
#include "rpma/cq.hpp"
#include "rpma/ep.hpp"
#include "rpma/error.hpp"
#include "rpma/mr.hpp"
#include "rpma/peer.hpp"
#include "rpma/peer_cfg.hpp"
#include "rpma/srq.hpp"

#endif  // RPMA_CORE_INCLUDE_RPMA_RPMA_HPP
