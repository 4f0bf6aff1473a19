// tzrun_consumer — starts a tzrun::store::Server on an ephemeral port, talks to it with a
// tzrun::store::Client (set/get, add, num_keys) and prints what it got back.
// Exit 0 when every value round-trips, 1 (with the mismatch on stderr) otherwise.
// Usage: tzrun_consumer [VALUE]   (default VALUE: "hello from an installed tzrun")
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <tzrun/store/client.hpp>
#include <tzrun/store/server.hpp>

int main(int argc, char** argv) {
  const std::string value = argc > 1 ? argv[1] : "hello from an installed tzrun";
  try {
    tzrun::store::ServerOptions server_options;
    server_options.host = "127.0.0.1";
    server_options.port = 0;  // ephemeral
    tzrun::store::Server server(server_options);
    server.Start();

    tzrun::store::ClientOptions client_options;
    client_options.host = "127.0.0.1";
    client_options.port = server.Port();
    client_options.timeout = std::chrono::seconds(10);
    tzrun::store::Client client(client_options);

    client.Set("consumer/key", value);
    const std::string got = client.Get("consumer/key", std::chrono::seconds(10));
    const std::int64_t counter =
        client.Add("consumer/counter", 41) + client.Add("consumer/counter", 1);
    const std::int64_t keys = client.NumKeys();
    std::cout << "tzrun_consumer: server " << server.Endpoint() << " value='" << got
              << "' counter_sum=" << counter << " num_keys=" << keys << "\n";
    if (got != value) {
      std::cerr << "tzrun_consumer: get returned '" << got << "', expected '" << value << "'\n";
      return 1;
    }
    // add() returns the new value: 41, then 42 -> 83.
    if (counter != 83 || keys != 2) {
      std::cerr << "tzrun_consumer: expected counter_sum=83 and num_keys=2, got " << counter
                << " and " << keys << "\n";
      return 1;
    }
    server.Stop();
  } catch (const std::exception& e) {
    std::cerr << "tzrun_consumer: store round trip failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
