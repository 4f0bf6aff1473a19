// LD_PRELOAD shim for the benchmark's "torch-nodns" server: forces NI_NUMERICHOST in
// getnameinfo(3). PyTorch's TCPStore server formats each accepted peer's address with
// getnameinfo, which does a reverse-DNS (PTR) query on its event-loop thread for addresses
// /etc/hosts does not list (e.g. v4-mapped ::ffff:127.0.0.1); where DNS is slow or drops
// packets, every lost query stalls all clients for the resolver timeout (5 s by default).
// With this shim the benchmark can also show the server's own cost, without the resolver.
#include <dlfcn.h>
#include <netdb.h>
#include <sys/socket.h>

extern "C" int getnameinfo(const sockaddr* addr, socklen_t addrlen, char* host, socklen_t hostlen,
                           char* serv, socklen_t servlen, int flags) {
  using Fn = int (*)(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int);
  static const Fn kReal = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "getnameinfo"));
  return kReal(addr, addrlen, host, hostlen, serv, servlen, flags | NI_NUMERICHOST);
}
