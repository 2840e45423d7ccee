// The Region's completion bookkeeping against one real rpmad (APM and
// GPSPM): writes that a persist confirms ask for no completion of their own,
// so the send queue's room, the staging ring's slots and registered buffers
// are freed by the persists' completions. Batches larger than the send queue
// (128 work requests), than the longest run of unsignaled writes and than
// the staging ring (8 slots) must still commit, and every byte must land.
// A bookkeeping slip shows up as an operation that never completes
// (operation_timeout, kept short here) or as bytes that differ.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using client::Batch;
using client::OpenOptions;
using client::Region;
using client::ReplicaSet;

constexpr uint64_t kRegionSize = 16 << 20;
constexpr size_t kMiB = 1 << 20;

std::vector<std::byte> Pattern(size_t length, unsigned seed) {
    std::vector<std::byte> bytes(length);
    for (size_t i = 0; i < length; ++i)
        bytes[i] = static_cast<std::byte>((i * 131 + seed * 17 + i / 4096) & 0xff);
    return bytes;
}

// true: the daemon persists with GPSPM (flush requests); false: APM.
class CompletionBookkeeping : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        RpmadOptions options;
        options.pool_dir = TempPath(std::string("bookkeeping-") + (GetParam() ? "gpspm" : "apm"));
        if (GetParam())
            options.config_yaml = "data:\n  persistence: gpspm\n";
        std::string error;
        rpmad_ = Rpmad::Start(options, &error);
        ASSERT_NE(rpmad_, nullptr) << error;
        ReplicaSet set;
        set.addresses = {rpmad_->control()};
        OpenOptions open;
        open.create_size = kRegionSize;
        open.operation_timeout = std::chrono::milliseconds(5000);
        auto region = Region::Open(set, "bookkeeping", open);
        ASSERT_TRUE(region.ok()) << region.status().ToString();
        region_ = std::move(*region);
        ASSERT_EQ(region_->replicas()[0].gpspm, GetParam());
    }

    void ExpectRegionHolds(uint64_t offset, const std::vector<std::byte> &expected) {
        std::vector<std::byte> out(expected.size());
        const client::Status s = region_->Read(offset, out, 0);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_TRUE(out == expected) << "bytes at " << offset << " differ";
    }

    std::unique_ptr<Rpmad> rpmad_;
    std::unique_ptr<Region> region_;
};

TEST_P(CompletionBookkeeping, ManyWritePersistsReuseTheSendQueueAndTheRing) {
    // Far more operations than the send queue and the ring have places, so
    // both wrap many times over.
    const auto bytes = Pattern(4096, 1);
    for (int i = 0; i < 2000; ++i) {
        const client::Status s = region_->WritePersist(static_cast<uint64_t>(i % 64) * 4096, bytes);
        ASSERT_TRUE(s.ok()) << "operation " << i << ": " << s.ToString();
    }
    ExpectRegionHolds(63 * 4096, bytes);
}

TEST_P(CompletionBookkeeping, BatchOfMoreRegisteredWritesThanTheSendQueueCommits) {
    // 300 writes from a registered buffer in one batch: unsignaled but for
    // one in every run the Replica bounds, or the queue would fill with
    // work requests nothing retires.
    auto source = Pattern(300 * 64, 2);
    ASSERT_TRUE(region_->RegisterBuffer(source).ok());
    Batch batch;
    for (size_t i = 0; i < 300; ++i)
        batch.Write(i * 128, std::span<const std::byte>(source.data() + i * 64, 64));
    const client::Status s = region_->Commit(batch);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t i : {0u, 131u, 299u})
        ExpectRegionHolds(i * 128, std::vector<std::byte>(source.begin() + i * 64,
                                                          source.begin() + (i + 1) * 64));
    EXPECT_TRUE(region_->UnregisterBuffer(source).ok());
}

TEST_P(CompletionBookkeeping, BatchOfMoreStagedWritesThanTheRingHasSlotsCommits) {
    // Twelve 1 MiB writes through the 8-slot staging ring in one batch: the
    // ninth waits for the first's slot, so the first must complete by
    // itself, without the batch's persist.
    std::vector<std::vector<std::byte>> chunks;
    Batch batch;
    for (unsigned i = 0; i < 12; ++i) {
        chunks.push_back(Pattern(kMiB, 10 + i));
        batch.Write(i * kMiB, chunks.back());
    }
    const client::Status s = region_->Commit(batch);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (unsigned i : {0u, 8u, 11u})
        ExpectRegionHolds(i * kMiB, chunks[i]);
}

TEST_P(CompletionBookkeeping, StagedWriteLargerThanTheRingPersists) {
    // One write of 10 MiB: ten pieces, the ninth reusing the first's slot.
    const auto bytes = Pattern(10 * kMiB, 3);
    const client::Status s = region_->WritePersist(kMiB, bytes);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectRegionHolds(kMiB, bytes);
}

INSTANTIATE_TEST_SUITE_P(ApmAndGpspm, CompletionBookkeeping, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                             return info.param ? "Gpspm" : "Apm";
                         });

}  // namespace
}  // namespace rpma::testing
