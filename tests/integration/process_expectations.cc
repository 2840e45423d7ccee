#include "tests/integration/process_expectations.h"

namespace rpma::testing {

std::unique_ptr<Process> StartProcess(const std::vector<std::string> &argv) {
    std::string error;
    std::unique_ptr<Process> process = Process::Start(argv, {}, &error);
    if (process == nullptr)
        ADD_FAILURE() << "cannot start " << argv.at(0) << ": " << error;
    return process;
}

std::unique_ptr<Process> StartServer(const std::vector<std::string> &argv) {
    std::unique_ptr<Process> server = StartProcess(argv);
    if (server != nullptr && !server->WaitForLine("ready", kReadyTimeout)) {
        server->Kill();
        ADD_FAILURE() << "the server did not print \"ready\" within " << kReadyTimeout.count()
                      << " s\n"
                      << server->Describe();
        return nullptr;
    }
    return server;
}

::testing::AssertionResult ExitsSuccessfully(Process &process, std::chrono::milliseconds timeout) {
    std::optional<ExitStatus> status = process.Wait(timeout);
    if (!status.has_value()) {
        process.Kill();
        return ::testing::AssertionFailure()
               << "still running after " << timeout.count() << " ms, killed\n"
               << process.Describe();
    }
    if (!status->Success())
        return ::testing::AssertionFailure() << process.Describe();
    return ::testing::AssertionSuccess();
}

}  // namespace rpma::testing
