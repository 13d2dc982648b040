"""``report.html``: the summary with three plots made by matplotlib, embedded as PNG.

* pass rate per level per agent (the rebuilt image: what a user of the artifact gets);
* live vs rebuilt pass rate per level, per agent;
* mean seconds per stage (run, export, build, verify), per agent.

The page is one self-contained file. A small script sets ``data-images-loaded`` on
``<body>`` to the number of plots the browser decoded, so a headless browser can check it.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from typing import Any

from synth.bench.summary import LEVELS, STAGES, render_markdown
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


def _mark_undecided(ax: Any, agent: Mapping[str, Any], target: str, xs: list[float]) -> None:
    """``n/a`` over a level no cell decided (not applicable or skipped), not a 0 % bar."""
    for x, lv in zip(xs, LEVELS, strict=True):
        if agent["levels"][target][lv]["rate"] is None:
            ax.text(x, 2, "n/a", ha="center", va="bottom", fontsize=7, color="#777777",
                    rotation=90)


def plot_pass_rates(summary: Mapping[str, Any]) -> str:
    plt = _pyplot()
    agents = list(summary["agents"])
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(len(agents), 1)
    for i, name in enumerate(agents):
        xs = [x + i * width for x in range(len(LEVELS))]
        ax.bar(xs, _rates(summary["agents"][name], "rebuilt"), width, label=name)
        _mark_undecided(ax, summary["agents"][name], "rebuilt", xs)
    ax.set_xticks([x + width * (len(agents) - 1) / 2 for x in range(len(LEVELS))], LEVELS)
    ax.set_ylabel("pass rate (%)")
    ax.set_ylim(0, 105)
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
        ax.bar([x - 0.2 for x in xs], _rates(summary["agents"][name], "live"), 0.4,
               label="live", hatch="//", color="#bbbbbb", edgecolor="#555555")
        ax.bar([x + 0.2 for x in xs], _rates(summary["agents"][name], "rebuilt"), 0.4,
               label="rebuilt", color="#3b75af")
        _mark_undecided(ax, summary["agents"][name], "rebuilt", [float(x) for x in xs])
        ax.set_xticks(xs, LEVELS)
        ax.set_ylim(0, 105)
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
pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; }}
</style></head>
<body data-images-loaded="0">
<h1>synth bench report</h1>
{plots}
<h2>Tables</h2>
<pre>{markdown}</pre>
<script>
window.addEventListener("load", function () {{
  var ok = Array.prototype.filter.call(document.images, function (im) {{
    return im.complete && im.naturalWidth > 0; }});
  document.body.setAttribute("data-images-loaded", String(ok.length));
}});
</script>
</body></html>
"""


def render_html(summary: Mapping[str, Any]) -> str:
    plots = [("pass-rates", "Pass rate per level per agent (rebuilt)", plot_pass_rates),
             ("live-vs-rebuilt", "Live vs rebuilt", plot_live_vs_rebuilt),
             ("stage-times", "Time per stage", plot_stage_times)]
    parts = []
    for key, title, fn in plots:
        parts.append(f'<h2>{html.escape(title)}</h2>\n<img id="{key}" alt="{html.escape(title)}"'
                     f' src="data:image/png;base64,{fn(summary)}">')
    return _PAGE.format(plots="\n".join(parts), markdown=html.escape(render_markdown(summary)))
