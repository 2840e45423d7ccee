// What the writer and the verifier share: where the daemon in the VM is
// reached from the host, the region names, and the files of the state
// directory (the ack logs, on the host, outside the VM).
#ifndef TESTS_POWERCUT_HARNESS_STATE_H
#define TESTS_POWERCUT_HARNESS_STATE_H

#include <cstdint>
#include <string>

#include "rpma/client/replica_set.h"

namespace powercut {

// The region every cycle appends its records to.
inline constexpr char kRecordsRegion[] = "records";

// Where rpmad is reached: its control plane and its data plane, both
// forwarded by qemu to 127.0.0.1 ports (the daemon itself names its guest
// address, which the host cannot reach).
struct Endpoints {
    std::string control;
    std::string data;

    rpma::client::ReplicaSet Set() const {
        rpma::client::ReplicaSet set;
        set.addresses = {control};
        set.data_addresses = {data};
        return set;
    }
};

// Every cycle's records: R lines (ack_log.h).
inline std::string RecordsLog(const std::string &state_dir) {
    return state_dir + "/records.log";
}

// Cycle c's region creates and deletes: C+, C, D+, D lines.
inline std::string ChurnLog(const std::string &state_dir, uint32_t cycle) {
    return state_dir + "/churn-" + std::to_string(cycle) + ".log";
}

}  // namespace powercut

#endif  // TESTS_POWERCUT_HARNESS_STATE_H
