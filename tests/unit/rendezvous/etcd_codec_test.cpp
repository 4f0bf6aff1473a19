// Unit tests of the etcd client's pure pieces (src/rendezvous/etcd_http.hpp, etcd_client.hpp
// ParseEtcdResult): base64 against Python's base64.b64encode (RFC 4648 test vectors),
// percent / form encoding, HTTP/1.1 framing (RFC 9112 chunked and Content-Length), and etcd
// v2 answers as etcd 3.4 writes them.
#include <gtest/gtest.h>

#include <string>

#include "etcd_client.hpp"
#include "etcd_http.hpp"

namespace tzrun::rendezvous::detail {
namespace {

TEST(EtcdCodec, Base64MatchesPython) {
  // base64.b64encode(b"") .. b"foobar" (RFC 4648 section 10), and a byte string with 0xff.
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"},
                                                         {std::string("\xff\xfe\x00", 3), "//4A"}};
  for (const auto& [plain, b64] : vectors) {
    EXPECT_EQ(Base64Encode(plain), b64);
    EXPECT_EQ(Base64Decode(b64), plain);
  }
  EXPECT_FALSE(Base64Decode("Zm9"));
  EXPECT_FALSE(Base64Decode("Zm=v"));
  EXPECT_FALSE(Base64Decode("Zm9*"));
}

TEST(EtcdCodec, PercentAndFormEncoding) {
  EXPECT_EQ(PercentEncode("/torch/elastic/store/Zm9v+/=", true),
            "/torch/elastic/store/Zm9v%2B/%3D");
  EXPECT_EQ(PercentEncode("a/b c", false), "a%2Fb%20c");
  EXPECT_EQ(FormEncode({{"value", "a+b=c"}, {"prevExist", "false"}}),
            "value=a%2Bb%3Dc&prevExist=false");
}

TEST(EtcdCodec, ParsesEtcdAnswers) {
  HttpResponse ok{200,
                  {{"x-etcd-index", "12"}},
                  R"({"action":"get","node":{"key":"/p","dir":true,"nodes":[)"
                  R"({"key":"/p/Zm9v","value":"YmFy","modifiedIndex":11,"createdIndex":10},)"
                  R"({"key":"/p/ttl","value":"x","ttl":29,"modifiedIndex":12,"createdIndex":12})"
                  R"(],"modifiedIndex":3,"createdIndex":3}})"};
  const auto r = ParseEtcdResult(ok);
  EXPECT_EQ(r.action, "get");
  EXPECT_EQ(r.etcd_index, 12);
  EXPECT_TRUE(r.node.dir);
  ASSERT_EQ(r.node.nodes.size(), 2U);
  EXPECT_EQ(r.node.nodes[0].key, "/p/Zm9v");
  EXPECT_EQ(r.node.nodes[0].value, "YmFy");
  EXPECT_EQ(r.node.nodes[0].modified_index, 11);
  EXPECT_EQ(r.node.nodes[1].ttl, 29);
  HttpResponse err{412,
                   {},
                   R"({"errorCode":105,"message":"Key already exists","cause":"/p/a",)"
                   R"("index":13})"};
  try {
    ParseEtcdResult(err);
    FAIL() << "no error";
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kNodeExist);
    EXPECT_EQ(e.Index(), 13);
    EXPECT_NE(std::string(e.what()).find("Key already exists"), std::string::npos);
  }
  try {
    ParseEtcdResult({502, {}, "<html>bad\ngateway</html>\n"}, "h:1");
    FAIL() << "no error";
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kTransport);
    // The body is quoted on one line (no raw line breaks in the log).
    EXPECT_NE(std::string(e.what()).find("etcd at h:1 answered HTTP 502 with a body that is not "
                                         "etcd's JSON: <html>bad gateway</html>"),
              std::string::npos)
        << e.what();
  }
  // etcd 3.4/3.5 without --enable-v2 (or 3.6+): a plain-text 404 on /v2/keys. Fatal, with the fix.
  try {
    ParseEtcdResult({404, {}, "404 page not found\n"}, "h:2379");
    FAIL() << "no error";
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kNoV2Api);
    const std::string m = e.what();
    EXPECT_NE(m.find("etcd at h:2379 has no v2 keys API"), std::string::npos) << m;
    EXPECT_NE(m.find("--enable-v2=true"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
