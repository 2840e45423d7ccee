// The region store on real DAX, run by the PMem VM tier inside its guest
// (tests/pmem_vm): not a test of `bazel test` on the host, which has no DAX,
// so that a missing device is a failure here and never a skipped test.
//
//   RPMA_TEST_DAX_DIR=<dir on ext4 -o dax> region_store_dax_check --gtest_filter='Fsdax.*'
//   RPMA_TEST_DEVDAX=/dev/daxX.Y          region_store_dax_check --gtest_filter='DeviceDax.*'
//
// (The page-cache cases, and a path that is not device DAX, are in
// region_store_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "daemon/region_store.h"
#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;

constexpr uint64_t kPage = 4096;
constexpr uint64_t k2MiB = 2 << 20;

// The environment variable's value; a failure when it is not set.
std::string Required(const char *name) {
    const char *value = std::getenv(name);
    EXPECT_NE(value, nullptr) << name << " is not set: run this in the PMem VM tier";
    return value != nullptr ? value : "";
}

RegionMetadata DeviceDaxRange(const std::string &name, const std::string &path, uint64_t offset,
                              uint64_t size) {
    RegionMetadata metadata;
    metadata.name = name;
    metadata.path = path;
    metadata.offset = offset;
    metadata.size = size;
    return metadata;
}

TEST(Fsdax, ARegionOnFsdaxIsFlushedFromTheCpuCachesAndSurvivesReopening) {
    const std::string dax_dir = Required("RPMA_TEST_DAX_DIR");
    ASSERT_FALSE(dax_dir.empty());
    RegionStoreOptions options;
    options.pool_dir = dax_dir + "/region_store_dax_check_pool";
    std::filesystem::remove_all(options.pool_dir);
    {
        auto store = RegionStore::Open(options);
        ASSERT_TRUE(store.ok()) << store.status().message();
        auto region = (*store)->Create("r", 4 * kPage);
        ASSERT_TRUE(region.ok()) << region.status().message();
        EXPECT_NE((*region)->granularity(), Granularity::kPage);
        const std::vector<RegionInfo> list = (*store)->List();
        ASSERT_EQ(list.size(), 1u);
        EXPECT_TRUE(list[0].persist_method == "cpu-flush" || list[0].persist_method == "fence")
            << list[0].persist_method;
        std::span<std::byte> bytes = (*region)->bytes();
        for (size_t i = 0; i < bytes.size(); i++)
            bytes[i] = static_cast<std::byte>(i * 13 + 5);
        ASSERT_TRUE((*region)->Persist(0, bytes.size()).ok());
    }
    auto store = RegionStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto region = (*store)->Get("r");
    ASSERT_TRUE(region.ok()) << region.status().message();
    std::span<std::byte> bytes = (*region)->bytes();
    for (size_t i = 0; i < bytes.size(); i++)
        ASSERT_EQ(bytes[i], static_cast<std::byte>(i * 13 + 5)) << i;
}

TEST(DeviceDax, ARangeIsMappedByteOrCacheLineAndItsBoundsAreChecked) {
    const std::string devdax = Required("RPMA_TEST_DEVDAX");
    ASSERT_FALSE(devdax.empty());
    RegionStoreOptions options;
    options.pool_dir = FreshTestDirectory() + "/pool";
    auto opened = RegionStore::Open(options, {DeviceDaxRange("head", devdax, 0, k2MiB),
                                              DeviceDaxRange("rest", devdax, k2MiB, 0),
                                              DeviceDaxRange("unaligned", devdax, 4096, k2MiB)});
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    RegionStore &store = **opened;
    auto head = store.Get("head");
    ASSERT_TRUE(head.ok()) << head.status().message();
    EXPECT_EQ((*head)->size(), k2MiB);
    EXPECT_NE((*head)->granularity(), Granularity::kPage);
    std::span<std::byte> bytes = (*head)->bytes();
    std::fill(bytes.begin(), bytes.begin() + kPage, std::byte{0x42});
    EXPECT_TRUE((*head)->Persist(0, kPage).ok());
    auto rest = store.Get("rest");
    ASSERT_TRUE(rest.ok()) << rest.status().message();
    EXPECT_GT((*rest)->size(), 0u);  // to the end of the device
    auto unaligned = store.Get("unaligned");
    EXPECT_THAT(unaligned.status().message(), ::testing::HasSubstr("multiples of the device's"));
    for (const RegionInfo &info : store.List())
        if (info.name != "unaligned") {
            EXPECT_EQ(info.backing, Backing::kDeviceDax) << info.name;
            EXPECT_TRUE(info.persist_method == "cpu-flush" || info.persist_method == "fence")
                << info.name << ": " << info.persist_method;
        }

    opened.value().reset();
    opened = RegionStore::Open(options, {DeviceDaxRange("a", devdax, 0, 2 * k2MiB),
                                         DeviceDaxRange("b", devdax, k2MiB, 0)});
    ASSERT_FALSE(opened.ok());
    EXPECT_THAT(opened.status().message(), ::testing::HasSubstr("overlap on"));
}

}  // namespace
}  // namespace rpmad
