// Unit tests for src/agent/events.{hpp,cpp}: torchrun 2.11's Event.serialize() (Python
// json.dumps) for --event-log-handler=console. Expected strings were produced by Python 3.11.
#include <gtest/gtest.h>

#include <string>

#include "events.hpp"

using tzrun::agent::AgentEventInfo;
using tzrun::agent::EventLog;
using tzrun::agent::PyJsonFloat;
using tzrun::agent::PyJsonReserialize;
using tzrun::agent::PyJsonString;
using tzrun::agent::SerializeEvent;

TEST(Events, PythonJsonStrings) {
  EXPECT_EQ(PyJsonString("a\"b\\c\n\t"), R"("a\"b\\c\n\t")");
  EXPECT_EQ(PyJsonString("\xc3\xa9"), R"("\u00e9")");                // json.dumps("é")
  EXPECT_EQ(PyJsonString("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")");  // json.dumps("😀")
  EXPECT_EQ(PyJsonString(std::string("\x01", 1)), R"("\u0001")");
}

TEST(Events, PythonJsonFloats) {
  EXPECT_EQ(PyJsonFloat(10.390063998784171), "10.390063998784171");
  EXPECT_EQ(PyJsonFloat(5.0), "5.0");
  EXPECT_EQ(PyJsonFloat(0.0), "0.0");
  EXPECT_EQ(PyJsonFloat(1.5e-05), "1.5e-05");
  EXPECT_EQ(PyJsonFloat(1e16), "1e+16");
}

TEST(Events, ReserializeKeepsKeyOrderAndUsesPythonSeparators) {
  EXPECT_EQ(PyJsonReserialize(R"({"b":1,"a":[true,null,"x"],"c":{"d":2.5}})"),
            R"({"b": 1, "a": [true, null, "x"], "c": {"d": 2.5}})");
  EXPECT_EQ(PyJsonReserialize(""), R"({"message": "<NONE>"})");
  EXPECT_EQ(PyJsonReserialize("not json"), R"({"message": "<NONE>"})");
}

TEST(Events, SerializesAnAgentEventAsTorchrun) {
  AgentEventInfo e;
  e.state = "RENDEZVOUS";
  e.run_id = "none";
  e.role = "default";
  e.hostname = "localhost";
  e.rdzv_backend = "static";
  e.entry_point = "w.sh";
  e.duration_ms = 0.5;
  EXPECT_EQ(SerializeEvent(e),
            R"({"name": "torchelastic.worker.status.RENDEZVOUS", "source": "AGENT", )"
            R"("timestamp": 0, "metadata": {"run_id": "none", "global_rank": null, )"
            R"("group_rank": null, "worker_id": null, "role": "default", "hostname": )"
            R"("localhost", "state": "RENDEZVOUS", "total_run_time": 0, "rdzv_backend": )"
            R"("static", "raw_error": null, "metadata": "{\"group_world_size\": null, )"
            R"(\"entry_point\": \"w.sh\"}", "agent_restarts": 0, "duration_ms": 0.5}})");
}

TEST(Events, SerializesAWorkerFailure) {
  AgentEventInfo e;
  e.state = "FAILED";
  e.worker = true;
  e.run_id = "r";
  e.role = "trainer";
  e.group_rank = 0;
  e.group_world_size = 1;
  e.global_rank = 1;
  e.local_rank = 1;
  e.role_rank = 1;
  e.role_world_size = 2;
  e.worker_id = 42;
  e.exit_code = -15;
  e.worker_pid = 42;
  e.raw_error = R"({"message": "<NONE>"})";
  const std::string s = SerializeEvent(e);
  EXPECT_NE(s.find(R"("global_rank": 1, "group_rank": 0, "worker_id": "42")"), std::string::npos);
  EXPECT_NE(s.find(R"("raw_error": "{\"message\": \"<NONE>\"}")"), std::string::npos);
  EXPECT_NE(s.find(R"(\"exit_code\": [-15], \"worker_pid\": [42]}")"), std::string::npos);
  EXPECT_NE(s.find(R"("source": "WORKER")"), std::string::npos);
}

TEST(Events, OnlyConsoleAtInfoWrites) {
  EXPECT_TRUE(EventLog("console", "").Enabled());
  EXPECT_TRUE(EventLog("console", "debug").Enabled());
  EXPECT_FALSE(EventLog("console", "WARNING").Enabled());
  EXPECT_FALSE(EventLog("null", "").Enabled());
  EXPECT_FALSE(EventLog("dynamic_rendezvous", "INFO").Enabled());
}
