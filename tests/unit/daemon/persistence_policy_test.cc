// Which persistence method rpmad gives a region, and which it refuses.
#include "daemon/persistence_policy.h"

#include <gtest/gtest.h>

namespace rpmad {
namespace {

// rpma_ext_device_query's flush_persists of each provider.
constexpr bool kTcp = true;
constexpr bool kVerbs = false;

TEST(PersistencePolicy, AutoPicksApmOnTcpAndOnVerbsOnlyForByteGranularity) {
    for (Granularity g : {Granularity::kByte, Granularity::kCacheLine, Granularity::kPage}) {
        auto chosen = ChoosePersistence(Persistence::kAuto, kTcp, g, "r");
        ASSERT_TRUE(chosen.ok());
        EXPECT_EQ(*chosen, Persistence::kApm) << GranularityName(g);
    }
    EXPECT_EQ(*ChoosePersistence(Persistence::kAuto, kVerbs, Granularity::kByte, "r"),
              Persistence::kApm);
    EXPECT_EQ(*ChoosePersistence(Persistence::kAuto, kVerbs, Granularity::kCacheLine, "r"),
              Persistence::kGpspm);
    EXPECT_EQ(*ChoosePersistence(Persistence::kAuto, kVerbs, Granularity::kPage, "r"),
              Persistence::kGpspm);
}

TEST(PersistencePolicy, GpspmIsGivenWhereConfigured) {
    for (bool tcp : {kTcp, kVerbs})
        for (Granularity g : {Granularity::kByte, Granularity::kCacheLine, Granularity::kPage})
            EXPECT_EQ(*ChoosePersistence(Persistence::kGpspm, tcp, g, "r"), Persistence::kGpspm);
}

TEST(PersistencePolicy, ApmIsGivenOnTcpAndOnVerbsForByteGranularity) {
    for (Granularity g : {Granularity::kByte, Granularity::kCacheLine, Granularity::kPage})
        EXPECT_EQ(*ChoosePersistence(Persistence::kApm, kTcp, g, "r"), Persistence::kApm);
    EXPECT_EQ(*ChoosePersistence(Persistence::kApm, kVerbs, Granularity::kByte, "r"),
              Persistence::kApm);
}

// With DDIO an APM flush over verbs does not write the CPU cache back: on
// a cache-line (non-eADR) DAX region it would acknowledge what a power cut
// loses, as on a page-cache file.
TEST(PersistencePolicy, ApmOnVerbsIsRefusedForCacheLineAndPageGranularity) {
    for (Granularity g : {Granularity::kCacheLine, Granularity::kPage}) {
        auto chosen = ChoosePersistence(Persistence::kApm, kVerbs, g, "journal");
        ASSERT_FALSE(chosen.ok()) << GranularityName(g);
        EXPECT_EQ(chosen.status().code(), StatusCode::kFailedPrecondition);
        const std::string message = chosen.status().message();
        EXPECT_NE(message.find("region 'journal'"), std::string::npos) << message;
        EXPECT_NE(message.find("data.persistence"), std::string::npos) << message;
        EXPECT_NE(message.find("gpspm"), std::string::npos) << message;
    }
    EXPECT_NE(ChoosePersistence(Persistence::kApm, kVerbs, Granularity::kCacheLine, "j")
                  .status()
                  .message()
                  .find("DDIO"),
              std::string::npos);
}

}  // namespace
}  // namespace rpmad
