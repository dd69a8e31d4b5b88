// Sizes and ages as operators write them.
#include "core/paths/byte_size.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

TEST(ByteSizeTest, SizesInBytesAndPowersOf1024) {
  EXPECT_EQ(ParseByteSize("1000").value(), 1000);
  EXPECT_EQ(ParseByteSize("12B").value(), 12);
  EXPECT_EQ(ParseByteSize("2K").value(), 2048);
  EXPECT_EQ(ParseByteSize("512MiB").value(), int64_t{512} << 20);
  EXPECT_EQ(ParseByteSize("20G").value(), int64_t{20} << 30);
  EXPECT_EQ(ParseByteSize("3 GB").value(), int64_t{3} << 30);
  EXPECT_EQ(ParseByteSize("1t").value(), int64_t{1} << 40);
  for (const char* bad : {"", "G", "-1G", "1.5G", "10X", "1GiBs",
                          "99999999999999999999", "9000000T"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
  EXPECT_THAT(ParseByteSize("10X").status().message(),
              ::testing::HasSubstr("'10X' is not a size"));
}

TEST(ByteSizeTest, FormattedForPeople) {
  EXPECT_EQ(FormatByteSize(12), "12 B");
  EXPECT_EQ(FormatByteSize(1536), "1.5 KiB");
  EXPECT_EQ(FormatByteSize(int64_t{20} << 30), "20.0 GiB");
}

TEST(ByteSizeTest, AgesInDaysHoursMinutesOrSeconds) {
  EXPECT_EQ(ParseAge("7d").value(), absl::Hours(24 * 7));
  EXPECT_EQ(ParseAge("36h").value(), absl::Hours(36));
  EXPECT_EQ(ParseAge("90m").value(), absl::Minutes(90));
  EXPECT_EQ(ParseAge("0s").value(), absl::ZeroDuration());
  for (const char* bad : {"", "7", "d", "1w", "-1d", "1.5h"}) {
    EXPECT_FALSE(ParseAge(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace aotcache
