// torchrun's pickled _RendezvousState (src/rendezvous/torch_state.hpp, pickle.hpp): a pickle
// made by Python (torch 2.11's dynamic_rendezvous, pickle.dumps) decodes to the same state,
// and our encoding decodes back to what was encoded. That Python's pickle.loads accepts
// ours is checked by tests/integration/test_etcd_rendezvous.py.
#include "torch_state.hpp"

#include <gtest/gtest.h>

#include "etcd_http.hpp"
#include "pickle.hpp"
#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

// _RendezvousState(round=3, complete=False, deadline=2026-12-03T11:55:14.551721+00:00,
// participants={host-a_123_0: 0, b_70000_1: 1}, wait_list={c_5_2},
// last_heartbeats={host-a_123_0: 1999-02-28T23:59:59.000001+02:00}).
constexpr const char* kPythonState =
    "gASVwQEAAAAAAACMN3RvcmNoLmRpc3RyaWJ1dGVkLmVsYXN0aWMucmVuZGV6dm91cy5keW5hbWljX3JlbmRlenZvdX"
    "OUjBBfUmVuZGV6dm91c1N0YXRllJOUKYGUfZQojAVyb3VuZJRLA4wIY29tcGxldGWUiYwIZGVhZGxpbmWUjAhkYXRl"
    "dGltZZSMCGRhdGV0aW1llJOUQwoH6gwDCzcOCGsplGgIjAh0aW1lem9uZZSTlGgIjAl0aW1lZGVsdGGUk5RLAEsASw"
    "CHlFKUhZRSlIaUUpSMBmNsb3NlZJSJjAxwYXJ0aWNpcGFudHOUfZQoaACMCV9Ob2RlRGVzY5STlCmBlH2UKIwEYWRk"
    "cpSMBmhvc3QtYZSMA3BpZJRLe4wIbG9jYWxfaWSUSwB1YksAaBopgZR9lChoHYwBYpRoH0pwEQEAaCBLAXViSwF1jA"
    "l3YWl0X2xpc3SUj5QoaBopgZR9lChoHYwBY5RoH0sFaCBLAnVikIwPcmVkdW5kYW5jeV9saXN0lI+UjA9sYXN0X2hl"
    "YXJ0YmVhdHOUfZRoG2gKQwoHzwIcFzs7AAABlGgNaA9LAE0gHEsAh5RSlIWUUpSGlFKUc3ViLg==";

TEST(TorchState, DecodesPythonPickle) {
  const auto bytes = Base64Decode(kPythonState);
  ASSERT_TRUE(bytes);
  const RendezvousState s = DecodeTorchState(*bytes);
  const NodeDesc a{"host-a", 123, 0};
  const NodeDesc b{"b", 70000, 1};
  const NodeDesc c{"c", 5, 2};
  EXPECT_EQ(s.round, 3);
  EXPECT_FALSE(s.complete);
  EXPECT_FALSE(s.closed);
  ASSERT_TRUE(s.deadline);
  EXPECT_NEAR(*s.deadline, 1796298914.551721, 1e-6);
  ASSERT_EQ(s.participants.size(), 2U);
  EXPECT_EQ(s.participants.at(a).rank, 0);
  EXPECT_EQ(s.participants.at(b).rank, 1);
  EXPECT_EQ(s.participants.at(b).restart_count, 0);  // torchrun records none
  EXPECT_EQ(s.wait_list, std::set<NodeDesc>{c});
  EXPECT_TRUE(s.redundancy_list.empty());
  ASSERT_EQ(s.last_heartbeats.size(), 1U);
  EXPECT_NEAR(s.last_heartbeats.at(a), 920239199.000001, 1e-6);  // +02:00 applied
  EXPECT_FALSE(s.closed_exit_code);
}

TEST(TorchState, RoundTripsTzrunFields) {
  RendezvousState s;
  s.round = 7;
  s.complete = true;
  s.closed = true;
  s.closed_exit_code = 3;
  s.closed_by = "x_1_0";
  const NodeDesc a{"node-a.example.com", 4'000'000'000LL, 0};
  const NodeDesc b{"b", 2, 9};
  s.participants[a] = {1, 4};
  s.participants[b] = {0, 2};
  s.redundancy_list = {NodeDesc{"r", 3, 0}};
  s.last_heartbeats[a] = 1764762000.25;
  s.last_heartbeats[b] = -86400.5;  // before the epoch still maps
  const RendezvousState back = DecodeTorchState(EncodeTorchState(s));
  EXPECT_EQ(back, s);
}

TEST(TorchState, DatetimeBytesMatchPython) {
  // datetime(2026,12,3,11,55,14,551721).__reduce__()[1][0]
  const std::string want("\x07\xea\x0c\x03\x0b\x37\x0e\x08\x6b\x29", 10);
  EXPECT_EQ(DatetimeBytes(1796298914.551721), want);
  EXPECT_NEAR(DatetimeSeconds(want, 0), 1796298914.551721, 1e-6);
}

TEST(TorchState, RefusesForeignOrBrokenPickles) {
  EXPECT_THROW((void)DecodeTorchState("null"), RendezvousStateError);
  EXPECT_THROW((void)DecodeTorchState(""), RendezvousStateError);
  const auto bytes = Base64Decode(kPythonState);
  ASSERT_TRUE(bytes);
  EXPECT_THROW((void)DecodeTorchState(bytes->substr(0, bytes->size() / 2)), RendezvousStateError);
  // A pickle of another class: os.system would run code in Python; we only read names.
  PickleWriter w;
  w.Global("os", "system");
  w.Str("true");
  w.Tuple(1);
  w.Reduce();
  EXPECT_THROW((void)DecodeTorchState(w.Finish()), RendezvousStateError);
  // An opcode outside the subset (PERSID 'P') is named.
  try {
    (void)Unpickle("\x80\x04P1\n.");
    ADD_FAILURE();
  } catch (const PickleError& e) {
    EXPECT_NE(std::string(e.what()).find("0x50"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
