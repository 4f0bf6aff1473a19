"""gen_data.py --from-config: a data set whose columns are the ones a pipeline config reads.

The config (TorchEasyRec .config protobuf text or protobuf JSON, read with tools/config/pbtext.py)
decides the columns:
- data_config.input_fields, when given, are the columns, in that order, with their input_type;
- else the label_fields, then the input column of every feature in feature_configs order, with
  the column a feature reads as tzrec_train's reader does (src/worker/config/features.cpp
  InputColumn): fg_mode FG_NONE (TorchEasyRec's default) reads the column named by the
  feature_name, FG_NORMAL / FG_DAG the column after the side prefix of its `expression`
  ("user:int_0" -> int_0).

Values follow the feature that reads the column: id features get ids inside num_buckets (Zipf
distributed when the space has more than 10 ids), hash_bucket_size features ids in
[0, hash_bucket_size), vocab_list features its tokens; raw features raw positive values (FG_DAG)
or, with boundaries under FG_NONE, the encoded bucket ids in [0, len(boundaries)]. Multi-value
cells (TorchEasyRec's value_dim != 1) are strings joined with the separator the reader splits on:
data_config.fg_encoded_multival_sep (default "\\x03") with FG_NONE, the feature's `separator`
(default "\\x1d") otherwise. Features tzrec_train does not implement (sequence, combo, lookup,
match, expr, custom features) still get columns, so that the config reaches tzrec_train's own
refusal: sequences of ids joined by sequence_delim (columns `<sequence_name>__<column>` for a
sequence_feature's sub features), and a column of ids for every "side:column" input they name.

Each label is Bernoulli(sigmoid(-1 + planted term)): the hidden per-id weights of gen_data.py
(hidden_weight) of the (up to) four id columns with the fewest distinct ids >= 3 (these are the
ones a model learns fastest; SCALES), plus DENSE_SCALE * the standardised log1p of the first dense
raw column. See tools/gen_data/README.md.
"""
import numpy as np
import pyarrow as pa

SIDES = ("user:", "item:", "context:")
SCALES = [2.0, 1.6, 1.3, 1.0]  # planted weight scale per signal column, fewest ids first
DENSE_SCALE = 1.0  # planted weight of the standardised log1p of the first dense raw column
INT_TYPES = {"INT32": pa.int32(), "INT64": pa.int64()}
FLOAT_TYPES = {"FLOAT": pa.float32(), "DOUBLE": pa.float64()}


def as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _column_of(expression):
    """'user:int_0' -> 'int_0' (tzrec_train's InputColumn); None for 'feature:x' references."""
    if expression.startswith("feature:"):
        return None
    return expression.rsplit(":", 1)[-1]


class Column:
    """One generated column: how its values are drawn and their Arrow type."""

    def __init__(self, name, kind, size=0, vocab=None, boundaries=None, arity=1, sep="\x03",
                 seq_delim=None, seq_len=0):
        self.name, self.kind, self.size = name, kind, size  # kind: id | vocab | dense | bucket
        self.vocab, self.boundaries = vocab or [], boundaries or []
        self.arity, self.sep = arity, sep  # values per cell (0: 1..3 of them) and their joiner
        self.seq_delim, self.seq_len = seq_delim, seq_len
        self.input_type = None  # from data_config.input_fields

    def cardinality(self):
        if self.kind in ("id", "bucket"):
            return self.size
        return len(self.vocab) if self.kind == "vocab" else 0

    def single(self):
        return self.arity == 1 and not self.seq_delim


def _feature_columns(feature, data, fg_none):
    """(column name, Column) pairs a feature_configs entry reads, for any feature type."""
    (ftype, f), = feature.items()
    name = f.get("feature_name", "")

    def col_name(expr_key="expression"):
        if fg_none:
            return name
        expr = as_list(f.get(expr_key))
        return (_column_of(expr[0]) if expr else None) or name

    sep = data.get("fg_encoded_multival_sep", "\x03") if fg_none else f.get("separator", "\x1d")
    if ftype in ("id_feature", "raw_feature"):
        arity = int(f.get("value_dim", 1))
        return [(col_name(), _basic_column(col_name(), ftype, f, fg_none, arity, sep))]
    if ftype == "sequence_feature":
        out = []
        seq = f.get("sequence_name", "seq")
        for sub in as_list(f.get("features")):
            for col, c in _feature_columns(sub, data, fg_none):
                c.name = f"{seq}__{col}"
                c.seq_delim, c.seq_len = f.get("sequence_delim", ";"), int(f.get("sequence_length", 50))
                out.append((c.name, c))
        return out
    if ftype in ("sequence_id_feature", "sequence_raw_feature"):
        base = "id_feature" if ftype == "sequence_id_feature" else "raw_feature"
        c = _basic_column(col_name(), base, f, fg_none, int(f.get("value_dim", 1)), sep)
        c.seq_delim, c.seq_len = f.get("sequence_delim", ";"), int(f.get("sequence_length", 50))
        return [(c.name, c)]
    # combo / lookup / match / expr / custom / ...: a string column per "side:column" input
    out = []
    for value in f.values():
        for v in as_list(value):
            if isinstance(v, str) and v.startswith(SIDES):
                col = _column_of(v)
                out.append((col, Column(col, "id", size=1000)))
    return out


