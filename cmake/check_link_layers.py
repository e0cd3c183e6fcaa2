#!/usr/bin/env python3
"""Checks that engine/'s layers hold at link time: no object file of a layer needs a symbol that an object
file of a higher layer defines.

The include check (cmake/check_layers.cmake) sees headers only: a function declared in a lower layer's header
and defined in a higher layer's source passes it, yet the lower layer cannot be linked without the higher
one. This check reads the objects of the vkconv_objects target with nm: each object's layer is its source's
engine/<layer>/ folder; a symbol an object leaves undefined (U) and another object defines as a strong global
(T, D, B, R; G and S are small-data variants) is a dependency of the first object on the second, and one on a
higher layer is a violation. Weak definitions (W, V, u: inline functions, template instantiations, vtables
and typeinfo without a key function, static locals of inline functions) are left out: every object that uses
one carries its own copy, so they tie no object to another. Symbols are matched by their mangled names and
demangled only for the report.

Run by ctest as `engine_link_layers`, after the build:
  check_link_layers.py --nm <nm> --layers <check_layers.cmake> --objects <file listing the objects>
                       [--layer <source>=<layer> ...]
--layers reads the layer order from check_layers.cmake's `set(layers ...)`; --objects is a file with one
object path a line (tests/CMakeLists.txt generates it from $<TARGET_OBJECTS:vkconv_objects>); --layer gives
an object whose source is not in engine/ (a generated source, by its path in the build folder) its layer.
"""
import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

STRONG = set("TDBRGS")   # global definitions that exist in one object only
UNDEFINED = "U"
NM_LINE = re.compile(r"^\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z?-])\s+(\S.*)$")


def read_layers(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"^\s*set\(\s*layers\s+([^)#]+)\)", text, re.MULTILINE)
    if not match:
        sys.exit(f"check_link_layers: no `set(layers ...)` in {path}")
    return match.group(1).split()


def source_of(object_path):
    """The object's source path as CMake names the object: CMakeFiles/<target>.dir/<source>.o"""
    path = object_path.replace("\\", "/")
    match = re.search(r"/CMakeFiles/[^/]+\.dir/(.+?)\.(?:o|obj)$", path)
    return match.group(1) if match else path


def nm_symbols(nm, path, demangle=False):
    """(type, name) for each symbol, in the object's symbol table order."""
    command = [nm, "-p"] + (["-C"] if demangle else []) + [path]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"check_link_layers: {' '.join(command)} failed:\n{result.stderr}")
    symbols = []
    for line in result.stdout.splitlines():
        match = NM_LINE.match(line)
        if match:
            symbols.append((match.group(1), match.group(2)))
    return symbols


def demangled_names(nm, path):
    """mangled name -> demangled name for one object: nm's two listings, in the same order, side by side."""
    mangled = nm_symbols(nm, path)
    demangled = nm_symbols(nm, path, demangle=True)
    if len(mangled) != len(demangled):
        return {}
    return {m[1]: d[1] for m, d in zip(mangled, demangled)}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", default="nm")
    parser.add_argument("--layers", required=True, help="check_layers.cmake, whose set(layers ...) gives the order")
    parser.add_argument("--objects", required=True, help="a file listing the object files, one a line")
    parser.add_argument("--layer", action="append", default=[], metavar="SOURCE=LAYER",
                        help="the layer of an object whose source is not in engine/")
    return parser.parse_args()


def layers_of_objects(args, rank):
    """(object path -> layer, object path -> its source, problems): each object's layer from its source."""
    given = {}
    for entry in args.layer:
        source, _, layer = entry.partition("=")
        if layer not in rank:
            sys.exit(f"check_link_layers: --layer {entry}: {layer!r} is not a layer ({' '.join(rank)})")
        given[source] = layer
    with open(args.objects, encoding="utf-8") as f:
        objects = [line.strip() for line in f if line.strip()]
    missing = [path for path in objects if not os.path.isfile(path)]
    if missing:
        sys.exit("check_link_layers: object files missing (build the library first, then run the test):\n  "
                 + "\n  ".join(missing))
    problems = [] if objects else [f"  {args.objects} lists no object files"]
    layer_of, name_of = {}, {}
    for path in objects:
        source = source_of(path)
        name_of[path] = source
        match = re.match(r"engine/([^/]+)/", source)
        layer = match.group(1) if match else given.get(source)
        if layer not in rank:
            problems.append(f"  {source}: not in a layer folder (engine/<layer>/), and given no layer with --layer")
            continue
        layer_of[path] = layer
    return layer_of, name_of, problems


def symbol_tables(nm, objects):
    """(mangled symbol -> objects that define it strongly, object -> the symbols it leaves undefined)."""
    defined_by = defaultdict(list)
    needs = {}
    for path in objects:
        try:
            symbols = nm_symbols(nm, path)
        except FileNotFoundError:
            sys.exit(f"check_link_layers: {nm} not found")
        needs[path] = {name for kind, name in symbols if kind == UNDEFINED}
        for kind, name in symbols:
            if kind in STRONG:
                defined_by[name].append(path)
    return defined_by, needs


def report(nm, violations, layers, rank, layer_of, name_of):
    """Prints the violations, grouped per pair of objects, lower layers first."""
    demangled = {path: demangled_names(nm, path) for path in sorted({path for path, _ in violations})}
    print(f"engine link layers broken: objects need symbols that a higher layer defines "
          f"(layers, lowest first: {' '.join(layers)}):")
    order = sorted(violations, key=lambda pair: (rank[layer_of[pair[0]]], name_of[pair[0]],
                                                 rank[layer_of[pair[1]]], name_of[pair[1]]))
    count = 0
    for path, definer in order:
        names = sorted(demangled[path].get(name, name) for name in violations[(path, definer)])
        count += len(names)
        print(f"  {name_of[path]} ({layer_of[path]}) needs, from {name_of[definer]} ({layer_of[definer]}):")
        for name in names:
            print(f"      {name}")
    print(f"{count} symbols in {len(violations)} pairs of objects")


def main():
    args = parse_args()
    layers = read_layers(args.layers)
    rank = {layer: i for i, layer in enumerate(layers)}
    layer_of, name_of, problems = layers_of_objects(args, rank)
    if problems:
        print("engine link layers: objects without a layer:\n" + "\n".join(problems))
        return 1
    defined_by, needs = symbol_tables(args.nm, layer_of)

    violations = defaultdict(set)    # (object, higher object) -> mangled symbols
    dependencies = 0
    for path, needed in needs.items():
        for name in needed:
            for definer in defined_by.get(name, ()):
                dependencies += 1
                if rank[layer_of[definer]] > rank[layer_of[path]]:
                    violations[(path, definer)].add(name)
    if violations:
        report(args.nm, violations, layers, rank, layer_of, name_of)
        return 1
    print(f"engine link layers: {len(layer_of)} objects, {dependencies} symbols one needs from another, "
          f"none from a higher layer (layers, lowest first: {' '.join(layers)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
