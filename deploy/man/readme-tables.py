#!/usr/bin/env python3
"""Writes a man page's scdoc source from its template, with README.md's tables in it.

README.md is where every key, option and signal is described; the man pages carry the same
rows rather than a second copy that could fall behind. A template line `@TABLE NAME@` becomes
the README table whose header's first cell is NAME (`key`, `option`, `path`, `signal`), each row
a term and its indented description; `@TABLE NAME:COLUMN@` takes the description from the
column whose header starts with COLUMN, and `@TABLE NAME in TITLE@` the table under README's
section TITLE. `@SECTION TITLE@` becomes the prose of README's section TITLE up to its next
heading (paragraphs, lists and code blocks; no tables, no images). `@VERSION@` becomes the version.

Usage: readme-tables.py README.md TEMPLATE OUTPUT VERSION
"""
import re
import sys


def escape(text):
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def inline(markdown):
    """Markdown of one table cell or paragraph as scdoc: `code` and **strong** bold, *em*
    underlined, links as their text."""
    markdown = re.sub(r"!\[([^\]]*)\]\([^)]+\)", "", markdown)
    markdown = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown)
    markdown = re.sub(r"\*\*?(`[^`]+`)\*?\*", r"\1", markdown)  # code is bold already
    out = []
    for i, part in enumerate(markdown.split("`")):
        if i % 2:
            out.append("*" + escape(part) + "*" if part else "")
            continue
        part = escape(part)
        part = re.sub(r"\\\*\\\*(.+?)\\\*\\\*", r"*\1*", part)
        part = re.sub(r"(?<![\w\\])\\\*(\S.*?)\\\*(?!\w)", r"_\1_", part)
        out.append(part)
    return "".join(out)


def cells(line):
    # A pipe inside `code` belongs to the cell.
    parts, cur, code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def tables(lines):
    """[(the section it is in, header, rows)]; a row may run on to the next lines."""
    found = []
    title = ""
    i = 0
    while i < len(lines):
        if re.match(r"#+ ", lines[i]):
            title = lines[i].split(" ", 1)[1]
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip():
                if lines[i].startswith("|"):
                    rows.append(lines[i])
                else:
                    rows[-1] += " " + lines[i].strip()
                i += 1
            found.append((title, header, [cells(r) for r in rows]))
        i += 1
    return found


def render_table(header, rows, column=None):
    col = next(i for i, h in enumerate(header) if h.startswith(column)) if column else 1
    command = header.index("`-s`") if "`-s`" in header else None
    default = header.index("default") if "default" in header else None
    out = []
    for r in rows:
        if col >= len(r) or r[col] in ("", "–", "-"):
            continue
        term = inline(r[0])
        if command is not None and r[command]:
            term += " (portico -s " + r[command].strip("`") + ")"
        out.append(term)
        text = inline(r[col])
        if default is not None and default < len(r) and r[default]:
            text += ("" if text.endswith(".") else ".") + " Default: " + inline(r[default]) + "."
        out.append("\t" + text)
        out.append("")
    return out


def section(lines, title):
    start = next(i for i, l in enumerate(lines) if re.match(r"#+ " + re.escape(title) + "$", l))
    out, para = [], []
    i = start + 1
    while i < len(lines):
        l = lines[i]
        m = re.match(r"(#+) ", l)
        if m:
            break
        if l.startswith("    ") or l.startswith("```"):
            if para:
                out += [inline(" ".join(para)), ""]
                para = []
            block = []
            fenced = l.startswith("```")
            if fenced:
                i += 1
            while i < len(lines) and (
                (fenced and not lines[i].startswith("```"))
                or (not fenced and (lines[i].startswith("    ") or not lines[i].strip()))
            ):
                block.append(lines[i][0 if fenced else 4 :])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["```"] + block + ["```", ""]
            if not fenced:
                continue  # i is on the line after the block
        elif l.startswith("|"):
            if para:
                out += [inline(" ".join(para)), ""]
                para = []
            while i + 1 < len(lines) and lines[i + 1].strip():
                i += 1
        elif l.startswith("- "):
            if para:
                out += [inline(" ".join(para)), ""]
            para = [l]
        elif not l.strip():
            if para:
                out += [inline(" ".join(para)), ""]
                para = []
        else:
            para.append(l.strip())
        i += 1
    if para:
        out += [inline(" ".join(para)), ""]
    return out


def main():
    readme_path, template_path, output_path, version = sys.argv[1:5]
    lines = open(readme_path, encoding="utf-8").read().splitlines()
    found = tables(lines)
    out = []
    for t in open(template_path, encoding="utf-8").read().splitlines():
        m = re.fullmatch(r"@TABLE ([^:@ ]+)(?::(\S+))?(?: in (.+))?@", t)
        s = re.fullmatch(r"@SECTION (.+)@", t)
        if m:
            picked = [
                (h, rows)
                for title, h, rows in found
                if h[0] == m.group(1) and m.group(3) in (None, title)
            ]
            if not picked:
                sys.exit(f"{template_path}: README.md has no table for '{t}'")
            out += render_table(*picked[0], column=m.group(2))
        elif s:
            out += section(lines, s.group(1))
        else:
            out.append(t.replace("@VERSION@", version))
    open(output_path, "w", encoding="utf-8").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