def _basic_column(col, ftype, f, fg_none, arity, sep):
    if ftype == "id_feature":
        if f.get("vocab_list"):
            return Column(col, "vocab", vocab=as_list(f["vocab_list"]), arity=arity, sep=sep)
        size = int(f.get("num_buckets") or f.get("hash_bucket_size") or 1000)
        return Column(col, "id", size=size, arity=arity, sep=sep)
    bounds = [float(b) for b in as_list(f.get("boundaries"))]
    if bounds and fg_none:
        return Column(col, "id", size=len(bounds) + 1, arity=arity, sep=sep)
    if bounds:
        return Column(col, "bucket", size=len(bounds) + 1, boundaries=bounds, arity=arity, sep=sep)
    return Column(col, "dense", arity=arity, sep=sep)


def plan(cfg):
    """(label names, [(column name, Column)]) in file order for the config dict (labels are
    Columns of kind "label"); raises ValueError on a config it cannot serve."""
    data = cfg.get("data_config", {})
    fg_none = data.get("fg_mode", "FG_NONE") == "FG_NONE"
    labels = as_list(data.get("label_fields"))
    if not labels:
        raise ValueError("data_config.label_fields is empty: nothing to plant a signal in")
    columns = {}
    for feature in as_list(cfg.get("feature_configs")):
        for col, c in _feature_columns(feature, data, fg_none):
            if col in labels:
                raise ValueError(f"feature column '{col}' is also a label_fields entry")
            old = columns.get(col)
            if old is None:
                columns[col] = c
            elif old.cardinality() and c.cardinality() and c.cardinality() < old.cardinality():
                old.size = c.size  # ids valid for every feature that reads the column
    fields = as_list(data.get("input_fields"))
    if not fields:
        return labels, [(n, Column(n, "label")) for n in labels] + list(columns.items())
    names = [fd.get("input_name", "") for fd in fields]
    missing = [c for c in list(columns) + labels if c not in names]
    if missing:
        raise ValueError(f"column(s) {missing} that the features / labels read are not in "
                         f"data_config.input_fields {names}")
    out = []
    for fd in fields:
        name = fd.get("input_name", "")
        c = Column(name, "label") if name in labels else columns.get(name) or Column(
            name, "id", size=1000)
        c.input_type = fd.get("input_type", "INT32")  # TorchEasyRec's default
        out.append((name, c))
    return labels, out


def _draw(c, rng, rows, zipf_ids, a):
    """(key, v, cells) for column c: key is the per-row integer its planted weight is a function
    of, v the per-row first value (numbers, or vocab tokens), cells the per-row token lists of a
    multi-value or sequence column (None for a single-value one)."""
    def ids(n, count):
        return zipf_ids(rng, n, count, a) if n > 10 else rng.integers(0, n, size=count)

    if c.kind == "dense":
        key = v = np.floor(rng.lognormal(mean=1.0, sigma=1.5, size=rows))
    elif c.kind == "bucket":
        key = rng.integers(0, c.size, size=rows)
        edges = [c.boundaries[0] - 1.0] + c.boundaries + [c.boundaries[-1] + 1.0]
        lo, hi = np.array(edges[:-1])[key], np.array(edges[1:])[key]
        v = np.round(lo + (hi - lo) * rng.random(rows) * 0.999, 4)
    elif c.kind == "vocab":
        key = rng.integers(0, len(c.vocab), size=rows)
        v = [c.vocab[i] for i in key]
    else:
        key = v = ids(c.size, rows)
    if c.single():
        return key, v, None
    cells = []
    for r in range(rows):
        n = int(rng.integers(1, c.seq_len + 1)) if c.seq_len else c.arity or int(rng.integers(1, 4))
        if c.kind == "vocab":
            more = [c.vocab[int(i)] for i in rng.integers(0, len(c.vocab), size=n - 1)]
        elif c.kind == "dense":
            more = [repr(float(x)) for x in np.floor(rng.lognormal(1.0, 1.5, size=n - 1))]
        elif c.kind == "bucket":
            more = [repr(float(x)) for x in rng.uniform(c.boundaries[0], c.boundaries[-1], n - 1)]
        else:
            more = [str(int(i)) for i in ids(c.size, n - 1)]
        first = v[r] if c.kind == "vocab" else repr(float(v[r])) if c.kind != "id" else str(v[r])
        cells.append([first] + more)
    return key, v, cells


