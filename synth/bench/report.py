"""``report.html``: the summary with three plots made by matplotlib, embedded as PNG, and
its tables as HTML tables.

* pass rate per level (C0, C0i, C1 to C5) per agent (the rebuilt image: what a user of the
  artifact gets);
* live vs rebuilt pass rate per level, per agent;
* mean seconds per stage (run, export, build, verify), per agent.

Every decided bar is labelled with its rate, so a 0 % bar (no height) reads ``0%`` instead
of nothing; a level no cell decided reads ``n/a``. The page is one self-contained file. A
small script sets ``data-images-loaded`` on ``<body>`` to the number of plots the browser
decoded, so a headless browser can check it.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from typing import Any

from synth.bench.summary import LEVELS, STAGES, TABLES, UNDECIDED, intro
from synth.errors import UsageError


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise UsageError("The bench report needs matplotlib, which is not installed.",
                         hint="pip install 'synth[bench]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    # Fixed metadata: the same results give the same bytes.
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None}, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _rates(agent: Mapping[str, Any], target: str) -> list[float]:
    return [(agent["levels"][target][lv]["rate"] or 0.0) * 100 for lv in LEVELS]


def bar_labels(agent: Mapping[str, Any], target: str) -> list[str]:
    """Each level's label over its bar: the rate (``0%`` too, where a bar has no height),
    or ``n/a`` where no cell decided the level (not applicable or skipped)."""
    rates = [agent["levels"][target][lv]["rate"] for lv in LEVELS]
    return ["n/a" if r is None else f"{r * 100:.0f}%" for r in rates]


def _label_bars(ax: Any, bars: Any, agent: Mapping[str, Any], target: str,
                xs: list[float], width: float) -> None:
    """The rate over each bar; a 0 % bar, which has no height, gets a stub in its colour
    along the axis, so it never looks like a level that was not decided."""
    for i, (x, label) in enumerate(zip(xs, bar_labels(agent, target), strict=True)):
        rate = _rates(agent, target)[i]
        if label == "0%":
            ax.hlines(0.9, x - width / 2, x + width / 2, linewidth=3,
                      colors=[bars.patches[i].get_facecolor()])
        ax.text(x, rate + 1.5, label, ha="center", va="bottom", fontsize=7, rotation=90,
                color="#888888" if label == "n/a" else "#222222")


def plot_pass_rates(summary: Mapping[str, Any]) -> str:
    plt = _pyplot()
    agents = list(summary["agents"])
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(len(agents), 1)
    for i, name in enumerate(agents):
        xs = [x + i * width for x in range(len(LEVELS))]
        bars = ax.bar(xs, _rates(summary["agents"][name], "rebuilt"), width, label=name)
        _label_bars(ax, bars, summary["agents"][name], "rebuilt", xs, width)
    ax.set_xticks([x + width * (len(agents) - 1) / 2 for x in range(len(LEVELS))], LEVELS)
    ax.set_ylabel("pass rate (%)")
    ax.set_ylim(0, 118)
    ax.set_title("Pass rate per level, rebuilt image")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def plot_live_vs_rebuilt(summary: Mapping[str, Any]) -> str:
    plt = _pyplot()
    agents = list(summary["agents"])
    fig, axes = plt.subplots(1, max(len(agents), 1), figsize=(4 * max(len(agents), 1), 3.2),
                             squeeze=False)
    for ax, name in zip(axes[0], agents, strict=False):
        xs = list(range(len(LEVELS)))
        agent = summary["agents"][name]
        for target, shift, style in (
                ("live", -0.2, {"hatch": "//", "color": "#bbbbbb", "edgecolor": "#555555"}),
                ("rebuilt", 0.2, {"color": "#3b75af"})):
            at = [x + shift for x in xs]
            bars = ax.bar(at, _rates(agent, target), 0.4, label=target, **style)
            _label_bars(ax, bars, agent, target, at, 0.4)
        ax.set_xticks(xs, LEVELS)
        ax.set_ylim(0, 118)
        ax.set_title(name)
        ax.legend(fontsize="small")
    axes[0][0].set_ylabel("pass rate (%)")
    fig.suptitle("Live image vs rebuilt image")
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def plot_stage_times(summary: Mapping[str, Any]) -> str:
    plt = _pyplot()
    agents = list(summary["agents"])
    fig, ax = plt.subplots(figsize=(8, 0.6 * max(len(agents), 1) + 1.6))
    left = [0.0] * len(agents)
    for stage in STAGES:
        widths = [summary["agents"][a]["mean_seconds"][stage] or 0.0 for a in agents]
        ax.barh(agents, widths, left=left, label=stage)
        left = [lft + w for lft, w in zip(left, widths, strict=True)]
    ax.set_xlabel("mean seconds per cell")
    ax.set_title("Time per stage")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>synth bench report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 14px; }}
img {{ display: block; margin: 1em 0; max-width: 100%; }}
th {{ background: #f2f2f2; }}
td.num {{ text-align: right; white-space: nowrap; }}
</style></head>
<body data-images-loaded="0">
<h1>synth bench report</h1>
<p>{intro}</p>
{plots}
{tables}
<script>
window.addEventListener("load", function () {{
  var ok = Array.prototype.filter.call(document.images, function (im) {{
    return im.complete && im.naturalWidth > 0; }});
  document.body.setAttribute("data-images-loaded", String(ok.length));
}});
</script>
</body></html>
"""


def _cell(i: int, text: str) -> str:
    numeric = i > 0 and ("%" in text or text.replace(".", "").isdigit())
    attr = ' class="num"' if numeric else ""
    return f"<td{attr}>{html.escape(text)}</td>"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(i, c) for i, c in enumerate(row)) + "</tr>\n"
                   for row in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def render_tables(summary: Mapping[str, Any]) -> str:
    """The summary's tables (those of summary.md) as HTML tables."""
    parts = []
    for title, table in TABLES:
        parts.append(f"<h2>{html.escape(title)}</h2>\n{_html_table(*table(summary))}")
        if title.startswith("Pass rate"):
            parts.append(f"<p>{html.escape(UNDECIDED.replace('`', ''))}</p>")
    return "\n".join(parts)


def render_html(summary: Mapping[str, Any]) -> str:
    plots = [("pass-rates", "Pass rate per level per agent (rebuilt)", plot_pass_rates),
             ("live-vs-rebuilt", "Live vs rebuilt", plot_live_vs_rebuilt),
             ("stage-times", "Time per stage", plot_stage_times)]
    parts = []
    for key, title, fn in plots:
        parts.append(f'<h2>{html.escape(title)}</h2>\n<img id="{key}" alt="{html.escape(title)}"'
                     f' src="data:image/png;base64,{fn(summary)}">')
    return _PAGE.format(intro=html.escape(intro(summary)), plots="\n".join(parts),
                        tables=render_tables(summary))
