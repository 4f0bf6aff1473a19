// Unit tests of torch's FileStore format and key semantics (src/rendezvous/file_store_codec.hpp).
// tests/integration/test_file_store_rendezvous.py checks the same format against
// torch.distributed.FileStore itself.
#include "file_store_codec.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace tzrun::rendezvous::detail {
namespace {

using namespace std::string_literals;

TEST(FileStoreCodec, RecordIsLengthPrefixedKeyThenValueLittleEndian) {
  // What torch's FileStore(path) writes first: refcount/ = "1".
  EXPECT_EQ(EncodeFileRecord("refcount/", "1"),
            "\x09\x00\x00\x00refcount/\x01\x00\x00\x00"
            "1"s);
  EXPECT_EQ(EncodeFileRecord("", ""), std::string(8, '\0'));
  const std::string big(300, 'v');
  const std::string r = EncodeFileRecord("/k", big);
  EXPECT_EQ(r.substr(0, 6), "\x02\x00\x00\x00/k"s);
  EXPECT_EQ(r.substr(6, 4), "\x2c\x01\x00\x00"s);  // 300
  EXPECT_EQ(r.size(), 4 + 2 + 4 + 300U);
}

TEST(FileStoreCodec, ReplaySetsOverwritesAndDeletes) {
  std::string log = EncodeFileRecord("refcount/", "1") + EncodeFileRecord("/a", "1") +
                    EncodeFileRecord("/c", "5") + EncodeFileRecord("/a", "2") +
                    EncodeFileRecord("-/a", "") + EncodeFileRecord("-/missing", "");
  FileStoreKeys keys;
  const auto r = ReplayFileRecords(log, keys);
  EXPECT_FALSE(r.error);
  EXPECT_EQ(r.consumed, log.size());
  EXPECT_EQ(keys, (FileStoreKeys{{"refcount/", "1"}, {"/c", "5"}}));
  // Values are bytes: NULs and binary survive.
  const std::string bin("\0\xff\x01"s);
  keys.clear();
  (void)ReplayFileRecords(EncodeFileRecord("/b", bin), keys);
  EXPECT_EQ(keys.at("/b"), bin);
}

TEST(FileStoreCodec, ReplayStopsBeforeAnIncompleteRecord) {
  const std::string good = EncodeFileRecord("/a", "1");
  const std::string next = EncodeFileRecord("/b", "22");
  for (std::size_t cut = 1; cut < next.size(); ++cut) {
    FileStoreKeys keys;
    const auto r = ReplayFileRecords(good + next.substr(0, cut), keys);
    ASSERT_TRUE(r.error) << cut;
    EXPECT_EQ(r.consumed, good.size());
    EXPECT_EQ(r.error->offset, good.size());
    EXPECT_NE(r.error->what.find(cut < 6 ? "key incomplete" : "value incomplete"),
              std::string::npos)
        << cut << ": " << r.error->what;
    EXPECT_EQ(keys, (FileStoreKeys{{"/a", "1"}}));  // nothing of the cut record
  }
  // A length far beyond the data (not a FileStore file at all).
  FileStoreKeys keys;
  EXPECT_TRUE(ReplayFileRecords("\xff\xff\xff\x7fxyz"s, keys).error);
}

TEST(FileStoreCodec, AddIsDecimalLikeStoll) {
  FileStoreKeys keys{{"/n", "41"},
                     {"/e", ""},
                     {"/w", " -7xyz"},
                     {"/bad", "abc"},
                     {"/huge", "99999999999999999999"}};
  EXPECT_EQ(FileAddResult(keys, "/n", 1), 42);
  EXPECT_EQ(FileAddResult(keys, "/missing", 3), 3);
  EXPECT_EQ(FileAddResult(keys, "/e", 2), 2);   // empty counts as 0
  EXPECT_EQ(FileAddResult(keys, "/w", 0), -7);  // blanks, sign, trailing text: as std::stoll
  EXPECT_EQ(FileAddResult(keys, "/n", -41), 0);
  EXPECT_FALSE(FileAddResult(keys, "/bad", 1));   // std::stoll throws
  EXPECT_FALSE(FileAddResult(keys, "/huge", 1));  // out of range
  keys["/min"] = std::to_string(std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(FileAddResult(keys, "/min", 1), std::numeric_limits<std::int64_t>::min() + 1);
}

TEST(FileStoreCodec, CompareSetFollowsFileStore) {
  const FileStoreKeys keys{{"/k", "v1"}};
  // Missing key, empty expected: written.
  auto o = FileCompareSet(keys, "/new", "", "d");
  EXPECT_TRUE(o.write);
  EXPECT_EQ(o.result, "d");
  // Missing key, non-empty expected: not written, `expected` returned.
  o = FileCompareSet(keys, "/new", "x", "d");
  EXPECT_FALSE(o.write);
  EXPECT_EQ(o.result, "x");
  // Present and equal: written.
  o = FileCompareSet(keys, "/k", "v1", "v2");
  EXPECT_TRUE(o.write);
  EXPECT_EQ(o.result, "v2");
  // Present, different: the current value.
  o = FileCompareSet(keys, "/k", "zz", "v2");
  EXPECT_FALSE(o.write);
  EXPECT_EQ(o.result, "v1");
  // Present with an empty expected: not a match.
  o = FileCompareSet(keys, "/k", "", "v2");
  EXPECT_FALSE(o.write);
  EXPECT_EQ(o.result, "v1");
}

TEST(FileStoreCodec, TheLastStoreRemovesTheFileOnlyWithAWorldSize) {
  EXPECT_FALSE(FileStoreRemovesFile(0, 5, -1));  // the rendezvous' FileStore(path): never
  EXPECT_TRUE(FileStoreRemovesFile(0, 2, 2));
  EXPECT_TRUE(FileStoreRemovesFile(0, 3, 2));
  EXPECT_FALSE(FileStoreRemovesFile(1, 2, 2));  // someone still has it open
  EXPECT_FALSE(FileStoreRemovesFile(0, 1, 2));  // not everyone finished
  EXPECT_EQ(FileUserKey("torch.rendezvous.x"), "/torch.rendezvous.x");
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
