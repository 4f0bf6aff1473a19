// Unit tests for include/tzrun/agent/worker_env.hpp. Expected values were taken from real
// torchrun 2.11 (`torchrun --nproc-per-node=2 --no-python env-dump`, see the agent notes).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tzrun/agent/worker_env.hpp"

namespace fs = std::filesystem;
using tzrun::ExitCode;
using tzrun::LaunchConfig;
using tzrun::agent::BuildWorkerArgv;
using tzrun::agent::BuildWorkerEnv;
using tzrun::agent::ClassifyEntrypoint;
using tzrun::agent::EntrypointKind;
using tzrun::agent::NeedsOmpDefault;
using tzrun::agent::OmpBannerLines;
using tzrun::agent::ResolveProgram;
using tzrun::agent::SubstituteLocalRank;
using tzrun::agent::WorkerSetupError;
using tzrun::agent::WorkerSpec;
using Env = std::map<std::string, std::string>;

namespace {

WorkerSpec SpecFor(int local_rank, int nproc, int restart = 0) {
  WorkerSpec s;
  s.local_rank = local_rank;
  s.global_rank = local_rank;
  s.role_rank = local_rank;
  s.group_rank = 0;
  s.group_world_size = 1;
  s.world_size = nproc;
  s.role_world_size = nproc;
  s.local_world_size = nproc;
  s.restart_count = restart;
  return s;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tzrun_agent_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& Path() const { return path_; }
  fs::path Write(const std::string& name, const std::string& content, bool exec) const {
    fs::path p = path_ / name;
    std::ofstream(p) << content;
    ::chmod(p.c_str(), exec ? 0755 : 0644);
    return p;
  }

 private:
  fs::path path_;
};

}  // namespace

TEST(WorkerEnv, MatchesTorchrunStaticTwoWorkers) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 2;
  const Env base{{"PATH", "/usr/bin"}, {"HOME", "/root"}, {"OMP_NUM_THREADS", "1"}};
  auto env = BuildWorkerEnv(cfg, SpecFor(1, 2), base, "127.0.0.1", 29500,
                            "/tmp/x/none_abc/attempt_0/1/error.json");
  const Env expected_overrides{
      {"GROUP_RANK", "0"},
      {"GROUP_WORLD_SIZE", "1"},
      {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"OMP_NUM_THREADS", "1"},
      {"RANK", "1"},
      {"ROLE_NAME", "default"},
      {"ROLE_RANK", "1"},
      {"ROLE_WORLD_SIZE", "2"},
      {"TORCHELASTIC_ERROR_FILE", "/tmp/x/none_abc/attempt_0/1/error.json"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_RUN_ID", "none"},
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"WORLD_SIZE", "2"},
  };
  Env expected = expected_overrides;
  expected["PATH"] = "/usr/bin";
  expected["HOME"] = "/root";
  EXPECT_EQ(env, expected);
}

TEST(WorkerEnv, OverwritesInheritedPlatformRanks) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 3;
  const Env base{{"RANK", "5"},
                 {"WORLD_SIZE", "64"},
                 {"LOCAL_RANK", "9"},
                 {"MASTER_ADDR", "10.0.0.1"},
                 {"MASTER_PORT", "1234"}};
  auto env = BuildWorkerEnv(cfg, SpecFor(2, 3), base, "127.0.0.1", 29511, "");
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "2");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29511");
  EXPECT_EQ(env["TORCHELASTIC_ERROR_FILE"], "");  // --log-dir /dev/null
}

TEST(WorkerEnv, RoleRestartsRunIdAndAgentValues) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 2;
  cfg.role = "trainer";
  cfg.max_restarts = 3;
  cfg.rdzv_id = "job42";
  cfg.signals_to_handle = {"SIGTERM", "SIGUSR1"};
  const Env base{{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"},
                 {"OMP_NUM_THREADS", "4"},
                 {"CUDA_VISIBLE_DEVICES", "3,5"}};
  auto env = BuildWorkerEnv(cfg, SpecFor(0, 2, 2), base, "h", 1, "e");
  EXPECT_EQ(env["ROLE_NAME"], "trainer");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "job42");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "0");  // agent's value wins
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "3,5");  // normal mode: passed through
  EXPECT_EQ(env["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGUSR1");
}

