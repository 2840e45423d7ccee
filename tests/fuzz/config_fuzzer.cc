// ParseConfig() on arbitrary text: whatever an operator (or an editor gone
// wrong) leaves in rpmad.yaml must come back as a Config or as a message
// naming the file, never as a crash or an exception escaping yaml-cpp; and a
// config that parses must survive RedactedYaml(), which `rpmad
// --print-config` shows and which is meant to be a valid config file itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/config.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr char kOrigin[] = "fuzz.yaml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    rpmad::StatusOr<rpmad::Config> config = rpmad::ParseConfig(text, kOrigin);
    if (!config.ok()) {
        const rpmad::Status status = config.status();
        FUZZ_CHECK(status.code() != rpmad::StatusCode::kOk);
        // Every message starts with the file it is about.
        FUZZ_CHECK(status.message().starts_with(kOrigin));
        FUZZ_CHECK(status.message().size() > sizeof(kOrigin));
        return 0;
    }
    FUZZ_CHECK(rpmad::ValidateConfig(*config).ok());

    // An inline admin token is shown as "<redacted>", which then reads back
    // as the token; one from admin_token_file is read from the file again.
    rpmad::Config expected = *config;
    if (expected.admin_token_file.empty() && !expected.admin_token.empty())
        expected.admin_token = "<redacted>";
    const std::string shown = rpmad::RedactedYaml(*config);
    rpmad::StatusOr<rpmad::Config> reparsed = rpmad::ParseConfig(shown, kOrigin);
    if (!reparsed.ok() || !(*reparsed == expected)) {
        fprintf(stderr, "RedactedYaml gave:\n%s\nwhich reads back %s\n", shown.c_str(),
                reparsed.ok() ? "as a different config" : reparsed.status().message().c_str());
    }
    FUZZ_CHECK(reparsed.ok());
    FUZZ_CHECK(*reparsed == expected);
    return 0;
}
