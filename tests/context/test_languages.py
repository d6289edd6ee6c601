"""Per language: real tree-sitter on real files of a real Git repository. The index finds the
definition (kind, qualified name, signature, docstring or comment) and the use of it in another
file, tied to it through the language's imports or packages, in the function that calls it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from reviewflow.context.languages import languages, load
from tests.context.conftest import index_of, make_repo


@dataclass(frozen=True)
class Case:
    files: dict[str, str]
    name: str  # the definition looked up
    path: str  # where it is defined
    qualname: str
    kind: str
    signature: str
    doc: str
    caller: str  # the file that uses it
    line: int  # the line of the use
    scope: str  # the name of the definition the use sits in


CASES = {
    "python": Case(
        {
            "pkg/util.py": 'def helper(x):\n    """Double x.\n\n    More."""\n    return x * 2\n',
            "pkg/main.py": "from pkg.util import helper\n\n\ndef run():\n    return helper(3)\n",
        },
        "helper",
        "pkg/util.py",
        "helper",
        "function",
        "def helper(x)",
        "Double x.",
        "pkg/main.py",
        5,
        "run",
    ),
    "c": Case(
        {
            "util.h": "/* Double x. */\nint helper(int x);\n",
            "util.c": '#include "util.h"\n\n/* Double x. */\nint helper(int x)\n'
            "{\n\treturn x * 2;\n}\n",
            "main.c": '#include "util.h"\n\nint run(void)\n{\n\treturn helper(3);\n}\n',
        },
        "helper",
        "util.c",
        "helper",
        "function",
        "int helper(int x)",
        "Double x.",
        "main.c",
        5,
        "run",
    ),
    "cpp": Case(
        {
            "src/util.hpp": "namespace acme {\nint helper(int x);\n}\n",
            "src/util.cpp": '#include "util.hpp"\n\nnamespace acme {\n/// Double x.\n'
            "int helper(int x) {\n  return x * 2;\n}\n}\n",
            "src/main.cpp": '#include "util.hpp"\n\nint run() {\n  return acme::helper(3);\n}\n',
        },
        "helper",
        "src/util.cpp",
        "acme.helper",
        "function",
        "int helper(int x)",
        "Double x.",
        "src/main.cpp",
        4,
        "run",
    ),
    "csharp": Case(
        {
            "src/Util.cs": "namespace Acme {\n    public static class Util {\n"
            "        /// <summary>Double x.</summary>\n"
            "        public static int Helper(int x) { return x * 2; }\n    }\n}\n",
            "src/Main.cs": "using Acme;\n\nnamespace App {\n    class Program {\n"
            "        int Run() { return Util.Helper(3); }\n    }\n}\n",
        },
        "Helper",
        "src/Util.cs",
        "Acme.Util.Helper",
        "method",
        "public static int Helper(int x)",
        "<summary>Double x.</summary>",
        "src/Main.cs",
        5,
        "Run",
    ),
    "go": Case(
        {
            "util/util.go": "package util\n\n// Helper doubles x.\nfunc Helper(x int) int {\n"
            "\treturn x * 2\n}\n",
            "main.go": 'package main\n\nimport "example.com/m/util"\n\nfunc run() int {\n'
            "\treturn util.Helper(3)\n}\n",
        },
        "Helper",
        "util/util.go",
        "Helper",
        "function",
        "func Helper(x int) int",
        "Helper doubles x.",
        "main.go",
        6,
        "run",
    ),
    "java": Case(
        {
            "src/com/acme/Util.java": "package com.acme;\n\npublic class Util {\n"
            "    /** Double x. */\n    public static int helper(int x) {\n        return x * 2;\n"
            "    }\n}\n",
            "src/com/acme/app/Main.java": "package com.acme.app;\n\nimport com.acme.Util;\n\n"
            "public class Main {\n    int run() {\n        return Util.helper(3);\n    }\n}\n",
        },
        "helper",
        "src/com/acme/Util.java",
        "Util.helper",
        "method",
        "public static int helper(int x)",
        "Double x.",
        "src/com/acme/app/Main.java",
        7,
        "run",
    ),
    "javascript": Case(
        {
            "lib/util.js": "/** Double x. */\nexport function helper(x) {\n  return x * 2;\n}\n",
            "app.js": "import { helper } from './lib/util.js';\n\nfunction run() {\n"
            "  return helper(3);\n}\n",
        },
        "helper",
        "lib/util.js",
        "helper",
        "function",
        "function helper(x)",
        "Double x.",
        "app.js",
        4,
        "run",
    ),
    "typescript": Case(
        {
            "lib/util.ts": "// Double x.\nexport function helper(x: number): number {\n"
            "  return x * 2;\n}\n",
            "app.ts": "import { helper as h } from './lib/util';\n\n"
            "export function run(): number {\n"
            "  return h(3);\n}\n",
        },
        "helper",
        "lib/util.ts",
        "helper",
        "function",
        "function helper(x: number): number",
        "Double x.",
        "app.ts",
        4,
        "run",
    ),
    "tsx": Case(
        {
            "ui/button.tsx": "// A button.\nexport function Button(props: { label: string }) {\n"
            "  return <button>{props.label}</button>;\n}\n",
            "ui/app.tsx": "import { Button } from './button';\n\nexport function App() {\n"
            "  return Button({ label: 'ok' });\n}\n",
        },
        "Button",
        "ui/button.tsx",
        "Button",
        "function",
        "function Button(props: { label: string })",
        "A button.",
        "ui/app.tsx",
        4,
        "App",
    ),
    "kotlin": Case(
        {
            "src/util/Util.kt": "package util\n\n/** Double x. */\nfun helper(x: Int): Int {\n"
            "    return x * 2\n}\n",
            "src/app/Main.kt": "package app\n\nimport util.helper\n\nfun run(): Int {\n"
            "    return helper(3)\n}\n",
        },
        "helper",
        "src/util/Util.kt",
        "helper",
        "function",
        "fun helper(x: Int): Int",
        "Double x.",
        "src/app/Main.kt",
        6,
        "run",
    ),
    "php": Case(
        {
            "src/Util.php": "<?php\nnamespace App;\n\n/** Double x. */\nfunction helper($x) {\n"
            "    return $x * 2;\n}\n",
            "src/Main.php": "<?php\nnamespace App;\n\nfunction run() {\n    return helper(3);\n}\n",
        },
        "helper",
        "src/Util.php",
        "helper",
        "function",
        "function helper($x)",
        "Double x.",
        "src/Main.php",
        5,
        "run",
    ),
    "ruby": Case(
        {
            "lib/util.rb": "# Double x.\ndef helper(x)\n  x * 2\nend\n",
            "app.rb": "require_relative 'lib/util'\n\ndef run\n  helper(3)\nend\n",
        },
        "helper",
        "lib/util.rb",
        "helper",
        "method",
        "def helper(x)",
        "Double x.",
        "app.rb",
        4,
        "run",
    ),
    "rust": Case(
        {
            "src/util.rs": "/// Double x.\npub fn helper(x: i32) -> i32 {\n    x * 2\n}\n",
            "src/main.rs": "mod util;\nuse crate::util::helper;\n\nfn run() -> i32 {\n"
            "    helper(3)\n}\n",
        },
        "helper",
        "src/util.rs",
        "helper",
        "function",
        "pub fn helper(x: i32) -> i32",
        "Double x.",
        "src/main.rs",
        5,
        "run",
    ),
    "scala": Case(
        {
            "src/util/Util.scala": "package util\n\nobject Util {\n  /** Double x. */\n"
            "  def helper(x: Int): Int = x * 2\n}\n",
            "src/app/Main.scala": "package app\n\nimport util.Util\n\nobject Main {\n"
            "  def run(): Int = Util.helper(3)\n}\n",
        },
        "helper",
        "src/util/Util.scala",
        "Util.helper",
        "method",
        "def helper(x: Int): Int",
        "Double x.",
        "src/app/Main.scala",
        6,
        "run",
    ),
    "swift": Case(
        {
            "Sources/Util.swift": "/// Double x.\nfunc helper(_ x: Int) -> Int {\n"
            "    return x * 2\n}\n",
            "Sources/Main.swift": "func run() -> Int {\n    return helper(3)\n}\n",
        },
        "helper",
        "Sources/Util.swift",
        "helper",
        "function",
        "func helper(_ x: Int) -> Int",
        "Double x.",
        "Sources/Main.swift",
        2,
        "run",
    ),
    "bash": Case(
        {
            "lib/util.sh": "# Double x.\nhelper() {\n  echo $(( $1 * 2 ))\n}\n",
            "run.sh": ". ./lib/util.sh\n\nrun() {\n  helper 3\n}\n",
        },
        "helper",
        "lib/util.sh",
        "helper",
        "function",
        "helper()",
        "Double x.",
        "run.sh",
        4,
        "run",
    ),
}


def test_every_language_has_a_case() -> None:
    assert set(CASES) == set(languages())


@pytest.mark.parametrize("language", sorted(CASES))
def test_definition_and_its_use_in_another_file(language: str, tmp_path: Path) -> None:
    case = CASES[language]
    repo = make_repo(tmp_path / "repo", case.files)
    index = index_of(repo, tmp_path / "store")
    assert index.files[case.path].language == language
    hits = index.definitions(case.name)
    assert hits, f"{case.name} not found"
    first = hits[0]
    assert (first.path, first.definition.qualname, first.definition.kind) == (
        case.path,
        case.qualname,
        case.kind,
    )
    assert first.definition.signature == case.signature
    assert first.definition.doc == case.doc
    refs = index.references(case.name, case.path, linked_only=True)
    uses = [(h.path, h.reference.line, h.scope.name if h.scope else None, h.link) for h in refs]
    assert (case.caller, case.line, case.scope, "confirmed") in uses


@pytest.mark.parametrize("language", sorted(CASES))
def test_the_grammar_ships_in_its_wheel(language: str) -> None:
    lang = load(language)
    tree = lang.parser().parse(b"")
    assert tree.root_node is not None
    assert lang.key.startswith(f"{language}:")
