"""Results as msgpack, and the pipeline drawn with Graphviz (needs the `dot` program)."""

import graphviz
import msgpack


def save_results(path, results):
    with open(path, "wb") as fh:
        fh.write(msgpack.packb(results, use_bin_type=True))


def load_results(path):
    with open(path, "rb") as fh:
        return msgpack.unpackb(fh.read(), raw=False)


def pipeline_svg(steps):
    dot = graphviz.Digraph("pipeline", graph_attr={"rankdir": "LR"})
    for a, b in zip(steps, steps[1:]):
        dot.edge(a, b)
    return dot.pipe(format="svg").decode("utf-8")
