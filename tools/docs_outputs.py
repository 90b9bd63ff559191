#!/usr/bin/env python3
"""Regenerates every printed output of the strata command in the pages from a fresh run.

  python3 tools/docs_outputs.py --cli build/strata           rewrite every marked block
  python3 tools/docs_outputs.py --cli build/strata --check   exit 1 if one is stale (with a diff)

It is the docs preview that needs only the CLI: with nothing but `cmake --build build --target
strata_cli` done, `python3 tools/docs_outputs.py --cli build/strata` refreshes every printed
output of docs/*.md and README.md (in about half a second). With --check it is the test (ctest
docs_outputs) that none is stale. tools/docs_data.py runs it too (--build BUILD: BUILD/strata).

A printed output is a fenced block right after a marker line, an HTML comment (invisible in
mkdocs and on GitHub):

  <!-- strata-output: ./build/strata fit docs/examples/llama3_8b_qlora.json --format table -->
  ```text
  ...exactly what the command writes to stdout...
  ```

- The marker starts its line. The command runs from the repository root with no standard input,
  no shell, LC_ALL=C and no STRATA_* variable: its words are split as a shell would (quotes work,
  nothing is expanded), the first must be ./build/strata, which stands for the CLI given by --cli,
  or ./build/examples/example_NAME, a C++ example in the same build folder (skipped, with a note,
  where the examples are not built).
- A last word `2>&1` shows standard error too, where it falls among stdout (notes, errors);
  without it the block holds stdout alone.
- Options go between `strata-output` and the colon, as NAME=VALUE:
    exit=N        the command's exit status (default 0; an error example: exit=2 with 2>&1);
    lines=RANGES  keep only these lines of the output, 1-based and inclusive, comma-separated:
                  `6-12`, `1-20,40-`, `3`; each run of lines left out shows as one `...` line.
  e.g. <!-- strata-output exit=2: ./build/strata test/cli/bad/dlrm_too_big.json 2>&1 -->
- The block's fence keeps the language the page gives it (text, json); its content is replaced.

A command that fails to start, exits with another status than `exit=`, or prints something
`lines=` cannot cut is an error naming the page and the marker's line (exit status 2); a stale
block is listed with a unified diff whose line numbers are the page's (exit status 1 with
--check). Markers inside fenced blocks are examples, not markers.
"""
import argparse
import difflib
import os
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLI_WORD = "./build/strata"
EXAMPLE_PREFIX = "./build/examples/example_"  # a C++ example's output, beside the CLI in BUILD
MARKER = re.compile(r"<!-- strata-output(?P<opts>(?:[ \t]+[a-z]+=\S+)*)[ \t]*:[ \t]*(?P<cmd>.*?)[ \t]*-->[ \t]*$")
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
SHELL = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>>", "&>"}
TIMEOUT_S = 600


def pages():
    """README.md and docs/*.md, in a fixed order."""
    return [p for p in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")) if p.exists()]


def rel(path):
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:  # outside the tree (a build folder elsewhere)
        return str(path)


class Block:
    """One marker and the fenced block after it: lines[body:end] is its content."""

    def __init__(self, page, marker, cmd, opts, fence, info, body, end):
        self.page, self.marker, self.cmd, self.opts = page, marker, cmd, opts
        self.fence, self.info, self.body, self.end = fence, info, body, end

    def where(self):
        return f"{rel(self.page)}:{self.marker + 1}"


def closes(line, fence):
    s = line.lstrip(" ")
    return len(line) - len(s) <= 3 and s.startswith(fence) and set(s.rstrip()) == {fence[0]} \
        and len(s.rstrip()) >= len(fence)


def parse_lines(spec):
    """`6-12,20-` -> [(6, 12), (20, None)]."""
    ranges = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:(-)(\d*))?", part)
        if not m or int(m.group(1)) < 1:
            raise ValueError(f"lines={spec}: give ranges such as 6-12, 1-20,40- or 3")
        a = int(m.group(1))
        b = None if m.group(2) and not m.group(3) else int(m.group(3) or a)
        if b is not None and b < a:
            raise ValueError(f"lines={spec}: {a}-{b} runs backwards")
        if ranges and (ranges[-1][1] is None or a <= ranges[-1][1]):
            raise ValueError(f"lines={spec}: the ranges must increase and not overlap")
        ranges.append((a, b))
    return ranges


