"""Read a tzrec_train pipeline config (TorchEasyRec .config, protobuf text format) into a Python
dict shaped like its protobuf JSON, without the Python protobuf package: fields named `repeated`
in our .proto files (src/worker/config/proto/tzrec/protos) become lists, every other field a
scalar or a dict; enum values stay strings ("DEEP"), numbers int or float, strings decoded.
A file that starts with '{' is read as protobuf JSON as is.

Used by the tests (tests/integration/train_job_helpers.py) and tools (tools/bench/train) that
derive configs from the examples; write the result back with `json.dumps` (tzrec_train reads a
file starting with '{' as protobuf JSON) or as protobuf text with json_to_config.to_text.

Supported text syntax: `name: value`, `name { ... }`, `name: { ... }`, `name <...>`, `#`
comments, lists `name: [a, b]`, adjacent string literals, and the C escapes of protobuf text
(\\n \\t \\" \\' \\\\ \\xHH, octal). Raises ValueError with the line number on anything else.
"""
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTOS = ROOT / "src" / "worker" / "config" / "proto"

_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}<>\[\]:,;])
  | (?P<word>[-+]?[A-Za-z0-9_.+-]+)
""", re.VERBOSE)
_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
        "\\": "\\", "'": "'", '"': '"', "?": "?"}


def repeated_fields(protos=PROTOS) -> set:
    """Names of the fields declared `repeated` in the .proto files. A name that is repeated in
    one message and singular in another (ComboFeature.expression vs IdFeature.expression) is
    given as "holder.name" for every field `holder` of a message type where it is repeated
    (e.g. "combo_feature.expression"), so the dict shape follows the enclosing field."""
    repeated, singular = {}, set()  # repeated: name -> message types declaring it repeated
    holders = {}  # message type -> names of the fields of that type
    for path in sorted(pathlib.Path(protos).rglob("*.proto")):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        stack = []
        for line in text.splitlines():
            m = re.match(r"\s*message\s+(\w+)\s*\{", line)
            if m:
                stack.append(m.group(1))
            elif re.match(r"\s*oneof\s+\w+\s*\{", line):
                stack.append(None)  # members are singular fields of the enclosing message
            f = re.match(r"\s*(repeated|optional|required)?\s*([\w.]+)\s+(\w+)\s*=", line)
            if f and f.group(2) not in ("message", "oneof", "enum"):
                label, type_, name = f.groups()
                holders.setdefault(type_.split(".")[-1], set()).add(name)
                owner = next((x for x in reversed(stack) if x), None)
                if label == "repeated":
                    repeated.setdefault(name, set()).add(owner)
                elif label or (stack and stack[-1] is None):
                    singular.add(name)
            if "}" in line and stack and not m:
                stack.pop()
    if not repeated:
        raise ValueError(f"no repeated fields found under {protos}: is the proto directory right?")
    out = set()
    for name, owners in repeated.items():
        if name not in singular:
            out.add(name)
            continue
        for owner in owners:
            out.update(f"{holder}.{name}" for holder in holders.get(owner, ()))
    return out


def _unquote(token: str, line: int) -> str:
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = body[i + 1]
        if n in _ESC:
            out += _ESC[n].encode()
            i += 2
        elif n in "xX":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2:])
            if not m:
                raise ValueError(f"line {line}: bad \\x escape in {token}")
            out.append(int(m.group(), 16))
            i += 2 + len(m.group())
        elif n in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(), 8) & 0xFF)
            i += 1 + len(m.group())
        else:
            raise ValueError(f"line {line}: unknown escape \\{n} in {token}")
    return out.decode("utf-8")


def _tokens(text: str):
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"line {line}: unexpected character {text[pos]!r}")
        if m.lastgroup != "ws":
            yield m.lastgroup, m.group(), line
        line += m.group().count("\n")
        pos = m.end()


def _scalar(kind: str, token: str, line: int):
    if kind == "str":
        return _unquote(token, line)
    if kind != "word":
        raise ValueError(f"line {line}: expected a value, got {token!r}")
    if token in ("true", "True", "t"):
        return True
    if token in ("false", "False", "f"):
        return False
    if re.fullmatch(r"[-+]?(0x[0-9A-Fa-f]+|\d+)", token):
        return int(token, 0) if not re.fullmatch(r"[-+]?0\d+", token) else int(token, 8)
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[fF]?|[-+]?(inf|infinity|nan)", token,
                    re.IGNORECASE):
        return float(token.rstrip("fF") if not token.lower().endswith("inf") else token)
    if re.fullmatch(r"[A-Za-z_]\w*", token):
        return token  # an enum value
    raise ValueError(f"line {line}: cannot read the value {token!r}")


class _Parser:
    def __init__(self, text: str, repeated: set, lenient: bool = False):
        self.toks = list(_tokens(text))
        self.i = 0
        self.repeated = repeated
        self.lenient = lenient

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None, -1)

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def message(self, close=None, parent=None) -> dict:
        out = {}
        while True:
            kind, tok, line = self.peek()
            if kind is None:
                if close:
                    raise ValueError(f"end of file: missing {close!r}")
                return out
            if tok == close:
                self.take()
                return out
            if kind != "word":
                raise ValueError(f"line {line}: expected a field name, got {tok!r}")
            self.take()
            self.field(out, tok, line, parent)
            if self.peek()[1] in (",", ";"):
                self.take()

    def value(self, name=None):
        kind, tok, line = self.take()
        if tok in ("{", "<"):
            return self.message("}" if tok == "{" else ">", name)
        value = _scalar(kind, tok, line)
        while kind == "str" and self.peek()[0] == "str":  # "a" "b" is "ab"
            kind, tok, line = self.take()
            value += _unquote(tok, line)
        return value

    def field(self, out: dict, name: str, line: int, parent=None):
        colon = self.peek()[1] == ":"
        if colon:
            self.take()
        elif self.peek()[1] not in ("{", "<"):
            raise ValueError(f"line {line}: expected ':' or '{{' after '{name}'")
        if self.peek()[1] == "[":
            self.take()
            values = []
            while self.peek()[1] != "]":
                values.append(self.value(name))
                if self.peek()[1] == ",":
                    self.take()
            self.take()
        else:
            values = [self.value(name)]
        if name in self.repeated or f"{parent}.{name}" in self.repeated:
            out.setdefault(name, []).extend(values)
        elif self.lenient and (name in out or len(values) != 1):
            # a field our protos lack (or declare singular) given twice: keep every value
            first = out.pop(name, [])
            out[name] = (first if isinstance(first, list) else [first]) + values
        elif name in out or len(values) != 1:
            raise ValueError(f"line {line}: '{name}' is not a repeated field but is set twice")
        else:
            out[name] = values[0]


def parse(text: str, repeated=None, lenient=False) -> dict:
    """The config in `text` (protobuf text, or protobuf JSON when it starts with '{') as a dict.

    lenient=True reads configs with TorchEasyRec fields our .proto files lack (task_towers,
    sequence_feature.features, ...): a field that is not known to be repeated but is set twice
    becomes a list of its values instead of an error (so such a field may be a list or not)."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    return _Parser(text, repeated if repeated is not None else repeated_fields(), lenient).message()


def load(path, lenient=False) -> dict:
    """parse() of the file at `path`."""
    return parse(pathlib.Path(path).read_text(), lenient=lenient)


if __name__ == "__main__":
    import sys
    print(json.dumps(load(sys.argv[1]), indent=2))
