#include "client/rpmactl/output.h"

#include <gtest/gtest.h>

#include "proto/rpmad/v1/rpmad.pb.h"

namespace rpmactl {
namespace {

TEST(Table, PadsColumnsToTheWidestCellWithoutTrailingSpaces) {
    Table table({"name", "size"});
    table.AddRow({"a", "4.0 KiB"});
    table.AddRow({"longer-name", "1 B"});
    EXPECT_EQ(table.ToString(),
              "NAME         SIZE\n"
              "a            4.0 KiB\n"
              "longer-name  1 B\n");
}

TEST(ToJson, UsesProtoFieldNamesAndPrintsZeroFields) {
    rpmad::v1::Region region;
    region.set_name("r");
    region.set_size(4096);
    region.set_persistence(rpmad::v1::PERSISTENCE_GPSPM);
    const Json json = ToJson(region);
    EXPECT_EQ(json["name"], "r");
    // The JSON mapping writes 64-bit integers as strings.
    EXPECT_EQ(json["size"], "4096");
    EXPECT_EQ(json["persistence"], "PERSISTENCE_GPSPM");
    EXPECT_EQ(json["open_sessions"], 0);
    EXPECT_EQ(json["healthy"], false);
    EXPECT_TRUE(json.contains("created_unix_seconds"));
}

}  // namespace
}  // namespace rpmactl
