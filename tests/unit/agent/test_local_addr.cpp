// The address a c10d node advertises without --local-addr (src/agent/local_addr.hpp).
#include <gtest/gtest.h>

#include <string>

#include "local_addr.hpp"

namespace tzrun::agent {
namespace {

TEST(AdvertisedAddress, AResolvingNameIsKeptAsTorchrunDoes) {
  std::string why;
  EXPECT_EQ(AdvertisedAddress("node1.example", true, false, "10.0.0.5", &why), "node1.example");
  EXPECT_TRUE(why.empty());
}

TEST(AdvertisedAddress, AnUnresolvableNameIsReplacedWithAWarning) {
  std::string why;
  EXPECT_EQ(AdvertisedAddress("nosuch", false, true, "10.0.0.5", &why), "127.0.0.1");
  EXPECT_NE(why.find("'nosuch' does not resolve"), std::string::npos) << why;
  EXPECT_NE(why.find("--local-addr"), std::string::npos) << why;
  why.clear();
  // Several nodes: an address the others can reach, not loopback.
  EXPECT_EQ(AdvertisedAddress("nosuch", false, false, "10.0.0.5", &why), "10.0.0.5");
  EXPECT_NE(why.find("advertising 10.0.0.5"), std::string::npos) << why;
  EXPECT_EQ(AdvertisedAddress("nosuch", false, false, std::nullopt, &why), "127.0.0.1");
}

TEST(AdvertisedAddress, LocalhostResolves) {
  EXPECT_TRUE(NameResolves("localhost"));
  EXPECT_FALSE(NameResolves("no-such-host.invalid"));  // RFC 6761: never resolves
}

}  // namespace
}  // namespace tzrun::agent
