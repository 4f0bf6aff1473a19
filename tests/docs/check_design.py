#!/usr/bin/env python3
"""docs/design.md's component table matches the build (issue 12, "docs/design.md is the map").

Reads the table under "## Components" (columns: folder | target | namespace | owns | links) and
<build>/targets.tsv (cmake/TargetManifest.cmake: every target defined under src/ with its alias,
folder and direct link libraries) and fails, naming the row and the value, when:
  * a row does not have exactly five cells (a row that would not render), or the table is broken
    by a blank line;
  * a row's target is not a target of the build, or is defined outside the row's src/ folder;
  * a row's links column differs from the target's direct link libraries (tzrun::options and
    *_internal helper targets aside);
  * a header in the row's include/ folder declares no namespace under the row's namespace;
  * a product target of the build (a namespaced library or an executable under src/) has no row.
Usage: check_design.py --root SOURCE_DIR --manifest BUILD_DIR/targets.tsv
"""
import argparse
import pathlib
import re
import sys

IGNORED_LINKS = {"tzrun::options"}


def strip_genex(item):
    while True:
        m = re.fullmatch(r"\$<(?:BUILD_INTERFACE|LINK_ONLY):(.*)>", item)
        if not m:
            return item
        item = m.group(1)


def read_manifest(path):
    targets = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        name, alias, kind, folder, links = (line.split("\t") + [""] * 5)[:5]
        deps = {strip_genex(x) for x in links.split(";") if x}
        deps = {d for d in deps if d not in IGNORED_LINKS and not d.endswith("_internal")}
        targets[alias or name] = {"name": name, "kind": kind, "folder": folder, "links": deps}
    return targets


def read_table(design):
    lines = design.read_text().splitlines()
    start = lines.index("## Components")
    rows, errors, in_table = [], [], False
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        if line.startswith("|"):
            if in_table is None:
                errors.append(f"docs/design.md:{number}: the component table is split by a blank "
                              "line; a markdown table must be contiguous")
            in_table = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if set(line.replace("|", "").strip()) <= set("- :"):
                continue  # the separator row
            rows.append((number, cells))
        elif in_table and not line.strip():
            in_table = None  # a blank line after table rows: another row would start a new table
        elif in_table is None and line.strip():
            in_table = False
    if rows and rows[0][1][:2] == ["folder", "target"]:
        rows = rows[1:]
    return rows, errors


def ticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def check(root, manifest_path):
    targets = read_manifest(manifest_path)
    rows, errors = read_table(root / "docs" / "design.md")
    seen = set()
    for number, cells in rows:
        where = f"docs/design.md:{number}"
        if len(cells) != 5:
            errors.append(f"{where}: {len(cells)} cells, need 5 (folder | target | namespace | owns | links)")
            continue
        folders, names, namespaces, _, links = cells
        folders, names = ticked(folders), ticked(names)
        namespaces = ticked(namespaces)
        link_set = {x for x in ticked(links)}
        src_folders = [f for f in folders if f.startswith("src/")]
        for name in names:
            seen.add(name)
            target = targets.get(name)
            if target is None:
                errors.append(f"{where}: target '{name}' is not a target of the build "
                              f"(targets: {', '.join(sorted(targets))})")
                continue
            if target["folder"] not in src_folders:
                errors.append(f"{where}: '{name}' is defined in {target['folder']}, not in "
                              f"{', '.join(src_folders) or 'no src/ folder'} of this row")
        if names and names[0] in targets and link_set != targets[names[0]]["links"]:
            want = targets[names[0]]["links"]
            errors.append(f"{where}: links of '{names[0]}' are {sorted(want)} in CMake, the table "
                          f"says {sorted(link_set)} (missing: {sorted(want - link_set)}, extra: "
                          f"{sorted(link_set - want)})")
        for folder in folders:
            path = root / folder
            if not path.exists() and not any(root.glob(folder)):
                errors.append(f"{where}: folder '{folder}' does not exist")
            if folder.startswith("include/") and path.is_dir() and namespaces:
                for header in sorted(path.glob("*.hpp")):
                    text = header.read_text()
                    if not any(re.search(rf"namespace {re.escape(ns)}(::\w+)*\s*{{", text)
                               for ns in namespaces):
                        errors.append(f"{where}: {header.relative_to(root)} declares no namespace "
                                      f"{' or '.join(namespaces)}")
    for alias, target in sorted(targets.items()):
        product = "::" in alias or target["kind"] == "EXECUTABLE"
        if product and not alias.endswith("_internal") and alias not in seen:
            errors.append(f"docs/design.md: target '{alias}' ({target['folder']}) has no row in the "
                          "component table; add one")
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True, type=pathlib.Path)
    parser.add_argument("--manifest", required=True)
    args = parser.parse_args()
    errors = check(args.root, args.manifest)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} problem(s) in docs/design.md's component table", file=sys.stderr)
        return 1
    print("docs/design.md component table matches the build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
