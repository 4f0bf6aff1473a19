#!/usr/bin/env python3
"""Print a pipeline config given as (protobuf-style) JSON as protobuf text, TorchEasyRec's .config
syntax: `json_to_config.py in.json > out.config`. Used by tests and tools that build configs as
Python dicts; tzrec_train itself reads both formats with libprotobuf."""
import json
import sys

ENUMS = {"dataset_type", "fg_mode", "group_type", "input_type", "weight_decay_mode"}


def scalar(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if key in ENUMS:
        return value
    return json.dumps(value)  # protobuf text accepts C-style escapes, JSON's are a subset


def emit(obj, indent=0, out=None):
    pad = "    " * indent
    for key, value in obj.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                out.append(f"{pad}{key} {{")
                emit(item, indent + 1, out)
                out.append(f"{pad}}}")
            else:
                out.append(f"{pad}{key}: {scalar(key, item)}")
    return out


def to_text(config):
    return "\n".join(emit(config, 0, [])) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(to_text(json.load(f)))
