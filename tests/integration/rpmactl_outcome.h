// What a run of the rpmactl binary gave the integration tests: its exit
// status, stdout (as JSON on demand) and stderr.
#ifndef TESTS_INTEGRATION_RPMACTL_OUTCOME_H
#define TESTS_INTEGRATION_RPMACTL_OUTCOME_H

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace rpma::testing {

using Json = nlohmann::json;

// A file for rpmactl to read (put's input).
inline void WriteFile(const std::string &path, const std::vector<std::byte> &bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

struct Outcome {
    ExitStatus status;
    std::string out;
    std::string err;
    std::string described;

    int code() const { return status.exited ? status.code : -1; }
    // stdout as JSON (discarded: a parse error fails the expectation).
    Json json() const {
        Json value = Json::parse(out, nullptr, /*allow_exceptions=*/false);
        EXPECT_FALSE(value.is_discarded()) << "not JSON: " << described;
        return value;
    }
};

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_RPMACTL_OUTCOME_H
