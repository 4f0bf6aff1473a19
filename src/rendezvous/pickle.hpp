// tzrun rendezvous internals: the subset of Python's pickle format that torchrun's dynamic
// rendezvous state uses (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py pickles
// its _RendezvousState with pickle.dumps, protocol 4, and the etcd-v2 backend stores it
// base64-encoded in one etcd key).
//
// Reading: a small unpickler for protocols 2-5 that builds a value tree instead of Python
// objects: globals stay names, NEWOBJ/BUILD give an object with its class name and state
// dict, REDUCE gives a call (callable + arguments). Opcodes (Lib/pickletools.py): PROTO,
// FRAME, STOP, MARK, the memo (MEMOIZE, [LONG_]BIN{PUT,GET}), NONE, NEWTRUE/NEWFALSE,
// BININT/BININT1/BININT2/LONG1, BINFLOAT, [SHORT_]BINUNICODE[8], [SHORT_]BINBYTES, tuples,
// lists, dicts, sets, GLOBAL/STACK_GLOBAL, NEWOBJ, REDUCE, BUILD. Anything else is refused
// (PickleError names the opcode): the reader never runs code.
//
// Writing: PickleWriter emits protocol-4 opcodes without a memo and without frames (both
// optional for Python's unpickler), so pickle.loads rebuilds the same objects.
//
// Thread-safety: pure functions / one writer per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tzrun::rendezvous::detail {

class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PyValue;
using PyRef = std::shared_ptr<PyValue>;

struct PyValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kStr,
    kBytes,
    kTuple,
    kList,
    kDict,
    kSet,
    kGlobal,
    kObject,
    kCall,
    kMark
  };
  Kind kind = Kind::kNone;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;             ///< str / bytes; kGlobal: "module.name"
  std::vector<PyRef> items;  ///< tuple/list/set items; dict: key, value, key, value, ...
  PyRef cls;                 ///< kObject: its class (kGlobal); kCall: the callable
  PyRef args;                ///< kObject: NEWOBJ arguments; kCall: arguments (tuple)
  PyRef state;               ///< kObject: the BUILD state (a dict), may be null
};

/// Unpickles `bytes` into a value tree; throws PickleError for malformed or unsupported input.
PyRef Unpickle(std::string_view bytes);

/// dict lookup by str key; nullptr when absent (or `dict` is not a dict).
PyRef DictGet(const PyRef& dict, std::string_view key);

/// Builds a pickle opcode by opcode (the caller nests values in pickle's postfix order).
class PickleWriter {
 public:
  PickleWriter();  ///< writes PROTO 4
  void None();
  void Bool(bool v);
  void Int(std::int64_t v);
  void Float(double v);
  void Str(std::string_view v);
  void Bytes(std::string_view v);
  void Global(std::string_view module, std::string_view name);
  void Mark();
  void EmptyTuple();
  void Tuple(int n);  ///< TUPLE1..TUPLE3 of the last n values (1 <= n <= 3)
  void EmptyDict();
  void SetItems();  ///< dict below the MARK gets the key/value pairs above it
  void EmptySet();
  void AddItems();
  void NewObj();  ///< cls args -> object
  void Reduce();  ///< callable args -> result
  void Build();   ///< object state -> object
  /// Appends STOP and returns the pickle.
  std::string Finish();

 private:
  std::string out_;
};

}  // namespace tzrun::rendezvous::detail
