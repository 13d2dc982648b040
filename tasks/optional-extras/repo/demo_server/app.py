"""A flask demo backend (requirements-serve.txt); not part of the library."""

from flask import Flask, jsonify

from tinystats import summarize

app = Flask(__name__)


@app.get("/summary/<path:values>")
def summary(values: str):
    s = summarize([float(v) for v in values.split(",")])
    return jsonify(mean=s.mean, variance=s.variance, median=s.median)
