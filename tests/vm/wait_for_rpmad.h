// Waiting for an rpmad that is still booting in a VM, for the host-side
// clients of the VM harnesses (tests/powercut, tests/pmem_vm).
#ifndef TESTS_VM_WAIT_FOR_RPMAD_H
#define TESTS_VM_WAIT_FOR_RPMAD_H

#include <grpcpp/grpcpp.h>

#include <string>

#include "proto/rpmad/v1/rpmad.pb.h"

namespace rpma::vm {

// Asks rpmad at `control` for its Stats until it answers or `timeout_s`
// pass. gRPC waits for the connection (wait_for_ready) and reconnects
// quickly (100-250 ms): while the guest boots, qemu accepts the forwarded
// connection and closes it, which gRPC sees as a transient failure.
grpc::Status WaitForRpmad(const std::string &control, int timeout_s, rpmad::v1::Stats *stats);

}  // namespace rpma::vm

#endif  // TESTS_VM_WAIT_FOR_RPMAD_H
