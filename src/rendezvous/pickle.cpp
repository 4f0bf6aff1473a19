// The pickle subset of pickle.hpp. Opcode values: CPython Lib/pickle.py.
#include "pickle.hpp"

#include <bit>
#include <cstring>
#include <map>

namespace tzrun::rendezvous::detail {
namespace {

using Kind = PyValue::Kind;

PyRef Make(Kind k) {
  auto v = std::make_shared<PyValue>();
  v->kind = k;
  return v;
}

std::string Hex(unsigned char c) {
  static const char* const kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[c >> 4U] + kDigits[c & 15U];
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  PyRef Run() {
    while (true) {
      const unsigned char op = Byte();
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty()) throw PickleError("unbalanced stack at STOP");
        return stack_.back();
      }
      Step(op);
    }
  }

 private:
  unsigned char Byte() {
    if (pos_ >= in_.size()) throw PickleError("truncated pickle (no STOP)");
    return static_cast<unsigned char>(in_[pos_++]);
  }
  std::string_view Take(std::uint64_t n) {
    if (n > in_.size() - pos_) throw PickleError("truncated pickle (length past the end)");
    auto v = in_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::uint64_t Le(int n) {
    std::uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(Byte()) << (8 * k);
    return v;
  }
  std::string Line() {
    const auto end = in_.find('\n', pos_);
    if (end == std::string_view::npos) throw PickleError("truncated GLOBAL");
    std::string s(in_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  PyRef Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      throw PickleError("stack underflow");
    }
    auto v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PyRef& Top() {
    if (stack_.empty()) throw PickleError("stack underflow");
    return stack_.back();
  }
  std::vector<PyRef> PopMark() {
    if (marks_.empty()) throw PickleError("no MARK");
    const std::size_t at = marks_.back();
    marks_.pop_back();
    std::vector<PyRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(at), stack_.end());
    stack_.resize(at);
    return items;
  }
  void Push(PyRef v) { stack_.push_back(std::move(v)); }
  void PushInt(std::int64_t i) {
    auto v = Make(Kind::kInt);
    v->i = i;
    Push(v);
  }
  void PushText(Kind k, std::string_view s) {
    auto v = Make(k);
    v->s = std::string(s);
    Push(v);
  }
  void PushTuple(std::vector<PyRef> items) {
    auto v = Make(Kind::kTuple);
    v->items = std::move(items);
    Push(v);
  }
  void PushGlobal(const std::string& module, const std::string& name) {
    PushText(Kind::kGlobal, module + "." + name);
  }
  void Memo(std::uint64_t id) { memo_[id] = Top(); }
  void Recall(std::uint64_t id) {
    auto it = memo_.find(id);
    if (it == memo_.end()) throw PickleError("memo key " + std::to_string(id) + " not found");
    Push(it->second);
  }
  void Long1() {
    const auto n = Byte();
    if (n > 8) throw PickleError("integer wider than 64 bits");
    const auto bytes = Take(n);
    std::uint64_t u = 0;
    for (std::size_t k = 0; k < n; ++k) {
      u |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[k])) << (8 * k);
    }
    if (n > 0 && n < 8 && (static_cast<unsigned char>(bytes[n - 1]) & 0x80U) != 0) {
      u |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    }
    PushInt(static_cast<std::int64_t>(u));
  }
  void BinFloat() {
    std::uint64_t u = 0;
    for (int k = 0; k < 8; ++k) u = (u << 8U) | Byte();
    auto v = Make(Kind::kFloat);
    v->f = std::bit_cast<double>(u);
    Push(v);
  }
  void Collection(unsigned char op) {
    auto items = PopMark();
    auto& target = Top();
    const bool dict = op == 'u';
    const Kind want = op == 'u' ? Kind::kDict : op == 'e' ? Kind::kList : Kind::kSet;
    if (target->kind != want) throw PickleError("SETITEMS/APPENDS/ADDITEMS on a wrong type");
    if (dict && items.size() % 2 != 0) throw PickleError("odd number of items in SETITEMS");
    target->items.insert(target->items.end(), items.begin(), items.end());
  }
  void Step(unsigned char op);
  void StepContainers(unsigned char op);
  void StepObjects(unsigned char op);

  std::string_view in_;
  std::size_t pos_ = 0;
  std::vector<PyRef> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, PyRef> memo_;
};

