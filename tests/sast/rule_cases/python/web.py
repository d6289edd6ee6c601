import os

import requests
from flask import Flask, Markup, render_template_string, request, send_file
from werkzeug.utils import secure_filename

app = Flask(__name__)


@app.route("/download")
def download():
    name = request.args.get("name")
    # ruleid: reviewflow-python-path-traversal
    with open(os.path.join("/srv/files", name)) as handle:
        body = handle.read()
    # ruleid: reviewflow-python-path-traversal
    send_file("/srv/files/" + request.args["file"])
    # ok: reviewflow-python-path-traversal
    with open(os.path.join("/srv/files", secure_filename(name))) as handle:
        body += handle.read()
    # ok: reviewflow-python-path-traversal
    with open("/srv/files/index.txt") as handle:
        body += handle.read()
    return body


@app.route("/fetch")
def fetch():
    target = request.args.get("url")
    # ruleid: reviewflow-python-ssrf
    page = requests.get(target, timeout=5)
    # ruleid: reviewflow-python-ssrf
    requests.post("http://" + request.form["host"] + "/hook", json={})
    # ok: reviewflow-python-ssrf
    status = requests.get("https://status.example.invalid/health", timeout=5)
    return page.text + status.text


@app.route("/hello")
def hello():
    name = request.args.get("name", "")
    # ruleid: reviewflow-python-xss
    greeting = Markup("<b>" + name + "</b>")
    # ruleid: reviewflow-python-xss
    page = render_template_string("<p>Hello " + name + "</p>")
    # ok: reviewflow-python-xss
    safe = Markup("<b>static</b>")
    # ok: reviewflow-python-xss
    template = render_template_string("<p>Hello {{ name }}</p>", name=name)
    return greeting + page + safe + template
