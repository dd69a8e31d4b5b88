// core/key/digest: SHA-256 as hex, of one string or of pieces.
#include "core/key/digest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace aotcache {
namespace {

TEST(DigestTest, IsTheStandardSha256) {
  // FIPS 180-2's first example.
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DigestTest, PiecesHashAsTheirConcatenation) {
  const std::string whole(100000, 'q');
  const std::vector<absl::string_view> pieces = {
      absl::string_view(whole).substr(0, 1), "",
      absl::string_view(whole).substr(1, 65535),
      absl::string_view(whole).substr(65536)};
  EXPECT_EQ(Sha256HexOfPieces(pieces), Sha256Hex(whole));
  EXPECT_EQ(Sha256HexOfPieces({}), Sha256Hex(""));
}

TEST(DigestTest, IsSha256HexTakesExactlyWhatSha256HexReturns) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex(Sha256Hex("x").substr(1)));
  std::string upper = Sha256Hex("x");
  for (char& c : upper) c = static_cast<char>(toupper(c));
  EXPECT_FALSE(IsSha256Hex(upper));
}

}  // namespace
}  // namespace aotcache
