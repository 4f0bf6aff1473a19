// Unit tests of the FileStore client (src/rendezvous/file_store.hpp) on real files: two stores on
// one file stand for two processes (each has its own view and its own flock'ed descriptors), and
// the c10d rendezvous over it.
#include "file_store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "file_store_codec.hpp"
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/store/errors.hpp"
#include "util.hpp"

namespace tzrun::rendezvous::detail {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tzrun_filestore_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    path_ = (dir_ / "store").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The file's records, replayed.
  FileStoreKeys OnDisk() const {
    FileStoreKeys keys;
    const auto r = ReplayFileRecords(ReadAll(path_), keys);
    EXPECT_FALSE(r.error);
    return keys;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(FileStoreTest, TwoStoresOnOneFileSeeEachOthersWrites) {
  auto a = MakeFileStore(path_, 5s);
  auto b = MakeFileStore(path_, 5s);
  EXPECT_EQ(OnDisk().at("refcount/"), "2");
  a->Set("k", "v");
  EXPECT_EQ(b->Get("k"), "v");
  EXPECT_EQ(b->Add("n", 3), 3);
  EXPECT_EQ(a->Add("n", 4), 7);
  EXPECT_EQ(a->CompareSet("k", "v", "w"), "w");
  EXPECT_EQ(b->CompareSet("k", "v", "x"), "w");     // lost the race: the current value
  EXPECT_EQ(b->CompareSet("none", "e", "x"), "e");  // missing key, non-empty expected
  EXPECT_FALSE(b->Check({"none"}));
  EXPECT_TRUE(b->Check({"k", "n"}));
  EXPECT_TRUE(b->DeleteKey("k"));
  EXPECT_FALSE(a->Check({"k"}));
  EXPECT_FALSE(a->DeleteKey("k"));
  a->Append("s", "ab");
  b->Append("s", "cd");
  EXPECT_EQ(a->Get("s"), "abcd");
  a->MultiSet({"m1", "m2"}, {"1", "2"});
  EXPECT_EQ(b->MultiGet({"m2", "m1"}), (std::vector<std::string>{"2", "1"}));
  // num_keys counts FileStore's own counter too, as torch's does.
  EXPECT_EQ(a->NumKeys(), 5);  // refcount/, /n, /s, /m1, /m2
  auto listed = a->ListKeys();
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<std::string>{"m1", "m2", "n", "s"}));
  EXPECT_THROW(a->QueuePush("q", "1"), store::StoreError);
  EXPECT_THROW(a->Barrier("b", 2, 1s), store::StoreError);
}

TEST_F(FileStoreTest, GetAndWaitPollUntilAnotherStoreWrites) {
  auto a = MakeFileStore(path_, 5s);
  auto b = MakeFileStore(path_, 5s);
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(100ms);
    b->Set("late", "here");
  });
  EXPECT_EQ(a->Get("late", 10s), "here");
  later.get();
  a->Wait({"late"}, 1s);
  try {
    a->Wait({"never", "late"}, 200ms);
    FAIL() << "expected a timeout";
  } catch (const store::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'never'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
  }
}

TEST_F(FileStoreTest, ReadersWaitForTheFileToBeCreated) {
  auto a = MakeFileStore(path_, 5s);
  fs::remove(path_);
  // A read of a missing file retries the open (torch: the file may not be created yet) until the
  // call's timeout, then fails naming the file.
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)a->Get("x", 200ms);
    FAIL();
  } catch (const store::ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find(path_ + ": cannot open the file"), std::string::npos)
        << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  a.reset();  // the file is gone: the destructor leaves it so (torch's)
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(FileStoreTest, ClonesShareOneRefcountAndTheLastHandleCountsCleanup) {
  {
    auto a = MakeFileStore(path_, 5s);
    auto c = a->Clone();
    a.reset();
    EXPECT_EQ(OnDisk().at("refcount/"), "1");
    EXPECT_FALSE(OnDisk().contains("cleanup/"));
    c->Set("k", "v");
  }
  const auto keys = OnDisk();
  EXPECT_EQ(keys.at("refcount/"), "0");
  EXPECT_EQ(keys.at("cleanup/"), "1");
  EXPECT_EQ(keys.at("/k"), "v");  // the rendezvous' store (no world size) leaves the file
  // With a world size, the last of that many removes it (torch's ~FileStore).
  const std::string counted = (dir_ / "counted").string();
  {
    auto x = MakeFileStore(counted, 5s, 2);
    auto y = MakeFileStore(counted, 5s, 2);
    x.reset();
    EXPECT_TRUE(fs::exists(counted));
  }
  EXPECT_FALSE(fs::exists(counted));
}

