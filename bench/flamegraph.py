#!/usr/bin/env python3
"""A flame graph (SVG) of a perf profile, with no tool beyond perf itself.

    perf script -i profile.data | swift demangle --simplified | bench/flamegraph.py "title" > graph.svg

Stacks are folded (the root at the bottom, each callee above its caller), frames without a
symbol named by their library, and frames narrower than 0.2% of the samples left out. Each
frame's tooltip gives its full name and share of the samples.
"""
import html
import re
import sys
from collections import defaultdict

WIDTH, ROW, MINIMUM = 1600, 16, 0.002


def short(frame):
    """`specialized static JSONWriter.write(_:)+0x39 (/path/pier-feedback)` -> `JSONWriter.write(_:)`;
    a frame without a symbol is named by its library."""
    name, _, library = frame.rpartition(" (")
    library = library.rstrip(")").rsplit("/", 1)[-1]
    name = re.sub(r"\+0x[0-9a-f]+$", "", name or frame)
    if name == "[unknown]":
        return library or name
    return re.sub(r"^(specialized |static |generic specialization <[^>]*> of )+", "", name)


def fold(lines):
    """Counts of each stack (root first) from `perf script` text."""
    stacks, frames = defaultdict(int), []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                stacks[tuple(reversed(frames))] += 1
            frames = []
        elif line.startswith(("\t", " ")):
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(short(parts[1]))
        else:
            frames = []
    if frames:
        stacks[tuple(reversed(frames))] += 1
    return stacks


def tree(stacks):
    root = {"name": "all", "count": 0, "children": {}}
    for stack, count in stacks.items():
        node = root
        node["count"] += count
        for frame in stack:
            node = node["children"].setdefault(frame, {"name": frame, "count": 0, "children": {}})
            node["count"] += count
    return root


def depth(node):
    return 1 + max((depth(child) for child in node["children"].values()), default=0)


def render(root, title):
    total = max(root["count"], 1)
    height = (depth(root) + 2) * ROW
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="11">',
        f'<text x="4" y="12">{html.escape(title)} ({total} samples)</text>',
    ]

    def draw(node, x, level):
        share = node["count"] / total
        if share < MINIMUM:
            return
        width = share * WIDTH
        y = height - (level + 1) * ROW
        hue = 20 + (hash(node["name"]) % 40)
        label = html.escape(node["name"])
        out.append(
            f'<g><title>{label} ({share:.1%})</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{ROW - 1}" fill="hsl({hue},85%,60%)"/>'
        )
        characters = int(width / 7)
        if characters >= 3:
            text = node["name"] if len(node["name"]) <= characters else node["name"][: characters - 1] + "…"
            out.append(f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{html.escape(text)}</text>')
        out.append("</g>")
        offset = x
        for child in sorted(node["children"].values(), key=lambda child: child["name"]):
            draw(child, offset, level + 1)
            offset += child["count"] / total * WIDTH

    draw(root, 0.0, 0)
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(tree(fold(sys.stdin)), sys.argv[1] if len(sys.argv) > 1 else "profile"))
