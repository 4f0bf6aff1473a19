// The store server's listening socket (src/store/listener.hpp).
#include "listener.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

namespace tzrun::store::detail {
namespace {

// The server skips a setsockopt() per accepted connection because the listener's TCP_NODELAY
// is copied into every socket accept() returns.
TEST(StoreListener, AcceptedSocketsInheritNoDelay) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io);
  ServerOptions options;
  options.host = "127.0.0.1";
  const BoundEndpoint bound = BindListener(io, acceptor, options);
  ASSERT_TRUE(bound.nodelay_inherited);

  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(bound.port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  int accepted = -1;
  for (int i = 0; i < 1000 && accepted < 0; ++i) {  // the listener is non-blocking
    accepted = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (accepted < 0) ::usleep(1000);
  }
  ASSERT_GE(accepted, 0);
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ASSERT_EQ(::getsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
  ::close(accepted);
  ::close(client);
}

}  // namespace
}  // namespace tzrun::store::detail
