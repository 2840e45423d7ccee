// powercut_writer: the client side of the power-cut harness (README.md),
// run on the host against rpmad in the VM through qemu's forwarded ports.
//
//   powercut_writer wait   --control HOST:PORT [--timeout-s S]
//   powercut_writer write  --control A --data A --state DIR --cycle N
//                          --persistence apm|gpspm --cut-pid PID --cut-after-ms MS
//                          [--churn] [--seed S] [--no-persist]
//   powercut_writer verify --control A --data A --state DIR --cycle N
//
// wait: until rpmad answers (the VM is booting); write: one cycle's records
// until the cut it makes itself (write_cycle.h); verify: the check after a
// cut (verify_boot.h). Exit status 0 on success, 1 on a failure, 2 on a
// wrong command line.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "tests/powercut/verify_boot.h"
#include "tests/powercut/write_cycle.h"
#include "tests/vm/wait_for_rpmad.h"

namespace {

// Waits until rpmad answers on `control` (the VM is booting) and checks
// that it is on the tcp provider.
int WaitForDaemon(const std::string &control, int timeout_s) {
    rpmad::v1::Stats stats;
    grpc::Status got = rpma::vm::WaitForRpmad(control, timeout_s, &stats);
    if (!got.ok()) {
        fprintf(stderr, "powercut_writer: rpmad at %s did not answer within %d s: %s\n",
                control.c_str(), timeout_s, got.error_message().c_str());
        return 1;
    }
    if (stats.provider() != "tcp") {
        fprintf(stderr, "powercut_writer: rpmad at %s serves on provider %s, not tcp\n",
                control.c_str(), stats.provider().c_str());
        return 1;
    }
    printf("rpmad %s at %s: %u regions, %u damaged\n", stats.version().c_str(), control.c_str(),
           stats.regions(), stats.unhealthy_regions());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"powercut_writer: writes, cuts and checks for the power-cut harness"};
    app.require_subcommand(1);
    powercut::WriteOptions write;
    uint64_t records_mib = 16;
    int timeout_s = 120;

    CLI::App *wait = app.add_subcommand("wait", "Wait until rpmad answers");
    wait->add_option("--control", write.endpoints.control, "rpmad's control plane")->required();
    wait->add_option("--timeout-s", timeout_s, "how long to wait");

    CLI::App *cycle = app.add_subcommand("write", "Write one cycle's records and cut the power");
    CLI::App *verify = app.add_subcommand("verify", "Check everything acknowledged, after a cut");
    for (CLI::App *sub : {cycle, verify}) {
        sub->add_option("--control", write.endpoints.control, "rpmad's control plane")->required();
        sub->add_option("--data", write.endpoints.data, "rpmad's data plane (forwarded)")
            ->required();
        sub->add_option("--state", write.state_dir, "the directory of the ack logs")->required();
        sub->add_option("--cycle", write.cycle, "this cycle's (or the cut's) number")->required();
    }
    cycle->add_option("--persistence", write.persistence, "how rpmad was configured")
        ->required()
        ->check(CLI::IsMember({"apm", "gpspm"}));
    cycle->add_option("--cut-pid", write.cut_pid, "qemu's process id")->required();
    cycle->add_option("--cut-after-ms", write.cut_after_ms, "the cut's delay")->required();
    cycle->add_flag("--churn", write.churn, "create and delete regions meanwhile");
    cycle->add_option("--seed", write.seed, "seed of the churn and of the cut's moment");
    cycle->add_flag("--no-persist", write.no_persist,
                    "write without persisting (the harness must then lose records)");
    cycle->add_option("--records-region-mib", records_mib, "size of the records region");
    CLI11_PARSE(app, argc, argv);

    if (wait->parsed())
        return WaitForDaemon(write.endpoints.control, timeout_s);
    if (verify->parsed())
        return powercut::VerifyAfterCut(write.endpoints, write.state_dir, write.cycle);
    write.records_region_size = records_mib << 20;
    return powercut::RunWriteCycle(write);
}
