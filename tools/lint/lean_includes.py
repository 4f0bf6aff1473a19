#!/usr/bin/env python3
"""ctest lint.lean_aten_includes: no product, test or tool file includes an umbrella libtorch header.

<ATen/ATen.h>, <torch/torch.h> and <torch/all.h> pull in every operator's declaration (~3x the
front-end time of <ATen/core/Tensor.h> + the <ATen/ops/*.h> a file uses), which slows the build
and the clang-tidy naming check (docs/design.md, "One naming convention").

  tools/lint/lean_includes.py [ROOT]      exit 0 clean, 1 with the offending file:line list
"""
import pathlib
import re
import sys

UMBRELLA = re.compile(r'^\s*#\s*include\s*[<"](ATen/ATen\.h|torch/torch\.h|torch/all\.h)[>"]')


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
    found = []
    for folder in ("include", "src", "tests", "tools"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h", ".cc", ".cu"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if UMBRELLA.match(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    for item in found:
        print(item)
    if found:
        print(f"lean_includes: {len(found)} umbrella include(s); include <ATen/core/Tensor.h> and "
              "the <ATen/ops/NAME.h> / <ATen/TensorOperators.h> the file uses instead")
        return 1
    print("lean_includes: no umbrella libtorch includes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
