// AgreeOnFirstError's non-template half (include/tzrec/comm/agree.hpp): the status encoding, the
// error classes and the all-gather. The classes are rebuilt here from include/tzrec/error.hpp,
// which declares every one of them.
#include "tzrec/comm/agree.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>

#include "tzrec/error.hpp"

namespace tzrec {
namespace {

constexpr const char* kOk = "OK";
constexpr const char* kErr = "ERR\n";

void PutField(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

// Reads one "<len>:<bytes>" field at `pos`.
std::string GetField(const std::string& text, std::size_t& pos) {
  const std::size_t colon = text.find(':', pos);
  if (colon == std::string::npos || colon == pos || colon - pos > 12) {
    throw CommError("agreeing on an error across ranks: a rank sent a malformed status '" +
                    text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
  }
  std::size_t length = 0;
  for (std::size_t i = pos; i < colon; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      throw CommError("agreeing on an error across ranks: a rank sent a malformed status '" +
                      text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
    }
    length = length * 10 + static_cast<std::size_t>(text[i] - '0');
  }
  if (length > text.size() - colon - 1) {
    throw CommError("agreeing on an error across ranks: a rank sent a truncated status '" +
                    text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
  }
  pos = colon + 1 + length;
  return text.substr(colon + 1, length);
}

std::int64_t GetInt(const std::string& text, std::size_t& pos) {
  const std::string field = GetField(text, pos);
  try {
    std::size_t used = 0;
    const std::int64_t value = std::stoll(field, &used);
    if (used == field.size()) return value;
  } catch (const std::exception&) {
  }
  throw CommError("agreeing on an error across ranks: a rank sent a malformed status '" +
                  text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
}

ErrorClass ClassOf(const Error& e) {
  if (dynamic_cast<const InputError*>(&e)) return ErrorClass::kInput;
  if (dynamic_cast<const ConfigError*>(&e)) return ErrorClass::kConfig;
  if (dynamic_cast<const PlannerError*>(&e)) return ErrorClass::kPlanner;
  if (dynamic_cast<const CommError*>(&e)) return ErrorClass::kComm;
  if (dynamic_cast<const CheckpointError*>(&e)) return ErrorClass::kCheckpoint;
  if (dynamic_cast<const InternalError*>(&e)) return ErrorClass::kInternal;
  return ErrorClass::kError;
}

// The label of a plain tzrec::Error, as a literal (Error keeps a pointer).
const char* InternLabel(const std::string& label) {
  for (const char* known : {"config", "checkpoint", "collective failed",
                            "no feasible sharding plan", "internal error"}) {
    if (label == known) return known;
  }
  return "";
}

}  // namespace

std::vector<std::string> AllGatherStrings(Comm& comm, const std::string& text) {
  const int world = comm.WorldSize();
  if (world == 1) return {text};
  const auto device = comm.Device();
  at::Tensor length = at::full({1}, static_cast<std::int64_t>(text.size()),
                               at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor lengths = comm.AllGather(length).to(at::kCPU).contiguous();
  const std::int64_t max_len = std::max<std::int64_t>(lengths.max().item<std::int64_t>(), 1);
  at::Tensor bytes = at::zeros({max_len}, at::TensorOptions().dtype(at::kByte));
  if (!text.empty()) std::memcpy(bytes.data_ptr<std::uint8_t>(), text.data(), text.size());
  const at::Tensor all = comm.AllGather(bytes.to(device)).to(at::kCPU).contiguous();
  const auto* data = reinterpret_cast<const char*>(all.data_ptr<std::uint8_t>());
  const auto* lens = lengths.data_ptr<std::int64_t>();
  std::vector<std::string> out(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r)
    out[static_cast<std::size_t>(r)].assign(data + r * max_len, static_cast<std::size_t>(lens[r]));
  return out;
}

RankStatus StatusOf(const std::exception_ptr& error, int rank) {
  RankStatus s;
  s.rank = rank;
  if (!error) return s;
  s.ok = false;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    s.error_class = ClassOf(e);
    s.code = e.Code();
    s.label = e.Label();
    s.message = e.what();
    if (const auto* p = dynamic_cast<const PlannerError*>(&e)) {
      s.planner_kind = static_cast<int>(p->FailureKind());
      s.planner_table = p->Table();
      s.planner_missing_bytes = p->MissingBytes();
    }
  } catch (const std::exception& e) {
    s.message = e.what();
  } catch (...) {
    s.message = "an exception that is not a std::exception";
  }
  return s;
}

std::string EncodeStatus(const RankStatus& s) {
  if (s.ok) return kOk;
  std::string out = kErr;
  PutField(out, std::to_string(s.rank));
  PutField(out, std::to_string(static_cast<int>(s.error_class)));
  PutField(out, std::to_string(static_cast<int>(s.code)));
  PutField(out, s.label);
  PutField(out, s.message);
  PutField(out, std::to_string(s.planner_kind));
  PutField(out, s.planner_table);
  PutField(out, std::to_string(s.planner_missing_bytes));
  return out;
}

RankStatus DecodeStatus(const std::string& text) {
  RankStatus s;
  if (text == kOk) return s;
  if (text.rfind(kErr, 0) != 0) {
    throw CommError("agreeing on an error across ranks: a rank sent a malformed status '" +
                    text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
  }
  std::size_t pos = std::strlen(kErr);
  s.ok = false;
  s.rank = static_cast<int>(GetInt(text, pos));
  const auto cls = GetInt(text, pos);
  const auto code = GetInt(text, pos);
  if (cls < static_cast<int>(ErrorClass::kError) || cls > static_cast<int>(ErrorClass::kForeign) ||
      code < static_cast<int>(ExitCode::kInternal) ||
      code > static_cast<int>(ExitCode::kCollective)) {
    throw CommError("agreeing on an error across ranks: a rank sent a malformed status '" +
                    text.substr(0, 80) + "'; do all ranks run the same tzrec_train build?");
  }
  s.error_class = static_cast<ErrorClass>(cls);
  s.code = static_cast<ExitCode>(code);
  s.label = GetField(text, pos);
  s.message = GetField(text, pos);
  s.planner_kind = static_cast<int>(GetInt(text, pos));
  s.planner_table = GetField(text, pos);
  s.planner_missing_bytes = GetInt(text, pos);
  return s;
}

std::optional<RankStatus> FirstFailure(const std::vector<std::string>& encoded) {
  for (const auto& text : encoded) {
    RankStatus s = DecodeStatus(text);
    if (!s.ok) return s;
  }
  return std::nullopt;
}

namespace {
// Throws `error` marked with the rank that raised it (every rank throws the same one).
template <class E>
[[noreturn]] void RaiseFrom(int rank, E error) {
  error.SetOriginRank(rank);
  throw error;
}
}  // namespace

void ThrowAgreed(const RankStatus& s, const std::string& context) {
  const std::string rank = std::to_string(s.rank);
  std::string what = s.message;
  if (!context.empty()) {
    what = context + " failed on rank " + rank + ": " + s.message;
  } else if (s.error_class == ErrorClass::kForeign) {
    what = "rank " + rank + ": " + s.message;
  }
  switch (s.error_class) {
    case ErrorClass::kInput:
      RaiseFrom(s.rank, InputError(what));
    case ErrorClass::kConfig:
      RaiseFrom(s.rank, ConfigError(what));
    case ErrorClass::kPlanner:
      RaiseFrom(s.rank, PlannerError(static_cast<PlannerError::Kind>(s.planner_kind),
                                     s.planner_table, s.planner_missing_bytes, what));
    case ErrorClass::kComm:
      RaiseFrom(s.rank, CommError(what));
    case ErrorClass::kCheckpoint:
      RaiseFrom(s.rank, CheckpointError(what, s.code));
    case ErrorClass::kInternal:
    case ErrorClass::kForeign:
      RaiseFrom(s.rank, InternalError(what));
    case ErrorClass::kError:
      break;
  }
  RaiseFrom(s.rank, Error(what, s.code, InternLabel(s.label)));
}

namespace agree_detail {

void Agree(Comm& comm, const std::string& context, const std::exception_ptr& error) {
  const auto all = AllGatherStrings(comm, EncodeStatus(StatusOf(error, comm.Rank())));
  if (auto first = FirstFailure(all)) ThrowAgreed(*first, context);
}

}  // namespace agree_detail
}  // namespace tzrec