def _arrow(c, v, cells, mask):
    """The Arrow array of column c from its drawn values (typed by input_type when given)."""
    t = c.input_type
    if cells is not None:
        if t and t.startswith("ARRAY_") and not t.startswith("ARRAY_ARRAY"):
            inner = t[len("ARRAY_"):]
            conv = int if inner in INT_TYPES else float if inner in FLOAT_TYPES else str
            typ = INT_TYPES.get(inner) or FLOAT_TYPES.get(inner) or pa.string()
            return pa.array([[conv(float(x)) if conv is int else conv(x) for x in cell]
                             for cell in cells], type=pa.list_(typ))
        if t not in (None, "STRING"):
            raise ValueError(f"column '{c.name}': multi-value cells need input_type STRING or "
                             f"ARRAY_*, the config says {t}")
        return pa.array([(c.seq_delim or c.sep).join(cell) for cell in cells], type=pa.string())
    if c.kind == "vocab" or t == "STRING":
        values = v if c.kind == "vocab" else [repr(x) if isinstance(x, float) else str(x)
                                              for x in np.asarray(v).tolist()]
        return pa.array([None if m else x for x, m in zip(values, mask)], type=pa.string())
    if t in INT_TYPES or (t is None and c.kind == "id"):
        return pa.array(np.asarray(v).astype(np.int64), type=INT_TYPES.get(t, pa.int64()))
    if t in FLOAT_TYPES or t is None:
        return pa.array(np.asarray(v, np.float64), type=FLOAT_TYPES.get(t, pa.float64()), mask=mask)
    raise ValueError(f"column '{c.name}': gen_data does not write input_type {t} for it")


def signal_columns(columns):
    """(sparse, dense): names of the planted id columns (fewest ids >= 3 first) and the dense one."""
    single = [c for c in columns if c.kind != "label" and c.single()]
    sparse = sorted((c for c in single if c.cardinality() >= 3),
                    key=lambda c: (c.cardinality(), c.name))[:len(SCALES)]
    dense = [c for c in single if c.kind == "dense"][:1]
    return [c.name for c in sparse], [c.name for c in dense]


def table(cfg, rng, rows, zipf_ids, hidden_weight, a, null_rate):
    """One chunk of `rows` rows for the config dict as a pyarrow Table."""
    labels, named = plan(cfg)
    sparse, dense = signal_columns([c for _, c in named])
    logits = {name: np.full(rows, -1.0) for name in labels}
    arrays = {}
    for name, c in named:
        if c.kind == "label":
            continue
        key, v, cells = _draw(c, rng, rows, zipf_ids, a)
        mask = np.zeros(rows, dtype=bool)
        if c.kind == "dense" and cells is None:
            mask = rng.random(rows) < null_rate
        for k, logit in enumerate(logits.values()):
            if name in sparse:
                i = sparse.index(name)
                logit += SCALES[i] * hidden_weight(np.asarray(key, np.int64), 3000 + 97 * k + i)
            if name in dense:
                x = np.where(mask, 0.0, np.log1p(v))
                logit += DENSE_SCALE * (x - x.mean()) / (x.std() + 1e-9)
        arrays[name] = _arrow(c, v, cells, mask)
    types = {name: c.input_type for name, c in named if c.kind == "label"}
    for name, logit in logits.items():
        y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
        t = types.get(name)
        if t not in (None, *INT_TYPES, *FLOAT_TYPES):
            raise ValueError(f"label '{name}': input_type {t}; gen_data writes labels as "
                             "INT32 / INT64 / FLOAT / DOUBLE")
        arrays[name] = pa.array(y, type=INT_TYPES.get(t) or FLOAT_TYPES.get(t) or pa.int64())
    return pa.table({name: arrays[name] for name, _ in named})


def describe(cfg):
    labels, named = plan(cfg)
    sparse, dense = signal_columns([c for _, c in named])
    return (f"labels {labels}, {len(named) - len(labels)} feature columns, planted signal on "
            f"{sparse} (scales {SCALES[:len(sparse)]}) and {dense} ({DENSE_SCALE})")