void Reader::Step(unsigned char op) {
  switch (op) {
    case 0x80:
      Byte();
      return;  // PROTO
    case 0x95:
      Le(8);
      return;  // FRAME
    case '(':
      marks_.push_back(stack_.size());
      return;  // MARK
    case 0x94:
      Memo(memo_.size());
      return;  // MEMOIZE
    case 'q':
      Memo(Byte());
      return;  // BINPUT
    case 'r':
      Memo(Le(4));
      return;  // LONG_BINPUT
    case 'h':
      Recall(Byte());
      return;  // BINGET
    case 'j':
      Recall(Le(4));
      return;  // LONG_BINGET
    case 'N':
      Push(Make(Kind::kNone));
      return;  // NONE
    case 0x88:
    case 0x89: {  // NEWTRUE / NEWFALSE
      auto v = Make(Kind::kBool);
      v->b = op == 0x88;
      Push(v);
      return;
    }
    case 'J':
      PushInt(static_cast<std::int32_t>(Le(4)));
      return;  // BININT
    case 'K':
      PushInt(Byte());
      return;  // BININT1
    case 'M':
      PushInt(static_cast<std::int64_t>(Le(2)));
      return;  // BININT2
    case 0x8a:
      Long1();
      return;  // LONG1
    case 'G':
      BinFloat();
      return;  // BINFLOAT
    case 0x8c:
      PushText(Kind::kStr, Take(Byte()));
      return;  // SHORT_BINUNICODE
    case 'X':
      PushText(Kind::kStr, Take(Le(4)));
      return;  // BINUNICODE
    case 0x8d:
      PushText(Kind::kStr, Take(Le(8)));
      return;  // BINUNICODE8
    case 'C':
      PushText(Kind::kBytes, Take(Byte()));
      return;  // SHORT_BINBYTES
    case 'B':
      PushText(Kind::kBytes, Take(Le(4)));
      return;  // BINBYTES
    default:
      StepContainers(op);
      return;
  }
}

void Reader::StepContainers(unsigned char op) {
  switch (op) {
    case ')':
      PushTuple({});
      return;  // EMPTY_TUPLE
    case 0x85:
      PushTuple({Pop()});
      return;     // TUPLE1
    case 0x86: {  // TUPLE2
      auto b = Pop();
      auto a = Pop();
      PushTuple({a, b});
      return;
    }
    case 0x87: {  // TUPLE3
      auto c = Pop();
      auto b = Pop();
      auto a = Pop();
      PushTuple({a, b, c});
      return;
    }
    case 't':
      PushTuple(PopMark());
      return;  // TUPLE
    case ']':
      Push(Make(Kind::kList));
      return;  // EMPTY_LIST
    case '}':
      Push(Make(Kind::kDict));
      return;  // EMPTY_DICT
    case 0x8f:
      Push(Make(Kind::kSet));
      return;  // EMPTY_SET
    case 'u':
    case 'e':
    case 0x90:
      Collection(op);
      return;  // SETITEMS / APPENDS / ADDITEMS
    default:
      StepObjects(op);
      return;
  }
}