TEST_F(FileStoreTest, ShrunkOrForeignFilesAreErrorsNamingTheFile) {
  auto a = MakeFileStore(path_, 5s);
  a->Set("k", "v");
  EXPECT_TRUE(a->Check({"k"}));
  fs::resize_file(path_, 3);
  try {
    (void)a->Check({"k"});
    FAIL();
  } catch (const store::ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
  }
  const std::string foreign = (dir_ / "foreign").string();
  std::ofstream(foreign) << "not a FileStore log at all";
  try {
    (void)MakeFileStore(foreign, 1s);
    FAIL();
  } catch (const store::ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("not a FileStore log at offset 0"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(foreign), std::string::npos);
  }
  EXPECT_THROW((void)MakeFileStore((dir_ / "no/such/dir/f").string(), 1s), store::ConnectionError);
}

TEST_F(FileStoreTest, TempFileIsPrivateAndInTmpdir) {
  const char* saved = std::getenv("TMPDIR");
  ::setenv("TMPDIR", dir_.c_str(), 1);
  const std::string path = MakeTempStoreFile();
  if (saved != nullptr) {
    ::setenv("TMPDIR", saved, 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_EQ(fs::path(path).parent_path(), dir_);
  const std::string name = fs::path(path).filename().string();
  EXPECT_EQ(name.size(), 11U);
  EXPECT_EQ(name.substr(0, 3), "tmp");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  EXPECT_EQ(st.st_size, 0);
}

TEST_F(FileStoreTest, C10dRendezvousFormsOverTheFile) {
  std::vector<std::unique_ptr<Handler>> hs;
  for (const char* addr : {"b", "a"}) {
    DynamicOptions o;
    o.run_id = "filejob";
    o.min_nodes = 2;
    o.max_nodes = 2;
    o.store_file = path_;
    o.local_addr = addr;
    o.join_timeout = 30s;
    o.last_call_timeout = 300ms;
    o.keep_alive_interval = 200ms;
    o.first_round_jitter = false;
    hs.push_back(MakeDynamicRendezvous(o));
  }
  std::vector<std::future<RendezvousInfo>> f;
  for (auto& h : hs)
    f.push_back(std::async(std::launch::async, [&h] { return h->NextRendezvous(0); }));
  auto b = f[0].get();
  auto a = f[1].get();
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(b.rank, 1);
  EXPECT_EQ(b.world_size, 2);
  EXPECT_EQ(b.master_addr, "a");  // round rank 0 hosts the workers' (TCP) store
  EXPECT_EQ(b.master_port, a.master_port);
  EXPECT_EQ(DynamicStoreEndpoint(*hs[0]), path_);
  // torchrun's keys: the state under torch.rendezvous.<id>, the round's under <id>.<round>/.
  const auto keys = OnDisk();
  EXPECT_TRUE(keys.contains("/torch.rendezvous.filejob"));
  EXPECT_EQ(keys.at("/torch.rendezvous.filejob.0/MASTER_ADDR"), "a");
  EXPECT_EQ(keys.at("refcount/"), "2");
  for (auto& h : hs) h->Shutdown();
  hs.clear();
  EXPECT_EQ(OnDisk().at("refcount/"), "2");  // the round stores still use it
  a.store.reset();
  b.store.reset();
  EXPECT_EQ(OnDisk().at("refcount/"), "0");
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