TEST(WorkerEnv, VirtualLocalRankMapsThroughCudaVisibleDevices) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 2;
  cfg.virtual_local_rank = true;
  auto env = BuildWorkerEnv(cfg, SpecFor(1, 2), {{"CUDA_VISIBLE_DEVICES", "4, 6"}}, "h", 1, "");
  EXPECT_EQ(env["LOCAL_RANK"], "0");
  EXPECT_EQ(env["RANK"], "1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "6");  // stripped, like torchrun

  auto unset = BuildWorkerEnv(cfg, SpecFor(1, 2), {}, "h", 1, "");
  EXPECT_EQ(unset["CUDA_VISIBLE_DEVICES"], "1");

  try {
    (void)BuildWorkerEnv(cfg, SpecFor(1, 2), {{"CUDA_VISIBLE_DEVICES", "4"}}, "h", 1, "");
    FAIL() << "expected WorkerSetupError";
  } catch (const WorkerSetupError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("CUDA_VISIBLE_DEVICES=4"), std::string::npos);
  }
}

TEST(WorkerEnv, OmpDefaultOnlyWhenUnsetAndSeveralWorkers) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 2;
  EXPECT_TRUE(NeedsOmpDefault(cfg, {}));
  EXPECT_FALSE(NeedsOmpDefault(cfg, {{"OMP_NUM_THREADS", "8"}}));
  cfg.nproc_per_node = 1;
  EXPECT_FALSE(NeedsOmpDefault(cfg, {}));
  auto lines = OmpBannerLines();
  ASSERT_EQ(lines.size(), 4U);
  EXPECT_EQ(lines[0], "");
  EXPECT_EQ(lines[1], std::string(41, '*'));
  EXPECT_EQ(lines[3], std::string(41, '*'));
  EXPECT_EQ(lines[2],
            "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
            "to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed. ");
}

TEST(WorkerArgv, LocalRankMacroFollowsPythonTemplate) {
  EXPECT_EQ(SubstituteLocalRank("${local_rank}", 3), "3");
  EXPECT_EQ(SubstituteLocalRank("--out=/tmp/r$local_rank.log", 3), "--out=/tmp/r3.log");
  EXPECT_EQ(SubstituteLocalRank("$$local_rank", 3), "$local_rank");
  EXPECT_EQ(SubstituteLocalRank("$local_rankx", 3), "$local_rankx");
  EXPECT_EQ(SubstituteLocalRank("${rank}", 3), "${rank}");
  EXPECT_EQ(SubstituteLocalRank("cost $5 ${ x", 3), "cost $5 ${ x");
  EXPECT_EQ(SubstituteLocalRank("a$", 1), "a$");
  EXPECT_EQ(SubstituteLocalRank("${local_rank}${local_rank}", 12), "1212");
  EXPECT_EQ(SubstituteLocalRank("$HOME/x", 0), "$HOME/x");
}

TEST(WorkerArgv, PythonScriptModuleAndNoPython) {
  TempDir dir;
  auto script = dir.Write("train.py", "print(1)\n", false);
  LaunchConfig cfg;
  cfg.training_script = script.string();
  cfg.training_script_args = {"--lr", "0.1", "${local_rank}"};
  EXPECT_EQ(BuildWorkerArgv(cfg, 1, {}),
            (std::vector<std::string>{"python3", "-u", script.string(), "--lr", "0.1", "1"}));
  EXPECT_EQ(BuildWorkerArgv(cfg, 0, {{"PYTHON_EXEC", "/opt/py/bin/python"}}).front(),
            "/opt/py/bin/python");

  LaunchConfig mod;
  mod.module = true;
  mod.training_script = "pkg.train";  // not a file: fine for -m
  EXPECT_EQ(BuildWorkerArgv(mod, 0, {}),
            (std::vector<std::string>{"python3", "-u", "-m", "pkg.train"}));

  LaunchConfig direct;
  direct.no_python = true;
  direct.training_script = "env";
  direct.training_script_args = {"r${local_rank}"};
  EXPECT_EQ(BuildWorkerArgv(direct, 2, {}), (std::vector<std::string>{"env", "r2"}));
}

