"""``keymem viz``: one self-contained HTML page (the vendored Cytoscape.js inlined, no network).

Keys are circles sized by their number of active memories (hubs get a thick orange ring);
memories are rounded boxes (stale or superseded ones grey with a dashed border); a link's
weight is its edge width; version chains are dashed arrows from the new version to the old.
After layout the page writes the rendered node count into ``document.title`` and
``#status[data-rendered]`` (what the headless-browser test reads).
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

STATIC = "static"
LIBRARY = "cytoscape.min.js"


def library_js() -> str:
    """The vendored graph library (scripts/vendor_js.sh puts it in keymem/cli/static/)."""
    return (resources.files("keymem.cli") / STATIC / LIBRARY).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>keymem graph</title>
<style>
  html, body {{ margin: 0; height: 100%; font: 13px system-ui, sans-serif; background: #fafafa; color: #222; }}
  #cy {{ position: absolute; top: 44px; left: 0; right: 320px; bottom: 0; }}
  header {{ position: absolute; top: 0; left: 0; right: 0; height: 44px; padding: 0 12px; display: flex;
           align-items: center; gap: 18px; border-bottom: 1px solid #ddd; background: #fff; }}
  header b {{ font-size: 15px; }}
  .legend span {{ display: inline-flex; align-items: center; gap: 5px; margin-right: 12px; }}
  .dot {{ width: 12px; height: 12px; border-radius: 50%; display: inline-block; }}
  .box {{ width: 14px; height: 10px; border-radius: 3px; display: inline-block; }}
  aside {{ position: absolute; top: 44px; right: 0; width: 320px; bottom: 0; overflow: auto; padding: 12px;
          box-sizing: border-box; border-left: 1px solid #ddd; background: #fff; white-space: pre-wrap; }}
</style>
</head>
<body>
<header>
  <b>keymem</b><span id="scope">{scope}</span>
  <span class="legend">
    <span><i class="dot" style="background:#3b82f6"></i>key</span>
    <span><i class="dot" style="background:#3b82f6;box-shadow:0 0 0 3px #f59e0b"></i>hub</span>
    <span><i class="box" style="background:#10b981"></i>memory</span>
    <span><i class="box" style="background:#cbd5e1;outline:1px dashed #64748b"></i>stale / superseded</span>
  </span>
  <span id="status" data-rendered="0">rendering...</span>
</header>
<div id="cy"></div>
<aside id="detail">Click a node to see its details.</aside>
<script>{library}</script>
<script>
const DATA = {data};
const elements = [];
for (const n of DATA.nodes) {{
  elements.push({{ group: "nodes", data: Object.assign({{}}, n, {{
    size: n.kind === "key" ? 18 + 6 * Math.sqrt(n.memories || 0) : 26 }}),
    classes: [n.kind, n.hub ? "hub" : "", n.stale ? "stale" : "", n.status === "superseded" ? "superseded" : ""].join(" ") }});
}}
DATA.edges.forEach((e, i) => elements.push({{ group: "edges",
  data: Object.assign({{ id: "e" + i }}, e, {{ width: 1 + 2.5 * Math.min(3, e.weight) }}), classes: e.kind }}));
const cy = cytoscape({{
  container: document.getElementById("cy"),
  elements: elements,
  style: [
    {{ selector: "node", style: {{ "label": "data(label)", "font-size": 10, "text-wrap": "ellipsis",
      "text-max-width": 120, "text-valign": "bottom", "text-margin-y": 3, "width": "data(size)", "height": "data(size)" }} }},
    {{ selector: "node.key", style: {{ "background-color": "#3b82f6", "shape": "ellipse", "font-weight": "bold" }} }},
    {{ selector: "node.hub", style: {{ "border-width": 5, "border-color": "#f59e0b" }} }},
    {{ selector: "node.memory", style: {{ "background-color": "#10b981", "shape": "round-rectangle", "width": 34, "height": 22 }} }},
    {{ selector: "node.stale", style: {{ "background-color": "#cbd5e1", "border-width": 2, "border-style": "dashed",
      "border-color": "#64748b", "color": "#64748b" }} }},
    {{ selector: "edge", style: {{ "width": "data(width)", "line-color": "#94a3b8", "curve-style": "bezier", "opacity": 0.8 }} }},
    {{ selector: "edge.supersedes", style: {{ "line-style": "dashed", "line-color": "#ef4444",
      "target-arrow-shape": "triangle", "target-arrow-color": "#ef4444" }} }},
    {{ selector: "edge.related", style: {{ "line-style": "dotted", "line-color": "#8b5cf6" }} }},
    {{ selector: ":selected", style: {{ "overlay-color": "#f59e0b", "overlay-opacity": 0.25 }} }}
  ],
  layout: {{ name: "cose", animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 70, padding: 20 }}
}});
function done() {{
  const shown = cy.nodes().filter(n => Number.isFinite(n.position("x")) && Number.isFinite(n.position("y"))).length;
  const status = document.getElementById("status");
  status.dataset.rendered = String(shown);
  status.textContent = shown + " nodes, " + cy.edges().length + " edges";
  document.title = "keymem graph: " + shown + " nodes";
}}
done();
cy.on("tap", "node", ev => {{
  const d = ev.target.data();
  const lines = d.kind === "key"
    ? ["key: " + d.label, "id: " + d.id, "type: " + d.key_type, "namespace: " + d.namespace,
       "active memories: " + d.memories + (d.hub ? " (hub)" : "")]
    : ["memory " + d.id, "namespace: " + d.namespace, "status: " + d.status + " (freshness " + d.freshness + ")", "", d.content];
  document.getElementById("detail").textContent = lines.join("\\n");
}});
</script>
</body>
</html>
"""


def render_html(data: dict[str, Any]) -> str:
    """The page for ``viz_data``'s nodes and edges."""
    scope = []
    if data.get("key"):
        scope.append(f"around key {data['key']!r} ({data['hops']} hops)")
    else:
        scope.append("most recent memories")
    if data.get("namespace"):
        scope.append(f"namespace {data['namespace']}")
    return PAGE.format(scope=html.escape(", ".join(scope)), library=library_js(), data=_script_json(data))