def scan(page):
    """The marked blocks of a page, and its malformed markers as errors."""
    lines = page.read_text().split("\n")
    blocks, errors = [], []
    i, open_fence = 0, None
    while i < len(lines):
        line = lines[i]
        if open_fence:
            if closes(line, open_fence):
                open_fence = None
            i += 1
            continue
        if line.startswith("<!-- strata-output"):
            where = f"{rel(page)}:{i + 1}"
            m = MARKER.match(line)
            if not m:
                errors.append(f"{where}: a marker reads `<!-- strata-output[ NAME=VALUE...]: "
                              f"./build/strata ARGS [2>&1] -->`, not `{line}`")
                i += 1
                continue
            opts = dict(o.split("=", 1) for o in m.group("opts").split())
            f = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if not f or lines[i + 1].startswith(" "):
                errors.append(f"{where}: the marker must be followed at once by a fenced block "
                              f"(```text)")
                i += 1
                continue
            j = i + 2
            while j < len(lines) and not closes(lines[j], f.group("fence")):
                j += 1
            if j == len(lines):
                errors.append(f"{where}: the fenced block after the marker is never closed")
                break
            blocks.append(Block(page, i, m.group("cmd"), opts, f.group("fence"), f.group("info"), i + 2, j))
            i = j + 1
            continue
        f = FENCE.match(line)
        if f:
            open_fence = f.group("fence")
        i += 1
    return blocks, errors


def env():
    """The caller's environment less what would change strata's answers (STRATA_*), in the C locale."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    e["LC_ALL"] = "C"
    return e


class Skipped(Exception):
    """A block whose program (a C++ example) is not built: reported, not an error."""


def output(block, cli, cache):
    """The block's new content (a list of lines) or raises ValueError with the reason."""
    unknown = set(block.opts) - {"exit", "lines"}
    if unknown:
        raise ValueError(f"unknown option {', '.join(sorted(unknown))} (exit=N, lines=RANGES)")
    try:
        words = shlex.split(block.cmd)
    except ValueError as e:
        raise ValueError(f"the command `{block.cmd}` does not split into words: {e}")
    merge = bool(words) and words[-1] == "2>&1"
    if merge:
        words = words[:-1]
    if not words or not (words[0] == CLI_WORD or words[0].startswith(EXAMPLE_PREFIX)):
        raise ValueError(f"the command must start with {CLI_WORD} (it stands for --cli) or "
                         f"{EXAMPLE_PREFIX}NAME (a C++ example in --cli's build folder): `{block.cmd}`")
    program = cli if words[0] == CLI_WORD else cli.parent / words[0][len("./build/"):]
    if not program.is_file():
        raise Skipped(f"{block.where()}: {rel(program)} "
                      f"is not built; its output was not checked")
    shell = [w for w in words if w in SHELL or w.startswith(("2>", ">", "<"))]
    if shell:
        raise ValueError(f"`{shell[0]}`: the command runs without a shell (only a last `2>&1` is "
                         f"understood; lines= keeps some lines)")
    expected = block.opts.get("exit", "0")
    if not expected.isdigit():
        raise ValueError(f"exit={expected}: give the exit status as a number")
    key = (tuple(words), merge)
    if key not in cache:
        try:
            r = subprocess.run([str(program)] + words[1:], cwd=ROOT, env=env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                               timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ValueError(f"`{block.cmd}` did not run: {e}")
        cache[key] = r
    r = cache[key]
    err = (r.stderr or b"").decode("utf-8", "replace")
    if r.returncode != int(expected):
        tail = (err or r.stdout.decode("utf-8", "replace"))[-2000:]
        hint = f" (exit={r.returncode} in the marker if that is the example)" if r.returncode > 0 else ""
        raise ValueError(f"`{block.cmd}` exited {r.returncode}, not {expected}{hint}"
                         + (f":\n{tail}" if tail else ""))
    try:
        text = r.stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"`{block.cmd}` printed something that is not UTF-8: {e}")
    out = text.split("\n")
    if out[-1] == "":
        out.pop()
    if "lines" in block.opts:
        kept, last = [], 0
        for a, b in parse_lines(block.opts["lines"]):
            b = len(out) if b is None else b
            if b > len(out):
                raise ValueError(f"lines={block.opts['lines']}: the output has {len(out)} lines")
            if a > last + 1:
                kept.append("...")
            kept += out[a - 1:b]
            last = b
        if last < len(out):
            kept.append("...")
        out = kept
    return out


