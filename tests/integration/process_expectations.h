// GoogleTest glue for tests that drive processes: start them, wait for servers to be ready,
// expect clean exits -- failing with the process's command line and output, never hanging.
#ifndef TESTS_INTEGRATION_PROCESS_EXPECTATIONS_H
#define TESTS_INTEGRATION_PROCESS_EXPECTATIONS_H

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace rpma::testing {

// How long a server may take to print "ready", and a process to finish its work.
inline constexpr std::chrono::seconds kReadyTimeout{20};
inline constexpr std::chrono::seconds kExitTimeout{20};

// Starts argv; on failure records a test failure and returns nullptr.
std::unique_ptr<Process> StartProcess(const std::vector<std::string> &argv);

// Starts argv and waits for its "ready" line; on failure records a test failure (with the
// process's output) and returns nullptr.
std::unique_ptr<Process> StartServer(const std::vector<std::string> &argv);

// Success when the process exits with code 0 within `timeout`; otherwise a failure carrying
// its command line and output. A process still running is killed.
::testing::AssertionResult ExitsSuccessfully(Process &process,
                                             std::chrono::milliseconds timeout = kExitTimeout);

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_PROCESS_EXPECTATIONS_H
