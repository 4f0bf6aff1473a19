// Worker environment and argv (see include/tzrun/agent/worker_env.hpp).
#include "tzrun/agent/worker_env.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

#include "tzrun/base/strings.hpp"

namespace tzrun::agent {
namespace {

using base::Join;

using base::Split;

using base::Strip;

bool IsIdentifierStart(char c) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) != 0;
}
bool IsIdentifierChar(char c) {
  return c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool NeedsOmpDefault(const LaunchConfig& cfg, const std::map<std::string, std::string>& base_env) {
  return !base_env.contains("OMP_NUM_THREADS") && cfg.nproc_per_node > 1;
}

std::vector<std::string> OmpBannerLines() {
  const std::string stars(41, '*');
  return {"", stars,
          "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
          "to avoid your system being overloaded, please further tune the variable for optimal "
          "performance in your application as needed. ",
          stars};
}

std::map<std::string, std::string> BuildWorkerEnv(
    const LaunchConfig& cfg, const WorkerSpec& spec,
    const std::map<std::string, std::string>& base_env, const std::string& master_addr,
    int master_port, const std::string& error_file) {
  std::map<std::string, std::string> env = base_env;
  env["RANK"] = std::to_string(spec.global_rank);
  env["GROUP_RANK"] = std::to_string(spec.group_rank);
  env["ROLE_RANK"] = std::to_string(spec.role_rank);
  env["ROLE_NAME"] = cfg.role;
  env["LOCAL_WORLD_SIZE"] = std::to_string(spec.local_world_size);
  env["WORLD_SIZE"] = std::to_string(spec.world_size);
  env["GROUP_WORLD_SIZE"] = std::to_string(spec.group_world_size);
  env["ROLE_WORLD_SIZE"] = std::to_string(spec.role_world_size);
  env["MASTER_ADDR"] = master_addr;
  env["MASTER_PORT"] = std::to_string(master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(spec.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(cfg.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = cfg.rdzv_id;
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  if (!base_env.contains("TORCH_NCCL_ASYNC_ERROR_HANDLING")) {
    env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
  }
  env["TORCHELASTIC_ERROR_FILE"] = error_file;
  // run.py puts --signals-to-handle into the agent's os.environ; workers inherit it.
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = Join(cfg.signals_to_handle, ",");

  if (cfg.virtual_local_rank) {
    env["LOCAL_RANK"] = "0";
    auto it = base_env.find("CUDA_VISIBLE_DEVICES");
    if (it != base_env.end()) {
      auto gpus = Split(it->second, ',');
      if (spec.local_rank >= static_cast<int>(gpus.size())) {
        throw WorkerSetupError("--virtual-local-rank: local_rank " +
                                   std::to_string(spec.local_rank) +
                                   " exceeds available GPUs in CUDA_VISIBLE_DEVICES=" + it->second +
                                   " (" + std::to_string(gpus.size()) +
                                   " entries); list at least --nproc-per-node devices or unset it",
                               ExitCode::kUsage);
      }
      env["CUDA_VISIBLE_DEVICES"] = Strip(gpus[static_cast<std::size_t>(spec.local_rank)]);
    } else {
      env["CUDA_VISIBLE_DEVICES"] = std::to_string(spec.local_rank);
    }
  } else {
    env["LOCAL_RANK"] = std::to_string(spec.local_rank);
  }
  return env;
}

std::string SubstituteLocalRank(std::string_view arg, int local_rank) {
  static constexpr std::string_view kName = "local_rank";
  const std::string value = std::to_string(local_rank);
  std::string out;
  out.reserve(arg.size());
  std::size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != '$') {
      out += arg[i++];
      continue;
    }
    // '$' at i.
    if (i + 1 < arg.size() && arg[i + 1] == '$') {  // escaped
      out += '$';
      i += 2;
      continue;
    }
    if (i + 1 < arg.size() && arg[i + 1] == '{') {
      auto close = arg.find('}', i + 2);
      if (close != std::string_view::npos) {
        auto id = arg.substr(i + 2, close - i - 2);
        bool valid = !id.empty() && IsIdentifierStart(id[0]);
        for (char c : id) valid = valid && IsIdentifierChar(c);
        if (valid) {
          if (id == kName) {
            out += value;
          } else {
            out.append(arg.substr(i, close - i + 1));
          }
          i = close + 1;
          continue;
        }
      }
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 < arg.size() && IsIdentifierStart(arg[i + 1])) {
      std::size_t j = i + 1;
      while (j < arg.size() && IsIdentifierChar(arg[j])) ++j;
      auto id = arg.substr(i + 1, j - i - 1);
      if (id == kName) {
        out += value;
      } else {
        out.append(arg.substr(i, j - i));
      }
      i = j;
      continue;
    }
    out += '$';
    ++i;
  }
  return out;
}

namespace {
// An executable regular file named `name` on $PATH, or "" (for bare names like `tzrec_train`).
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (IsRegularFile(candidate) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}
}  // namespace

// torch/distributed/run.py run_script_path under errors.record (ErrorHandler.record_exception's
// JSON): see EntrypointKind::kRunPath.
const char* const kRunPathBootstrap =
    "import json, os, runpy, sys, time, traceback\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path[0] = os.path.realpath(os.path.dirname(sys.executable))\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "except Exception as e:\n"
    "    f = os.environ.get('TORCHELASTIC_ERROR_FILE')\n"
    "    if f:\n"
    "        m = {'message': f'{type(e).__name__}: {e}', 'extraInfo': {\n"
    "            'py_callstack': traceback.format_exc(), 'timestamp': str(int(time.time()))}}\n"
    "        try:\n"
    "            with open(f, 'w') as fp:\n"
    "                json.dump({'message': m}, fp)\n"
    "        except OSError:\n"
    "            pass\n"
    "    raise\n";

EntrypointKind ClassifyEntrypoint(const LaunchConfig& cfg) {
  if (cfg.run_path) return EntrypointKind::kRunPath;
  if (cfg.no_python) return EntrypointKind::kDirect;
  if (cfg.module) return EntrypointKind::kPython;
  std::string script = cfg.training_script;
  // A bare program name that is not a file here but an executable on PATH (`tzrun ...
  // tzrec_train`): classify that file. torchrun would run `python tzrec_train` and fail; a native
  // binary is run directly, a Python script on PATH still goes through Python.
  if (script.find('/') == std::string::npos && !EndsWith(script, ".py") && !IsRegularFile(script)) {
    if (std::string found = FindOnPath(script); !found.empty()) script = found;
  }
  if (EndsWith(script, ".py") || !IsRegularFile(script) || ::access(script.c_str(), X_OK) != 0) {
    return EntrypointKind::kPython;
  }
  std::ifstream in(script, std::ios::binary);
  std::array<char, 256> head{};
  in.read(head.data(), head.size());
  const auto n = static_cast<std::size_t>(in.gcount());
  std::string_view first(head.data(), n);
  if (first.starts_with("\x7f"
                        "ELF"))
    return EntrypointKind::kDirect;
  if (first.starts_with("#!")) {
    auto line = first.substr(0, first.find('\n'));
    return line.find("python") == std::string_view::npos ? EntrypointKind::kDirect
                                                         : EntrypointKind::kPython;
  }
  return EntrypointKind::kPython;
}

std::vector<std::string> BuildWorkerArgv(const LaunchConfig& cfg, int local_rank,
                                         const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv;
  const EntrypointKind kind = ClassifyEntrypoint(cfg);
  if (kind == EntrypointKind::kPython || kind == EntrypointKind::kRunPath) {
    const bool module = cfg.module && kind == EntrypointKind::kPython;
    auto it = env.find("PYTHON_EXEC");
    argv.push_back(it != env.end() && !it->second.empty() ? it->second : "python3");
    argv.emplace_back("-u");
    if (module) argv.emplace_back("-m");
    if (kind == EntrypointKind::kRunPath) {
      argv.emplace_back("-c");
      argv.emplace_back(kRunPathBootstrap);
    }
    argv.push_back(SubstituteLocalRank(cfg.training_script, local_rank));
    if (!module && !IsRegularFile(argv.back())) {
      struct stat st {};
      const bool exists = ::stat(argv.back().c_str(), &st) == 0;
      throw WorkerSetupError(
          "training script '" + argv.back() + "' " +
              (exists ? "is not a regular file" : "does not exist") + " (looked up relative to " +
              [] {
                std::array<char, 4096> buf{};
                return std::string(::getcwd(buf.data(), buf.size()) != nullptr ? buf.data()
                                                                               : "the cwd");
              }() +
              "); pass the path of a Python file, -m for a module, or --no-python "
              "for an executable",
          ExitCode::kUsage);
    }
  } else {
    argv.push_back(cfg.training_script);
  }
  for (const auto& a : cfg.training_script_args) {
    argv.push_back(SubstituteLocalRank(a, local_rank));
  }
  return argv;
}

std::string ResolveProgram(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.empty()) {
    throw WorkerSetupError("empty program name: pass a training script", ExitCode::kUsage);
  }
  auto check = [](const std::string& path) -> int {  // 0 ok, 126 not exec, 127 missing
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ExitCode::kNotFound;
    if (S_ISDIR(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
      return ExitCode::kNotExecutable;
    }
    return 0;
  };
  if (name.find('/') != std::string::npos) {
    int rc = check(name);
    if (rc == ExitCode::kNotFound) {
      throw WorkerSetupError("worker program '" + name + "' not found: check the path",
                             ExitCode::kNotFound);
    }
    if (rc == ExitCode::kNotExecutable) {
      throw WorkerSetupError("worker program '" + name +
                                 "' is not executable: chmod +x it, or drop --no-python "
                                 "to run it with Python",
                             ExitCode::kNotExecutable);
    }
    return name;
  }
  auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  bool saw_non_exec = false;
  for (const auto& dir : Split(path, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    int rc = check(candidate);
    if (rc == 0) return candidate;
    if (rc == ExitCode::kNotExecutable) saw_non_exec = true;
  }
  if (saw_non_exec) {
    throw WorkerSetupError(
        "worker program '" + name + "' was found in PATH but is not executable: chmod +x it",
        ExitCode::kNotExecutable);
  }
  throw WorkerSetupError("worker program '" + name + "' not found in PATH (" + path +
                             "): install it, fix PATH, or pass a path" +
                             (name == "python3" ? " (or set PYTHON_EXEC)" : ""),
                         ExitCode::kNotFound);
}

}  // namespace tzrun::agent