void Reader::StepObjects(unsigned char op) {
  switch (op) {
    case 'a': {  // APPEND
      auto v = Pop();
      if (Top()->kind != Kind::kList) throw PickleError("APPEND to a non-list");
      Top()->items.push_back(v);
      return;
    }
    case 's': {  // SETITEM
      auto v = Pop();
      auto k = Pop();
      if (Top()->kind != Kind::kDict) throw PickleError("SETITEM on a non-dict");
      Top()->items.push_back(k);
      Top()->items.push_back(v);
      return;
    }
    case 'c': {  // GLOBAL
      auto module = Line();
      auto name = Line();
      PushGlobal(module, name);
      return;
    }
    case 0x93: {  // STACK_GLOBAL
      auto name = Pop();
      auto module = Pop();
      if (name->kind != Kind::kStr || module->kind != Kind::kStr) {
        throw PickleError("STACK_GLOBAL needs two strings");
      }
      PushGlobal(module->s, name->s);
      return;
    }
    case 0x81:
    case 'R': {  // NEWOBJ / REDUCE
      auto args = Pop();
      auto cls = Pop();
      if (args->kind != Kind::kTuple) throw PickleError("NEWOBJ/REDUCE arguments not a tuple");
      auto v = Make(op == 'R' ? Kind::kCall : Kind::kObject);
      v->cls = cls;
      v->args = args;
      Push(v);
      return;
    }
    case 'b': {  // BUILD
      auto state = Pop();
      if (Top()->kind != Kind::kObject) throw PickleError("BUILD on a non-object");
      Top()->state = state;
      return;
    }
    default:
      throw PickleError("unsupported pickle opcode " + Hex(op) + " at byte " +
                        std::to_string(pos_ - 1));
  }
}

}  // namespace

PyRef Unpickle(std::string_view bytes) {
  return Reader(bytes).Run();
}

PyRef DictGet(const PyRef& dict, std::string_view key) {
  if (!dict || dict->kind != Kind::kDict) return nullptr;
  for (std::size_t k = 0; k + 1 < dict->items.size(); k += 2) {
    const auto& kk = dict->items[k];
    if (kk->kind == Kind::kStr && kk->s == key) return dict->items[k + 1];
  }
  return nullptr;
}

PickleWriter::PickleWriter() {
  out_ = "\x80\x04";
}
void PickleWriter::None() {
  out_ += 'N';
}
void PickleWriter::Bool(bool v) {
  out_ += v ? '\x88' : '\x89';
}

void PickleWriter::Int(std::int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += 'J';
    const auto u = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
    for (int k = 0; k < 4; ++k) out_ += static_cast<char>((u >> (8 * k)) & 0xffU);
    return;
  }
  out_ += '\x8a';
  out_ += '\x08';
  const auto u = static_cast<std::uint64_t>(v);
  for (int k = 0; k < 8; ++k) out_ += static_cast<char>((u >> (8 * k)) & 0xffU);
}

void PickleWriter::Float(double v) {
  out_ += 'G';
  const auto u = std::bit_cast<std::uint64_t>(v);
  for (int k = 7; k >= 0; --k) out_ += static_cast<char>((u >> (8 * k)) & 0xffU);
}

void PickleWriter::Str(std::string_view v) {
  out_ += 'X';
  const auto n = static_cast<std::uint32_t>(v.size());
  for (int k = 0; k < 4; ++k) out_ += static_cast<char>((n >> (8 * k)) & 0xffU);
  out_ += v;
}

void PickleWriter::Bytes(std::string_view v) {
  out_ += 'B';
  const auto n = static_cast<std::uint32_t>(v.size());
  for (int k = 0; k < 4; ++k) out_ += static_cast<char>((n >> (8 * k)) & 0xffU);
  out_ += v;
}

void PickleWriter::Global(std::string_view module, std::string_view name) {
  out_ += 'c';
  out_ += module;
  out_ += '\n';
  out_ += name;
  out_ += '\n';
}

void PickleWriter::Mark() {
  out_ += '(';
}
void PickleWriter::EmptyTuple() {
  out_ += ')';
}

void PickleWriter::Tuple(int n) {
  if (n < 1 || n > 3) throw std::invalid_argument("PickleWriter::Tuple: n must be 1..3");
  out_ += static_cast<char>(0x84 + n);
}

void PickleWriter::EmptyDict() {
  out_ += '}';
}
void PickleWriter::SetItems() {
  out_ += 'u';
}
void PickleWriter::EmptySet() {
  out_ += '\x8f';
}
void PickleWriter::AddItems() {
  out_ += '\x90';
}
void PickleWriter::NewObj() {
  out_ += '\x81';
}
void PickleWriter::Reduce() {
  out_ += 'R';
}
void PickleWriter::Build() {
  out_ += 'b';
}

std::string PickleWriter::Finish() {
  out_ += '.';
  return std::move(out_);
}

}  // namespace tzrun::rendezvous::detail
