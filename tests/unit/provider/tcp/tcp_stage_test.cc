// Stage (tcp_stage.h): what was read waits in order until consumed.
#include "rpma_core/src/provider/tcp/tcp_stage.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace rpma::provider::tcp {
namespace {

TEST(Stage, StartsEmptyAndHoldsNoBufferUntilRead) {
    Stage stage;
    EXPECT_TRUE(stage.Empty());
    EXPECT_EQ(stage.Available(), 0u);
}

TEST(Stage, TheBufferIsPageAlignedAndStaysTheSame) {
    Stage stage;
    uint8_t *buffer = stage.Buffer();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % Stage::kAlignment, 0u);
    EXPECT_EQ(stage.Buffer(), buffer);
}

TEST(Stage, BytesAreConsumedInOrder) {
    Stage stage;
    memcpy(stage.Buffer(), "headerpayload", 13);
    stage.Filled(13);
    EXPECT_EQ(stage.Available(), 13u);
    EXPECT_EQ(memcmp(stage.Data(), "header", 6), 0);
    stage.Consume(6);
    EXPECT_EQ(stage.Available(), 7u);
    EXPECT_EQ(memcmp(stage.Data(), "payload", 7), 0);
    stage.Consume(7);
    EXPECT_TRUE(stage.Empty());
}

TEST(Stage, AFillReplacesWhatWasLeftAndClearDropsIt) {
    Stage stage;
    stage.Buffer()[0] = 'a';
    stage.Filled(Stage::kSize);
    stage.Consume(1);
    stage.Filled(1);
    EXPECT_EQ(stage.Available(), 1u);
    EXPECT_EQ(stage.Data(), stage.Buffer());
    stage.Clear();
    EXPECT_TRUE(stage.Empty());
}

}  // namespace
}  // namespace rpma::provider::tcp
