// The table of providers (rpma_core/src/provider/providers.h): what the
// generic layer knows of the providers, and how it picks one by it.
#include "rpma_core/src/provider/providers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "librpma.h"
#include "tests/unit/log_capture.h"

namespace {

using rpma::provider::Ops;
using rpma::provider::Providers;

// RPMA_PROVIDER set for one scope, restored after.
class ProviderChoice {
  public:
    explicit ProviderChoice(const char *value) {
        const char *before = getenv("RPMA_PROVIDER");
        had_ = before != nullptr;
        saved_ = had_ ? before : "";
        setenv("RPMA_PROVIDER", value, 1);
    }
    ~ProviderChoice() {
        if (had_)
            setenv("RPMA_PROVIDER", saved_.c_str(), 1);
        else
            unsetenv("RPMA_PROVIDER");
    }

  private:
    bool had_;
    std::string saved_;
};

TEST(Providers, VerbsIsPreferredToTcpAndEveryEntryIsComplete) {
    ASSERT_EQ(Providers().size(), 2u);
    EXPECT_STREQ(Providers()[0]->name, "verbs");
    EXPECT_STREQ(Providers()[1]->name, "tcp");
    std::set<std::string> names;
    for (const Ops *ops : Providers()) {
        EXPECT_NE(ops->lookup, nullptr) << ops->name;
        EXPECT_NE(ops->device, nullptr) << ops->name;
        EXPECT_TRUE(names.insert(ops->name).second) << ops->name << " twice";
    }
}

TEST(Providers, NoneOwnsAContextItDidNotMake) {
    ibv_device device{};
    ibv_context foreign{};
    foreign.device = &device;
    for (const Ops *ops : Providers()) {
        EXPECT_EQ(ops->device(nullptr), nullptr) << ops->name;
        EXPECT_EQ(ops->device(&foreign), nullptr) << ops->name;
    }
    int odp = -1;
    EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(&foreign, &odp), RPMA_E_PROVIDER);
}

TEST(Providers, TheOneChosenOwnsTheContextItFound) {
    ProviderChoice tcp("tcp");
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    const Ops *tcp_ops = Providers()[1];
    ASSERT_NE(tcp_ops->device(ctx), nullptr);
    EXPECT_EQ(tcp_ops->device(ctx)->Context(), ctx);
}

// A local lookup of `addr` under RPMA_PROVIDER=`choice` fails with `code`
// and logs `says`; *ctx stays untouched.
void ExpectLookupFails(const char *choice, const char *addr, int code, const char *says) {
    ProviderChoice chosen(choice);
    rpma_test::LogCapture log;
    ibv_context *ctx = nullptr;
    EXPECT_EQ(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), code);
    EXPECT_TRUE(log.Contains(says)) << log.Text();
    EXPECT_EQ(ctx, nullptr);
}

TEST(Providers, AnUnknownChoiceNamesEveryProvider) {
    ExpectLookupFails("carrier-pigeon", "127.0.0.1", RPMA_E_INVAL,
                      "is not one of auto, verbs, tcp");
}

TEST(Providers, AChosenProviderThatCannotServeSaysHowToLetAnotherTry) {
    // TEST-NET-1 (RFC 5737) is never assigned to a host; nothing is sent to it.
    ExpectLookupFails("tcp", "192.0.2.1", RPMA_E_PROVIDER, "unset it to let another try");
}

}  // namespace
