"""Pages of the preview site: one per dashboard on Grafana's 24-column grid, and the index.

Self-contained: inline CSS, inline SVG, no script and no link outside the site.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .panels import CELL_HEIGHT, MARGIN, PAGE_WIDTH

CSS = f"""
body{{background:#111217;color:#ccccdc;font:13px/1.35 Inter,Helvetica,Arial,sans-serif;margin:0;padding:12px}}
a{{color:#6e9fff}} h1{{font-size:20px;margin:0 0 4px}} .meta{{color:#8e8e8e;margin-bottom:12px}}
.grid{{display:grid;grid-template-columns:repeat(24,1fr);grid-auto-rows:{CELL_HEIGHT}px;gap:{MARGIN}px;
width:{PAGE_WIDTH}px}}
.panel{{background:#181b1f;border:1px solid #2c3235;border-radius:2px;overflow:hidden;display:flex;
flex-direction:column;min-width:0}}
.panel h2{{font-size:13px;font-weight:500;margin:0;padding:6px 8px;height:18px;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}}
.panel .body{{flex:1;overflow:auto;padding:0 6px 4px}}
.row{{font-size:15px;font-weight:500;border-bottom:1px solid #2c3235;display:flex;align-items:end}}
.chart .gridline{{stroke:#2c3235;stroke-width:1}} .chart .axis{{fill:#8e8e8e;font-size:11px}}
.chart .series{{fill:none;stroke-width:1.5}}
.nodata{{margin:8px;padding:12px;border:1px dashed #5a5a5a;color:#9fa7b3;background:#22252b;text-align:center;
font-style:italic}}
.error{{margin:4px 0;padding:4px 6px;background:#4a1414;border-left:3px solid #f2495c;color:#ffb3b3;
font-family:monospace;font-size:11px;white-space:pre-wrap;word-break:break-word}}
table.legend{{width:100%;border-collapse:collapse;font-size:11px}} table.legend td,table.legend th{{padding:1px 4px;
text-align:right;white-space:nowrap}} table.legend td.name{{text-align:left;overflow:hidden;text-overflow:ellipsis;
max-width:0;width:100%}} table.legend i{{display:inline-block;width:10px;height:3px;margin:0 6px 3px 0}}
.stats{{display:flex;flex-wrap:wrap;gap:8px;height:100%;align-items:center;justify-content:space-around}}
.stat{{text-align:center;flex:1;min-width:80px;height:100%;display:flex;flex-direction:column;justify-content:center}}
.stat-value{{font-size:30px;font-weight:500}} .stat-name{{font-size:11px;color:#ccccdc}}
.hidden-name{{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}}
.gauge{{max-height:120px}} .gauge-value{{font-size:22px;font-weight:500}}
table.data{{width:100%;border-collapse:collapse;font-size:12px}} table.data th,table.data td{{border-bottom:1px solid
#2c3235;padding:3px 6px;text-align:left}}
.side{{display:grid;grid-template-columns:1fr 1fr;gap:12px;width:{PAGE_WIDTH}px;margin-bottom:16px}}
.side h3{{margin:0 0 4px;font-size:13px;color:#8e8e8e}}
ul.dashboards li{{margin:4px 0}}
"""


def document(title: str, content: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width"><style>{CSS}</style></head>'
            f'<body>{content}</body></html>\n')


def header(title: str, source: str, window: str, variables: dict[str, str] | None = None) -> str:
    chosen = ", ".join(f"{name} = {value}" for name, value in (variables or {}).items())
    return (f'<h1>{escape(title)}</h1><div class="meta">data: <span class="source">{escape(source)}</span> · '
            f'range: <span class="range">{escape(window)}</span> · variables at their defaults'
            + (f' (<span class="variables">{escape(chosen)}</span>)' if chosen else "")
            + ' · <a href="index.html">all dashboards</a></div>')


def placed(grid: dict[str, Any], inner: str, css: str, extra: str = "") -> str:
    x, y = int(grid.get("x", 0)), int(grid.get("y", 0))
    w, h = int(grid.get("w", 12)), int(grid.get("h", 8))
    style = f"grid-column:{x + 1} / span {w};grid-row:{y + 1} / span {h}"
    return f'<div class="{css}" style="{style}"{extra}>{inner}</div>'


def panel_box(panel: dict[str, Any], body: str, grid: dict[str, Any] | None = None) -> str:
    title = escape(str(panel.get("title", "")))
    return placed(grid or panel.get("gridPos") or {}, f'<h2 title="{title}">{title}</h2><div class="body">{body}</div>',
                  "panel", f' data-panel-id="{escape(str(panel.get("id", "")))}" data-type="{escape(str(panel.get("type")))}"')


def row_box(panel: dict[str, Any]) -> str:
    return placed(panel.get("gridPos") or {}, escape(str(panel.get("title", ""))), "row")


def index(title: str, source: str, window: str, entries: list[tuple[str, str, int, int, int]],
          diff: bool = False) -> str:
    """entries: (file, dashboard title, panels, panels with no data, panels with an error)."""
    items = "".join(f'<li><a href="{escape(file)}">{escape(name)}</a> · {panels} panels'
                    + (f" · {empty} with no data" if empty else "")
                    + (f' · <span class="failed">{failed} with a failing query</span>' if failed else "") + "</li>"
                    for file, name, panels, empty, failed in entries)
    content = (f'<h1>{escape(title)}</h1><div class="meta">data: <span class="source">{escape(source)}</span> · '
               f'range: <span class="range">{escape(window)}</span></div><ul class="dashboards">{items}</ul>'
               + ('<p><a href="diff.html">Panels that differ from the base build, before and after</a></p>'
                  if diff else ""))
    return document(title, content)