def fence_for(block, content):
    """The page's fence, longer where the output holds a line that would close it."""
    fence = block.fence
    while any(closes(line, fence) for line in content):
        fence += fence[0]
    return fence


def page_diff(block, old, new):
    """A unified diff of the block's content, numbered as the page's lines."""
    offset = block.body  # content line k (1-based) is page line body + k

    def shift(m):
        a, b = int(m.group(1)), int(m.group(3))
        return f"@@ -{a + offset}{m.group(2) or ''} +{b + offset}{m.group(4) or ''} @@"
    out = []
    for line in difflib.unified_diff(old, new, f"{rel(block.page)} (the page)", f"{block.cmd} (a fresh run)",
                                     lineterm="", n=2):
        out.append(re.sub(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", shift, line))
    return "\n".join(out)


skipped = []  # the blocks of the last refresh whose program is not built


def refresh(cli, check=False):
    """Rewrites (or, with check=True, compares) every marked block of README.md and docs/*.md with
    a run of `cli`. Returns (errors, stale, blocks, pages): errors (a malformed marker, a command
    that failed; such a block is left as it is) and stale blocks (with check; each with its diff)
    as messages naming page and line, the number of marked blocks and the pages rewritten or stale."""
    cli = pathlib.Path(cli).resolve()
    if not cli.is_file():
        return [f"{cli} is missing (cmake --build BUILD --target strata_cli)"], [], 0, []
    errors, stale, cache, total, changed = [], [], {}, 0, []
    skipped.clear()
    for page in pages():
        blocks, bad = scan(page)
        errors += bad
        lines = page.read_text().split("\n")
        edits = []
        for block in blocks:
            total += 1
            try:
                new = output(block, cli, cache)
            except Skipped as e:
                skipped.append(str(e))
                continue
            except ValueError as e:
                errors.append(f"{block.where()}: {e}")
                continue
            fence = fence_for(block, new)
            old = lines[block.body:block.end]
            if old != new or fence != block.fence:
                stale.append(f"{block.where()}: the output of `{block.cmd}` is stale:\n"
                             + page_diff(block, old, new))
                edits.append((block, [fence + block.info] + new + [fence]))
        if edits:
            changed.append(rel(page))
            if not check:
                for block, text in reversed(edits):  # from the bottom: the line numbers above hold
                    lines[block.body - 1:block.end + 1] = text
                page.write_text("\n".join(lines))
    return errors, (stale if check else []), total, changed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default="build/strata", help="the strata executable (default build/strata)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    a = ap.parse_args()
    errors, stale, total, changed = refresh(a.cli, a.check)
    for p in stale + errors + skipped:
        print("docs_outputs: " + p, file=sys.stderr)
    if errors:
        return 2
    if stale:
        print(f"docs_outputs: {len(stale)} of {total} printed outputs are stale; regenerate them with "
              f"`python3 tools/docs_outputs.py --cli {a.cli}`", file=sys.stderr)
        return 1
    if a.check:
        print(f"docs_outputs: {total} printed outputs are up to date")
    else:
        print(f"docs_outputs: {total} printed outputs; rewritten in {', '.join(changed) or 'no page'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
