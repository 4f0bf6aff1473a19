// Unit tests for src/agent/stderr_tail.{hpp,cpp}: the bounded stderr tail of a failed rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stderr_tail.hpp"

namespace fs = std::filesystem;
using tzrun::agent::kTailBytes;
using tzrun::agent::kTailLines;
using tzrun::agent::ReadFileTail;
using tzrun::agent::StderrTail;
using tzrun::agent::TailLines;

namespace {

std::string NumberedLines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST(TailLines, KeepsTheLastTwentyLines) {
  EXPECT_EQ(kTailLines, 20u);
  EXPECT_EQ(kTailBytes, 4096u);
  const std::string tail = TailLines(NumberedLines(1, 30), false);
  EXPECT_EQ(tail, NumberedLines(11, 30).substr(0, NumberedLines(11, 30).size() - 1));
}

TEST(TailLines, ShortInputsAndBlankEnds) {
  EXPECT_EQ(TailLines("", false), "");
  EXPECT_EQ(TailLines("\n\n", false), "");
  EXPECT_EQ(TailLines("one", false), "one");
  EXPECT_EQ(TailLines("a\r\nb\r\n\n\n", false), "a\nb");
  EXPECT_EQ(TailLines("a\n\nb\n", false), "a\n\nb");
}

TEST(TailLines, CutStartDropsThePartialFirstLine) {
  EXPECT_EQ(TailLines("tial\nwhole\n", true), "whole");
  EXPECT_EQ(TailLines("only-part", true), "only-part");
}

TEST(TailLines, ByteBoundKeepsWholeLines) {
  EXPECT_EQ(TailLines("aaaa\nbbbb\ncccc\n", false, 20, 9), "bbbb\ncccc");
  EXPECT_EQ(TailLines("aaaa\nbbbb\ncccc\n", false, 20, 8), "cccc");
  // A single line longer than the bound keeps its end, cut on a UTF-8 boundary.
  EXPECT_EQ(TailLines("0123456789", false, 20, 4), "6789");
  EXPECT_EQ(TailLines("x\xc3\xa9\xc3\xa9", false, 20, 3), "\xc3\xa9");
}

TEST(StderrTail, BoundedWhateverIsFed) {
  StderrTail t;
  for (int i = 1; i <= 5000; ++i) t.Feed("line " + std::to_string(i) + "\n");
  const std::string want = NumberedLines(4981, 5000);
  EXPECT_EQ(t.Text(), want.substr(0, want.size() - 1));

  StderrTail big;
  big.Feed(std::string(100000, 'x') + "\nTraceback\nRuntimeError: boom\n");
  // The kept bytes start inside the long line: that partial line is dropped.
  EXPECT_EQ(big.Text(), "Traceback\nRuntimeError: boom");
  EXPECT_LE(big.Text().size(), kTailBytes);

  StderrTail pieces;  // lines split across reads
  pieces.Feed("Err");
  pieces.Feed("or: x\npartial");
  EXPECT_EQ(pieces.Text(), "Error: x\npartial");
}

TEST(ReadFileTail, ReadsTheEndOfALogFile) {
  const fs::path p = fs::temp_directory_path() / ("tzrun_tail_" + std::to_string(::getpid()));
  {
    std::ofstream out(p);
    for (int i = 0; i < 2000; ++i) out << "noise " << i << "\n";
    out << "RuntimeError: from the file\n";
  }
  const auto tail = ReadFileTail(p.string());
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->substr(tail->rfind('\n') + 1), "RuntimeError: from the file");
  EXPECT_EQ(tail->substr(0, tail->find('\n')), "noise 1981");
  fs::remove(p);
  EXPECT_FALSE(ReadFileTail(p.string()));
}
