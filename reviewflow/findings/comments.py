"""Which comment syntaxes a reviewed file's language has (for `reviewflow: ignore` comments).

The language is the one the built-in rules detect (`reviewflow/rules/system/*/SKILL.md`): a
file a language or target rule matches takes that rule's syntaxes. Files only the `general`
fallback matches are looked up by extension or name here (YAML, TOML, HTML, Lua, ...). A file
of a language we do not know accepts every common comment marker: a suppression is the
user's evident intent, never a reason to fail.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache

from reviewflow.rules.system import builtin_system_rules

HASH = ("#",)
SLASHES = ("//", "/*")
DASHES = ("--",)
MARKUP = ("<!--",)
SEMICOLON = (";",)
PERCENT = ("%",)

# Built-in rule name -> comment openers.
BY_RULE: dict[str, tuple[str, ...]] = {
    "c-cpp": SLASHES,
    "csharp": SLASHES,
    "dockerfile": HASH,
    "github-actions": HASH,
    "gitlab-ci": HASH,
    "go": SLASHES,
    "java": SLASHES,
    "javascript-typescript": (*SLASHES, *MARKUP),  # .vue and .svelte files hold HTML too
    "jenkinsfile": SLASHES,
    "kotlin": SLASHES,
    "kubernetes": HASH,
    "php": (*SLASHES, *HASH),
    "python": HASH,
    "ruby": HASH,
    "rust": SLASHES,
    "scala": SLASHES,
    "shell": HASH,
    "sql": (*DASHES, "/*", *HASH),  # `#` for MySQL
    "swift": SLASHES,
    "terraform": (*HASH, *SLASHES),
}

# What only the `general` fallback covers: by lower-case extension (or whole file name).
BY_EXTENSION: dict[str, tuple[str, ...]] = {
    **dict.fromkeys((".yml", ".yaml", ".toml", ".cfg", ".conf", ".properties"), HASH),
    **dict.fromkeys((".r", ".pl", ".pm", ".ps1", ".psm1", ".ex", ".exs", ".nim", ".jl"), HASH),
    **dict.fromkeys((".cmake", ".mk", ".nix", ".tcl", ".awk", ".sed", ".coffee"), HASH),
    **dict.fromkeys(("makefile", "gnumakefile", "cmakelists.txt", ".gitignore"), HASH),
    **dict.fromkeys((".ini",), (*SEMICOLON, *HASH)),
    **dict.fromkeys((".html", ".htm", ".xml", ".xhtml", ".svg", ".md", ".markdown"), MARKUP),
    **dict.fromkeys((".vue", ".svelte", ".xsl", ".xslt", ".plist", ".csproj"), MARKUP),
    **dict.fromkeys((".lua", ".hs", ".elm", ".ada", ".adb", ".ads", ".vhd", ".vhdl"), DASHES),
    **dict.fromkeys((".lisp", ".el", ".clj", ".cljs", ".edn", ".scm", ".rkt"), SEMICOLON),
    **dict.fromkeys((".asm", ".s"), (*SEMICOLON, *HASH)),
    **dict.fromkeys((".erl", ".hrl", ".tex", ".sty", ".m", ".pro", ".ps"), PERCENT),
    **dict.fromkeys((".css",), ("/*",)),
    **dict.fromkeys((".scss", ".sass", ".less", ".dart", ".proto", ".groovy", ".gradle"), SLASHES),
    **dict.fromkeys((".zig", ".sol", ".v", ".sv", ".json5", ".jsonc", ".gd"), SLASHES),
}

# A language we do not know: any of these.
ANY = ("#", "//", "/*", "--", "<!--", ";", "%")


@lru_cache(maxsize=4096)
def comment_openers(path: str) -> tuple[str, ...]:
    """The comment openers of the language `path` is written in (see the module)."""
    matched = builtin_system_rules().match(path)
    if matched is not None and matched[0].name in BY_RULE:
        return BY_RULE[matched[0].name]
    name = posixpath.basename(path).lower()
    if name in BY_EXTENSION:
        return BY_EXTENSION[name]
    return BY_EXTENSION.get(posixpath.splitext(name)[1], ANY)
