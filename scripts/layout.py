#!/usr/bin/env python3
"""The layout's rules that a machine can check, over the sources (not the tests):

  - no Swift file over 400 lines;
  - no function or initializer over 80 lines, from its declaration to its closing brace.

`python3 scripts/layout.py` checks the repository (scripts/lint.sh runs it); `--self-test` first
shows each rule failing on a file made to break it, and passing on one that keeps it, so a rule
that could not fail is caught too. Strings (one-line and multi-line) and comments are skipped
when braces are counted."""
import pathlib
import re
import sys
import tempfile

FOLDERS = ["Client", "Shared", "Services", "Plugins", "Tools"]
MAX_FILE = 400
MAX_FUNCTION = 80
DECLARATION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|static|override|"
                         r"mutating|nonisolated|convenience|required|final|class|@Sendable)\s+)*(?:func\s|init[(<?])")


def code_of(lines):
    """Each line with its strings and comments blanked, multi-line strings included."""
    out, in_block = [], False
    for line in lines:
        if in_block:
            if '"""' in line:
                in_block = False
                line = line[line.index('"""') + 3:]
            else:
                out.append("")
                continue
        line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line.replace('"""', "\x00"))
        if "\x00" in line:
            line, in_block = line[:line.index("\x00")], line.count("\x00") % 2 == 1
        out.append(line.split("//")[0])
    return out


def problems(root):
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.swift")):
            relative = path.relative_to(root)
            if "Tests" in relative.parts or ".build" in relative.parts:
                continue
            lines = path.read_text(encoding="utf-8").split("\n")
            if len(lines) - (lines[-1] == "") > MAX_FILE:
                found.append(f"{relative}: {len(lines) - 1} lines (at most {MAX_FILE})")
            code = code_of(lines)
            index = 0
            while index < len(code):
                if not DECLARATION.match(code[index]):
                    index += 1
                    continue
                depth, opened, end = 0, False, index
                while end < len(code):
                    for character in code[end]:
                        if character == "{":
                            depth, opened = depth + 1, True
                        elif character == "}":
                            depth -= 1
                    if (opened and depth <= 0) or (not opened and end > index + 8):
                        break
                    end += 1
                if opened and end - index + 1 > MAX_FUNCTION:
                    found.append(f"{relative}:{index + 1}: a function of {end - index + 1} lines (at most {MAX_FUNCTION})")
                index = end + 1 if opened else index + 1
    return found


def self_test():
    body = "\n".join(f"        let value{n} = {n}" for n in range(MAX_FUNCTION))
    cases = {
        "long function": (f"struct A {{\n    func long() {{\n{body}\n    }}\n}}\n", "a function of"),
        "long file": ("\n".join("let x = 1" for _ in range(MAX_FILE + 1)) + "\n", "lines (at most"),
        "braces in strings": ('func f() {\n    let a = "}}}"\n    let b = """\n    }\n    """\n' + body + "\n}\n",
                              "a function of"),
        "kept": ("struct B {\n    init(x: Int) {\n        print(x)\n    }\n}\n", None),
    }
    for name, (text, expected) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = pathlib.Path(folder)
            (root / "Shared").mkdir()
            (root / "Shared" / "Case.swift").write_text(text)
            found = problems(root)
            if expected is None and found:
                sys.exit(f"layout self-test: {name}: a kept rule was reported: {found}")
            if expected is not None and not any(expected in problem for problem in found):
                sys.exit(f"layout self-test: {name}: the broken rule was not reported ({found})")
    print(f"layout: each rule fails on a file that breaks it ({len(cases) - 1} cases) and passes one that keeps it")


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        self_test()
    found = problems(pathlib.Path(__file__).resolve().parent.parent)
    if found:
        sys.exit("layout: " + "\nlayout: ".join(found))
    print(f"layout: no source file over {MAX_FILE} lines, no function over {MAX_FUNCTION}")