TEST(WorkerArgv, MissingScriptIsAUsageErrorNamingIt) {
  LaunchConfig cfg;
  cfg.training_script = "/nonexistent/dir/train.py";
  try {
    (void)BuildWorkerArgv(cfg, 0, {});
    FAIL() << "expected WorkerSetupError";
  } catch (const WorkerSetupError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/train.py"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos);
  }
}

TEST(WorkerArgv, ClassifiesExecutableNonPythonFiles) {
  TempDir dir;
  LaunchConfig cfg;
  cfg.training_script = dir.Write("run.sh", "#!/bin/sh\necho hi\n", true).string();
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kDirect);
  EXPECT_EQ(BuildWorkerArgv(cfg, 0, {}).front(), cfg.training_script);

  cfg.training_script = dir.Write("tool", "#!/usr/bin/env python3\nprint(1)\n", true).string();
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);

  cfg.training_script = dir.Write("x.py", "#!/bin/sh\n", true).string();  // .py => python
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);

  cfg.training_script = dir.Write("noexec", "#!/bin/sh\n", false).string();
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);

  cfg.training_script = "/bin/true";  // an ELF binary
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kDirect);

  cfg.training_script = dir.Write("plain", "print(1)\n", true).string();  // no #!, not ELF
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);
}

TEST(ResolveProgram, SearchesPathAndReportsNotFoundAndNotExecutable) {
  TempDir dir;
  dir.Write("tool", "#!/bin/sh\n", true);
  dir.Write("data", "x", false);
  const Env env{{"PATH", "/nonexistent:" + dir.Path().string()}};
  EXPECT_EQ(ResolveProgram("tool", env), (dir.Path() / "tool").string());
  EXPECT_EQ(ResolveProgram("/bin/sh", env), "/bin/sh");
  try {
    (void)ResolveProgram("no-such-tool-xyz", env);
    FAIL();
  } catch (const WorkerSetupError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no-such-tool-xyz"), std::string::npos);
  }
  try {
    (void)ResolveProgram("data", env);
    FAIL();
  } catch (const WorkerSetupError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kNotExecutable);
  }
  try {
    (void)ResolveProgram((dir.Path() / "data").string(), env);
    FAIL();
  } catch (const WorkerSetupError& e) {
    EXPECT_EQ(e.ExitCode(), ExitCode::kNotExecutable);
  }
}

TEST(WorkerArgv, BareProgramNameOnPathIsClassifiedByItsContent) {
  TempDir dir;
  dir.Write("tzrec_like_tool", "#!/bin/sh\necho hi\n", true);
  dir.Write("py_tool", "#!/usr/bin/env python3\nprint(1)\n", true);
  const char* old = std::getenv("PATH");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("PATH", (dir.Path().string() + ":" + saved).c_str(), 1);
  LaunchConfig cfg;
  cfg.training_script = "tzrec_like_tool";  // not a file in the cwd: found on PATH, not Python
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kDirect);
  cfg.training_script = "py_tool";  // a Python script on PATH still runs through Python
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);
  cfg.training_script = "surely_not_on_path_xyz";
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kPython);
  ::setenv("PATH", saved.c_str(), 1);
}

TEST(WorkerArgv, RunPathUsesTheRunpyBootstrapAndBeatsNoPythonAndModule) {
  TempDir dir;
  LaunchConfig cfg;
  cfg.run_path = true;
  cfg.no_python = true;  // torchrun: --run-path takes precedence over --no-python (and -m)
  cfg.module = true;
  cfg.training_script = dir.Write("train.py", "print(1)\n", false).string();
  cfg.training_script_args = {"--lr", "${local_rank}"};
  EXPECT_EQ(ClassifyEntrypoint(cfg), EntrypointKind::kRunPath);
  EXPECT_EQ(BuildWorkerArgv(cfg, 3, {}),
            (std::vector<std::string>{"python3", "-u", "-c", tzrun::agent::kRunPathBootstrap,
                                      cfg.training_script, "--lr", "3"}));
  cfg.training_script = (dir.Path() / "missing.py").string();
  EXPECT_THROW((void)BuildWorkerArgv(cfg, 0, {}), tzrun::agent::WorkerSetupError);
}
