#!/usr/bin/env python3
"""The layout's rules that a machine can check, over the sources (not the tests):

  - no Swift file over 400 lines;
  - no function or initializer over 80 lines, from its declaration to its closing brace;
  - a service (Services/<Name>/Sources, the gateway aside: it is all front door) is laid out as
    auth is: its folders are HTTP/ (routes, controllers, the wire's validation and JSON),
    UseCases/, Repositories/, Domain/ and Workers/, and HTTP/ is there;
  - SQL statements only in a service's Repositories/ (its migrations are .sql files), and no
    repository function answers a tuple (a named row type says what each value is);
  - no HTTP server type (Request, Response, Router, Routes, HTTPError, a request context,
    Middleware) named below HTTP/: in UseCases/, Repositories/, Domain/ or Workers/ (an outbound
    call's `HTTPClient.Request` is not one);
  - a module imports only the targets Package.swift makes it depend on (a module reached through
    another's dependencies is not allowed by that), read from `swift package describe`.

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
LAYERS = {"HTTP", "UseCases", "Repositories", "Domain", "Workers"}
UNLAYERED = {"Gateway"}
SQL = re.compile(r"\b(?:SELECT\b.*\bFROM|SELECT pg_|INSERT INTO|DELETE FROM|UPDATE [a-z_]+\.[a-z_]+ SET|CREATE TABLE)\b")
HTTP_TYPES = re.compile(r"(?<![.\w])(?:Request|Response|Router|Routes|HTTPError|RequestContext|ServiceRequestContext|Middleware)\b")
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


def service_problems(root):
    """The layers of each service: its folders, its SQL, the HTTP types below HTTP/."""
    found = []
    for sources in sorted((root / "Services").glob("*/Sources")):
        name = sources.parent.name
        if name in UNLAYERED:
            continue
        folders = {path.name for path in sources.iterdir() if path.is_dir()}
        for folder in sorted(folders - LAYERS):
            found.append(f"Services/{name}/Sources/{folder}: not a layer (HTTP, UseCases, Repositories, Domain, Workers)")
        if "HTTP" not in folders:
            found.append(f"Services/{name}/Sources: no HTTP/ folder")
        for path in sorted(sources.rglob("*.swift")):
            relative = path.relative_to(root)
            layer = path.relative_to(sources).parts[0] if len(path.relative_to(sources).parts) > 1 else None
            lines = path.read_text(encoding="utf-8").split("\n")
            if layer != "Repositories":
                for number, line in enumerate(lines):
                    if not line.strip().startswith("//") and SQL.search(line):
                        found.append(f"{relative}:{number + 1}: SQL outside Repositories/")
                        break
            if layer == "Repositories":
                text = "\n".join(code_of(lines))
                for match in re.finditer(r"\bfunc \w+[^{]*?\)\s*(?:async\s+)?(?:throws\s*(?:\([^)]*\))?\s*)?->\s*\(", text):
                    number = text[:match.start()].count("\n") + 1
                    found.append(f"{relative}:{number}: a repository function that answers a tuple")
            if layer in LAYERS - {"HTTP"}:
                for number, line in enumerate(code_of(lines)):
                    match = HTTP_TYPES.search(line)
                    if match:
                        found.append(f"{relative}:{number + 1}: {match.group(0)}, an HTTP type, below HTTP/")
                        break
    return found


def import_problems(root, targets):
    """Each target's Pier imports against its dependencies in Package.swift. `targets`: name →
    (path, dependencies), as `swift package describe --type json` gives them."""
    found = []
    for name, (path, dependencies) in sorted(targets.items()):
        for source in sorted((root / path).rglob("*.swift")):
            for number, line in enumerate(source.read_text(encoding="utf-8").split("\n")):
                match = re.match(r"^\s*(?:@testable |@_exported )?import (\w+)", line)
                if match and match.group(1) in targets and match.group(1) != name and match.group(1) not in dependencies:
                    found.append(f"{source.relative_to(root)}:{number + 1}: {name} imports {match.group(1)}, "
                                 "which Package.swift does not make it depend on")
    return found


def package_targets(root):
    """name → (path, dependencies) of every target of the package at `root`."""
    import json
    import subprocess
    described = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], cwd=root, check=True,
                                          capture_output=True, text=True).stdout)
    return {target["name"]: (target["path"], set(target.get("target_dependencies", [])) |
                             set(target.get("product_dependencies", [])))
            for target in described["targets"]}


def problems(root):
    found = service_problems(root)
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
    service = "Services/Shop/Sources/"
    sql = 'struct A {\n    func f() async throws {\n        try await db.query("SELECT id FROM shop.items")\n    }\n}\n'
    cases.update({
        "SQL in a use case": ({service + "UseCases/Orders.swift": sql, service + "HTTP/C.swift": ""}, "SQL outside Repositories/"),
        "a repository answering a tuple": ({service + "Repositories/Items.swift": "struct R {\n    func pair(_ id: Int)\n        async throws -> (\n        Int, String\n    ) {\n        (1, \"a\")\n    }\n}\n",
                                             service + "HTTP/C.swift": ""}, "answers a tuple"),
        "an HTTP type in a use case": ({service + "UseCases/Orders.swift": "func f(_ r: Request) {}\n",
                                        service + "HTTP/C.swift": ""}, "an HTTP type, below HTTP/"),
        "a folder that is no layer": ({service + "Helpers/H.swift": "", service + "HTTP/C.swift": ""}, "not a layer"),
        "no HTTP folder": ({service + "UseCases/U.swift": ""}, "no HTTP/ folder"),
        "a layered service kept": ({service + "Repositories/Items.swift": sql, service + "HTTP/C.swift": "func f(_ r: Request) {}\n",
                                    service + "Workers/W.swift": "let r = HTTPClient.Request()\n",
                                    service + "UseCases/U.swift": "// SELECT id FROM shop.items, in words\n"}, None),
    })
    for name, (text, expected) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = pathlib.Path(folder)
            files = text if isinstance(text, dict) else {"Shared/Case.swift": text}
            for relative, content in files.items():
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).write_text(content)
            found = problems(root)
            if expected is None and found:
                sys.exit(f"layout self-test: {name}: a kept rule was reported: {found}")
            if expected is not None and not any(expected in problem for problem in found):
                sys.exit(f"layout self-test: {name}: the broken rule was not reported ({found})")
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        for module, imports in {"Low": "", "Mid": "import Low\n", "Top": "import Mid\nimport Foundation\n",
                                "Reach": "import Mid\nimport Low\n"}.items():
            (root / module).mkdir()
            (root / module / "A.swift").write_text(imports)
        targets = {"Low": ("Low", set()), "Mid": ("Mid", {"Low"}), "Top": ("Top", {"Mid"}), "Reach": ("Reach", {"Mid"})}
        found = import_problems(root, targets)
        if len(found) != 1 or "Reach imports Low" not in found[0]:
            sys.exit(f"layout self-test: imports: expected Reach's import of Low alone to be refused ({found})")
    print(f"layout: each rule fails on a file that breaks it ({len(cases)} cases and an import) and passes one that keeps it")


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        self_test()
    root = pathlib.Path(__file__).resolve().parent.parent
    found = problems(root) + import_problems(root, package_targets(root))
    if found:
        sys.exit("layout: " + "\nlayout: ".join(found))
    print(f"layout: no source file over {MAX_FILE} lines, no function over {MAX_FUNCTION}; services in layers, "
          "SQL in Repositories/ and no tuple from one, no HTTP type below HTTP/; each module imports only its dependencies")
