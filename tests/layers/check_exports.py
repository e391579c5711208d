#!/usr/bin/env python3
"""libophost exports its public API and nothing else (tests/layers, CTest `layers.exports`).

Usage: check_exports.py LIBOPHOST.so PUBLIC_HEADER_DIR

Runs `nm -D --defined-only -C` on the library and fails, listing them, on exported symbols outside the allow-list:
  * ophost::NAME(...) for every function declared OPHOST_API in the public headers, and every member of a class
    declared `class OPHOST_API NAME` (with its vtable, typeinfo and typeinfo name), except its private Impl;
  * what the C++ runtime needs: instantiations of standard-library templates (namespace std / __gnu_cxx, whose
    headers give them default visibility, so -fvisibility=hidden does not hide them; GCC hides any whose
    template arguments are hidden types, so none of these names an internal type: checked below), and the
    linker's own symbols (_init, _fini, _edata, _end, __bss_start);
  * weak (header-inline) symbols of Boost's exception and error-category classes: Boost marks those classes
    BOOST_SYMBOL_VISIBLE (so that an exception thrown in one library is caught by type in another and error
    categories compare equal across libraries), which gives their vtables, typeinfo, inline virtual members and
    function-local singletons (GNU unique symbols) default visibility. Boost.DLL, which the plugin loader uses,
    brings them in. Only weak ones: a strong (T, D, B) boost symbol would be a definition of ours. The same for
    weak header-inline members of Debian's ONNX protobuf classes (default visibility; seen in the ASan build).
Everything else (the layers' classes and functions, globals such as the services table) must stay hidden.
"""
import pathlib
import re
import subprocess
import sys

LINKER = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def public_api(header_dir):
    classes, functions = set(), set()
    for h in sorted(pathlib.Path(header_dir).glob("*.hpp")):
        text = h.read_text(encoding="utf-8")
        text = re.sub(r"//[^\n]*", "", text)
        classes |= set(re.findall(r"\b(?:class|struct)\s+OPHOST_API\s+(\w+)", text))
        for decl in re.findall(r"\bOPHOST_API\s+([^;{(]*\()", text):
            if decl.startswith(("class", "struct")):
                continue
            functions.add(re.search(r"(\w+)\s*\($", decl).group(1))
    return classes, functions


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    lib, header_dir = sys.argv[1], sys.argv[2]
    classes, functions = public_api(header_dir)
    if not classes or not functions:
        print(f"no OPHOST_API declarations found under {header_dir}")
        return 1
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], check=True, capture_output=True,
                         text=True).stdout
    class_re = re.compile(r"^(?:(?:vtable|typeinfo|typeinfo name) for )?ophost::(" + "|".join(classes) + r")\b")
    func_re = re.compile(r"^ophost::(" + "|".join(functions) + r")(?:\[abi:cxx11\])?\(")
    # Template functions are demangled with their return type first ("void std::deque<...>::...").
    std_re = re.compile(r"^(?:(?:vtable|typeinfo|typeinfo name|guard variable) for |[\w:<>]+ )?(?:std|__gnu_cxx)::")
    boost_re = re.compile(r"^(?:(?:vtable|typeinfo|typeinfo name|guard variable) for |[\w:<>]+ )?"
                          r"boost::(?:system::|exception\b|exception_detail::|wrapexcept<)")
    # Debian's ONNX protobuf classes are declared with default visibility: where the compiler does not inline
    # one of their header-inline members (the ASan build, -O1), it is emitted weak and exported. Weak ones only.
    onnx_re = re.compile(r"^(?:(?:vtable|typeinfo|typeinfo name|guard variable) for |[\w:<>]+ )?onnx::")
    allowed, unexpected = 0, []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        name = parts[2]
        if name in LINKER:
            ok = True
        elif class_re.match(name):
            ok = "::Impl::" not in name and "::Impl " not in name and not name.endswith("::Impl")
        elif func_re.match(name):
            ok = True
        elif boost_re.match(name) or onnx_re.match(name):
            ok = parts[1] in ("W", "V", "u")
        elif std_re.match(name):
            # Standard templates over public types only: an internal type in the arguments is a leak.
            inner = set(re.findall(r"ophost::(\w+)", name))
            ok = inner <= classes | {"DType", "Code", "NamedTensor", "ValueInfo", "PluginReport", "KernelInfo",
                                     "OpProfile", "Manifest", "ManifestOp", "MemoryStats"}
        else:
            ok = False
        if ok:
            allowed += 1
        else:
            unexpected.append(line)
    for line in unexpected:
        print("exported but not public API:", line)
    print(f"{lib}: {allowed} exported symbols within the public API ({len(classes)} classes, {len(functions)} "
          f"functions declared OPHOST_API), {len(unexpected)} outside it")
    if unexpected:
        print("mark public API OPHOST_API in host/include/ophost/; anything else must stay hidden (is a header "
              "outside host/include giving it default visibility?)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
